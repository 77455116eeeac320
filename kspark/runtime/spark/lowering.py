"""Native plans for counts and reduces: DSL operations the runner computes without the engine's stores.

Three operations, each only when its table goes ``toStream()`` into stateless
DSL operations and sinks: ``KGroupedStream.count()``, the most common
stateful topology there is, ``KGroupedStream.reduce`` with ``operator.add``,
``min`` or ``max`` over Long or Integer values (a sum, minimum or maximum,
below), and ``windowedBy(TimeWindows).count()``
(:mod:`kspark.runtime.spark.windowed_count`, which has its own notes).
For the plain count Spark's own streaming aggregation keeps the
counts (JVM, its state store) instead of the Python engine, and only the
updated counts -- one row per key per micro-batch -- reach Python, where the
engine runs the downstream operations from the count's node on
(:meth:`~kspark.processor.internals.task.StreamTask.forward_from`).

Identical to the engine, with the record cache on (which is when lowering
applies): Kafka Streams forwards a cached count at commit, one record per
changed key with the latest count and the largest input timestamp so far
(KIP-258), and a micro-batch is a commit; ``count(*)``, ``max(timestamp)``
and the offset and headers of the latest record, grouped by (task, key
bytes), are exactly those. With the cache off, every update is forwarded;
that is not lowered. Records with a null key or value are skipped, as the
engine does, and logged per batch.

The aggregation keeps fixed-width columns only, so that Spark hash-aggregates
(one variable-width column, the headers, made it sort every batch: W2 at
5M records 312k rec/s with it, 456k without; bench/results/history.md, "W2
after the fixed-width native count"): for the headers it keeps whether the
latest record had any, and the tail reads those records' headers back from
Kafka by offset (:class:`HeaderReader`; most topics have none, and then
nothing is read). The topic is the sub-topology's one source topic.

A count is lowered only when bytes in equal bytes out, with no chance of a
deserialization error the engine would have raised: the source's key
deserializer and the store's key serde are both String (UTF-8) or both
ByteArray/Bytes, the value deserializer is String, ByteArray or Bytes, the
timestamp is the record's own (a standard extractor). String keys are
grouped as the engine stores them: invalid UTF-8 is replaced as decoding
with replacement and re-encoding does.

A reduce is lowered when its reducer is, by identity, ``operator.add``,
``min`` or ``max`` (a Python function's body is opaque, so ``lambda a, b:
a + b`` runs in the engine), its values are Long or Integer (big-endian two's
complement, decoded in Spark) stored with the same serde, and a value that
fails to deserialize would fail the engine (the default
``log_and_fail`` handler, no dead-letter queue): a value of another size
then fails the query with the engine's message. The result and its
timestamp (the largest so far) are the engine's; a sum that leaves the
range the store can serialize fails, as the engine's store fails to put it
(``try_sum``, so Spark's ANSI setting does not matter; Integers are summed
as 64-bit and checked in the tail). Floating-point sums are not lowered:
their result depends on the order of additions. A sum that leaves the range
and comes back inside one micro-batch fails only the engine.

``spark.kspark.nativeLowering=false`` turns lowering off. Lowered and not
lowered plans keep different state, so switching needs a new
``application.id`` (or a reset), as any change of a stateful plan does.
"""

from __future__ import annotations

import builtins
import codecs
import logging
import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kspark.config import StreamsConfig
from kspark.errors import StreamsException
from kspark.kstream.internals import kstream_processors as kp
from kspark.kstream.internals.change import Change
from kspark.kstream.internals.ktable_processors import KStreamCount, KStreamReduce
from kspark.kstream.internals.window_aggregate import KStreamWindowAggregate
from kspark.kstream.time_windowed_kstream import is_count
from kspark.kstream.windowed import TimeWindow, Windowed
from kspark.kstream.windows import EmitStrategy, TimeWindows
from kspark.processor.api import Headers, Record
from kspark.processor.internals.builder import InternalTopologyBuilder
from kspark.processor.internals.exception_handlers import LogAndFailExceptionHandler
from kspark.processor.internals.fused import FusedChain
from kspark.processor.internals.records import OutputRecord, ProcessorRecordContext
from kspark.processor.internals.timestamp_extractors import (
    FailOnInvalidTimestamp,
    LogAndSkipOnInvalidTimestamp,
    UsePartitionTimeOnInvalidTimestamp,
)
from kspark.runtime.spark.settings import NATIVE_LOWERING, RunnerSettings
from kspark.serde.api import Serde
from kspark.serde.primitives import (
    ByteArrayDeserializer,
    IntegerDeserializer,
    LongDeserializer,
    StringDeserializer,
)
from kspark.state.internals.builders import LruMapBytesStoreSupplier

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame

    from kspark.runtime.spark.kafka_io import HeaderReader
    from kspark.runtime.spark.tasks import TopologySpec

