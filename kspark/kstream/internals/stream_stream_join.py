"""Windowed stream-stream joins (Kafka's ``KStreamImplJoin`` and ``KStreamKStreamJoin``).

Each side first goes through a ``KSTREAM-WINDOWED`` processor that puts its
records into its own window store (duplicates retained), then a join
processor (``KSTREAM-JOINTHIS`` / ``KSTREAM-JOINOTHER``, or ``OUTERTHIS`` /
``OUTEROTHER``) looks the record up in the *other* side's store; both feed a
``KSTREAM-MERGE`` pass-through. A left record at ``t`` matches right records
in ``[t - before, t + after]``; the result carries the larger timestamp.

Left/outer joins (Kafka 3.1+): an unmatched record is parked in a shared
"outer" store and emitted with ``None`` for the missing side only once its
window closed (stream time > t + after/before + grace), throttled by the wall
clock (``__emit.interval.ms.kstreams.outer.join.spurious.results.fix__``,
default 1000 ms), as Kafka does. That store is change-logged
(:mod:`kspark.kstream.internals.outer_join_buffer`).

kspark addition: the shared time tracker (stream time, min time of the parked
records, next wall-clock emit time) lives in the task's processor metadata
under ``<this-side join name>:stream-time`` / ``:min-time`` /
``:next-time-to-emit``. Kafka keeps it in memory and starts it afresh on
restart (min time at Long.MAX_VALUE, which makes the first check scan the
store); kspark keeps it so a restored task (on the Spark runner: any
micro-batch) continues exactly as if it had not been restarted.

A self-join (``s.join(s, ...)``) is an ordinary join whose two windowed nodes
hang off the same parent, as Kafka builds it without the self-join
optimization (which kspark does not implement): each record reaches the
this-side join first, then the other side, where it joins itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark.errors import StreamsException
from kspark.kstream.internals.graph import GraphNode, ProcessorGraphNode, ProcessorParameters
from kspark.kstream.internals.outer_join_buffer import (
    LeftOrRightValue,
    OuterJoinStoreBuilder,
    TimestampedKeyAndJoinSide,
)
from kspark.kstream.internals.window_aggregate import (
    TimeTracker,
    emit_interval_ms,
    processor_metadata_for_key,
    record_dropped,
)
from kspark.kstream.windows import JoinWindows
from kspark.processor.api import Processor, ProcessorContext, Record

__all__ = [
    "EMIT_INTERVAL_MS_OUTER_JOIN",
    "JoinWindowProcessor",
    "StreamStreamJoinSide",
    "PassThrough",
    "TimestampedKeyAndJoinSide",
    "LeftOrRightValue",
    "OuterJoinStoreBuilder",
    "TimeTrackerSupplier",
    "StreamStreamJoinNode",
    "build_stream_stream_join",
]

EMIT_INTERVAL_MS_OUTER_JOIN = "__emit.interval.ms.kstreams.outer.join.spurious.results.fix__"

Joiner = Callable[[Any, Any], Any]


class JoinWindowProcessor(Processor[Any, Any]):
    """``KStreamJoinWindow``: forwards the record, then remembers it in this side's window store."""

    def __init__(self, store_name: str) -> None:
        self.store_name = store_name
        self.context: ProcessorContext = None  # type: ignore[assignment]
        self.store: Any = None

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store(self.store_name)

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(record)
        # a null key can never join, so it needs no window entry
        if record.key is not None:
            self.store.put(record.key, record.value, record.timestamp)


