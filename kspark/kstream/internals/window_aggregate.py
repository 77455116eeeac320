"""Windowed aggregation processors for ``TimeWindows`` (Kafka's ``KStreamWindowAggregate``).

Also holds what every time-windowed aggregation shares (Kafka's
``AbstractKStreamTimeWindowAggregateProcessor``): the per-processor observed
stream time, the late-record drop, and the emit-on-window-close path with its
wall-clock throttle. Results are ``Record(Windowed(key, window), Change(new, old))``
stamped with the largest record timestamp seen in the window.

Emit-on-window-close remembers the close time of its last emit
(``lastEmitWindowCloseTime``) so a window is emitted once. Kafka keeps it in
the task's *processor metadata*, committed with the input offsets and read
back when a task is initialized, under the window store's name; kspark does
the same through the context's ``add_processor_metadata_key_value(key,
value)`` / ``processor_metadata_for_key(key)`` when the engine provides them.
Without them (or with nothing committed) a restarted task starts from "never
emitted" and emits again the closed windows its store still holds, which is
also what Kafka does when the metadata is missing.

kspark addition: the observed stream time (and the emit throttle's next wall-clock
emit time) live in the processor metadata too, under
``<store name>:observed-stream-time`` / ``<store name>:next-time-to-emit``
(:class:`MetadataClock`). Kafka keeps them in memory only and restarts them at
-1, so a restarted Kafka task accepts records its predecessor would have dropped
as late. The Spark runner restores a task whenever it lands on another Python
worker, as often as every micro-batch, so kspark keeps them: a restored task
continues exactly as if it had not been restarted, and results do not depend
on how the input was cut into micro-batches.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kspark.kstream.internals.change import Change
from kspark.kstream.internals.forwarding import TimestampedTupleForwarder
from kspark.kstream.internals.value_getters import (
    KTableProcessorSupplier,
    KTableValueGetter,
    KTableValueGetterSupplier,
)
from kspark.kstream.windowed import Window, Windowed
from kspark.kstream.windows import EmitStrategy, Windows
from kspark.processor.api import Processor, ProcessorContext, Record
from kspark.state.api import ValueAndTimestamp

__all__ = [
    "EMIT_INTERVAL_MS_WINDOWED_AGGREGATION",
    "NO_TIMESTAMP",
    "TimeTracker",
    "MetadataClock",
    "AbstractTimeWindowAggregateProcessor",
    "KStreamWindowAggregate",
    "WindowedValueGetterSupplier",
    "record_dropped",
    "emit_interval_ms",
    "processor_metadata_for_key",
]

log = logging.getLogger(__name__)

NO_TIMESTAMP = -1
EMIT_INTERVAL_MS_WINDOWED_AGGREGATION = "__emit.interval.ms.kstreams.windowed.aggregation__"

Initializer = Callable[[], Any]
Aggregator = Callable[[Any, Any, Any], Any]


def record_dropped(context: ProcessorContext, reason: str) -> None:
    """Count a dropped record on the task's ``dropped-records-total`` metric and log why."""
    md = context.record_metadata()
    where = f"topic=[{md.topic}] partition=[{md.partition}] offset=[{md.offset}]" if md else "(no metadata)"
    log.warning("Skipping record: %s %s", reason, where)
    dropper = getattr(context, "record_dropped", None)
    if dropper is not None:
        dropper(reason)


def emit_interval_ms(context: ProcessorContext, key: str) -> int:
    """An internal emit-throttle interval from the app config (Kafka's default: 1000 ms)."""
    value = (context.app_config() or {}).get(key, 1000)
    return int(value)


def processor_metadata_for_key(context: ProcessorContext, key: str) -> int | None:
    """The committed processor-metadata value of ``key``, if the engine keeps processor metadata."""
    read = getattr(context, "processor_metadata_for_key", None)
    if read is None:
        return None
    value = read(key)
    return None if value is None else int(value)


class MetadataClock:
    """A time a processor keeps in the task's processor metadata under ``key`` (a kspark addition).

    ``init`` reads the committed value back (else keeps ``initial``); every change is written
    at once, since the engine commits the metadata with the task and a restore may follow
    any commit. Without processor metadata in the engine it is a plain in-memory value.
    """

    __slots__ = ("_write", "key", "value")

    def __init__(self, key: str, initial: int = NO_TIMESTAMP) -> None:
        self.key = key
        self.value = initial
        self._write: Callable[[str, int], None] | None = None

    def init(self, context: ProcessorContext) -> None:
        self._write = getattr(context, "add_processor_metadata_key_value", None)
        restored = processor_metadata_for_key(context, self.key)
        if restored is not None:
            self.value = restored

    def set(self, value: int) -> None:
        if value != self.value:
            self.value = value
            if self._write is not None:
                self._write(self.key, value)

    def advance(self, timestamp: int) -> int:
        """Move forward to ``timestamp`` if it is later; returns the (new) value."""
        if timestamp > self.value:
            self.set(timestamp)
        return self.value


