"""How DSL processors forward table updates when their store may cache (KIP-63).

Kafka's ``TimestampedTupleForwarder``, ``TimestampedCacheFlushListener`` and
``SessionCacheFlushListener``. A processor that keeps its result in a store
makes a forwarder over that store at ``init``. If the store has a caching
layer, the forwarder registers a flush listener with it and forwards nothing
itself: the cache forwards ``(key, Change(new, old), timestamp)`` when it
flushes the entry (at the task's commit or on eviction), from the
processor's node and with the record context of the write that set the
entry. Without a cache, ``maybe_forward`` forwards right away, dropping the
old value unless old values were asked for.
"""

from __future__ import annotations

from typing import Any

from kspark.kstream.internals.change import Change
from kspark.kstream.windowed import Windowed
from kspark.processor.api import Headers, ProcessorContext, Record
from kspark.state.api import ValueAndTimestamp

__all__ = ["TimestampedTupleForwarder", "TimestampedCacheFlushListener", "SessionCacheFlushListener"]


class _NodeBoundListener:
    """Forwards from the node that was current when the listener was made (the processor's node)."""

    def __init__(self, context: ProcessorContext) -> None:
        self._context = context
        self._node = getattr(context, "current_node", None)

    def _forward(self, record: Record[Any, Any]) -> None:
        ctx = self._context
        if self._node is None or not hasattr(ctx, "current_node"):
            ctx.forward(record)
            return
        previous = ctx.current_node
        ctx.current_node = self._node
        try:
            ctx.forward(record)
        finally:
            ctx.current_node = previous


class TimestampedCacheFlushListener(_NodeBoundListener):
    """Forwards a flushed ``ValueAndTimestamp`` entry as ``Change(new, old)`` at the new value's timestamp
    (the entry's record timestamp for a tombstone)."""

    def __call__(self, key: Any, new: Any, old: Any, timestamp: int, headers: Any) -> None:
        new_value = ValueAndTimestamp.get_value_or_null(new)
        old_value = ValueAndTimestamp.get_value_or_null(old)
        ts = new.timestamp if isinstance(new, ValueAndTimestamp) else timestamp
        self._forward(Record(key, Change(new_value, old_value), ts, _headers(headers)))


class SessionCacheFlushListener(_NodeBoundListener):
    """Forwards a flushed session aggregate at the session's end time."""

    def __call__(self, key: Windowed[Any], new: Any, old: Any, timestamp: int, headers: Any) -> None:
        self._forward(Record(key, Change(new, old), key.window.end, _headers(headers)))


def _headers(headers: Any) -> Headers:
    return headers if isinstance(headers, Headers) else Headers()


class TimestampedTupleForwarder:
    """Forwards a table update unless the store caches (then the cache forwards on flush).

    ``store`` is the processor's store (``None``: never caches);
    ``flush_listener`` defaults to :class:`TimestampedCacheFlushListener`.
    Make it in the processor's ``init`` so the listener binds to the
    processor's node.
    """

    def __init__(
        self,
        context: ProcessorContext,
        send_old_values: bool,
        store: Any = None,
        flush_listener: Any = None,
    ) -> None:
        self._context = context
        self._send_old_values = send_old_values
        self.caching_enabled = False
        setter = getattr(store, "set_flush_listener", None)
        if callable(setter):
            listener = (
                flush_listener if flush_listener is not None else TimestampedCacheFlushListener(context)
            )
            self.caching_enabled = bool(setter(listener, send_old_values))

    def maybe_forward(self, record: Record[Any, Change[Any]]) -> None:
        if self.caching_enabled:
            return
        if not self._send_old_values:
            record = record.with_value(Change(record.value.new_value, None, record.value.is_latest))
        self._context.forward(record)