class PassThrough(Processor[Any, Any]):
    """The ``KSTREAM-MERGE`` node joining both sides' results into one stream."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(record)


class TimeTrackerSupplier:
    """One ``TimeTracker`` per task, shared by the two join processors of that task.

    ``name`` (unique in the topology) prefixes the processor-metadata keys the tracker is kept under.
    """

    def __init__(self, name: str = "") -> None:
        self.name = name
        self._trackers: dict[str, TimeTracker] = {}

    def get(self, task_id: str) -> TimeTracker:
        return self._trackers.setdefault(task_id, TimeTracker())

    def remove(self, task_id: str) -> None:
        self._trackers.pop(task_id, None)


class StreamStreamJoinSide:
    """Supplier of one side's join processor (``KStreamKStreamJoinLeftSide`` / ``RightSide``).

    ``joiner`` receives ``(this_value, other_value)``; the right side is given
    the reversed joiner so results always read ``joiner(left, right)``.
    """

    def __init__(
        self,
        *,
        left_side: bool,
        other_window_name: str,
        windows: JoinWindows,
        joiner: Joiner,
        outer: bool,
        outer_join_store_name: str | None,
        time_tracker_supplier: TimeTrackerSupplier,
    ) -> None:
        self.left_side = left_side
        self.other_window_name = other_window_name
        self.windows = windows
        self.joiner = joiner
        self.outer = outer
        self.outer_join_store_name = outer_join_store_name
        self.time_tracker_supplier = time_tracker_supplier
        # the left side looks back `before` and forward `after`; the right side the reverse
        self.join_before_ms = windows.before_ms if left_side else windows.after_ms
        self.join_after_ms = windows.after_ms if left_side else windows.before_ms

    def __call__(self) -> Processor[Any, Any]:
        return _StreamStreamJoinProcessor(self)


class _StreamStreamJoinProcessor(Processor[Any, Any]):
    def __init__(self, s: StreamStreamJoinSide) -> None:
        self.s = s
        self.grace_ms = s.windows.grace_period_ms()
        self.context: ProcessorContext = None  # type: ignore[assignment]
        self.other_store: Any = None
        self.outer_store: Any = None
        self.tracker: TimeTracker = TimeTracker()
        self._tracker_keys = ("", "", "")
        self._write: Callable[[str, int], None] | None = None

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.other_store = context.get_state_store(self.s.other_window_name)
        self.tracker = self.s.time_tracker_supplier.get(context.task_id())
        if self.s.outer_join_store_name is not None:
            self.outer_store = context.get_state_store(self.s.outer_join_store_name)
        self.tracker.emit_interval_ms = emit_interval_ms(context, EMIT_INTERVAL_MS_OUTER_JOIN)
        prefix = self.s.time_tracker_supplier.name
        self._tracker_keys = (f"{prefix}:stream-time", f"{prefix}:min-time", f"{prefix}:next-time-to-emit")
        self._write = getattr(context, "add_processor_metadata_key_value", None)
        # both sides restore the same committed values into the shared tracker
        stream_time, min_time, next_time_to_emit = (
            processor_metadata_for_key(context, key) for key in self._tracker_keys
        )
        if stream_time is not None and min_time is not None and next_time_to_emit is not None:
            self.tracker.stream_time = stream_time
            self.tracker.min_time = min_time
            self.tracker.next_time_to_emit = next_time_to_emit

    def _save_tracker(self) -> None:
        # written after every record (three dict sets): the tracker is shared, so an "unchanged"
        # check on this side could miss the other side's updates
        if self._write is not None:
            tracker = self.tracker
            stream_key, min_key, next_key = self._tracker_keys
            self._write(stream_key, tracker.stream_time)
            self._write(min_key, tracker.min_time)
            self._write(next_key, tracker.next_time_to_emit)

    def close(self) -> None:
        if self.context is not None:
            self.s.time_tracker_supplier.remove(self.context.task_id())

    def _join(self, key: Any, this_value: Any, other_value: Any) -> Any:
        return self.s.joiner(this_value, other_value)

    def process(self, record: Record[Any, Any]) -> None:
        try:
            self._process(record)
        finally:
            self._save_tracker()

    def _process(self, record: Record[Any, Any]) -> None:
        ts = record.timestamp
        self.tracker.advance_stream_time(ts)
        if self.s.outer and record.key is None and record.value is not None:
            self.context.forward(record.with_value(self._join(record.key, record.value, None)))
            return
        if record.key is None or record.value is None:
            record_dropped(self.context, "null key or value")
            return
        if ts == self.tracker.stream_time and self.outer_store is not None:
            self._emit_non_joined_outer_records(record)
        time_from = max(0, ts - self.s.join_before_ms)
        time_to = max(0, ts + self.s.join_after_ms)
        with self.other_store.fetch(record.key, time_from, time_to) as it:
            matches = list(it)
        for other in matches:
            self._emit_inner_join(record, other.key, other.value)
        if self.s.outer and not matches:
            # a record whose window already closed (out of order) is emitted at once
            if self.outer_store is None or time_to < self.tracker.stream_time:
                self.context.forward(record.with_value(self._join(record.key, record.value, None)))
            else:
                self.tracker.update_min_time(ts)
                self.outer_store.put(
                    TimestampedKeyAndJoinSide(record.key, ts, self.s.left_side),
                    self._this_value(record.value),
                )

    def _this_value(self, value: Any) -> LeftOrRightValue:
        return LeftOrRightValue(value, None) if self.s.left_side else LeftOrRightValue(None, value)

    def _emit_inner_join(self, record: Record[Any, Any], other_ts: int, other_value: Any) -> None:
        if self.outer_store is not None:
            # the other side's parked record found a partner: it must not be emitted as unmatched
            self.outer_store.put_if_absent(
                TimestampedKeyAndJoinSide(record.key, other_ts, not self.s.left_side), None
            )
        self.context.forward(
            record.with_value(self._join(record.key, record.value, other_value)).with_timestamp(
                max(record.timestamp, other_ts)
            )
        )

    def _emit_non_joined_outer_records(self, record: Record[Any, Any]) -> None:
        store = self.outer_store
        assert store is not None
        tracker = self.tracker
        # cheap check first: nothing parked can have closed yet. Java long arithmetic: with
        # min_time at Long.MAX_VALUE (empty store, or a task just restored) the sum overflows
        # and the store is scanned, which is how Kafka emits restored parked records
        if _java_long(tracker.min_time + self.s.join_after_ms + self.grace_ms) >= tracker.stream_time:
            return
        now = self.context.current_system_time_ms()
        if now < tracker.next_time_to_emit:
            return
        tracker.next_time_to_emit = now
        tracker.advance_next_time_to_emit()
        tracker.min_time = 2**63 - 1
        with store.all() as parked:
            self._emit_closed(record, store, parked)

    def _emit_closed(self, record: Record[Any, Any], store: Any, parked: Any) -> None:
        tracker = self.tracker
        prev_key: TimestampedKeyAndJoinSide[Any] | None = None
        left_open = right_open = False
        for kv in parked:
            key: TimestampedKeyAndJoinSide[Any] = kv.key
            tracker.min_time = key.timestamp
            if left_open and right_open:
                break
            # left records look `after` ahead, right records `before`
            look_back = self.s.windows.after_ms if key.left_side else self.s.windows.before_ms
            if tracker.min_time + look_back + self.grace_ms >= tracker.stream_time:
                if key.left_side:
                    left_open = True
                else:
                    right_open = True
                continue
            this_value = kv.value.left_value if self.s.left_side else kv.value.right_value
            other_value = kv.value.right_value if self.s.left_side else kv.value.left_value
            self.context.forward(
                record.with_key(key.key)
                .with_value(self._join(key.key, this_value, other_value))
                .with_timestamp(key.timestamp)
            )
            if prev_key is not None and prev_key != key:
                store.put(prev_key, None)
            prev_key = key
        if prev_key is not None:
            store.put(prev_key, None)


def _java_long(value: int) -> int:
    """``value`` wrapped to a signed 64-bit integer, as Java's ``long`` addition does."""
    return (value + 2**63) % 2**64 - 2**63


