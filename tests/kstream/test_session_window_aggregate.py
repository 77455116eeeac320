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


def _count_on_close(
    windows: SessionWindows, config: Any = None, processor_metadata: dict[str, int] | None = None
) -> Any:
    supplier = KStreamSessionWindowAggregate(
        windows, "s", EmitStrategy.on_window_close(), lambda: 0, lambda k, v, a: a + 1, lambda k, a, b: a + b
    )
    store = FakeSessionStore()
    ctx = FakeContext({"s": store}, config, processor_metadata)
    proc = supplier()
    proc.init(ctx)
    return proc, ctx, store


NO_THROTTLE = {"__emit.interval.ms.kstreams.windowed.aggregation__": 0}


def test_emit_on_close_emits_each_session_once_after_end_plus_gap_plus_grace() -> None:
    # KStreamSessionWindowAggregate's emit-final path: close time = stream time - gap - grace, sessions
    # ending before it (and at or after the last close time) are emitted at their end
    proc, ctx, _ = _count_on_close(SessionWindows.of_inactivity_gap_and_grace(5, 2), NO_THROTTLE)
    proc.process(Record("b", "1", 10))
    proc.process(Record("a", "1", 12))
    proc.process(Record("a", "1", 14))  # a's session [12,14]
    assert ctx.take() == []
    proc.process(Record("c", "1", 18))  # close 11: b [10,10] ends before it
    assert ctx.take() == [(S("b", 10, 10), (1, None), 10)]
    proc.process(Record("c", "1", 21))  # close 14: a's [12,14] ends at 14, not before
    assert ctx.take() == []
    proc.process(Record("d", "1", 22))  # close 15
    assert ctx.take() == [(S("a", 12, 14), (2, None), 14)]
    assert ctx.processor_metadata["s"] == 15


def test_emit_on_close_orders_sessions_by_end_then_start_then_key() -> None:
    proc, ctx, _ = _count_on_close(SessionWindows.of_inactivity_gap_with_no_grace(3), NO_THROTTLE)
    for key, ts in (("b", 5), ("a", 5), ("c", 3), ("c", 5)):
        proc.process(Record(key, "v", ts))
    proc.process(Record("z", "v", 9))  # close 6
    assert ctx.take() == [
        (S("c", 3, 5), (2, None), 5),
        (S("a", 5, 5), (1, None), 5),
        (S("b", 5, 5), (1, None), 5),
    ]


def test_emit_on_close_late_record_is_dropped_but_still_emits_closed_sessions() -> None:
    proc, ctx, _ = _count_on_close(SessionWindows.of_inactivity_gap_with_no_grace(3), NO_THROTTLE)
    proc.process(Record("a", "v", 10))
    proc.process(Record("b", "v", 13))  # close 10: a [10,10] ends at 10, still open
    proc.process(Record("a", "v", 1))  # late; close time unchanged, nothing new
    assert ctx.take() == [] and len(ctx.dropped) == 1


def test_emit_on_close_is_throttled_by_the_wall_clock() -> None:
    proc, ctx, _ = _count_on_close(SessionWindows.of_inactivity_gap_with_no_grace(3))
    proc.process(Record("a", "v", 10))  # wall clock 0: emits (nothing closed), next emit at 1000
    proc.process(Record("b", "v", 20))  # close 17: a closed, but throttled
    assert ctx.take() == []
    ctx.wall_clock = 1000
    proc.process(Record("b", "v", 21))
    assert ctx.take() == [(S("a", 10, 10), (1, None), 10)]


def test_emit_on_close_resumes_from_the_committed_close_time() -> None:
    # a restored task reads the last close time back and does not emit those sessions again
    proc, ctx, store = _count_on_close(
        SessionWindows.of_inactivity_gap_with_no_grace(3), NO_THROTTLE, {"s": 20}
    )
    store.put(S("a", 10, 10), 1)
    store.put(S("b", 19, 21), 2)
    proc.process(Record("c", "v", 25))  # close 22: only b's session ends in [20, 22)
    assert ctx.take() == [(S("b", 19, 21), (2, None), 21)]
