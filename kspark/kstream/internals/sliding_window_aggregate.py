"""Sliding-window aggregation (Kafka's ``KStreamSlidingWindowAggregate``).

Sliding windows are ``[start, start + time_difference]`` with both ends
inclusive and exist only where records are: each record ``t`` gets a left
window ``[t - d, t]`` and, when later records fall within ``d`` after it, a
right window ``[t + 1, t + 1 + d]``. A new record updates every existing
window it falls into and creates its own left/right windows and the right
window of the record before it, seeded from the aggregates it found while
scanning the store backwards. Records before ``d`` share one window
``[0, d]`` ("early records").
"""

from __future__ import annotations

from typing import Any

from kspark.kstream.internals.value_getters import KTableProcessorSupplier
from kspark.kstream.internals.window_aggregate import (
    NO_TIMESTAMP,
    AbstractTimeWindowAggregateProcessor,
    Aggregator,
    Initializer,
    WindowedValueGetterSupplier,
    record_dropped,
)
from kspark.kstream.windowed import TimeWindow, Window
from kspark.kstream.windows import EmitStrategy, SlidingWindows
from kspark.processor.api import Processor, Record
from kspark.state.api import ValueAndTimestamp

__all__ = ["KStreamSlidingWindowAggregate"]


class KStreamSlidingWindowAggregate(KTableProcessorSupplier):
    """Supplier of the sliding-window aggregation processor."""

    def __init__(
        self,
        windows: SlidingWindows,
        store_name: str,
        emit_strategy: EmitStrategy,
        initializer: Initializer,
        aggregator: Aggregator,
    ) -> None:
        self.windows = windows
        self.store_name = store_name
        self.emit_strategy = emit_strategy
        self.initializer = initializer
        self.aggregator = aggregator
        self.send_old_values = False

    def enable_send_old_values(self, force_materialization: bool = False) -> bool:
        self.send_old_values = True
        return True

    def view(self) -> WindowedValueGetterSupplier:
        return WindowedValueGetterSupplier(self.store_name)

    def __call__(self) -> Processor[Any, Any]:
        return _SlidingWindowAggregateProcessor(self)


VAT = ValueAndTimestamp[Any]


