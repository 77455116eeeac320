"""Fused chains: one source, a straight line of stateless operators and a sink, run as closures.

The engine hands every record through a queue, a stamped record, a record
context, a ``Record`` and a node wrapper per operator: for a filter and a
``map_values`` (benchmark W1) that bookkeeping cost twice the user's own
work (``python -m bench.engine --workload W1``). A :class:`FusedChain` runs the same
operators as one closure per operator, each built by the processor itself
(``fuse(forward)``, next to its ``process``), and gives the same result
record by record:

* the same output records, in the same order, through the task's collector;
* a failing operator is handled as its ``ProcessorNode`` would handle it:
  the processing exception handler is asked with the same context (node,
  topic, partition, offset, headers, raw key and value) and the record the
  node received, and FAIL surfaces as the same ``StreamsException``;
* a serialization error goes to the collector's own path (production
  exception handler, dead-letter queue);
* the next record is deserialized before the current one is processed, as
  Kafka's ``RecordQueue`` does; from the first record the closures do not
  cover -- one that fails to deserialize or has a negative timestamp -- the
  rest of the input goes the task's own path, with the partition time the
  task would have had.

Only operators that see no record context are fused (their processors
are :class:`Fusable`): stateless ones, and a stream-table join, which only
reads its table through a value getter; anything else leaves the task as it
is. A stateful task's records from a source whose line is fusable run
through :meth:`FusedChain.take`, one at a time, in the order the task's
partition group chooses (``StreamTask.fuse_sources``).
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from kspark.errors import TaskMigratedException
from kspark.processor.api import Headers, Record
from kspark.processor.internals.nodes import (
    FailedProcessingException,
    ProcessorNode,
    ProcessorTopology,
    SinkNode,
    SourceNode,
)
from kspark.processor.internals.records import ConsumerRecord, ProcessorRecordContext, RawRecord
from kspark.processor.internals.timestamp_extractors import record_timestamp_extractor

if TYPE_CHECKING:
    from kspark.processor.internals.task import StreamTask

__all__ = ["FusedChain", "Fusable", "Step", "fusion_blocker", "fused_after_blocker"]

Step = Callable[[Any, Any], None]
"""A fused operator: takes a key and value, calls the next step for each record it would forward."""


class Fusable(ABC):
    """A processor that can run as a :data:`Step`: one that sees no record context (and no state
    but what it reads through a value getter).

    Only kspark's own DSL processors are (a user's processor with a method of
    the same name is not fused).
    """

    @abstractmethod
    def fuse(self, forward: Step) -> Step:
        """This processor as a step that calls ``forward`` for each record it would forward."""

    def fusable(self) -> bool:
        """Whether this processor, as it is now, can be fused (a processor whose state decides it
        says no before ``init``)."""
        return True


_NO_HEADERS = Headers()
"""The headers of every output record whose input had none. A fused chain's output goes only to
the Spark runner's sender, which reads headers and never changes them: sharing one empty
``Headers`` saved building one per record."""


def _no_children(key: Any, value: Any) -> None:
    """Forwarding from a node without children reaches nobody, as in the engine."""


def _fusable_line(entry: ProcessorNode) -> list[ProcessorNode] | str:
    """The nodes after ``entry`` if they form one line of fusable operators, ending in a sink
    with a fixed topic and the default partitioner or in an operator without children; else
    why not, in words."""
    chain: list[ProcessorNode] = []
    node = entry
    while node.children:
        if len(node.children) != 1:
            return f"{node.name} forwards to {len(node.children)} nodes"
        node = node.children[0]
        chain.append(node)
        if type(node) is SinkNode:
            if node.topic is None:
                return f"sink {node.name} chooses its topic per record"
            if node.partitioner is not None:
                return f"sink {node.name} has its own partitioner"
        elif type(node) is not ProcessorNode or node.fixed_key or not _fusable(node.processor):
            return f"{node.name} ({type(node.processor).__name__}) is not a fusable DSL operator"
    return chain


def _fusable(processor: object) -> bool:
    return isinstance(processor, Fusable) and processor.fusable()


def fusion_blocker(topology: ProcessorTopology, default_extractor: Any) -> str | None:
    """Why a task of ``topology`` cannot run as a :class:`FusedChain` from its source, or None when
    it can (:meth:`FusedChain.of` fuses exactly these). ``default_extractor``: the config's."""
    sources = {id(s): s for s in topology.sources_by_topic.values()}
    if len(sources) != 1:
        return f"{len(sources)} sources"
    if topology.state_store_builders:
        return "it has state stores"
    (source,) = sources.values()
    if not record_timestamp_extractor(source.timestamp_extractor or default_extractor):
        return "a timestamp extractor other than the record's own timestamp"
    chain = _fusable_line(source)
    if isinstance(chain, str):
        return chain
    if len(chain) + 1 != len(topology.processors):
        return "not every node is on the line from the source"
    return None