__all__ = [
    "NativeCount",
    "NativeReduce",
    "native_count",
    "lower",
    "store_key",
    "has_headers",
    "count_plan",
    "CountTail",
]


_log = logging.getLogger(__name__)

# Stateless DSL processors the engine may run downstream of a lowered count: no stores, no punctuation.
_TAIL_SUPPLIERS = (
    kp.KStreamFilter,
    kp.KStreamMap,
    kp.KStreamMapValues,
    kp.KStreamFlatMap,
    kp.KStreamFlatMapValues,
    kp.KStreamPeek,
    kp.ForeachProcessor,
    kp.KStreamPrint,
    kp.KStreamBranch,
    kp.PassThrough,
)
# Extractors that return the record's timestamp for every record Kafka can hold (timestamps >= 0).
_RECORD_TIMESTAMP = (FailOnInvalidTimestamp, LogAndSkipOnInvalidTimestamp, UsePartitionTimeOnInvalidTimestamp)


Tail = Callable[[Any, int, int, int, str, int, int, "Headers | None"], None]
"""What follows a native count, for one count it forwards: (key, count, timestamp, the record
context's timestamp, topic, partition, offset, headers or None for none)."""


_NATIVE_REDUCERS: dict[Any, str] = {operator.add: "sum", builtins.min: "min", builtins.max: "max"}
"""Reducers Spark computes itself, by identity: ``reduce(operator.add)``, ``reduce(min)``, ``reduce(max)``."""

_INT_DESERIALIZERS: dict[type, int] = {LongDeserializer: 8, IntegerDeserializer: 4}
"""Value deserializers a native reduce decodes in Spark, with their sizes (big-endian two's complement)."""


@dataclass(frozen=True)
class NativeReduce:
    """``reduce`` with a reducer Spark has (sum, min, max) over Long or Integer values."""

    function: str  # "sum" | "min" | "max"
    size: int  # 8: Long, 4: Integer
    deserializer: str  # its name, for the error a value of another size raises
    source: str  # the source node, for that error


