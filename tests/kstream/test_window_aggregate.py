"""Tests of the time-window aggregation processor (Kafka's ``KStreamWindowAggregate``)."""

from __future__ import annotations

from typing import Any

from test_window_support import FakeContext, FakeWindowStore

from kspark.kstream.internals.window_aggregate import KStreamWindowAggregate
from kspark.kstream.windowed import TimeWindow, Windowed
from kspark.kstream.windows import EmitStrategy, TimeWindows
from kspark.processor.api import Record
from kspark.state.api import ValueAndTimestamp


def _count(
    windows: TimeWindows, *, on_close: bool = False, old_values: bool = False, config: Any = None
) -> Any:
    strategy = EmitStrategy.on_window_close() if on_close else EmitStrategy.on_window_update()
    supplier = KStreamWindowAggregate(windows, "s", strategy, lambda: 0, lambda k, v, a: a + 1)
    if old_values:
        supplier.enable_send_old_values(True)
    store = FakeWindowStore(windows.size())
    ctx = FakeContext({"s": store}, config)
    proc = supplier()
    proc.init(ctx)
    return proc, ctx, store


def W(key: str, start: int, end: int) -> Windowed[str]:
    return Windowed(key, TimeWindow(start, end))


def test_hopping_windows_update_in_start_order_with_max_timestamp() -> None:
    # the scenario of KStreamWindowAggregateTest.testAggBasic, count instead of concatenation
    proc, ctx, _ = _count(TimeWindows.of_size_with_no_grace(10).advance_by(5))
    proc.process(Record("A", "1", 0))
    proc.process(Record("A", "1", 7))
    proc.process(Record("A", "1", 3))
    assert ctx.take() == [
        (W("A", 0, 10), (1, None), 0),
        (W("A", 0, 10), (2, None), 7),
        (W("A", 5, 15), (1, None), 7),
        # out-of-order record: the window keeps the larger timestamp 7
        (W("A", 0, 10), (3, None), 7),
    ]


def test_late_records_are_dropped_exactly_when_window_end_is_not_after_close_time() -> None:
    proc, ctx, store = _count(TimeWindows.of_size_and_grace(10, 5))
    proc.process(Record("k", "v", 0))
    proc.process(Record("k", "v", 14))  # stream time 14, close time 9
    proc.process(Record("k", "v", 9))  # window [0,10): end 10 > 9, accepted
    assert ctx.take() == [
        (W("k", 0, 10), (1, None), 0),
        (W("k", 10, 20), (1, None), 14),
        (W("k", 0, 10), (2, None), 9),
    ]
    proc.process(Record("k", "v", 15))  # close time 10 == end of [0,10)
    proc.process(Record("k", "v", 2))  # dropped
    assert ctx.take() == [(W("k", 10, 20), (2, None), 15)]
    assert len(ctx.dropped) == 1 and "[0,10)" in ctx.dropped[0]
    assert store.fetch("k", 0) == ValueAndTimestamp(2, 9)


def test_null_key_is_dropped_and_null_value_counted() -> None:
    proc, ctx, _ = _count(TimeWindows.of_size_with_no_grace(10))
    proc.process(Record(None, "v", 1))
    proc.process(Record("k", None, 1))
    assert ctx.take() == [(W("k", 0, 10), (1, None), 1)]
    assert len(ctx.dropped) == 1


def test_old_values_of_a_new_window_are_the_initial_aggregate() -> None:
    # Kafka forwards the initializer's value as the old value of a new window
    proc, ctx, _ = _count(TimeWindows.of_size_with_no_grace(10), old_values=True)
    proc.process(Record("k", "v", 1))
    proc.process(Record("k", "v", 2))
    assert ctx.take() == [(W("k", 0, 10), (1, 0), 1), (W("k", 0, 10), (2, 1), 2)]


