"""``GlobalStateTask``: keeps global stores up to date from their topics (Kafka's ``GlobalStateUpdateTask``).

Each record of a global topic is deserialized (errors are logged and
skipped, as Kafka's test driver configures it), given the record's own
timestamp, and passed to the store's state-update processor; stores are
flushed after each update.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark.config import StreamsConfig
from kspark.errors import StreamsException
from kspark.processor.api import Cancellable, PunctuationType, Punctuator, Record
from kspark.processor.internals.context import InternalProcessorContext
from kspark.processor.internals.exception_handlers import LogAndContinueExceptionHandler
from kspark.processor.internals.nodes import FailedProcessingException, ProcessorNode, ProcessorTopology
from kspark.processor.internals.record_collector import RecordCollector
from kspark.processor.internals.records import ProcessorRecordContext, RawRecord
from kspark.processor.internals.task import deserialize_raw
from kspark.state.api import StateStore

__all__ = ["GlobalStateTask"]


class GlobalStateTask:
    """Runs the global sources and state-update processors of a topology."""

    def __init__(
        self,
        topology: ProcessorTopology,
        config: StreamsConfig,
        wall_clock: Callable[[], int],
        *,
        stores: dict[str, StateStore] | None = None,
        deserialization_handler: Callable[..., Any] | None = None,
        state_dir: str | None = None,
    ) -> None:
        self.topology = topology
        self._wall_clock = wall_clock
        self.stores: dict[str, StateStore] = stores if stores is not None else topology.build_stores()
        self.dropped_records_total = 0
        self.processor_metadata: dict[str, int] = {}
        self._handler = deserialization_handler or LogAndContinueExceptionHandler()
        self.collector = RecordCollector("global", config.production_exception_handler(), self.record_dropped)
        self.context = InternalProcessorContext(
            "global", config, self, {}, self.stores, self.collector, is_global=True, state_dir=state_dir
        )

    # TaskServices
    def stream_time(self) -> int:
        return -1

    def wall_clock_ms(self) -> int:
        return self._wall_clock()

    def schedule(
        self, node: ProcessorNode, interval: int, kind: PunctuationType, callback: Punctuator
    ) -> Cancellable:
        raise StreamsException("schedule() is not supported for global state update processors")

    def record_dropped(self, reason: str = "") -> None:
        self.dropped_records_total += 1

    def record_e2e_latency(self, node_name: str, timestamp: int) -> None:
        """Kafka Streams keeps no end-to-end latency for global stores' updates."""

    def request_commit(self) -> None:
        pass

    def initialize(self) -> None:
        for store in self.stores.values():
            store.init(self.context, store)
        for node in self.topology.processors:
            self.context.current_node = node
            try:
                node.init(self.context)
            finally:
                self.context.current_node = None
        self.context.record_context = None

    def update(self, raw: RawRecord) -> None:
        source = self.topology.source(raw.topic)
        if source is None:
            raise StreamsException(f"Topic {raw.topic} is not a global store topic")
        rec = deserialize_raw(source, raw, "global", self._handler, self.record_dropped, None)
        if rec is None:
            return
        ctx = self.context
        ctx.record_context = ProcessorRecordContext(
            rec.timestamp, rec.offset, rec.partition, rec.topic, rec.headers
        )
        ctx.current_node = source
        try:
            source.process(Record(rec.key, rec.value, rec.timestamp, rec.headers))
        except FailedProcessingException as e:
            raise StreamsException(
                f"Exception caught while updating global store from topic {raw.topic} at offset {raw.offset} "
                f"in processor {e.node_name}: {e.cause!r}"
            ) from e.cause
        finally:
            ctx.current_node = None

    def flush(self) -> None:
        for store in self.stores.values():
            store.flush()

    def close(self) -> None:
        for node in self.topology.processors:
            node.close()
        for store in self.stores.values():
            store.close()