@dataclass(frozen=True)
class NativeCount:
    """A sub-topology whose count Spark computes: the count's node and how its keys are compared."""

    aggregate: str  # the count's processor node
    utf8_keys: bool  # String keys: grouped by their UTF-8 re-encoding, as the engine's store holds them
    key_deserializer: Any  # the store's key deserializer: the key the count forwards
    windows: TimeWindows | None = None  # a windowed count's windows (windowed_count.py)
    to_stream: str | None = None  # the count's only child when it is a plain toStream()
    reduce: NativeReduce | None = None  # a reduce Spark computes instead of a count
    # What follows the aggregation runs as a fused chain (the physical plan decides: plan.py).
    fused_tail: bool = False

    @property
    def column(self) -> str:
        """The aggregation's result column (:func:`count_plan`)."""
        return "count" if self.reduce is None else "aggregate"

    def changelog(self, spec: Any) -> str | None:
        """The changelog topic of the count's store, which this stage writes as the engine's
        store would (what interactive queries read: replica.py); None when its logging is off."""
        builder = spec.topology.internal_builder
        (store,) = builder.node_stores(self.aggregate)
        if not builder.store_builder(store).logging_enabled():
            return None
        return f"{spec.config['application.id']}-{store}-changelog"

    def changelog_value(self, value: int) -> bytes:
        """An aggregate as its store's value serde writes it: a count is a Long; a reduce's
        values are Long or Integer (the only ones lowered)."""
        return value.to_bytes(8 if self.reduce is None else self.reduce.size, "big", signed=True)

    def tail(self, task: Any) -> Tail:
        """Runs what follows the count in ``task`` for one count it forwards: fused when it is a
        line of stateless operators into a sink, else ``task.forward_from``.

        A fused tail after a plain ``toStream()`` starts after it, with the count itself: the
        ``Change`` the count forwards exists only for ``toStream()`` to unwrap (and cannot fail).
        """
        entry = self.to_stream or self.aggregate
        fused = FusedChain.after(task, entry) if self.fused_tail else None
        if self.fused_tail and fused is None:
            raise StreamsException(f"the plan fused what follows {entry}, but its task cannot be fused")
        if fused is not None:
            forward_value = fused.forward_value
            unwrapped = self.to_stream is not None

            def run_fused(
                key: Any,
                count: int,
                timestamp: int,
                _context_timestamp: int,
                topic: str,
                partition: int,
                offset: int,
                headers: Headers | None,
            ) -> None:
                # Named, not *args: packing and unpacking a tuple per record showed in py-spy.
                value = count if unwrapped else Change(count, None)
                forward_value(key, value, timestamp, topic, partition, offset, headers)

            return run_fused

        def run(
            key: Any,
            count: int,
            timestamp: int,
            context_timestamp: int,
            topic: str,
            partition: int,
            offset: int,
            headers: Headers | None,
        ) -> None:
            hdrs = headers if headers is not None else Headers()
            context = ProcessorRecordContext(context_timestamp, offset, partition, topic, hdrs)
            task.forward_from(self.aggregate, Record(key, Change(count, None), timestamp, hdrs), context)

        return run

    def forward(
        self,
        tail: Tail,
        key: bytes,
        count: int,
        timestamp: int,
        topic: str,
        partition: int,
        offset: int,
        headers: Headers | None,
    ) -> None:
        """Hand one updated count to ``tail`` (:meth:`tail`), as the count forwards it, in the
        context of the latest record that changed it (``headers`` None: it had none)."""
        k = self.key_deserializer.deserialize(topic, key)
        tail(k, count, timestamp, timestamp, topic, partition, offset, headers)

    def windowed_forwarder(self, tail: Tail, topic: str, partition: int) -> WindowedForward:
        """:meth:`forward` for a windowed count, for one flush of a task: the key is
        ``Windowed(key, window)``; the count carries the window's largest timestamp, the context
        the latest record's own. Keys are deserialized once per flush (String and bytes keys,
        the only ones lowered, are immutable, so windows of a key can share one)."""
        deserialize = self.key_deserializer.deserialize
        keys: dict[bytes, Any] = {}

        def forward(
            key: bytes,
            window: TimeWindow,
            count: int,
            timestamp: int,
            record_timestamp: int,
            offset: int,
            headers: Headers | None,
        ) -> None:
            k = keys.get(key)
            if k is None:
                k = keys[key] = deserialize(topic, key)
            tail(Windowed(k, window), count, timestamp, record_timestamp, topic, partition, offset, headers)

        return forward


WindowedForward = Callable[[bytes, TimeWindow, int, int, int, int, "Headers | None"], None]
"""Forwards one window's count: (key bytes, window, count, timestamp, the record context's
timestamp, offset, headers or None for none)."""


def _kind(serde_or_deserializer: Any) -> str | None:
    """'utf8' or 'bytes' for the (de)serializers whose bytes survive a round trip; None otherwise."""
    d = serde_or_deserializer
    if isinstance(d, Serde):
        d = d.deserializer()
    if isinstance(d, StringDeserializer):
        return "utf8" if codecs.lookup(d.encoding).name == "utf-8" else None
    if isinstance(d, ByteArrayDeserializer):
        return "bytes"
    return None