def test_emit_on_window_close_emits_closed_windows_once_throttled_by_wall_clock() -> None:
    proc, ctx, _ = _count(TimeWindows.of_size_and_grace(10, 5), on_close=True)
    proc.process(Record("a", "v", 1))
    proc.process(Record("b", "v", 3))
    assert ctx.take() == []
    ctx.wall_clock = 1000
    proc.process(Record("a", "v", 15))  # close time 10: [0,10) closed
    assert ctx.take() == [(W("a", 0, 10), (1, None), 1), (W("b", 0, 10), (1, None), 3)]
    ctx.wall_clock = 1500
    proc.process(Record("a", "v", 30))  # throttled: next emit at wall clock 2000
    assert ctx.take() == []
    ctx.wall_clock = 2000
    proc.process(Record("a", "v", 31))  # close time 26: [10,20) closed
    assert ctx.take() == [(W("a", 10, 20), (1, None), 15)]


def _restart(store: Any, ctx: Any, *, with_metadata: bool) -> tuple[Any, Any]:
    """A new processor on the same (restored) store; the committed metadata is handed over or lost."""
    windows = TimeWindows.of_size_and_grace(10, 5)
    supplier = KStreamWindowAggregate(
        windows, "s", EmitStrategy.on_window_close(), lambda: 0, lambda k, v, a: a + 1
    )
    new_ctx = FakeContext({"s": store}, NO_THROTTLE, ctx.processor_metadata if with_metadata else None)
    proc = supplier()
    proc.init(new_ctx)
    return proc, new_ctx


NO_THROTTLE = {"__emit.interval.ms.kstreams.windowed.aggregation__": 0}


def _on_close_inputs() -> list[Record[str, str]]:
    return [Record("a", "v", ts) for ts in (1, 3, 15, 16, 17, 27, 31, 32)]


def test_emit_on_close_commits_its_last_close_time_as_processor_metadata() -> None:
    proc, ctx, _ = _count(TimeWindows.of_size_and_grace(10, 5), on_close=True, config=NO_THROTTLE)
    for record in _on_close_inputs()[:4]:
        proc.process(record)
    assert ctx.take() == [(W("a", 0, 10), (2, None), 3)]
    # Kafka: addProcessorMetadataKeyValue(storeName, windowCloseTime) after each emit; kspark also
    # keeps the observed stream time (the wall-clock throttle never moved from 0, so it wrote nothing)
    assert ctx.processor_metadata == {"s": 10, "s:observed-stream-time": 16}


def test_restored_emit_on_close_does_not_emit_closed_windows_again() -> None:
    inputs = _on_close_inputs()
    proc, ctx, _ = _count(TimeWindows.of_size_and_grace(10, 5), on_close=True, config=NO_THROTTLE)
    for record in inputs:
        proc.process(record)
    whole = ctx.take()
    assert whole == [(W("a", 0, 10), (2, None), 3), (W("a", 10, 20), (3, None), 17)]

    proc, ctx, store = _count(TimeWindows.of_size_and_grace(10, 5), on_close=True, config=NO_THROTTLE)
    for record in inputs[:4]:
        proc.process(record)
    first = ctx.take()
    proc2, ctx2 = _restart(store, ctx, with_metadata=True)
    for record in inputs[4:]:
        proc2.process(record)
    assert first + ctx2.take() == whole


def test_restart_without_committed_metadata_emits_the_stored_closed_window_again_as_kafka() -> None:
    # what Kafka does when no processor metadata was committed: lastEmitWindowCloseTime starts
    # unknown, so the first emit scans from 0 and re-emits closed windows the store still holds
    inputs = _on_close_inputs()
    proc, ctx, store = _count(TimeWindows.of_size_and_grace(10, 5), on_close=True, config=NO_THROTTLE)
    for record in inputs[:4]:
        proc.process(record)
    assert ctx.take() == [(W("a", 0, 10), (2, None), 3)]
    proc2, ctx2 = _restart(store, ctx, with_metadata=False)
    proc2.process(inputs[4])
    assert ctx2.take() == [(W("a", 0, 10), (2, None), 3)]