class _SlidingWindowAggregateProcessor(AbstractTimeWindowAggregateProcessor):
    def __init__(self, supplier: KStreamSlidingWindowAggregate) -> None:
        super().__init__(supplier.store_name, supplier.emit_strategy, supplier.send_old_values)
        self.windows = supplier.windows
        self.diff = supplier.windows.time_difference_ms()
        self.initializer = supplier.initializer
        self.aggregator = supplier.aggregator

    def process(self, record: Record[Any, Any]) -> None:
        if record.key is None or record.value is None:
            record_dropped(self.context, "null key or value")
            return
        ts = record.timestamp
        self.update_observed_stream_time(ts)
        close_time = self.observed_stream_time - self.windows.grace_period_ms()
        if ts + self.diff < close_time:
            self.log_skipped_expired(ts, close_time, f"[{ts},{ts + self.diff}]")
            return
        if ts < self.diff:
            self._process_early(record, close_time)
            return
        self._process_reverse(record, close_time)
        self.maybe_forward_final_result(record, close_time)

    def _process_reverse(self, record: Record[Any, Any], close_time: int) -> None:
        ts = record.timestamp
        starts: set[int] = set()
        left_agg: VAT | None = None
        right_agg: VAT | None = None
        left_created = False
        right_created = False
        previous_ts: int | None = None
        # +1 on the upper bound catches this record's right window without another store call
        with self.window_store.backward_fetch(record.key, max(0, ts - 2 * self.diff), ts + 1) as it:
            for kv in it:
                start: int = kv.key
                vat: VAT = kv.value
                starts.add(start)
                end = start + self.diff
                if start == ts + 1:
                    right_created = True
                elif end > ts:
                    if right_agg is None:
                        right_agg = vat
                    self._update_window_and_forward(TimeWindow(start, end), vat, record, close_time)
                elif end == ts:
                    left_created = True
                    self._update_window_and_forward(TimeWindow(start, end), vat, record, close_time)
                    if vat.timestamp < ts:
                        previous_ts = vat.timestamp
                    else:
                        # a record at this same time already created every window needed
                        return
                else:
                    left_agg = vat
                    previous_ts = vat.timestamp
                    break
        self._create_windows(
            record, close_time, starts, right_agg, left_agg, left_created, right_created, previous_ts
        )

    def _process_early(self, record: Record[Any, Any], close_time: int) -> None:
        ts = record.timestamp
        # the window [0, d] holds every early record
        combined: tuple[int, VAT] | None = None
        right_agg: VAT | None = None
        right_created = False
        starts: set[int] = set()
        previous_ts: int | None = None
        with self.window_store.fetch(record.key, 0, ts + 1) as it:
            for kv in it:
                start: int = kv.key
                vat: VAT = kv.value
                starts.add(start)
                if start == 0:
                    combined = (start, vat)
                    if vat.timestamp < ts:
                        previous_ts = vat.timestamp
                elif start <= ts:
                    right_agg = vat
                    self._update_window_and_forward(
                        TimeWindow(start, start + self.diff), vat, record, close_time
                    )
                elif start == ts + 1:
                    right_created = True
                else:
                    raise RuntimeError(
                        f"Unexpected window with start {start} found when processing record at {ts} "
                        "in KStreamSlidingWindowAggregate"
                    )
        # Without a right window aggregate, the combined window can only hold records inside
        # this record's right window when its max timestamp is after this record.
        if right_agg is None and combined is not None and combined[1].timestamp > ts:
            right_agg = combined[1]
        if not right_created and self._right_window_not_empty(right_agg, ts):
            assert right_agg is not None
            self._create_current_right_window(ts, right_agg, record)
        if previous_ts is not None and (previous_ts + 1) not in starts:
            self._create_previous_right_window(previous_ts + 1, record, close_time)
        if combined is None:
            window = TimeWindow(0, self.diff)
            self._update_window_and_forward(
                window, ValueAndTimestamp(self.initializer(), ts), record, close_time
            )
        else:
            self._update_window_and_forward(TimeWindow(0, self.diff), combined[1], record, close_time)

    def _create_windows(
        self,
        record: Record[Any, Any],
        close_time: int,
        starts: set[int],
        right_agg: VAT | None,
        left_agg: VAT | None,
        left_created: bool,
        right_created: bool,
        previous_ts: int | None,
    ) -> None:
        ts = record.timestamp
        if previous_ts is not None:
            previous_right_start = previous_ts + 1
            if previous_right_start not in starts and previous_right_start + self.diff >= ts:
                self._create_previous_right_window(previous_right_start, record, close_time)
        if not left_created:
            if previous_ts is not None and ts - self.diff <= previous_ts:
                assert left_agg is not None
                seed = ValueAndTimestamp(left_agg.value, ts)
            else:
                seed = ValueAndTimestamp(self.initializer(), ts)
            self._update_window_and_forward(TimeWindow(ts - self.diff, ts), seed, record, close_time)
        if not right_created and self._right_window_not_empty(right_agg, ts):
            assert right_agg is not None
            self._create_current_right_window(ts, right_agg, record)

    def _create_current_right_window(self, ts: int, right_agg: VAT, record: Record[Any, Any]) -> None:
        window = TimeWindow(ts + 1, ts + 1 + self.diff)
        self.window_store.put(record.key, right_agg, window.start)
        self.maybe_forward_update(record, window, None, right_agg.value, right_agg.timestamp)

    def _create_previous_right_window(self, start: int, record: Record[Any, Any], close_time: int) -> None:
        window = TimeWindow(start, start + self.diff)
        seed = ValueAndTimestamp(self.initializer(), record.timestamp)
        self._update_window_and_forward(window, seed, record, close_time)

    @staticmethod
    def _right_window_not_empty(right_agg: VAT | None, ts: int) -> bool:
        return right_agg is not None and right_agg.timestamp > ts

    def _update_window_and_forward(
        self, window: Window, vat: VAT | None, record: Record[Any, Any], close_time: int
    ) -> None:
        if window.end >= close_time:
            old_agg = None if vat is None else vat.value
            new_agg = self.aggregator(record.key, record.value, old_agg)
            new_ts = (
                record.timestamp if old_agg is None or vat is None else max(record.timestamp, vat.timestamp)
            )
            self.window_store.put(record.key, ValueAndTimestamp.make(new_agg, new_ts), window.start)
            self.maybe_forward_update(record, window, old_agg, new_agg, new_ts)
        else:
            self.log_skipped_expired(record.timestamp, close_time, f"[{window.start},{window.end}]")

    def emit_range_lower_bound(self, window_close_time: int) -> int:
        if self.last_emit_window_close_time == NO_TIMESTAMP:
            return 0
        return max(0, self.last_emit_window_close_time - self.diff)

    def emit_range_upper_bound(self, window_close_time: int) -> int:
        # both ends are inclusive: a window ending exactly at close time is still open
        return window_close_time - self.diff - 1

    def should_range_fetch(self, lower: int, upper: int) -> bool:
        return True