class StreamStreamJoinNode(GraphNode):
    """Writes both join processors, the merge node and the stores (Kafka's ``StreamStreamJoinNode``)."""

    def __init__(
        self,
        merge: ProcessorParameters,
        this_join: ProcessorParameters,
        other_join: ProcessorParameters,
        this_windowed_name: str,
        other_windowed_name: str,
        this_store: Any,
        other_store: Any,
        outer_store: Any | None,
    ) -> None:
        super().__init__(merge.processor_name)
        self.merge = merge
        self.this_join = this_join
        self.other_join = other_join
        self.this_windowed_name = this_windowed_name
        self.other_windowed_name = other_windowed_name
        self.this_store = this_store
        self.other_store = other_store
        self.outer_store = outer_store

    def write_to_topology(self, builder: Any) -> None:
        this_name = self.this_join.processor_name
        other_name = self.other_join.processor_name
        builder.add_processor(this_name, self.this_join.processor_supplier, self.this_windowed_name)
        builder.add_processor(other_name, self.other_join.processor_supplier, self.other_windowed_name)
        builder.add_processor(self.merge.processor_name, self.merge.processor_supplier, this_name, other_name)
        builder.add_state_store(self.this_store, self.this_windowed_name, other_name)
        builder.add_state_store(self.other_store, self.other_windowed_name, this_name)
        if self.outer_store is not None:
            builder.add_state_store(self.outer_store, this_name, other_name)


