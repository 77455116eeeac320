"""The record collector: serializes what sinks send and buffers it as ``OutputRecord``s.

As Kafka's ``RecordCollectorImpl``: serialization errors go to the
production exception handler (FAIL raises, CONTINUE drops and counts the
record); a partitioner ``(topic, key, value, num_partitions) -> int |
Iterable[int] | None`` picks one partition, several (multicast), none (an
empty collection drops the record) or, with ``None``, leaves it to the
default partitioner (``partition=None`` in the output). With
``errors.dead.letter.queue.topic.name`` set, records that a handler
reports on are also written to that topic (KIP-1034) with the raw input
key/value and ``__streams.errors.*`` headers.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable
from typing import Any

from kspark.errors import StreamsException
from kspark.processor.api import Headers
from kspark.processor.internals.exception_handlers import ErrorHandlerContext, HandlerResponse, to_response
from kspark.processor.internals.records import OutputRecord

__all__ = ["RecordCollector"]


class RecordCollector:
    """Collects serialized output of one task; a runner drains it with ``drain()``."""

    def __init__(
        self,
        task_id: str,
        production_handler: Callable[..., Any],
        on_dropped: Callable[[str], None],
        partitions_for: Callable[[str], int | None] | None = None,
        dead_letter_queue_topic: str | None = None,
        error_context: Callable[[str | None], ErrorHandlerContext] | None = None,
    ) -> None:
        self._task_id = task_id
        self._handler = production_handler
        self._on_dropped = on_dropped
        self._partitions_for = partitions_for or (lambda topic: 1)
        self._dlq = dead_letter_queue_topic
        self.error_context = error_context
        self._buffer: list[OutputRecord] = []

    def send(
        self,
        topic: str,
        key: Any,
        value: Any,
        headers: Headers,
        timestamp: int,
        key_serializer: Any,
        value_serializer: Any,
        node_name: str | None = None,
        partitioner: Callable[..., Any] | None = None,
    ) -> None:
        if partitioner is None:
            self._send_one(
                topic, None, key, value, headers, timestamp, key_serializer, value_serializer, node_name
            )
            return
        num = self._partitions_for(topic)
        if num is None or num < 1:
            raise StreamsException(
                f"Could not get partition information for topic {topic} for task {self._task_id}. "
                "This can happen if the topic does not exist."
            )
        chosen = partitioner(topic, key, value, num)
        if chosen is None:
            self._send_one(
                topic, None, key, value, headers, timestamp, key_serializer, value_serializer, node_name
            )
            return
        partitions = [chosen] if isinstance(chosen, int) else list(dict.fromkeys(chosen))
        if not partitions:
            self._on_dropped("partitioner returned no partitions")
            return
        for p in partitions:
            if not isinstance(p, int) or not 0 <= p < num:
                raise StreamsException(
                    f"Partitioner of sink {node_name} returned partition {p!r} for topic {topic} "
                    f"with {num} partitions"
                )
            self._send_one(
                topic, p, key, value, headers, timestamp, key_serializer, value_serializer, node_name
            )

    def _send_one(
        self,
        topic: str,
        partition: int | None,
        key: Any,
        value: Any,
        headers: Headers,
        timestamp: int,
        key_serializer: Any,
        value_serializer: Any,
        node_name: str | None,
    ) -> None:
        for origin, serializer, obj in (("KEY", key_serializer, key), ("VALUE", value_serializer, value)):
            try:
                data = serializer.serialize(topic, obj)
            except Exception as e:
                self._handle_serialization_error(origin, topic, partition, timestamp, node_name, e)
                return
            if origin == "KEY":
                key_bytes = data
            else:
                value_bytes = data
        self._buffer.append(OutputRecord(topic, partition, key_bytes, value_bytes, timestamp, headers.copy()))

    def _handle_serialization_error(
        self,
        origin: str,
        topic: str,
        partition: int | None,
        timestamp: int,
        node_name: str | None,
        error: Exception,
    ) -> None:
        ctx = self.error_context(node_name) if self.error_context else None
        try:
            response = to_response(self._handler(ctx, None, error), "ProductionExceptionHandler")
        except Exception as fatal:
            raise StreamsException(
                f"Fatal user code error in production error callback: {fatal!r}"
            ) from error
        if ctx is not None:
            self.maybe_send_to_dead_letter_queue(ctx, error)
        if response is HandlerResponse.FAIL:
            raise StreamsException(
                f"Error encountered trying to serialize the {origin.lower()} of a record for topic {topic} "
                f"(partition={partition}, timestamp={timestamp}) in sink {node_name}, task {self._task_id}: "
                f"{error}. Set 'production.exception.handler' to 'log_and_continue' to skip such records."
            ) from error
        self._on_dropped("serialization error")

    def send_serialized(
        self,
        topic: str,
        partition: int | None,
        key: bytes | None,
        value: bytes | None,
        headers: Headers,
        timestamp: int,
    ) -> None:
        """Buffer an already serialized record (changelog, dead-letter queue)."""
        self._buffer.append(OutputRecord(topic, partition, key, value, timestamp, headers))

    def maybe_send_to_dead_letter_queue(self, ctx: ErrorHandlerContext, error: BaseException) -> None:
        if not self._dlq:
            return
        headers = Headers(
            [
                ("__streams.errors.exception", type(error).__name__.encode()),
                ("__streams.errors.stacktrace", "".join(traceback.format_exception(error)).encode()),
                ("__streams.errors.message", str(error).encode()),
                ("__streams.errors.topic", (ctx.topic or "").encode()),
                ("__streams.errors.partition", str(ctx.partition).encode()),
                ("__streams.errors.offset", str(ctx.offset).encode()),
            ]
        )
        for h in ctx.headers:
            headers.add(h.key, h.value)
        self._buffer.append(
            OutputRecord(self._dlq, None, ctx.source_raw_key, ctx.source_raw_value, ctx.timestamp, headers)
        )

    def drain(self) -> list[OutputRecord]:
        out, self._buffer = self._buffer, []
        return out

    def pending(self) -> Iterable[OutputRecord]:
        return tuple(self._buffer)