def fused_after_blocker(topology: ProcessorTopology, node_name: str) -> str | None:
    """Why what follows ``node_name`` cannot be fused (:meth:`FusedChain.after`), or None."""
    node = next((n for n in topology.processors if n.name == node_name), None)
    if node is None:
        return f"no node {node_name}"
    chain = _fusable_line(node)
    if isinstance(chain, str):
        return chain
    return None if chain else f"{node_name} forwards to nothing"


class FusedChain:
    """The operators after one node of a task, as closures.

    :meth:`of` fuses a whole task from its source (input via :meth:`process`);
    :meth:`after` fuses what follows a node whose output a runner computes
    itself (input via :meth:`forward_value`, as ``StreamTask.forward_from``).
    """

    def __init__(self, task: StreamTask, entry: ProcessorNode, chain: list[ProcessorNode]) -> None:
        self._task = task
        self._entry = entry
        self._nodes = chain
        # The input record being processed, for error contexts and the sink.
        self._topic = ""
        self._partition = -1
        self._offset = -1
        self._timestamp = -1
        self._raw: tuple[Any, Any, Any] = (None, None, None)  # key bytes, value bytes, headers as given
        self._to_headers: Callable[[Any], Headers] = Headers.copy
        self._fold: Callable[[], None] = lambda: None  # the terminal node's e2e tally (_tallied)
        self._step = self._build(0)

    @staticmethod
    def of(task: StreamTask) -> FusedChain | None:
        """``task`` fused from its source, or None unless it is one source, fusable operators and a
        sink (:func:`fusion_blocker` says why not)."""
        if task.stores or fusion_blocker(task.topology, task.default_timestamp_extractor) is not None:
            return None
        (source,) = {id(s): s for s in task.topology.sources_by_topic.values()}.values()
        chain = _fusable_line(source)
        assert not isinstance(chain, str)
        return FusedChain(task, source, chain)

    @staticmethod
    def after(task: StreamTask, node_name: str) -> FusedChain | None:
        """What follows ``node_name`` in ``task`` fused, or None unless it is fusable operators and a sink."""
        node = task.node(node_name)
        chain = _fusable_line(node) if node is not None else None
        if node is None or not chain or isinstance(chain, str):
            return None
        return FusedChain(task, node, chain)

    # ------------------------------------------------------------------ building
    def _build(self, index: int) -> Step:
        """The step of ``self._nodes[index]``, forwarding into the steps after it."""
        if index == len(self._nodes):
            return _no_children
        node = self._nodes[index]
        step = self._sink(node) if isinstance(node, SinkNode) else self._operator(index)
        return self._tallied(node, step) if index == len(self._nodes) - 1 else step

    def _operator(self, index: int) -> Step:
        """The step of the chain's operator ``index`` (not a sink)."""
        node = self._nodes[index]
        forward = self._build(index + 1)
        body = cast(Fusable, node.processor).fuse(forward)  # _fusable_line checked it
        context = node.context
        assert context is not None
        handle = context.handle_processing_exception

        def guarded(key: Any, value: Any) -> None:  # ProcessorNode.process
            try:
                body(key, value)
            except (FailedProcessingException, TaskMigratedException):
                raise
            except Exception as e:
                handle(node, Record(key, value, self._timestamp, self._enter(node)), e)

        return guarded

    def _tallied(self, terminal: ProcessorNode, step: Step) -> Step:
        """``step`` of the chain's terminal node, also tallying the timestamps of the records it
        processed: its ``record-e2e-latency`` (``StreamTask.e2e``), folded in by ``self._fold``
        once per :meth:`process` or :meth:`forward_value` rather than a clock read per record."""
        stats = self._task.e2e[terminal.name]
        count = ts_sum = 0
        ts_min, ts_max = sys.maxsize, -sys.maxsize

        def tallied(key: Any, value: Any) -> None:
            nonlocal count, ts_sum, ts_min, ts_max
            step(key, value)
            ts = self._timestamp
            count += 1
            ts_sum += ts
            if ts < ts_min:
                ts_min = ts
            if ts > ts_max:
                ts_max = ts

        def fold() -> None:
            nonlocal count, ts_sum, ts_min, ts_max
            if count:
                stats.record_tally(self._task.wall_clock_ms(), count, ts_sum, ts_min, ts_max)
                count = ts_sum = 0
                ts_min, ts_max = sys.maxsize, -sys.maxsize

        self._fold = fold
        return tallied

    def _sink(self, sink: SinkNode) -> Step:
        topic = sink.topic
        assert topic is not None and sink.context is not None
        key_serializer, value_serializer = sink.key_serializer, sink.value_serializer
        collector = sink.context.record_collector
        serialize_key, serialize_value = key_serializer.serialize, value_serializer.serialize
        send = collector.send_serialized

        def step(key: Any, value: Any) -> None:
            try:
                key_bytes = serialize_key(topic, key)
                value_bytes = serialize_value(topic, value)
            except Exception:
                # Serializers are pure: the collector's own send fails the same way and
                # takes the production exception handler's path with the record's context.
                headers = self._enter(sink)
                collector.send(
                    topic, key, value, headers, self._timestamp, key_serializer, value_serializer, sink.name
                )
                return
            raw_headers = self._raw[2]
            headers = self._to_headers(raw_headers) if raw_headers else _NO_HEADERS
            send(topic, None, key_bytes, value_bytes, headers, self._timestamp)

        return step

    def _headers(self) -> Headers:
        """A fresh copy of the current input record's headers (each output record owns its own)."""
        return self._headers_of(self._raw[2])

    def _enter(self, node: ProcessorNode) -> Headers:
        """Set the task's context as the engine has it while ``node`` processes the current record;
        returns the record's headers (the context's)."""
        ctx = self._task.context
        headers = self._headers()
        ctx.record_context = ProcessorRecordContext(
            self._timestamp, self._offset, self._partition, self._topic, headers
        )
        ctx.raw_key, ctx.raw_value = self._raw[0], self._raw[1]
        ctx.current_node = node
        return headers

    # ------------------------------------------------------------------ running
    def process(
        self,
        topic: str,
        partition: int,
        offsets: Sequence[int],
        timestamps: Sequence[int],
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        headers: Sequence[Any],
        to_headers: Callable[[Any], Headers],
        first: tuple[Any, Any] | None = None,
    ) -> None:
        """Process one topic-partition's records in offset order; output goes to the task's collector.

        ``headers`` holds each record's headers as the runner has them (falsy for
        none) and ``to_headers`` turns one into :class:`Headers`, only where a
        record's headers are needed. ``first``: the first record's key and value,
        already deserialized (by the task's queue), its timestamp not negative.
        """
        task = self._task
        source = self._entry
        assert isinstance(source, SourceNode), "process() is for a chain fused from its source"
        queue = task.input_queue(topic, partition)
        while task.process():  # records already queued come first, on the task's own path
            task.maybe_punctuate_stream_time()
        # The deserializers themselves, not SourceNode's wrappers (which only drop the headers).
        deserialize_key = source.key_deserializer.deserialize
        deserialize_value = source.value_deserializer.deserialize
        step = self._step
        self._topic, self._partition, self._to_headers = topic, partition, to_headers
        partition_time = queue.partition_time
        count = len(offsets)

        def stamped(i: int) -> tuple[Any, Any] | None:
            """Record ``i`` deserialized, or None when only the task's own path can take it."""
            try:
                key = deserialize_key(topic, keys[i])
                value = deserialize_value(topic, values[i])
            except Exception:
                return None
            return (key, value) if timestamps[i] >= 0 else None

        # As Kafka's RecordQueue, the next record is deserialized and stamped before the
        # current one is processed (its handler may fail or skip it first); from the first
        # record the closures cannot take, the rest of the input goes the task's own path.
        current = first if first is not None else stamped(0) if count else None
        key: Any = None
        value: Any = None
        i = 0
        try:
            while i < count:
                following = stamped(i + 1) if i + 1 < count else ()
                if current is None or following is None:
                    task.take_time(queue, partition_time)
                    task.add_records(
                        topic,
                        partition,
                        self._raw_records(topic, partition, i, offsets, timestamps, keys, values, headers),
                    )
                    while task.process():
                        task.maybe_punctuate_stream_time()
                    partition_time = queue.partition_time
                    break
                key, value = current
                timestamp = timestamps[i]
                self._offset, self._timestamp = offsets[i], timestamp
                self._raw = (keys[i], values[i], headers[i])
                if timestamp > partition_time:
                    partition_time = timestamp
                step(key, value)
                current = following or None
                i += 1
        except Exception as e:
            failed = ConsumerRecord(
                topic, partition, self._offset, self._timestamp, key, value, self._headers()
            )
            raise task.processing_failure(e, failed, source.name)  # noqa: B904 -- it sets the cause
        finally:
            task.context.current_node = None
            task.take_time(queue, partition_time)
        # The records the closures took (the task's own path records its own).
        task.e2e[source.name].record_timestamps(task.wall_clock_ms(), timestamps[:i])
        self._fold()

    def _raw_records(
        self,
        topic: str,
        partition: int,
        first: int,
        offsets: Sequence[int],
        timestamps: Sequence[int],
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        headers: Sequence[Any],
    ) -> list[RawRecord]:
        """The input from record ``first`` on, as the task's own path takes it."""
        return [
            RawRecord(
                topic, partition, offsets[i], timestamps[i], keys[i], values[i], self._headers_of(headers[i])
            )
            for i in range(first, len(offsets))
        ]

    def _headers_of(self, raw: Any) -> Headers:
        return self._to_headers(raw) if raw else Headers()

    def take(self, record: ConsumerRecord, timestamp: int, raw_key: Any, raw_value: Any) -> None:
        """Run one input record of the chain's source through it, as ``SourceNode.process`` would
        with the task's context set for it (``StreamTask.process``: it records the source's
        end-to-end latency and turns a failure into the task's error)."""
        self._topic, self._partition, self._offset = record.topic, record.partition, record.offset
        self._timestamp = timestamp
        self._raw, self._to_headers = (raw_key, raw_value, record.headers), Headers.copy
        self._step(record.key, record.value)
        self._fold()

    def forward_value(
        self,
        key: Any,
        value: Any,
        timestamp: int,
        topic: str,
        partition: int,
        offset: int,
        headers: Headers | None,
    ) -> None:
        """Run a record given by its parts (``headers`` None: none) through the chain as
        ``StreamTask.forward_from(entry, record, context)`` would, for a runner that forwards one
        record per updated count: no ``Record`` or context is built for it."""
        task = self._task
        self._topic, self._partition, self._offset = topic, partition, offset
        self._timestamp = timestamp
        self._raw, self._to_headers = (None, None, headers), Headers.copy
        try:
            self._step(key, value)
        except Exception as e:
            failed = ConsumerRecord(
                topic, partition, offset, timestamp, key, value, headers if headers is not None else Headers()
            )
            raise task.processing_failure(e, failed, self._entry.name)  # noqa: B904 -- it sets the cause
        finally:
            task.context.current_node = None
        self._fold()