def _dsl_store_suppliers(sj: Any) -> Any:
    """The StreamJoined's DSL store suppliers, else Kafka's default (ROCKS_DB)."""
    from kspark.state.dsl_store_suppliers import BuiltInDslStoreSuppliers

    chosen = getattr(sj, "dsl_store_suppliers", None)
    return chosen if chosen is not None else BuiltInDslStoreSuppliers.ROCKS_DB


def _join_window_store(name: str, windows: JoinWindows, key_serde: Any, value_serde: Any, sj: Any) -> Any:
    """Kafka's ``StreamJoinedStoreFactory``: the join's window store from the DSL store suppliers."""
    from kspark.kstream.windows import EmitStrategy
    from kspark.state import Stores
    from kspark.state.dsl_store_suppliers import DslWindowParams

    params = DslWindowParams(
        name,
        windows.size() + windows.grace_period_ms(),
        windows.size(),
        True,
        EmitStrategy.on_window_update(),
        False,
        False,
    )
    supplier = _dsl_store_suppliers(sj).window_store(params)
    b = Stores.window_store_builder(supplier, key_serde, value_serde)
    if sj is None or sj.logging:
        # duplicates are retained, so the changelog must not be compacted
        config = dict((sj.log_config if sj is not None else None) or {})
        config["cleanup.policy"] = "delete"
        return b.with_logging_enabled(config)
    return b.with_logging_disabled()


def _supplied_window_store(supplier: Any, windows: JoinWindows, key_serde: Any, value_serde: Any) -> Any:
    """A join store from ``StreamJoined.with_this_store_supplier`` / ``with_other_store_supplier``:
    checked against the windows as Kafka's ``KStreamImplJoin.assertWindowSettings``, then built
    as given (Kafka's ``joinWindowStoreBuilderFromSupplier``: logging on, no extra topic config)."""
    from kspark.state import Stores
    from kspark.state.internals.builders import WindowBytesStoreSupplier

    if not isinstance(supplier, WindowBytesStoreSupplier):
        raise TypeError(
            f"a stream-stream join's store supplier must be a window store supplier "
            f"(Stores.persistent_window_store / in_memory_window_store), got {supplier!r}"
        )
    if not supplier.retain_duplicates():
        raise StreamsException(
            "The StoreSupplier must set retainDuplicates=true, found retainDuplicates=false"
        )
    if (
        supplier.retention_period() != windows.size() + windows.grace_period_ms()
        or supplier.window_size() != windows.size()
    ):
        raise StreamsException(
            f"Window settings mismatch. WindowBytesStoreSupplier settings {supplier!r} must match "
            f"JoinWindows settings {windows!r} for the window size and retention period"
        )
    return Stores.window_store_builder(supplier, key_serde, value_serde)


