"""Session-window aggregation (Kafka's ``KStreamSessionWindowAggregate``).

A record at ``t`` opens the session ``[t, t]`` and merges every stored
session of its key that ends at or after ``t - gap`` and starts at or before
``t + gap``. Merged sessions are removed and forwarded as tombstones (in the
store's order) before the merged session's new aggregate; every result is
stamped with its session's end time.

With ``EmitStrategy.on_window_close()`` nothing is forwarded on update;
instead, after each record, every session whose end is below the close time
``observed - gap - grace`` and at or after the last emit's close time is
emitted once (Kafka's emit-final path: a scan of the time-ordered session
store by end time, throttled by the wall clock, the last close time kept in
the processor metadata under the store's name), stamped with its end.

kspark addition: the processor's observed stream time lives in the task's
processor metadata (``<store name>:observed-stream-time``, see
:class:`~kspark.kstream.internals.window_aggregate.MetadataClock`). Kafka keeps it
in memory and restarts it at -1, so a restarted task accepts records for
sessions that had already closed; kspark keeps it so a restored task (on the
Spark runner: any micro-batch) continues exactly as if it had not been restarted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark.kstream.internals.change import Change
from kspark.kstream.internals.forwarding import SessionCacheFlushListener, TimestampedTupleForwarder
from kspark.kstream.internals.value_getters import (
    KTableProcessorSupplier,
    KTableValueGetter,
    KTableValueGetterSupplier,
)
from kspark.kstream.internals.window_aggregate import (
    EMIT_INTERVAL_MS_WINDOWED_AGGREGATION,
    NO_TIMESTAMP,
    Aggregator,
    Initializer,
    MetadataClock,
    TimeTracker,
    emit_interval_ms,
    processor_metadata_for_key,
    record_dropped,
)
from kspark.kstream.windowed import SessionWindow, Windowed
from kspark.kstream.windows import EmitStrategy, SessionWindows
from kspark.processor.api import Processor, ProcessorContext, Record
from kspark.state.api import ValueAndTimestamp

__all__ = ["KStreamSessionWindowAggregate", "SessionValueGetterSupplier"]

Merger = Callable[[Any, Any, Any], Any]


class SessionValueGetterSupplier(KTableValueGetterSupplier):
    """Reads the aggregate of a ``Windowed`` session key (KTable view), stamped with the session end."""

    def __init__(self, store_name: str) -> None:
        self._store_name = store_name

    def store_names(self) -> list[str]:
        return [self._store_name]

    def get(self) -> KTableValueGetter:
        return _SessionValueGetter(self._store_name)


class _SessionValueGetter(KTableValueGetter):
    def __init__(self, store_name: str) -> None:
        self._store_name = store_name
        self._store: Any = None

    def init(self, context: ProcessorContext) -> None:
        self._store = context.get_state_store(self._store_name)

    def get(self, key: Windowed[Any]) -> ValueAndTimestamp[Any] | None:
        value = self._store.fetch_session(key.key, key.window.start, key.window.end)
        return ValueAndTimestamp.make(value, key.window.end)


class KStreamSessionWindowAggregate(KTableProcessorSupplier):
    """Supplier of the session-window aggregation processor."""

    def __init__(
        self,
        windows: SessionWindows,
        store_name: str,
        emit_strategy: EmitStrategy,
        initializer: Initializer,
        aggregator: Aggregator,
        merger: Merger,
    ) -> None:
        self.windows = windows
        self.store_name = store_name
        self.emit_strategy = emit_strategy
        self.initializer = initializer
        self.aggregator = aggregator
        self.merger = merger
        self.send_old_values = False

    def enable_send_old_values(self, force_materialization: bool = False) -> bool:
        self.send_old_values = True
        return True

    def view(self) -> SessionValueGetterSupplier:
        return SessionValueGetterSupplier(self.store_name)

    def __call__(self) -> Processor[Any, Any]:
        return _SessionWindowAggregateProcessor(self)


class _SessionWindowAggregateProcessor(Processor[Any, Any]):
    def __init__(self, supplier: KStreamSessionWindowAggregate) -> None:
        self.s = supplier
        self.emit_on_close = supplier.emit_strategy.type() is EmitStrategy.StrategyType.ON_WINDOW_CLOSE
        self._observed_stream_time = MetadataClock(f"{supplier.store_name}:observed-stream-time")
        self._next_time_to_emit = MetadataClock(f"{supplier.store_name}:next-time-to-emit", 0)
        self.time_tracker = TimeTracker()
        self.last_emit_window_close_time = NO_TIMESTAMP
        self.context: ProcessorContext = None  # type: ignore[assignment]
        self.store: Any = None
        self.tuple_forwarder: TimestampedTupleForwarder = None  # type: ignore[assignment]

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store(self.s.store_name)
        self._observed_stream_time.init(context)
        if self.emit_on_close:
            restored = processor_metadata_for_key(context, self.s.store_name)
            if restored is not None:
                self.last_emit_window_close_time = restored
            self._next_time_to_emit.init(context)
            self.time_tracker.next_time_to_emit = self._next_time_to_emit.value
            self.time_tracker.emit_interval_ms = emit_interval_ms(
                context, EMIT_INTERVAL_MS_WINDOWED_AGGREGATION
            )
            self.tuple_forwarder = TimestampedTupleForwarder(context, self.s.send_old_values)
        else:
            # with a caching store the cache forwards the updates (at the session end) when it flushes
            self.tuple_forwarder = TimestampedTupleForwarder(
                context, self.s.send_old_values, self.store, SessionCacheFlushListener(context)
            )

    def process(self, record: Record[Any, Any]) -> None:
        if record.key is None:
            record_dropped(self.context, "null key")
            return
        ts = record.timestamp
        gap = self.s.windows.inactivity_gap()
        observed_stream_time = self._observed_stream_time.advance(ts)
        close_time = observed_stream_time - self.s.windows.grace_period_ms() - gap
        merged: list[tuple[Windowed[Any], Any]] = []
        new_window = SessionWindow(ts, ts)
        start, end = ts, ts
        agg = self.s.initializer()
        with self.store.find_sessions(record.key, ts - gap, ts + gap) as it:
            for kv in it:
                merged.append((kv.key, kv.value))
                agg = self.s.merger(record.key, agg, kv.value)
                start = min(start, kv.key.window.start)
                end = max(end, kv.key.window.end)
        merged_window = SessionWindow(start, end)
        if merged_window.end < close_time:
            record_dropped(
                self.context,
                f"record for expired window: timestamp=[{ts}] window=[{start},{end}] "
                f"expiration=[{close_time}] streamTime=[{observed_stream_time}]",
            )
        else:
            if merged_window != new_window:
                for session_key, session_agg in merged:
                    self.store.remove(session_key)
                    self._forward(session_key, session_agg, None)
            agg = self.s.aggregator(record.key, record.value, agg)
            session_key = Windowed(record.key, merged_window)
            self.store.put(session_key, agg)
            self._forward(session_key, None, agg)
        # as in Kafka, a record dropped as late still lets closed sessions be emitted
        self._maybe_forward_final_result(record, close_time)

    def _forward(self, key: Windowed[Any], old_agg: Any, new_agg: Any) -> None:
        if self.emit_on_close:
            return
        self.tuple_forwarder.maybe_forward(
            Record(key, Change(new_agg, old_agg if self.s.send_old_values else None), key.window.end)
        )

    # -- emit-on-window-close ------------------------------------------------------------------

    def _maybe_forward_final_result(self, record: Record[Any, Any], close_time: int) -> None:
        if not self._should_emit_final(close_time):
            return
        # session ends are inclusive: a session ending exactly at the close time is still open
        upper = close_time - 1
        # a negative upper bound: no session has ever closed
        if upper < 0:
            return
        lower = max(0, self.last_emit_window_close_time)
        # a session may be a single point, so equal bounds still scan
        if upper < lower:
            return
        with self.store.find_sessions_by_end_time(lower, upper) as it:
            for kv in it:
                self.tuple_forwarder.maybe_forward(
                    Record(kv.key, Change(kv.value, None), kv.key.window.end, record.headers)
                )
        self.last_emit_window_close_time = close_time
        # committed with the task's offsets, so a restored task does not emit these sessions again
        add = getattr(self.context, "add_processor_metadata_key_value", None)
        if add is not None:
            add(self.s.store_name, close_time)

    def _should_emit_final(self, close_time: int) -> bool:
        if not self.emit_on_close:
            return False
        now = self.context.current_system_time_ms()
        if now < self.time_tracker.next_time_to_emit:
            return False
        # re-sync with the wall clock so a clock jump cannot trigger an emit per record
        self.time_tracker.next_time_to_emit = now
        self.time_tracker.advance_next_time_to_emit()
        self._next_time_to_emit.set(self.time_tracker.next_time_to_emit)
        return (
            self.last_emit_window_close_time == NO_TIMESTAMP or self.last_emit_window_close_time < close_time
        )
