"""Tests of the sliding-window aggregation (Kafka's ``KStreamSlidingWindowAggregate``)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_window_support import FakeContext, FakeWindowStore

from kspark.kstream.internals.sliding_window_aggregate import KStreamSlidingWindowAggregate
from kspark.kstream.windows import EmitStrategy, SlidingWindows
from kspark.processor.api import Record


def _proc(windows: SlidingWindows, initializer: Any, aggregator: Any) -> Any:
    supplier = KStreamSlidingWindowAggregate(
        windows, "s", EmitStrategy.on_window_update(), initializer, aggregator
    )
    store = FakeWindowStore(windows.time_difference_ms())
    ctx = FakeContext({"s": store})
    proc = supplier()
    proc.init(ctx)
    return proc, ctx, store


def _concat(key: str, value: str, agg: str) -> str:
    return agg + "+" + value


def test_aggregate_small_input_matches_kafka() -> None:
    # KStreamSlidingWindowAggregateTest.testAggregateSmallInput (emit on update)
    proc, ctx, _ = _proc(SlidingWindows.of_time_difference_and_grace(10, 5), lambda: "0", _concat)
    for value, ts in [("1", 10), ("2", 10), ("3", 14), ("4", 15), ("5", 20), ("6", 22), ("7", 30)]:
        proc.process(Record("A", value, ts))
    out: dict[int, set[tuple[str, int]]] = {}
    for key, (new, _old), ts in ctx.take():
        assert key.window.end == key.window.start + 10
        out.setdefault(key.window.start, set()).add((new, ts))
    assert out == {
        0: {("0+1", 10), ("0+1+2", 10)},
        4: {("0+1+2+3", 14)},
        5: {("0+1+2+3+4", 15)},
        10: {("0+1+2+3+4+5", 20)},
        11: {("0+3", 14), ("0+3+4", 15), ("0+3+4+5", 20)},
        12: {("0+3+4+5+6", 22)},
        15: {("0+4", 15), ("0+4+5", 20), ("0+4+5+6", 22)},
        16: {("0+5", 20), ("0+5+6", 22)},
        20: {("0+5+6+7", 30)},
        21: {("0+6", 22), ("0+6+7", 30)},
        23: {("0+7", 30)},
    }


def test_late_record_dropped_when_its_window_end_is_before_close_time() -> None:
    proc, ctx, _ = _proc(SlidingWindows.of_time_difference_and_grace(10, 5), lambda: "0", _concat)
    proc.process(Record("A", "1", 100))
    ctx.take()
    # close time 95: the record at 90 still updates [90,100] and creates its right window
    # [91,101], but its own left window [80,90] ends before close time and is skipped
    proc.process(Record("A", "2", 90))
    assert [(k.window.start, v[0], ts) for k, v, ts in ctx.take()] == [(90, "0+1+2", 100), (91, "0+1", 100)]
    assert len(ctx.dropped) == 1 and "[80,90]" in ctx.dropped[0]
    proc.process(Record("A", "3", 84))  # 84 + 10 < 95: the whole record is dropped
    assert ctx.take() == [] and len(ctx.dropped) == 2


def test_null_value_is_dropped() -> None:
    proc, ctx, _ = _proc(SlidingWindows.of_time_difference_with_no_grace(10), lambda: "0", _concat)
    proc.process(Record("A", None, 10))
    assert ctx.take() == [] and len(ctx.dropped) == 1


def _expected_windows(times_values: list[tuple[int, int]], d: int) -> dict[int, tuple[tuple[int, ...], int]]:
    """Brute force: the non-empty sliding windows defined by the records, with contents and max time."""
    times = {t for t, _ in times_values}
    starts = {max(0, t - d) for t in times}
    starts |= {t + 1 for t in times if any(t < u <= t + 1 + d for u in times)}
    out = {}
    for s in starts:
        inside = [(t, v) for t, v in times_values if s <= t <= s + d]
        out[s] = (tuple(sorted(v for _, v in inside)), max(t for t, _ in inside))
    return out


@settings(max_examples=300, deadline=None)
@given(
    d=st.integers(1, 12),
    times=st.lists(st.integers(0, 60), min_size=1, max_size=25),
)
def test_store_holds_exactly_the_windows_of_the_definition(d: int, times: list[int]) -> None:
    # any arrival order (grace covers it): the store ends up with exactly the sliding windows
    proc, _, store = _proc(
        SlidingWindows.of_time_difference_and_grace(d, 1000),
        lambda: (),
        lambda k, v, agg: tuple(sorted((*agg, v))),
    )
    records = [(t, i) for i, t in enumerate(times)]
    for t, v in records:
        proc.process(Record("k", v, t))
    got = {s: (vat[-1].value, vat[-1].timestamp) for (_, s), vat in store.data.items()}
    assert got == _expected_windows(records, d)