def native_count(
    builder: InternalTopologyBuilder, nodes: list[str], config: StreamsConfig
) -> NativeCount | None:
    """How to run sub-topology ``nodes`` as a native count, or None when it is not one (see module doc)."""
    plan = lower(builder, nodes, config, RunnerSettings.of(config))
    return plan if isinstance(plan, NativeCount) else None


def lower(
    builder: InternalTopologyBuilder, nodes: list[str], config: StreamsConfig, settings: RunnerSettings
) -> NativeCount | str:
    """How to run sub-topology ``nodes`` natively, or why it is not lowered, in words (for the
    physical plan: ``kspark describe --spark`` prints it)."""
    if not settings.native_lowering:
        return f"{NATIVE_LOWERING} is false"
    if config.cache_max_bytes() <= 0:
        return "the record cache is off (statestore.cache.max.bytes=0): every update is forwarded"
    with_stores = [n for n in nodes if builder.node_stores(n)]
    if len(with_stores) != 1:
        return f"{len(with_stores)} processors use stores (only a lone count or reduce is lowered)"
    (aggregate,) = with_stores
    supplier = builder.processor_supplier(aggregate)
    stores = builder.node_stores(aggregate)
    name = type(supplier).__name__
    if not isinstance(supplier, KStreamCount | KStreamWindowAggregate | KStreamReduce):
        return f"{aggregate} ({name}) is not a count or reduce"
    windows = _count_windows(supplier)
    if isinstance(supplier, KStreamWindowAggregate) and windows is None:
        return f"{aggregate} is not a tumbling or hopping count that emits on update"
    if supplier.send_old_values:
        return f"{aggregate} forwards old values (a downstream table reads them)"
    if len(stores) != 1:
        return f"{aggregate} uses {len(stores)} stores"
    store_builder = builder.store_builder(stores[0])
    if isinstance(getattr(store_builder, "supplier", None), LruMapBytesStoreSupplier):
        return f"store {stores[0]} is an LRU map (Stores.lru_map): it evicts, a native count keeps all keys"
    if not store_builder.caching_enabled():
        return f"store {stores[0]} has caching disabled (Materialized.with_caching_disabled)"
    if builder.store_users(stores[0]) != [aggregate]:
        return f"store {stores[0]} is used by other processors too"
    sources = builder.predecessors(aggregate)
    source_info = builder.source_deserializers(sources[0]) if len(sources) == 1 else None
    if source_info is None:
        return f"{aggregate} does not read a source directly"
    (source,) = sources
    if builder.successors(source) != [aggregate]:
        return f"source {source} feeds more than the aggregation"
    if len(builder.source_topics_of(source)) != 1:
        return f"source {source} reads several topics"
    key_deserializer = source_info[0] or _deserializer(config.default_key_serde())
    value_deserializer = source_info[1] or _deserializer(config.default_value_serde())
    store_key_serde = store_builder.key_serde or config.default_key_serde()
    key_kind = _kind(key_deserializer)
    if key_kind is None:
        return f"key deserializer {_name(key_deserializer)} is not String or ByteArray"
    if _kind(store_key_serde) != key_kind:
        return f"the store's key serde {_name(store_key_serde)} differs from the source's"
    reduce: NativeReduce | None = None
    if isinstance(supplier, KStreamReduce):
        lowered = _native_reduce(supplier, value_deserializer, store_builder.value_serde, source, config)
        if isinstance(lowered, str):
            return lowered
        reduce = lowered
    elif _kind(value_deserializer) is None:
        return f"value deserializer {_name(value_deserializer)} is not String or ByteArray"
    if not isinstance(source_info[2] or config.default_timestamp_extractor(), _RECORD_TIMESTAMP):
        return "a timestamp extractor other than the record's own timestamp"
    for node in nodes:
        if node in (source, aggregate):
            continue
        if builder.source_deserializers(node) is not None or builder.node_stores(node):
            return f"{node} is a second source or uses a store"
        node_supplier = builder.processor_supplier(node)
        if node_supplier is not None and not isinstance(node_supplier, _TAIL_SUPPLIERS):
            kind = type(node_supplier).__name__
            return f"{node} ({kind}) after the aggregation is not a stateless DSL operator"
    children = builder.successors(aggregate)
    if not children or any(
        not isinstance(builder.processor_supplier(c), kp.KStreamMapValues) for c in children
    ):
        return f"{aggregate}'s table is read by more than to_stream()"  # would read it through its store
    only = builder.processor_supplier(children[0]) if len(children) == 1 else None
    plain = isinstance(only, kp.KStreamMapValues) and only.mapper is kp.new_value_of
    return NativeCount(
        aggregate,
        key_kind == "utf8",
        store_key_serde.deserializer(),
        windows,
        to_stream=children[0] if plain else None,
        reduce=reduce,
    )


