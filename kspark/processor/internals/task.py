"""``StreamTask``: runs one topology (or sub-topology) over its input partitions, one record at a time.

This is the engine every runner drives. The interface is small:

```python
task = StreamTask("0_0", builder.build_topology(nodes), StreamsConfig(cfg),
                  stores=None,            # or {name: StateStore} to plug in your own instances
                  global_stores=None,     # {name: StateStore} of an initialised GlobalStateTask
                  partitions_for=None,    # topic -> partition count, for sink partitioners
                  wall_clock_ms=0,
                  state_dir=None)         # the task's directory: persistent stores open under it
task.initialize()                          # init stores (store.init(context, store)) then processors
task.add_records(topic, partition, [RawRecord(topic, partition, offset, timestamp, key, value, headers)])
while task.process():                      # one record per call; False when nothing is queued
    task.maybe_punctuate_stream_time()
    task.commit()                          # flush stores (what Kafka does at commit)
task.set_wall_clock(ms); task.maybe_punctuate_system_time()
task.drain_output()   # -> [OutputRecord(topic, partition|None, key, value, timestamp, headers)]
task.stream_time, task.dropped_records_total
task.e2e              # {node: LatencyStats}: record-e2e-latency of the source and terminal nodes
task.fuse_sources()   # optional, after initialize(): fusable lines from a source run as closures
task.process_buffered()  # the while loop above, a fused source's queue in one call when it is alone
task.process_columns(topic, partition, offsets, timestamps, keys, values, headers, to_headers)
                      # -> bool: add_records + process_buffered for a fused source, if nothing is queued
task.close()
```

Semantics follow Kafka's ``StreamTask``: records are taken by head timestamp
across partitions (``PartitionGroup``); stream time is the largest timestamp
taken; stream-time punctuations fire from ``maybe_punctuate_stream_time``
(call it after each record), wall-clock ones from
``maybe_punctuate_system_time``; processor failures go through the processing
exception handler and surface as ``StreamsException`` naming the task,
processor, topic, partition and offset.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kspark.config import StreamsConfig
from kspark.errors import StreamsException, TaskMigratedException
from kspark.processor.api import Cancellable, Headers, PunctuationType, Punctuator, Record
from kspark.processor.internals.context import InternalProcessorContext
from kspark.processor.internals.exception_handlers import ErrorHandlerContext, HandlerResponse, to_response
from kspark.processor.internals.latency import LatencyStats
from kspark.processor.internals.nodes import (
    FailedProcessingException,
    ProcessorNode,
    ProcessorTopology,
    SourceNode,
)
from kspark.processor.internals.punctuation import PunctuationQueue, PunctuationSchedule
from kspark.processor.internals.record_collector import RecordCollector
from kspark.processor.internals.record_queue import PartitionGroup, RecordQueue
from kspark.processor.internals.records import ConsumerRecord, OutputRecord, ProcessorRecordContext, RawRecord
from kspark.processor.internals.timestamp_extractors import record_timestamp_extractor
from kspark.state.api import StateStore

if TYPE_CHECKING:
    from kspark.processor.internals.fused import FusedChain

__all__ = ["StreamTask", "deserialize_raw"]

_log = logging.getLogger(__name__)


def deserialize_raw(
    source: SourceNode,
    raw: RawRecord,
    task_id: str,
    handler: Callable[..., Any],
    on_dropped: Callable[[str], None],
    collector: RecordCollector | None,
) -> ConsumerRecord | None:
    """Deserialize ``raw`` with ``source``'s deserializers; on error ask ``handler`` (None = skip)."""
    try:
        key = source.deserialize_key(raw.topic, raw.headers, raw.key)
        value = source.deserialize_value(raw.topic, raw.headers, raw.value)
        return ConsumerRecord(raw.topic, raw.partition, raw.offset, raw.timestamp, key, value, raw.headers)
    except Exception as error:
        ctx = ErrorHandlerContext(
            raw.topic,
            raw.partition,
            raw.offset,
            raw.headers,
            source.name,
            task_id,
            raw.timestamp,
            raw.key,
            raw.value,
        )
        try:
            response = to_response(handler(ctx, raw, error), "DeserializationExceptionHandler")
        except Exception as fatal:
            raise StreamsException(
                f"Fatal user code error in deserialization error callback: {fatal!r}"
            ) from error
        if collector is not None:
            collector.maybe_send_to_dead_letter_queue(ctx, error)
        if response is HandlerResponse.FAIL:
            raise StreamsException(
                "Deserialization exception handler is set to fail upon a deserialization error "
                f"(topic={raw.topic}, partition={raw.partition}, offset={raw.offset}, source={source.name}: "
                f"{error}). If you would rather have the streaming pipeline continue after a deserialization "
                "error, please set the default.deserialization.exception.handler appropriately."
            ) from error
        _log.warning(
            "Skipping record due to deserialization error. topic=[%s] partition=[%s] offset=[%s]: %s",
            raw.topic,
            raw.partition,
            raw.offset,
            error,
        )
        on_dropped("deserialization error")
        return None


