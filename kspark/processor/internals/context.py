"""The concrete ``ProcessorContext`` a task hands its processors and stores.

Beyond the public api it tracks the node currently running and the record
context of the record in flight (switched on every ``forward`` as Kafka's
``ProcessorContextImpl`` does), and adds what the DSL and stores need:
``record_dropped`` (the task's ``dropped-records-total``), ``log_change``
(changelog records go through the record collector to
``<application.id>-<store>-changelog``), ``register`` (store registration)
and ``record_collector``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol

from kspark.errors import StreamsException
from kspark.processor.api import (
    Cancellable,
    Headers,
    ProcessorContext,
    PunctuationType,
    Punctuator,
    Record,
    RecordMetadata,
    to_millis,
)
from kspark.processor.internals.exception_handlers import ErrorHandlerContext, HandlerResponse, to_response
from kspark.processor.internals.nodes import FailedProcessingException, ProcessorNode
from kspark.processor.internals.records import ProcessorRecordContext

if TYPE_CHECKING:
    from kspark.config import StreamsConfig
    from kspark.processor.internals.record_collector import RecordCollector
    from kspark.state.api import StateStore

__all__ = ["InternalProcessorContext", "TaskServices"]


class TaskServices(Protocol):
    """What a context needs from the task running it."""

    def stream_time(self) -> int: ...

    def wall_clock_ms(self) -> int: ...

    def schedule(
        self, node: ProcessorNode, interval: int, kind: PunctuationType, callback: Punctuator
    ) -> Cancellable: ...

    def record_dropped(self, reason: str) -> None: ...

    def record_e2e_latency(self, node_name: str, timestamp: int) -> None: ...

    def request_commit(self) -> None: ...

    processor_metadata: dict[str, int]


class InternalProcessorContext(ProcessorContext):
    """``ProcessorContext`` of one task (or of the global state task, with ``is_global``)."""

    def __init__(
        self,
        task_id: str,
        config: StreamsConfig,
        services: TaskServices,
        stores: dict[str, StateStore],
        global_stores: dict[str, StateStore],
        record_collector: RecordCollector,
        changelog_topics: dict[str, str] | None = None,
        changelog_partition: int = 0,
        is_global: bool = False,
        state_dir: str | None = None,
    ) -> None:
        self._task_id = task_id
        self._state_dir = state_dir
        self._config = config
        self._services = services
        self._stores = stores
        self._global_stores = global_stores
        self.record_collector = record_collector
        # Store name -> changelog topic; a copy, as the default names are added on first use.
        self._changelog_topics = dict(changelog_topics or {})
        self._changelog_partition = changelog_partition
        self.is_global = is_global
        self.current_node: ProcessorNode | None = None
        self.record_context: ProcessorRecordContext | None = None
        self.raw_key: bytes | None = None
        self.raw_value: bytes | None = None
        self.restore_callbacks: dict[str, Callable[..., Any] | None] = {}
        self._processing_handler = config.processing_exception_handler()

    # ---------------------------------------------------------------- identity
    def application_id(self) -> str:
        return self._config.application_id()

    def task_id(self) -> str:
        return self._task_id

    def state_dir(self) -> str | None:
        return self._state_dir

    def app_config(self) -> dict[str, Any]:
        return {k: self._config[k] for k in self._config}

    def key_serde(self) -> Any:
        return self._config.default_key_serde()

    def value_serde(self) -> Any:
        return self._config.default_value_serde()

    # ---------------------------------------------------------------- record metadata
    def record_metadata(self) -> RecordMetadata | None:
        rc = self.record_context
        if rc is None or rc.topic is None:
            return None
        return RecordMetadata(rc.topic, rc.partition, rc.offset)

    def timestamp(self) -> int:
        rc = self.record_context
        if rc is None:
            raise StreamsException(
                "This should not happen as timestamp() should only be called while a record is processed"
            )
        return rc.timestamp

    def headers(self) -> Headers:
        rc = self.record_context
        return rc.headers if rc is not None else Headers()

    def current_stream_time_ms(self) -> int:
        return self._services.stream_time()

    def current_system_time_ms(self) -> int:
        return self._services.wall_clock_ms()

    # ---------------------------------------------------------------- forwarding
    def forward(self, record: Record[Any, Any], child_name: str | None = None) -> None:
        node = self.current_node
        if node is None:
            raise StreamsException(
                "Current node is unknown. This can happen if 'forward()' is called in an illegal scope. "
                "The root cause could be that a 'Processor' instance is shared: make sure the supplier "
                "returns a new instance on every call."
            )
        if not isinstance(record, Record):
            raise StreamsException(f"Processor {node.name} forwarded {record!r}; forward() takes a Record")
        if node.fixed_key and record.key is not node.current_key and record.key != node.current_key:
            raise StreamsException(
                f"FixedKeyProcessor {node.name} changed the key from {node.current_key!r} to {record.key!r}"
            )
        previous_context = self.record_context
        try:
            rc = self.record_context
            if rc is not None and (record.timestamp != rc.timestamp or record.headers is not rc.headers):
                self.record_context = ProcessorRecordContext(
                    record.timestamp, rc.offset, rc.partition, rc.topic, record.headers
                )
            if child_name is None:
                for child in node.children:
                    self.current_node = child
                    child.process(record)
                    if not child.children:  # a terminal node: Kafka Streams' record-e2e-latency
                        self._services.record_e2e_latency(child.name, record.timestamp)
            else:
                named = node.child(child_name)
                if named is None:
                    raise StreamsException(
                        f"Unknown downstream node: {child_name} either does not exist or is not connected to "
                        f"this processor ({node.name})."
                    )
                self.current_node = named
                named.process(record)
                if not named.children:
                    self._services.record_e2e_latency(named.name, record.timestamp)
        finally:
            self.record_context = previous_context
            self.current_node = node

    # ---------------------------------------------------------------- punctuation, commit
    def schedule(
        self, interval: int | timedelta, punctuation_type: PunctuationType, callback: Punctuator
    ) -> Cancellable:
        ms = to_millis(interval, "interval")
        if ms < 1:
            raise ValueError(f"The minimum supported scheduling interval is 1 millisecond, got {ms}")
        if self.is_global:
            raise StreamsException("schedule() is not supported by the global state update processor")
        if self.current_node is None:
            raise StreamsException("schedule() must be called from a processor (current node is unknown)")
        if not isinstance(punctuation_type, PunctuationType):
            raise ValueError(f"Unrecognized PunctuationType: {punctuation_type!r}")
        return self._services.schedule(self.current_node, ms, punctuation_type, callback)

    def commit(self) -> None:
        self._services.request_commit()

    # ---------------------------------------------------------------- stores
    def get_state_store(self, name: str) -> StateStore:
        store = self._global_stores.get(name)
        if store is not None:
            return store
        node = self.current_node
        if node is None:
            raise StreamsException("Accessing from an unknown node")
        if self.is_global:
            raise StreamsException(f"Global processor {node.name} has no access to store {name}")
        if name not in node.state_store_names:
            raise StreamsException(
                f"Processor {node.name} has no access to StateStore {name} as the store is not connected to "
                "the processor. If you add stores manually via '.add_state_store()' make sure to connect the "
                "added store to the processor by providing the processor name to '.add_state_store()' or "
                "connect them via '.connect_processor_and_state_stores()'. DSL users need to provide the "
                "store name to '.process()' to connect the store to the corresponding operator."
            )
        return self._stores[name]

    def register(self, store: Any, restore_callback: Callable[..., Any] | None = None) -> None:
        """Stores call this from ``init``; the driver restores nothing (state starts empty)."""
        self.restore_callbacks[str(store.name)] = restore_callback

    def add_processor_metadata_key_value(self, key: str, value: int) -> None:
        """Kafka's processor metadata: committed with the task, read back when it is restored."""
        self._services.processor_metadata[key] = value

    def processor_metadata_for_key(self, key: str) -> int | None:
        return self._services.processor_metadata.get(key)

    def log_change(self, store_name: str, key: bytes | None, value: bytes | None, timestamp: int) -> None:
        """Send a changelog record for ``store_name`` (only stores with logging enabled call this)."""
        topic = self._changelog_topics.get(store_name)
        if topic is None:  # named once: a changelog record per write asked the config each time
            topic = self._changelog_topics[store_name] = f"{self.application_id()}-{store_name}-changelog"
        self.record_collector.send_serialized(
            topic, self._changelog_partition, key, value, Headers(), timestamp
        )

    # ---------------------------------------------------------------- metrics and errors
    def record_dropped(self, reason: str = "") -> None:
        self._services.record_dropped(reason)

    def error_context(self, node_name: str | None) -> ErrorHandlerContext:
        rc = self.record_context
        return ErrorHandlerContext(
            topic=rc.topic if rc else None,
            partition=rc.partition if rc else -1,
            offset=rc.offset if rc else -1,
            headers=rc.headers if rc else Headers(),
            processor_node_id=node_name,
            task_id=self._task_id,
            timestamp=rc.timestamp if rc else -1,
            source_raw_key=self.raw_key,
            source_raw_value=self.raw_value,
        )

    def handle_processing_exception(self, node: ProcessorNode, record: Any, error: Exception) -> None:
        """Ask the processing exception handler; FAIL raises, CONTINUE counts a dropped record."""
        ctx = self.error_context(node.name)
        try:
            response = to_response(self._processing_handler(ctx, record, error), "ProcessingExceptionHandler")
        except Exception as fatal:
            raise FailedProcessingException(node.name, fatal) from error
        self.record_collector.maybe_send_to_dead_letter_queue(ctx, error)
        if response is HandlerResponse.FAIL:
            raise FailedProcessingException(node.name, error) from error
        self.record_dropped("processing error")