def _name(serde_or_deserializer: Any) -> str:
    if serde_or_deserializer is None:
        return "(none given, and no default serde configured)"
    return type(serde_or_deserializer).__name__


def _native_reduce(
    supplier: KStreamReduce,
    value_deserializer: Any,
    store_value_serde: Any,
    source: str,
    config: StreamsConfig,
) -> NativeReduce | str:
    """A reduce Spark computes, when it gives exactly the engine's values and errors: a reducer of
    :data:`_NATIVE_REDUCERS` over Long or Integer values stored with the same serde, and a failing
    deserialization handler without a dead-letter queue (a value of the wrong size then fails the
    query, as it fails the engine; a handler that skips it could not be asked from Spark).
    Otherwise why not, in words."""
    size = _INT_DESERIALIZERS.get(type(value_deserializer))
    store_value = _deserializer(store_value_serde or config.default_value_serde())
    if size is None:
        return f"reduce of {_name(value_deserializer)} values (lowered: Long or Integer)"
    if type(store_value) is not type(value_deserializer):
        return f"the store's value serde {_name(store_value)} differs from the source's"
    if not isinstance(config.deserialization_exception_handler(), LogAndFailExceptionHandler):
        return "a deserialization handler other than log_and_fail"
    if config.dead_letter_queue_topic():
        return "a dead-letter queue is configured"
    function = _reducer_name(supplier)
    if function is None:
        return "the reducer is not operator.add, min or max (a function's body is opaque)"
    return NativeReduce(function, size, type(value_deserializer).__name__, source)


def _reducer_name(supplier: KStreamReduce) -> str | None:
    # By identity: a user's reducer need not be hashable.
    return next((name for f, name in _NATIVE_REDUCERS.items() if f is supplier.reducer), None)


def _count_windows(supplier: Any) -> TimeWindows | None:
    """The windows of a tumbling or hopping windowed count that forwards every update, else None."""
    if (
        isinstance(supplier, KStreamWindowAggregate)
        and is_count(supplier.initializer, supplier.aggregator)
        and isinstance(supplier.windows, TimeWindows)
        and supplier.emit_strategy.type() is EmitStrategy.StrategyType.ON_WINDOW_UPDATE
    ):
        return supplier.windows
    return None


def _deserializer(serde: Any) -> Any:
    return None if serde is None else serde.deserializer()


def store_key(native: NativeCount) -> Column:
    """The ``key`` column as the count's store holds it (String keys: invalid UTF-8 replaced)."""
    from pyspark.sql import functions as F

    if not native.utf8_keys:
        return F.col("key")
    # Spark's `decode` refuses malformed UTF-8 (ANSI mode); make_valid_utf8 replaces it with U+FFFD.
    return F.expr(
        "CASE WHEN is_valid_utf8(CAST(key AS STRING)) THEN key "
        "ELSE encode(make_valid_utf8(CAST(key AS STRING)), 'UTF-8') END"
    )


def has_headers() -> Column:
    """Whether a source record had headers (Spark's Kafka source gives null for none)."""
    from pyspark.sql import functions as F

    return F.coalesce(F.size("headers") > 0, F.lit(False))