class StreamTask:
    """An active task; see the module docstring for the runner-facing interface."""

    def __init__(
        self,
        task_id: str,
        topology: ProcessorTopology,
        config: StreamsConfig,
        *,
        stores: Mapping[str, StateStore] | None = None,
        global_stores: Mapping[str, StateStore] | None = None,
        partitions_for: Callable[[str], int | None] | None = None,
        wall_clock_ms: int = 0,
        partition: int = 0,
        processor_metadata: Mapping[str, int] | None = None,
        state_dir: str | None = None,
    ) -> None:
        self.task_id = task_id
        self.topology = topology
        self.config = config
        self.partition = partition
        # Kafka commits this with the input offsets (e.g. a windowed aggregation's last
        # emitted window-close time); a runner persists it with the task and hands it back.
        self.processor_metadata: dict[str, int] = dict(processor_metadata or {})
        self._wall_clock_ms = wall_clock_ms
        self.dropped_records_total = 0
        self.commit_requested = False
        self.stores: dict[str, StateStore] = dict(stores) if stores is not None else topology.build_stores()
        missing = set(topology.state_store_builders) - set(self.stores)
        if missing:
            raise StreamsException(f"Task {task_id}: no store instance given for {sorted(missing)}")
        self.collector = RecordCollector(
            task_id,
            config.production_exception_handler(),
            self.record_dropped,
            partitions_for,
            config.dead_letter_queue_topic(),
            error_context=lambda node: self.context.error_context(node),
        )
        self.context = InternalProcessorContext(
            task_id,
            config,
            self,
            self.stores,
            dict(global_stores or {}),
            self.collector,
            topology.store_to_changelog_topic,
            partition,
            state_dir=state_dir,
        )
        self._stream_punctuations = PunctuationQueue()
        self._system_punctuations = PunctuationQueue()
        self.partition_group = PartitionGroup()
        self._deserialization_handler = config.deserialization_exception_handler()
        self._default_extractor = config.default_timestamp_extractor()
        self._initialized = False
        self._closed = False
        self._nodes_by_name = {n.name: n for n in topology.processors}
        # record-e2e-latency of the source and terminal nodes, as Kafka Streams keeps them.
        self.e2e: dict[str, LatencyStats] = {
            n.name: LatencyStats() for n in topology.processors if isinstance(n, SourceNode) or not n.children
        }
        self._fused_sources: dict[str, FusedChain] = {}  # by source node name: fuse_sources()

    # ------------------------------------------------------------------ TaskServices
    def stream_time(self) -> int:
        return self.partition_group.stream_time

    def wall_clock_ms(self) -> int:
        return self._wall_clock_ms

    def record_dropped(self, reason: str = "") -> None:
        self.dropped_records_total += 1

    def record_e2e_latency(self, node_name: str, timestamp: int) -> None:
        stats = self.e2e.get(node_name)
        if stats is not None:
            stats.record(self._wall_clock_ms - timestamp)

    def request_commit(self) -> None:
        self.commit_requested = True

    def schedule(
        self, node: ProcessorNode, interval: int, kind: PunctuationType, callback: Punctuator
    ) -> Cancellable:
        if kind is PunctuationType.STREAM_TIME:
            # aligned to 0: fires as soon as stream time is known
            return self._stream_punctuations.schedule(PunctuationSchedule(node, 0, interval, callback))
        return self._system_punctuations.schedule(
            PunctuationSchedule(node, self._wall_clock_ms + interval, interval, callback)
        )

    # ------------------------------------------------------------------ lifecycle
    def initialize(self) -> None:
        if self._initialized:
            return
        for store in self.stores.values():
            store.init(self.context, store)
        for node in self.topology.processors:
            self.context.current_node = node
            try:
                node.init(self.context)
            finally:
                self.context.current_node = None
        self.context.record_context = None
        self._initialized = True

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        errors: list[BaseException] = []
        for node in self.topology.processors:
            self.context.current_node = node
            try:
                node.close()
            except Exception as e:
                errors.append(e)
            finally:
                self.context.current_node = None
        for store in self.stores.values():
            try:
                store.close()
            except Exception as e:
                errors.append(e)
        self._stream_punctuations.close()
        self._system_punctuations.close()
        if errors:
            raise StreamsException(f"Task {self.task_id}: failure while closing: {errors[0]!r}") from errors[
                0
            ]

    # ------------------------------------------------------------------ input
    def add_records(self, topic: str, partition: int, records: Iterable[RawRecord]) -> int:
        """Buffer raw records of ``topic``-``partition``; returns how many that partition now buffers."""
        key = (topic, partition)
        if key not in self.partition_group.queues:
            source = self.topology.source(topic)
            if source is None:
                raise StreamsException(f"Task {self.task_id} does not read topic {topic}")
            extractor = source.timestamp_extractor or self._default_extractor
            self.partition_group.add_queue(
                RecordQueue(topic, partition, source, extractor, self._deserialize, self.record_dropped)
            )
        return self.partition_group.add_raw_records(topic, partition, records)

    def input_queue(self, topic: str, partition: int) -> RecordQueue:
        """The queue of ``topic``-``partition`` (created empty if need be), for a fused chain."""
        self.add_records(topic, partition, [])
        return self.partition_group.queues[(topic, partition)]

    def take_time(self, queue: RecordQueue, timestamp: int) -> None:
        """Advance partition and stream time as taking a record stamped ``timestamp`` from ``queue``
        would: a fused chain takes records without the queue."""
        queue.partition_time = max(queue.partition_time, timestamp)
        self.partition_group.stream_time = max(self.partition_group.stream_time, timestamp)

    @property
    def default_timestamp_extractor(self) -> Any:
        """``default.timestamp.extractor``, for sources without their own."""
        return self._default_extractor

    def has_records_queued(self) -> bool:
        return self.partition_group.num_buffered() > 0

    def _deserialize(self, source: SourceNode, raw: RawRecord) -> ConsumerRecord | None:
        return deserialize_raw(
            source, raw, self.task_id, self._deserialization_handler, self.record_dropped, self.collector
        )

    # ------------------------------------------------------------------ processing
    def process(self, wall_clock_ms: int | None = None) -> bool:
        """Process the next record (by head timestamp); False when nothing is buffered."""
        if wall_clock_ms is not None:
            self._wall_clock_ms = wall_clock_ms
        nxt = self.partition_group.next_record()
        if nxt is None:
            return False
        stamped, queue = nxt
        if stamped.record is None:
            return True
        rec = stamped.record
        ctx = self.context
        ctx.record_context = ProcessorRecordContext(
            stamped.timestamp, rec.offset, rec.partition, rec.topic, rec.headers
        )
        ctx.raw_key, ctx.raw_value = stamped.raw.key, stamped.raw.value
        ctx.current_node = queue.source
        self.e2e[queue.source.name].record(self._wall_clock_ms - stamped.timestamp)
        fused = self._fused_sources.get(queue.source.name)
        try:
            if fused is None:
                queue.source.process(Record(rec.key, rec.value, stamped.timestamp, rec.headers))
            else:
                fused.take(rec, stamped.timestamp, stamped.raw.key, stamped.raw.value)
        except Exception as e:
            node = ctx.current_node.name if ctx.current_node else queue.source.name
            raise self.processing_failure(e, rec, node)  # noqa: B904 -- it sets the cause
        finally:
            ctx.current_node = None
        return True

    def process_buffered(self) -> None:
        """Process every buffered record, punctuating stream time after each: ``while process():
        maybe_punctuate_stream_time()``, with the same results. A queue that is the only one
        holding records, from a source fused by :meth:`fuse_sources`, goes through its line in
        one call (:meth:`FusedChain.process <kspark.processor.internals.fused.FusedChain.process>`)
        rather than a record at a time through the partition group."""
        while True:
            queue = self._sole_fused_queue()
            if queue is not None:
                self._process_fused(queue)
            elif self.process():
                self.maybe_punctuate_stream_time()
            else:
                return

    def process_until_empty(self, queue: RecordQueue) -> None:
        """Process records, each from the queue with the smallest head timestamp as
        :meth:`process` takes them, until ``queue`` has none buffered (a runner then refills
        it); in one call through its fused line when it is the only queue with records, as in
        :meth:`process_buffered`."""
        if self._sole_fused_queue() is queue:
            self._process_fused(queue)
            return
        while not queue.is_empty() and self.process():
            self.maybe_punctuate_stream_time()

    def process_columns(
        self,
        topic: str,
        partition: int,
        offsets: Sequence[int],
        timestamps: Sequence[int],
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        headers: Sequence[Any],
        to_headers: Callable[[Any], Headers],
    ) -> bool:
        """Process records of ``topic``-``partition`` given as columns (``headers`` as the runner
        has them, ``to_headers`` makes ``Headers`` of one), as :meth:`add_records` followed by
        :meth:`process_buffered` would, through the source's fused line in one call: only when
        nothing is buffered and the line may take records alone (:meth:`_takes_alone`).
        Returns whether it did; if not, nothing was done (the caller adds the records)."""
        if not self._fused_sources or self.partition_group.num_buffered():
            return False
        queue = self.input_queue(topic, partition)
        if not self._takes_alone(queue):
            return False
        chain = self._fused_sources[queue.source.name]
        chain.process(topic, partition, offsets, timestamps, keys, values, headers, to_headers)
        return True

    def _sole_fused_queue(self) -> RecordQueue | None:
        """The queue whose records :meth:`_process_fused` may take all at once: the only one with
        records, and one its fused line may take alone (:meth:`_takes_alone`)."""
        if not self._fused_sources:
            return None
        candidates = [q for q in self.partition_group.queues.values() if not q.is_empty()]
        if len(candidates) != 1:
            return None
        (queue,) = candidates
        if queue.head_timestamp() < 0:
            return None  # only a corrupted record, kept for its offset
        return queue if self._takes_alone(queue) else None

    def _takes_alone(self, queue: RecordQueue) -> bool:
        """Whether ``queue``'s source's fused line may take its records in one call while no other
        queue has any: the line is fused, stamps by the record's own timestamp, and no stream-time
        punctuation is scheduled (it could be due between two of the records)."""
        if queue.source.name not in self._fused_sources or self._stream_punctuations.next_due() is not None:
            return False
        return record_timestamp_extractor(queue.source.timestamp_extractor or self._default_extractor)

    def _process_fused(self, queue: RecordQueue) -> None:
        """Every record of ``queue`` through its source's fused line in one
        :meth:`FusedChain.process` call, which gives the same output, stream time and failures as
        taking them one at a time; the head goes in as the queue deserialized it."""
        chain = self._fused_sources[queue.source.name]
        head, rest = self.partition_group.take_all(queue)
        assert head is not None and head.record is not None
        raws = [head.raw, *rest]
        chain.process(
            queue.topic,
            queue.partition,
            [r.offset for r in raws],
            [head.timestamp, *[r.timestamp for r in rest]],
            [r.key for r in raws],
            [r.value for r in raws],
            [r.headers for r in raws],
            Headers.copy,
            first=(head.record.key, head.record.value),
        )

    def fuse_sources(self) -> list[str]:
        """From now on, run the records of each source whose line of operators is fusable (to a
        sink, see :mod:`~kspark.processor.internals.fused`) as closures, with the same results;
        returns the sources fused. The order records are taken in, stream time and punctuation
        stay the task's. A runner's choice: the TopologyTestDriver runs every record through the
        nodes, the reference the fused lines are checked against."""
        from kspark.processor.internals.fused import FusedChain

        assert self._initialized, (
            "fuse_sources() after initialize(): a join is fusable once it knows its table"
        )
        for source in {id(s): s for s in self.topology.sources_by_topic.values()}.values():
            chain = FusedChain.after(self, source.name)
            if chain is not None:
                self._fused_sources[source.name] = chain
        return sorted(self._fused_sources)

    def processing_failure(self, error: Exception, rec: ConsumerRecord, node_name: str) -> Exception:
        """What a failure while processing ``rec`` surfaces as, with its cause set: a
        ``StreamsException`` naming the task, the failed node (``node_name`` unless the
        handler's FAIL named one), topic, partition and offset; Streams and
        task-migrated exceptions as they are."""
        if isinstance(error, FailedProcessingException):
            failure = StreamsException(self._process_error(error.node_name, rec, error.cause))
            failure.__cause__ = error.cause
            return failure
        if isinstance(error, (StreamsException, TaskMigratedException)):
            return error
        failure = StreamsException(self._process_error(node_name, rec, error))
        failure.__cause__ = error
        return failure

    def forward_from(
        self, node_name: str, record: Record[Any, Any], record_context: ProcessorRecordContext
    ) -> None:
        """Hand ``record`` to the children of ``node_name`` as that node would forward it.

        For a runner that computed the node's output itself (the Spark runner's
        native count): the children run exactly as after ``process``, with the
        same error handling, and ``record_context`` is what they see as the
        record's topic, partition, offset and headers.
        """
        node = self.node(node_name)
        if node is None:
            raise StreamsException(f"Task {self.task_id} has no node {node_name}")
        ctx = self.context
        ctx.record_context = record_context
        ctx.raw_key = ctx.raw_value = None
        ctx.current_node = node

        def as_consumed() -> ConsumerRecord:  # for an error message: built only when a record fails
            return ConsumerRecord(
                record_context.topic or "",
                record_context.partition,
                record_context.offset,
                record.timestamp,
                record.key,
                record.value,
                record.headers,
            )

        try:
            ctx.forward(record)
        except Exception as e:
            failed = ctx.current_node.name if ctx.current_node else node_name
            raise self.processing_failure(e, as_consumed(), failed)  # noqa: B904 -- it sets the cause
        finally:
            ctx.current_node = None

    def _process_error(self, node: str, rec: ConsumerRecord, cause: BaseException) -> str:
        return (
            f"Exception caught in process. taskId={self.task_id}, processor={node}, topic={rec.topic}, "
            f"partition={rec.partition}, offset={rec.offset}: {type(cause).__name__}: {cause}"
        )

    def maybe_punctuate_stream_time(self) -> bool:
        st = self.partition_group.stream_time
        if st == -1:
            return False
        fired = self._stream_punctuations.may_punctuate(st, PunctuationType.STREAM_TIME, self._punctuate)
        if fired:
            self.commit_requested = True
        return fired

    def set_wall_clock(self, wall_clock_ms: int) -> None:
        self._wall_clock_ms = wall_clock_ms

    def next_wall_clock_punctuation(self) -> int | None:
        """The wall-clock time (ms) the next WALL_CLOCK_TIME punctuation is due; a runner sets a timer."""
        return self._system_punctuations.next_due()

    def wall_clock_schedules(self) -> list[tuple[str, int, int]]:
        """(node, interval, next due) of the wall-clock punctuations, for a runner to persist."""
        return self._system_punctuations.due_times()

    def restore_wall_clock_schedules(self, due_times: list[tuple[str, int, int]]) -> None:
        """Continue the wall-clock punctuations of an earlier instance of this task where it left them.

        Without this a task rebuilt on another worker would start its
        schedules at ``now + interval`` again, and one rebuilt every batch
        would never punctuate.
        """
        self._system_punctuations.restore_due_times(due_times)

    def maybe_punctuate_system_time(self, wall_clock_ms: int | None = None) -> bool:
        if wall_clock_ms is not None:
            self._wall_clock_ms = wall_clock_ms
        fired = self._system_punctuations.may_punctuate(
            self._wall_clock_ms, PunctuationType.WALL_CLOCK_TIME, self._punctuate
        )
        if fired:
            self.commit_requested = True
        return fired

    def _punctuate(
        self, node: ProcessorNode, timestamp: int, kind: PunctuationType, punctuator: Punctuator
    ) -> None:
        ctx = self.context
        if ctx.current_node is not None:
            raise StreamsException(
                f"Task {self.task_id}: cannot punctuate while node {ctx.current_node.name} runs"
            )
        ctx.record_context = ProcessorRecordContext(timestamp, -1, -1, None, Headers())
        ctx.raw_key = ctx.raw_value = None
        ctx.current_node = node
        try:
            punctuator(timestamp)
        except FailedProcessingException as e:
            raise StreamsException(
                f"task [{self.task_id}] Exception caught while punctuating processor "
                f"'{node.name}': {e.cause!r}"
            ) from e.cause
        except TaskMigratedException:
            raise
        except Exception as e:
            ectx = ctx.error_context(node.name)
            handler = self.config.processing_exception_handler()
            try:
                response = to_response(handler(ectx, None, e), "ProcessingExceptionHandler")
            except Exception as fatal:
                raise StreamsException(
                    f"Fatal user code error in processing error callback: {fatal!r}"
                ) from e
            if response is HandlerResponse.FAIL:
                raise StreamsException(
                    f"task [{self.task_id}] Exception caught while punctuating processor '{node.name}': {e!r}"
                ) from e
            self.record_dropped("punctuation error")
        finally:
            ctx.current_node = None

    # ------------------------------------------------------------------ commit and output
    def commit(self) -> None:
        """Flush every store (caches forward, logged stores write their changelog), as at a Kafka commit."""
        for store in self.stores.values():
            store.flush()
        self.commit_requested = False

    def drain_output(self) -> list[OutputRecord]:
        return self.collector.drain()

    def node(self, name: str) -> ProcessorNode | None:
        return self._nodes_by_name.get(name)
