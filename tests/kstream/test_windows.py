"""Tests of the window specifications: Kafka's validation rules and ``windows_for``."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kspark.kstream.windowed import TimeWindow
from kspark.kstream.windows import EmitStrategy, JoinWindows, SessionWindows, SlidingWindows, TimeWindows


def test_tumbling_windows_for_is_the_single_aligned_window() -> None:
    w = TimeWindows(size=5000)
    assert w.windows_for(0) == {0: TimeWindow(0, 5000)}
    assert w.windows_for(4999) == {0: TimeWindow(0, 5000)}
    assert w.windows_for(5000) == {5000: TimeWindow(5000, 10000)}
    assert w.grace_period_ms() == 0 and w.size() == 5000 and w.advance_ms == 5000


def test_hopping_windows_for_matches_kafka_time_windows_test() -> None:
    # TimeWindowsTest.shouldComputeWindowsForHoppingWindows
    w = TimeWindows.of_size_with_no_grace(12).advance_by(5)
    assert list(w.windows_for(21).items()) == [
        (10, TimeWindow(10, 22)),
        (15, TimeWindow(15, 27)),
        (20, TimeWindow(20, 32)),
    ]
    # early timestamps only get windows with start >= 0
    assert list(w.windows_for(3)) == [0]
    assert list(w.windows_for(7)) == [0, 5]


def test_barely_overlapping_hopping_windows() -> None:
    # TimeWindowsTest.shouldComputeWindowsForBarelyOverlappingHoppingWindows
    w = TimeWindows.of_size_with_no_grace(6).advance_by(5)
    assert w.windows_for(7) == {5: TimeWindow(5, 11)}


def test_durations_accept_timedelta_and_keyword_form() -> None:
    w = TimeWindows(size=timedelta(seconds=10), grace=timedelta(seconds=2), advance=timedelta(seconds=5))
    assert (w.size_ms, w.grace_ms, w.advance_ms) == (10000, 2000, 5000)
    assert w == TimeWindows.of_size_and_grace(10000, 2000).advance_by(5000)
    assert hash(w) == hash(TimeWindows.of_size_and_grace(10000, 2000).advance_by(5000))


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: TimeWindows(size=0), "Window size (sizeMs) must be larger than zero."),
        (lambda: TimeWindows(size=-1), "Window size (sizeMs) must be larger than zero."),
        (lambda: TimeWindows(size=10, grace=-1), "Grace period must not be negative."),
        (
            lambda: TimeWindows(size=10).advance_by(11),
            "Window advancement interval should be more than zero and less than window duration "
            "which is 10 ms, "
            "but given advancement interval is: 11 ms",
        ),
        (
            lambda: TimeWindows(size=10).advance_by(0),
            "Window advancement interval should be more than zero and less than window duration "
            "which is 10 ms, "
            "but given advancement interval is: 0 ms",
        ),
        (lambda: SlidingWindows(time_difference=-1), "Window time difference must not be negative."),
        (lambda: SlidingWindows(time_difference=1, grace=-1), "Window grace period must not be negative."),
        (lambda: SessionWindows(gap=0), "Gap time cannot be zero or negative."),
        (lambda: SessionWindows(gap=1, grace=-5), "Grace period must not be negative."),
        (
            lambda: JoinWindows.of(10).before(-11),
            "Window interval (ie, beforeMs+afterMs) must not be negative.",
        ),
        (lambda: JoinWindows.of(10, grace=-1), "Grace period must not be negative."),
        (
            lambda: TimeWindows(size=None),
            'Invalid value for parameter "size" (value was: None). It shouldn\'t be null.',
        ),
    ],
)
def test_validation_messages_are_kafkas(build, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError) as e:
        build()
    assert str(e.value) == message


def test_wrong_duration_type_names_the_parameter() -> None:
    with pytest.raises(TypeError, match='"size"'):
        TimeWindows(size="10s")  # type: ignore[arg-type]


@given(
    size=st.integers(1, 500),
    advance_fraction=st.integers(1, 500),
    timestamp=st.integers(0, 10_000),
)
def test_windows_for_covers_exactly_the_windows_containing_the_timestamp(
    size: int, advance_fraction: int, timestamp: int
) -> None:
    advance = max(1, min(size, advance_fraction))
    w = TimeWindows(size=size, advance=advance)
    got = w.windows_for(timestamp)
    expected = {
        start: TimeWindow(start, start + size)
        for start in range(0, timestamp + 1, advance)
        if start <= timestamp < start + size
    }
    assert got == expected
    assert list(got) == sorted(got)


def test_sliding_and_session_windows_accessors() -> None:
    s = SlidingWindows.of_time_difference_and_grace(timedelta(milliseconds=10), 5)
    assert (s.time_difference_ms(), s.grace_period_ms()) == (10, 5)
    assert s == SlidingWindows(time_difference=10, grace=5)
    assert SlidingWindows.of_time_difference_with_no_grace(10).grace_period_ms() == 0
    sw = SessionWindows.with_inactivity_gap_and_grace(100, 7)
    assert (sw.inactivity_gap(), sw.grace_period_ms()) == (100, 7)
    assert SessionWindows.of_inactivity_gap_with_no_grace(100) == SessionWindows(gap=100)


def test_join_windows_before_and_after_are_asymmetric_modifiers() -> None:
    j = JoinWindows.of_time_difference_and_grace(10, 3)
    assert (j.before_ms, j.after_ms, j.grace_ms, j.size()) == (10, 10, 3, 20)
    j2 = j.before(0).after(5)
    assert (j2.before_ms, j2.after_ms, j2.grace_ms) == (0, 5, 3)
    assert JoinWindows(before=2, after=7, grace=1) == JoinWindows.of(2, grace=1).after(7)
    assert JoinWindows.of(10).grace_period_ms() == 0
    assert JoinWindows.of_time_difference_without_grace(10) == JoinWindows.of(10)
    # a negative before is fine as long as the interval is not negative
    assert JoinWindows.of(10).before(-10).size() == 0
    with pytest.raises(NotImplementedError):
        j.windows_for(5)


def test_emit_strategy() -> None:
    assert EmitStrategy.on_window_close().type() is EmitStrategy.StrategyType.ON_WINDOW_CLOSE
    assert EmitStrategy.on_window_update() == EmitStrategy.on_window_update()