class TimeTracker:
    """Stream time, minimum pending time and the wall-clock emit throttle (Kafka's ``TimeTracker``)."""

    __slots__ = ("emit_interval_ms", "min_time", "next_time_to_emit", "stream_time")

    def __init__(self) -> None:
        self.emit_interval_ms = 1000
        self.stream_time = NO_TIMESTAMP
        self.min_time = 2**63 - 1
        self.next_time_to_emit = 0

    def advance_stream_time(self, timestamp: int) -> None:
        self.stream_time = max(timestamp, self.stream_time)

    def update_min_time(self, timestamp: int) -> None:
        self.min_time = min(timestamp, self.min_time)

    def advance_next_time_to_emit(self) -> None:
        self.next_time_to_emit += self.emit_interval_ms


class AbstractTimeWindowAggregateProcessor(Processor[Any, Any]):
    """Shared state and emit logic of the time-window and sliding-window aggregations."""

    def __init__(self, store_name: str, emit_strategy: EmitStrategy, send_old_values: bool) -> None:
        self.store_name = store_name
        self.emit_strategy = emit_strategy
        self.send_old_values = send_old_values
        self.time_tracker = TimeTracker()
        self.last_emit_window_close_time = NO_TIMESTAMP
        self._observed_stream_time = MetadataClock(f"{store_name}:observed-stream-time")
        self._next_time_to_emit = MetadataClock(f"{store_name}:next-time-to-emit", 0)
        self.context: ProcessorContext = None  # type: ignore[assignment]
        self.window_store: Any = None
        self.tuple_forwarder: TimestampedTupleForwarder = None  # type: ignore[assignment]

    @property
    def emit_on_close(self) -> bool:
        return self.emit_strategy.type() is EmitStrategy.StrategyType.ON_WINDOW_CLOSE

    @property
    def observed_stream_time(self) -> int:
        return self._observed_stream_time.value

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.window_store = context.get_state_store(self.store_name)
        self._observed_stream_time.init(context)
        if self.emit_on_close:
            restored = processor_metadata_for_key(context, self.store_name)
            if restored is not None:
                self.last_emit_window_close_time = restored
            self._next_time_to_emit.init(context)
            self.time_tracker.next_time_to_emit = self._next_time_to_emit.value
            self.time_tracker.emit_interval_ms = emit_interval_ms(
                context, EMIT_INTERVAL_MS_WINDOWED_AGGREGATION
            )
            self.tuple_forwarder = TimestampedTupleForwarder(context, self.send_old_values)
        else:
            # with a caching store the cache forwards the updates when it flushes
            self.tuple_forwarder = TimestampedTupleForwarder(context, self.send_old_values, self.window_store)

    def update_observed_stream_time(self, timestamp: int) -> None:
        self._observed_stream_time.advance(timestamp)

    def log_skipped_expired(self, timestamp: int, window_close_time: int, window: str) -> None:
        record_dropped(
            self.context,
            f"record for expired window: timestamp=[{timestamp}] window={window} "
            f"expiration=[{window_close_time}] streamTime=[{self.observed_stream_time}]",
        )

    def maybe_forward_update(
        self, record: Record[Any, Any], window: Window, old_agg: Any, new_agg: Any, new_timestamp: int
    ) -> None:
        if self.emit_on_close:
            return
        self.tuple_forwarder.maybe_forward(
            Record(
                Windowed(record.key, window),
                Change(new_agg, old_agg if self.send_old_values else None),
                new_timestamp,
                record.headers,
            )
        )

    def maybe_forward_final_result(self, record: Record[Any, Any], window_close_time: int) -> None:
        if not self._should_emit_final(window_close_time):
            return
        upper = self.emit_range_upper_bound(window_close_time)
        # a negative upper bound means no window has ever closed
        if upper < 0:
            return
        lower = self.emit_range_lower_bound(window_close_time)
        if self.should_range_fetch(lower, upper):
            self._fetch_and_emit(record, window_close_time, lower, upper)

    def _should_emit_final(self, window_close_time: int) -> bool:
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
            self.last_emit_window_close_time == NO_TIMESTAMP
            or self.last_emit_window_close_time < window_close_time
        )

    def _fetch_and_emit(
        self, record: Record[Any, Any], window_close_time: int, lower: int, upper: int
    ) -> None:
        with self.window_store.fetch_all(lower, upper) as it:
            for kv in it:
                self.context.forward(
                    Record(kv.key, Change(kv.value.value, None), kv.value.timestamp, record.headers)
                )
        self.last_emit_window_close_time = window_close_time
        # committed with the task's offsets, so a restored task does not emit these windows again
        add = getattr(self.context, "add_processor_metadata_key_value", None)
        if add is not None:
            add(self.store_name, window_close_time)

    # inclusive bounds of window starts to emit; subclasses define them per window kind
    def emit_range_lower_bound(self, window_close_time: int) -> int:
        raise NotImplementedError

    def emit_range_upper_bound(self, window_close_time: int) -> int:
        raise NotImplementedError

    def should_range_fetch(self, lower: int, upper: int) -> bool:
        raise NotImplementedError


