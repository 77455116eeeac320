"""Tests of the session-window aggregation (Kafka's ``KStreamSessionWindowAggregate``)."""

from __future__ import annotations

from typing import Any

from test_window_support import FakeContext, FakeSessionStore

from kspark.kstream.internals.session_window_aggregate import KStreamSessionWindowAggregate
from kspark.kstream.windowed import SessionWindow, Windowed
from kspark.kstream.windows import EmitStrategy, SessionWindows
from kspark.processor.api import Record


def _count(windows: SessionWindows, old_values: bool = True) -> Any:
    supplier = KStreamSessionWindowAggregate(
        windows, "s", EmitStrategy.on_window_update(), lambda: 0, lambda k, v, a: a + 1, lambda k, a, b: a + b
    )
    if old_values:
        supplier.enable_send_old_values(True)
    store = FakeSessionStore()
    ctx = FakeContext({"s": store})
    proc = supplier()
    proc.init(ctx)
    return proc, ctx, store


def S(key: str, start: int, end: int) -> Windowed[str]:
    return Windowed(key, SessionWindow(start, end))


def test_merging_sessions_retracts_them_before_the_merged_result() -> None:
    # KStreamSessionWindowAggregateProcessorTest.shouldHandleMultipleSessionsAndMerging (shape)
    proc, ctx, store = _count(SessionWindows.of_inactivity_gap_with_no_grace(50))
    proc.process(Record("a", "1", 0))
    proc.process(Record("a", "1", 100))  # gap 100 > 50: a new session
    proc.process(Record("a", "1", 50))  # bridges [0,0] and [100,100]
    assert ctx.take() == [
        (S("a", 0, 0), (1, None), 0),
        (S("a", 100, 100), (1, None), 100),
        (S("a", 0, 0), (None, 1), 0),
        (S("a", 100, 100), (None, 1), 100),
        (S("a", 0, 100), (3, None), 100),
    ]
    assert store.data == {("a", 0, 100): 3}


def test_record_inside_an_existing_session_extends_it_and_retracts_the_old_one() -> None:
    proc, ctx, _ = _count(SessionWindows.of_inactivity_gap_with_no_grace(10))
    proc.process(Record("a", "1", 5))
    proc.process(Record("a", "1", 12))
    assert ctx.take() == [
        (S("a", 5, 5), (1, None), 5),
        (S("a", 5, 5), (None, 1), 5),
        (S("a", 5, 12), (2, None), 12),
    ]


def test_record_at_an_existing_single_point_session_updates_without_tombstone() -> None:
    proc, ctx, _ = _count(SessionWindows.of_inactivity_gap_with_no_grace(10))
    proc.process(Record("a", "1", 5))
    proc.process(Record("a", "1", 5))
    assert ctx.take() == [(S("a", 5, 5), (1, None), 5), (S("a", 5, 5), (2, None), 5)]


def test_late_session_dropped_when_merged_end_is_before_close_time() -> None:
    proc, ctx, _ = _count(SessionWindows.of_inactivity_gap_and_grace(10, 5))
    proc.process(Record("a", "1", 100))  # close time 100 - 5 - 10 = 85
    proc.process(Record("b", "1", 85))  # end 85 == close time: accepted
    proc.process(Record("b", "1", 84))  # merges into [84,85]: end 85, accepted
    proc.process(Record("c", "1", 84))  # a new session [84,84] < 85: dropped
    out = ctx.take()
    assert [k for k, _, _ in out] == [S("a", 100, 100), S("b", 85, 85), S("b", 85, 85), S("b", 84, 85)]
    assert len(ctx.dropped) == 1


def test_null_key_dropped() -> None:
    proc, ctx, _ = _count(SessionWindows.of_inactivity_gap_with_no_grace(10))
    proc.process(Record(None, "1", 5))
    assert ctx.take() == [] and len(ctx.dropped) == 1