def _outer_join_store(
    name: str, key_serde: Any, this_value_serde: Any, other_value_serde: Any, sj: Any
) -> OuterJoinStoreBuilder:
    """The shared outer-join store (Kafka's ``OuterStreamJoinStoreFactory``), logged like the windows."""
    from kspark.state import Stores
    from kspark.state.dsl_store_suppliers import DslKeyValueParams

    # Kafka: the StreamJoined's DSL store suppliers; else the bytes-store type of an explicit
    # this-side supplier; else the default
    this_supplier = getattr(sj, "this_store_supplier", None)
    if getattr(sj, "dsl_store_suppliers", None) is None and this_supplier is not None:
        in_memory = not getattr(this_supplier, "persistent", True)
        supplier = (
            Stores.in_memory_key_value_store(name) if in_memory else Stores.persistent_key_value_store(name)
        )
    else:
        supplier = _dsl_store_suppliers(sj).key_value_store(DslKeyValueParams(name, False))
    b = OuterJoinStoreBuilder(supplier, key_serde, this_value_serde, other_value_serde)
    if sj is None or sj.logging:
        return b.with_logging_enabled(dict((sj.log_config if sj is not None else None) or {}))
    return b.with_logging_disabled()


def build_stream_stream_join(
    left: Any,
    right: Any,
    joiner: Joiner,
    windows: JoinWindows,
    stream_joined: Any,
    join_type: str,
    named: Any = None,
) -> Any:
    """Wire a windowed stream-stream join into the DSL graph; returns the joined ``KStream``.

    ``join_type`` is ``"inner"``, ``"left"`` or ``"outer"``; ``named`` (or the
    ``StreamJoined`` name) prefixes the processor names as Kafka does.
    """
    from kspark.kstream.kstream import KStream

    if not isinstance(windows, JoinWindows):
        raise TypeError(f"a KStream-KStream join needs JoinWindows, got {windows!r}")
    if join_type not in ("inner", "left", "outer"):
        raise ValueError(f"join_type must be 'inner', 'left' or 'outer', got {join_type!r}")
    sj = stream_joined
    builder = left._builder
    name = named if isinstance(named, str) else getattr(named, "name", None)
    name = name or getattr(sj, "name", None)
    key_serde = getattr(sj, "key_serde", None)
    this_value_serde = getattr(sj, "value_serde", None)
    other_value_serde = getattr(sj, "other_value_serde", None)

    this_stream, other_stream = left, right
    if this_stream._repartition_required:
        this_stream = this_stream._repartition_for_join(
            f"{name}-left" if name else this_stream._name, key_serde, this_value_serde
        )
    if other_stream._repartition_required:
        other_stream = other_stream._repartition_for_join(
            f"{name}-right" if name else other_stream._name, key_serde, other_value_serde
        )
    all_sources = this_stream._ensure_copartition_with([other_stream])

    left_outer = join_type in ("left", "outer")
    right_outer = join_type == "outer"
    this_suffix = "-outer-this-join" if right_outer else "-this-join"
    other_suffix = "-outer-other-join" if left_outer else "-other-join"
    this_windowed = f"{name}-this-windowed" if name else builder.new_processor_name("KSTREAM-WINDOWED-")
    other_windowed = f"{name}-other-windowed" if name else builder.new_processor_name("KSTREAM-WINDOWED-")
    this_prefix = "KSTREAM-OUTERTHIS-" if right_outer else "KSTREAM-JOINTHIS-"
    this_generated = builder.new_processor_name(this_prefix)
    other_generated = builder.new_processor_name(
        "KSTREAM-OUTEROTHER-" if left_outer else "KSTREAM-JOINOTHER-"
    )
    this_join_name = f"{name}{this_suffix}" if name else this_generated
    other_join_name = f"{name}{other_suffix}" if name else other_generated
    merge_name = f"{name}-merge" if name else builder.new_processor_name("KSTREAM-MERGE-")

    base_store = getattr(sj, "store_name", None)
    # explicit store suppliers take precedence over the DSL store suppliers (as Kafka's)
    this_supplier = getattr(sj, "this_store_supplier", None)
    other_supplier = getattr(sj, "other_store_supplier", None)
    if this_supplier is not None and other_supplier is not None and this_supplier.name == other_supplier.name:
        raise StreamsException(
            "Both StoreSuppliers have the same name.  StoreSuppliers must provide unique names"
        )
    this_keys, this_values = key_serde or this_stream._key_serde, this_value_serde or this_stream._value_serde
    other_keys, other_values = (
        key_serde or other_stream._key_serde,
        other_value_serde or other_stream._value_serde,
    )
    if this_supplier is not None:
        this_store = _supplied_window_store(this_supplier, windows, this_keys, this_values)
    else:
        name = (f"{base_store}{this_suffix}" if base_store else this_generated) + "-store"
        this_store = _join_window_store(name, windows, this_keys, this_values, sj)
    if other_supplier is not None:
        other_store = _supplied_window_store(other_supplier, windows, other_keys, other_values)
    else:
        name = (f"{base_store}{other_suffix}" if base_store else other_generated) + "-store"
        other_store = _join_window_store(name, windows, other_keys, other_values, sj)
    this_store_name, other_store_name = this_store.name, other_store.name

    this_windowed_node = ProcessorGraphNode(
        this_windowed, ProcessorParameters(lambda: JoinWindowProcessor(this_store_name), this_windowed)
    )
    builder.add_graph_node(this_stream._graph_node, this_windowed_node)
    other_windowed_node = ProcessorGraphNode(
        other_windowed, ProcessorParameters(lambda: JoinWindowProcessor(other_store_name), other_windowed)
    )
    builder.add_graph_node(other_stream._graph_node, other_windowed_node)

    outer_store: OuterJoinStoreBuilder | None = None
    if left_outer:
        shared_suffix = "-outer-shared-join" if right_outer else "-left-shared-join"
        # Kafka's OuterStreamJoinStoreFactory: after the this-side supplier, else the store name
        if this_supplier is not None and this_supplier.name:
            outer_name = f"{this_supplier.name}{shared_suffix}-store"
        elif base_store:
            outer_name = f"{base_store}{shared_suffix}-store"
        else:
            outer_name = "KSTREAM-OUTERSHARED-" + this_generated[len(this_prefix) :] + "-store"
        outer_store = _outer_join_store(
            outer_name,
            key_serde or this_stream._key_serde,
            this_value_serde or this_stream._value_serde,
            other_value_serde or other_stream._value_serde,
            sj,
        )

    trackers = TimeTrackerSupplier(this_join_name)
    outer_name_or_none = outer_store.name if outer_store is not None else None
    this_join = StreamStreamJoinSide(
        left_side=True,
        other_window_name=other_store_name,
        windows=windows,
        joiner=joiner,
        outer=left_outer,
        outer_join_store_name=outer_name_or_none,
        time_tracker_supplier=trackers,
    )
    other_join = StreamStreamJoinSide(
        left_side=False,
        other_window_name=this_store_name,
        windows=windows,
        joiner=lambda this_value, other_value: joiner(other_value, this_value),
        outer=right_outer,
        outer_join_store_name=outer_name_or_none,
        time_tracker_supplier=trackers,
    )
    join_node = StreamStreamJoinNode(
        ProcessorParameters(PassThrough, merge_name),
        ProcessorParameters(this_join, this_join_name),
        ProcessorParameters(other_join, other_join_name),
        this_windowed,
        other_windowed,
        this_store,
        other_store,
        outer_store,
    )
    if left_outer:
        join_node.labels.append("NULL_KEY_RELAXED_JOIN")
    builder.add_graph_node([this_stream._graph_node, other_stream._graph_node], join_node)
    return KStream(merge_name, key_serde, None, set(all_sources), False, join_node, builder)