def count_plan(source: DataFrame, native: NativeCount) -> DataFrame:
    """The streaming aggregation: per (task, key) the count, the largest timestamp, and the
    offset of the latest record and whether it had headers (all fixed-width: see module doc).

    Records the engine skips (null key or value) are grouped under a null key,
    so that the tail can log them.
    """
    from pyspark.sql import functions as F

    skipped = F.col("key").isNull() | F.col("value").isNull()
    # A reduce keeps the count too: the tail logs how many records were skipped from it.
    reduced = [] if native.reduce is None else [_reduced(native.reduce).alias(native.column)]
    return source.groupBy(F.col("partition"), F.when(~skipped, store_key(native)).alias("key")).agg(
        F.count(F.lit(1)).alias("count"),
        *reduced,
        F.max("timestamp").alias("timestamp"),
        F.max("offset").alias("offset"),
        F.max_by(has_headers(), "offset").alias("has_headers"),
    )


def _reduced(reduce: NativeReduce) -> Column:
    """Spark's sum, min or max of the decoded values (records skipped for a null key or value
    aggregate a null, which these ignore); a value of another size fails the query as the engine's
    deserializer fails the task."""
    from pyspark.sql import functions as F

    value = F.col("value")
    # Two's complement big-endian: conv with a negative target base reads the hex as signed
    # 64-bit; 4-byte values come out unsigned and are folded back into the signed range.
    decoded = F.conv(F.hex(value), 16, -10).cast("bigint")
    if reduce.size == 4:
        decoded = (F.conv(F.hex(value), 16, 10).cast("bigint") + 2**31) % 2**32 - 2**31
    bad = F.raise_error(
        F.concat(
            F.lit("Deserialization exception handler is set to fail upon a deserialization error (topic="),
            F.col("topic"),
            F.lit(", partition="),
            F.col("partition").cast("string"),
            F.lit(", offset="),
            F.col("offset").cast("string"),
            F.lit(
                f", source={reduce.source}: Size of data received by {reduce.deserializer} is not "
                f"{reduce.size} (got "
            ),
            F.length(value).cast("string"),
            F.lit(" bytes))."),
        )
    )
    # The engine deserializes a record's value before it skips the record for a null key.
    none = F.lit(None).cast("bigint")
    checked = (
        F.when(value.isNull(), none)
        .when(F.length(value) != reduce.size, bad)
        .when(F.col("key").isNull(), none)
        .otherwise(decoded)
    )
    # try_sum: null once a sum leaves the 64-bit range, whatever spark.sql.ansi.enabled says
    # (plain sum would wrap around with ANSI off); the tail fails on it as the engine's store does.
    return {"sum": F.try_sum, "min": F.min, "max": F.max}[reduce.function](checked)


