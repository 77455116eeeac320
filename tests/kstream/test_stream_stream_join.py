"""Tests of the stream-stream join processors (Kafka's ``KStreamKStreamJoin``), record by record."""

from __future__ import annotations

from typing import Any

from test_window_support import FakeContext, FakeWindowStore

from kspark.kstream.internals.outer_join_buffer import OuterJoinStoreBuilder
from kspark.kstream.internals.stream_stream_join import (
    EMIT_INTERVAL_MS_OUTER_JOIN,
    JoinWindowProcessor,
    StreamStreamJoinSide,
    TimeTrackerSupplier,
)
from kspark.kstream.windows import JoinWindows
from kspark.processor.api import Record
from kspark.serde import Serdes
from kspark.state import Stores


class Join:
    """The join's five processors over shared fake stores, like one task of the topology."""

    def __init__(self, windows: JoinWindows, join_type: str, emit_interval_ms: int = 0) -> None:
        left_outer = join_type in ("left", "outer")
        retention = windows.size() + windows.grace_period_ms()
        self.this_store = FakeWindowStore(windows.size(), retention, True)
        self.other_store = FakeWindowStore(windows.size(), retention, True)
        stores: dict[str, Any] = {"this": self.this_store, "other": self.other_store}
        if left_outer:
            string = Serdes.String()
            outer = (
                OuterJoinStoreBuilder(Stores.in_memory_key_value_store("outer"), string, string, string)
                .with_logging_disabled()
                .build()
            )
            stores["outer"] = outer
        self.ctx = FakeContext(stores, {EMIT_INTERVAL_MS_OUTER_JOIN: emit_interval_ms})
        if left_outer:
            outer.init(self.ctx, outer)
        trackers = TimeTrackerSupplier()

        def joiner(a: Any, b: Any) -> str:
            return f"{a}+{b}"

        self.left_join = StreamStreamJoinSide(
            left_side=True,
            other_window_name="other",
            windows=windows,
            joiner=joiner,
            outer=left_outer,
            outer_join_store_name="outer" if left_outer else None,
            time_tracker_supplier=trackers,
        )()
        self.right_join = StreamStreamJoinSide(
            left_side=False,
            other_window_name="this",
            windows=windows,
            joiner=lambda t, o: joiner(o, t),
            outer=join_type == "outer",
            outer_join_store_name="outer" if left_outer else None,
            time_tracker_supplier=trackers,
        )()
        # the windowed processors forward into the join processors
        self.left_windowed = JoinWindowProcessor("this")
        self.right_windowed = JoinWindowProcessor("other")
        for p in (self.left_join, self.right_join, self.left_windowed, self.right_windowed):
            p.init(self.ctx)

    def left(self, key: Any, value: Any, ts: int) -> None:
        self._side(self.left_windowed, self.left_join, Record(key, value, ts))

    def right(self, key: Any, value: Any, ts: int) -> None:
        self._side(self.right_windowed, self.right_join, Record(key, value, ts))

    def _side(self, windowed: Any, join: Any, record: Record[Any, Any]) -> None:
        # the windowed processor forwards the record itself, then the join processor sees it;
        # the join only reads the *other* side's store, so the order of the put does not matter
        n = len(self.ctx.forwarded)
        windowed.process(record)
        assert self.ctx.forwarded.pop(n) is record
        join.process(record)

    def take(self) -> list[tuple[Any, Any, int]]:
        return self.ctx.take()


def test_inner_join_asymmetric_window_edges() -> None:
    # left record at t joins right records in [t - before, t + after]
    j = Join(JoinWindows.of_time_difference_and_grace(0, 1000).before(5).after(10), "inner")
    j.left("k", "L", 100)
    for ts in (94, 95, 110, 111):
        j.right("k", f"R{ts}", ts)
    # right record at r joins left records in [r - after, r + before]
    assert j.take() == [("k", "L+R95", 100), ("k", "L+R110", 110)]


def test_inner_join_result_timestamp_is_the_max_and_null_key_dropped() -> None:
    j = Join(JoinWindows.of_time_difference_with_no_grace(10), "inner")
    j.right("k", "R", 5)
    j.left("k", "L", 3)
    j.left(None, "L", 3)
    j.left("k", None, 3)
    assert j.take() == [("k", "L+R", 5)]
    assert len(j.ctx.dropped) == 2


def test_left_join_emits_unmatched_only_after_window_close_and_wall_clock_throttle() -> None:
    j = Join(JoinWindows.of_time_difference_and_grace(10, 5), "left", emit_interval_ms=1000)
    j.ctx.wall_clock = 1000
    # nothing parked: Kafka's `minTime + after + grace` overflows a Java long, so this first record
    # scans the empty store and starts the throttle (next scan at wall clock 2000)
    j.left("a", "A", 0)
    j.left("b", "B", 1)
    j.right("b", "RB", 2)  # b is matched and leaves the outer store
    assert j.take() == [("b", "B+RB", 2)]
    j.left("c", "C", 15)  # a closes when stream time > 0 + 10 + 5
    j.left("c", "C2", 16)  # closed, but throttled
    assert j.take() == []
    j.ctx.wall_clock = 2000
    j.left("c", "C3", 17)
    assert j.take() == [("a", "A+None", 0)]


def test_left_join_out_of_order_record_whose_window_already_closed_is_emitted_at_once() -> None:
    j = Join(JoinWindows.of_time_difference_and_grace(10, 100), "left")
    j.left("x", "X", 50)
    j.left("a", "A", 30)  # 30 + 10 < 50: cannot be matched later
    assert j.take() == [("a", "A+None", 30)]


def test_outer_join_emits_both_sides_unmatched_in_time_then_side_order() -> None:
    j = Join(JoinWindows.of_time_difference_with_no_grace(5), "outer")
    j.left("l", "L", 10)
    j.right("r", "R", 10)
    j.right("z", "Z", 16)  # stream time 16 > 10 + 5: both closed; right side sorts first at equal time
    assert j.take() == [("r", "None+R", 10), ("l", "L+None", 10)]