class WindowedValueGetterSupplier(KTableValueGetterSupplier):
    """Reads the current aggregate of a ``Windowed`` key from the window store (KTable view)."""

    def __init__(self, store_name: str) -> None:
        self._store_name = store_name

    def store_names(self) -> list[str]:
        return [self._store_name]

    def get(self) -> KTableValueGetter:
        return _WindowedValueGetter(self._store_name)


class _WindowedValueGetter(KTableValueGetter):
    def __init__(self, store_name: str) -> None:
        self._store_name = store_name
        self._store: Any = None

    def init(self, context: ProcessorContext) -> None:
        self._store = context.get_state_store(self._store_name)

    def get(self, key: Any) -> ValueAndTimestamp[Any] | None:
        result: ValueAndTimestamp[Any] | None = self._store.fetch(key.key, key.window.start)
        return result


class KStreamWindowAggregate(KTableProcessorSupplier):
    """Supplier of the tumbling/hopping window aggregation processor."""

    def __init__(
        self,
        windows: Windows,
        store_name: str,
        emit_strategy: EmitStrategy,
        initializer: Initializer,
        aggregator: Aggregator,
    ) -> None:
        from kspark.kstream.windows import TimeWindows

        if emit_strategy.type() is EmitStrategy.StrategyType.ON_WINDOW_CLOSE and not isinstance(
            windows, TimeWindows
        ):
            raise ValueError(
                "ON_WINDOW_CLOSE strategy is only supported for "
                "TimeWindows and SlidingWindows for TimeWindowedKStream"
            )
        self.windows = windows
        self.store_name = store_name
        self.emit_strategy = emit_strategy
        self.initializer = initializer
        self.aggregator = aggregator
        self.send_old_values = False

    def enable_send_old_values(self, force_materialization: bool = False) -> bool:
        # the aggregation is always materialized, so old values are always available
        self.send_old_values = True
        return True

    def view(self) -> WindowedValueGetterSupplier:
        return WindowedValueGetterSupplier(self.store_name)

    def __call__(self) -> Processor[Any, Any]:
        return _WindowAggregateProcessor(self)


class _WindowAggregateProcessor(AbstractTimeWindowAggregateProcessor):
    def __init__(self, supplier: KStreamWindowAggregate) -> None:
        super().__init__(supplier.store_name, supplier.emit_strategy, supplier.send_old_values)
        self.windows = supplier.windows
        self.initializer = supplier.initializer
        self.aggregator = supplier.aggregator

    def process(self, record: Record[Any, Any]) -> None:
        if record.key is None:
            record_dropped(self.context, "null key")
            return
        timestamp = record.timestamp
        self.update_observed_stream_time(timestamp)
        window_close_time = self.observed_stream_time - self.windows.grace_period_ms()
        for window_start, window in self.windows.windows_for(timestamp).items():
            if window.end > window_close_time:
                old = self.window_store.fetch(record.key, window_start)
                old_agg = None if old is None else old.value
                if old_agg is None:
                    old_agg = self.initializer()
                    new_timestamp = timestamp
                else:
                    new_timestamp = max(timestamp, old.timestamp)
                new_agg = self.aggregator(record.key, record.value, old_agg)
                self.window_store.put(
                    record.key, ValueAndTimestamp.make(new_agg, new_timestamp), window_start
                )
                self.maybe_forward_update(record, window, old_agg, new_agg, new_timestamp)
            else:
                self.log_skipped_expired(timestamp, window_close_time, f"[{window_start},{window.end})")
        self.maybe_forward_final_result(record, window_close_time)

    def emit_range_lower_bound(self, window_close_time: int) -> int:
        # window ends are exclusive, hence +1; the first emit scans from 0
        if self.last_emit_window_close_time == NO_TIMESTAMP:
            return 0
        return max(0, self.last_emit_window_close_time - self.windows.size()) + 1

    def emit_range_upper_bound(self, window_close_time: int) -> int:
        return window_close_time - self.windows.size()

    def should_range_fetch(self, lower: int, upper: int) -> bool:
        # nothing new closed when both bounds fall into the same windows
        return not (
            self.last_emit_window_close_time != NO_TIMESTAMP
            and self.windows.windows_for(upper) == self.windows.windows_for(lower - 1)
        )