class CountTail:
    """``mapInArrow`` over a batch's updated counts: the engine runs what follows the count, then writes."""

    def __init__(self, spec: TopologySpec, native: NativeCount, topic: str) -> None:
        self.spec = spec
        self.native = native
        self.topic = topic  # the sub-topology's one source topic

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from kspark.runtime.spark.kafka_io import HeaderReader
        from kspark.runtime.spark.task_commit import TaskCommit
        from kspark.runtime.spark.tasks import warm_stateless_task
        from kspark.runtime.spark.warm import new_task_metrics, refresh_wall_clock, warm_entry, written_batch

        exactly_once = str(self.spec.config.get("processing.guarantee")) == "exactly_once_v2"
        offsets: dict[int, int] = {}
        if exactly_once:
            # A task's commit carries its offsets from its first request on (task_commit.py): the
            # batch's counts (one row per changed key, repartitioned by task: apply) come first.
            import pyarrow.compute as pc

            held = list(batches)
            for batch in held:
                for partition in pc.unique(batch.column("partition")).to_pylist():
                    rows = pc.equal(batch.column("partition"), partition)
                    last = pc.max(pc.filter(batch.column("offset"), rows)).as_py()
                    offsets[partition] = max(offsets.get(partition, 0), last + 1)
            batches = iter(held)
        commits: dict[int, TaskCommit] = {}
        reader = HeaderReader.of_application(self.spec.config)
        topic = self.topic
        changelog = self.native.changelog(self.spec)
        changelog_value = self.native.changelog_value
        tails: dict[int, Tail] = {}
        check = self._range_check()
        try:
            for batch in batches:
                self.spec.global_replica()
                cols = batch.to_pydict()
                headers_of = self._read_headers(reader, cols)
                for partition, key, count, value, ts, offset in zip(
                    cols["partition"],
                    cols["key"],
                    cols["count"],
                    cols[self.native.column],
                    cols["timestamp"],
                    cols["offset"],
                    strict=True,
                ):
                    commit = commits.get(partition)
                    if commit is None:
                        commit = commits[partition] = self.spec.task_commit(partition)
                        known = {(topic, partition): offsets[partition]} if partition in offsets else {}
                        commit.begin(known)
                    if commit.replay:
                        continue  # Kafka committed these counts' output already; Spark's state has them
                    if key is None:
                        task = warm_stateless_task(self.spec, partition).task
                        task.dropped_records_total += count  # as the engine's aggregation counts them
                        _log.warning(
                            "Skipping record due to null key or value: "
                            "%s such records so far in task %s_%s (%s)",
                            count,
                            self.spec.subtopology,
                            partition,
                            self.native.aggregate,
                        )
                        continue
                    task = warm_stateless_task(self.spec, partition).task
                    tail = tails.get(partition)
                    if tail is None:
                        refresh_wall_clock(task)
                        tail = tails[partition] = self.native.tail(task)
                    headers = headers_of.get((partition, offset)) if headers_of else None
                    if check is not None:
                        check(topic, value)
                    self.native.forward(tail, key, value, ts, topic, partition, offset, headers)
                    out = task.drain_output()
                    if changelog is not None:
                        out.append(OutputRecord(changelog, partition, key, changelog_value(value), ts))
                    commit.send(out)
            written = sum(commit.commit() for commit in commits.values())
        except BaseException:
            for commit in commits.values():
                commit.abort()
            raise
        finally:
            reader.close()
        yield written_batch(written, new_task_metrics(warm_entry(self.spec, p) for p in commits))

    def apply(self, counts: DataFrame, tasks: int) -> DataFrame:
        """This tail over a batch's counts (``foreachBatch``). Under exactly-once the counts are
        first repartitioned by task, so that each Spark task writes one Kafka Streams task's
        output in one transaction (the aggregation hashed them by key)."""
        from pyspark.sql import functions as F

        from kspark.runtime.spark.kafka_io import WRITTEN_DDL
        from kspark.runtime.spark.shuffle import task_grouping_key

        if str(self.spec.config.get("processing.guarantee")) == "exactly_once_v2":
            keys = F.array(*[F.lit(task_grouping_key(p, tasks)) for p in range(tasks)])
            counts = counts.repartition(tasks, F.element_at(keys, F.col("partition") + 1))
        return counts.mapInArrow(self, WRITTEN_DDL)

    def _range_check(self) -> Callable[[str, int | None], Any] | None:
        """For a sum: what fails on a result the engine's store could not serialize. Spark sums
        Integers as 64-bit, and ``try_sum`` gives null for a sum out of the 64-bit range."""
        from kspark.errors import SerializationException
        from kspark.serde.primitives import IntegerSerializer, LongSerializer

        reduce = self.native.reduce
        if reduce is None or reduce.function != "sum":
            return None
        serializer = IntegerSerializer() if reduce.size == 4 else LongSerializer()
        name = type(serializer).__name__

        def check(topic: str, value: int | None) -> None:
            if value is None:
                raise SerializationException(
                    f"{name} cannot serialize the sum: out of the 64-bit signed range"
                )
            serializer.serialize(topic, value)

        return check

    def _read_headers(
        self, reader: HeaderReader, cols: dict[str, list[Any]]
    ) -> dict[tuple[int, int], Headers]:
        """The headers of the counted records that had any, by (partition, offset), read from Kafka."""
        wanted: dict[int, list[int]] = {}
        for partition, key, offset, flag in zip(
            cols["partition"], cols["key"], cols["offset"], cols["has_headers"], strict=True
        ):
            if flag and key is not None:
                wanted.setdefault(partition, []).append(offset)
        return {
            (partition, offset): headers
            for partition, offsets in wanted.items()
            for offset, headers in reader.read(self.topic, partition, offsets).items()
        }
