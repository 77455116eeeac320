"""``KTable.suppress`` ported from ``SuppressScenarioTest`` and ``KTableSuppressProcessorTest``.

Buffer configs are spelled as in Kafka, ``Suppressed.BufferConfig.max_records(1)``.
Timestamps are those of Kafka's tests shifted by 100 (a multiple of every
window size and advance used here). Kafka's processor-level cases
(``KTableSuppressProcessorTest``) feed changes straight into the processor;
here the same changes come from the DSL: tombstones from a table source's
deletes and from session merges, which final-results suppression drops and
time-limit suppression passes on. Scenarios whose groups are fed by several
source keys through a repartition topic run on one partition on Spark (their
result depends on how upstream tasks interleave there).
"""

from __future__ import annotations

from typing import Any

from kspark import (
    Consumed,
    Grouped,
    KeyValue,
    Materialized,
    Produced,
    SessionWindows,
    SlidingWindows,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
)
from kspark.serde import Serdes

from ..model import Build, P, Scenario, Step, Topics
from .ported_support import SESS_L, SL, SS, L, S, j, ported, win

__all__ = ["SCENARIOS"]

LONG_MAX = (1 << 63) - 1
DAYS_100 = 100 * 24 * 3600 * 1000


def value_counts(suppressed: Suppressed, counted: str = "plain") -> Build:
    """``SuppressScenarioTest``'s value counts: a table re-grouped by value, counted, suppressed;
    both the suppressed and the raw counts are written."""

    def build(b: StreamsBuilder, t: Topics) -> None:
        table = b.table(
            t["input"],
            Consumed.with_(S, S),
            Materialized.with_(S, S).with_caching_disabled().with_logging_disabled(),
        )
        grouped = table.group_by(lambda k, v: KeyValue(v, k), Grouped.with_(S, S))
        counts = grouped.count(Materialized.with_(S, L)) if counted == "serdes" else grouped.count()
        counts.suppress(suppressed).to_stream().to(t["output-suppressed"], Produced.with_(S, L))
        counts.to_stream().to(t["output-raw"], Produced.with_(S, L))

    return build


def windowed_counts(windows: Any, size: int, store: str, session: bool = False) -> Build:
    """``SuppressScenarioTest``'s final results: windowed counts (uncached) suppressed until close."""

    def build(b: StreamsBuilder, t: Topics) -> None:
        counts = (
            b.stream(t["input"], Consumed.with_(S, S))
            .group_by(lambda k, v: k, Grouped.with_(S, S))
            .windowed_by(windows)
            .count(Materialized.as_(store).with_caching_disabled())
        )
        key_serde = Serdes.session_windowed(S) if session else Serdes.time_windowed(S, size)
        counts.suppress(Suppressed.until_window_closes(Suppressed.BufferConfig.unbounded())).to_stream().to(
            t["output-suppressed"], Produced.with_(key_serde, L)
        )
        counts.to_stream().to(t["output-raw"], Produced.with_(key_serde, L))

    return build


def before_group_by(b: StreamsBuilder, t: Topics) -> None:
    """``shouldWorkBeforeGroupBy``: a suppressed source table re-grouped and counted."""
    b.table(t["topic"], Consumed.with_(S, S)).suppress(
        Suppressed.until_time_limit(10, Suppressed.BufferConfig.unbounded())
    ).group_by(lambda k, v: KeyValue(k, v), Grouped.with_(S, S)).count().to_stream().to(
        t["output"], Produced.with_(S, L)
    )


def before_join(side: str) -> Build:
    """``shouldWorkBeforeJoinRight`` / ``Left``: an outer join with one side suppressed."""

    def build(b: StreamsBuilder, t: Topics) -> None:
        limit = Suppressed.until_time_limit(10, Suppressed.BufferConfig.unbounded())
        left = b.table(t["left"], Consumed.with_(S, S))
        if side == "left":
            left = left.suppress(limit)
        right = b.table(t["right"], Consumed.with_(S, S))
        if side == "right":
            right = right.suppress(limit)
        left.outer_join(right, lambda lv, rv: f"({j(lv)},{j(rv)})").to_stream().to(
            t["output"], Produced.with_(S, S)
        )

    return build


def table_suppress(suppressed: Suppressed) -> Build:
    """A source table (with deletes) suppressed as given."""

    def build(b: StreamsBuilder, t: Topics) -> None:
        b.table(t["input"], Consumed.with_(S, S)).suppress(suppressed).to_stream().to(
            t["output"], Produced.with_(S, S)
        )

    return build


def session_suppress(suppressed: Suppressed) -> Build:
    """Session counts (merges forward tombstones) suppressed as given."""

    def build(b: StreamsBuilder, t: Topics) -> None:
        b.stream(t["input"], Consumed.with_(S, S)).group_by_key(Grouped.with_(S, S)).windowed_by(
            SessionWindows.of_inactivity_gap_with_no_grace(5)
        ).count(Materialized.with_(S, L).with_caching_disabled()).suppress(suppressed).to_stream().to(
            t["output"], Produced.with_(Serdes.session_windowed(S), L)
        )

    return build


def _in(records: list[tuple[str, Any, int]], topic: str = "input", shift: int = 100) -> list[Step]:
    return [P(topic, k, v, ts + shift) for k, v, ts in records]


_VALUES = _in([("k1", "v1", 0), ("k1", "v2", 1), ("k2", "v1", 2), ("x", "x", 3), ("x", "y", 4)])
_TICKS = _in([("k1", "v1", 0), ("k1", "v2", 1), ("k2", "v1", 2), ("tick", "tick", 3), ("tick", "tock", 4)])
_LIMITS = _in([("k1", "v1", 0), ("k1", "v2", 1), ("k2", "v1", 2), ("x", "x", 3)])
_TIME_WINDOWS = _in([("k1", "v1", ts) for ts in (0, 1, 2, 1, 0, 5, 0)])
_LARGE_JUMP = _in([("k1", "v1", ts) for ts in (0, 1, 2, 0, 3, 0, 4, 0, 30)])
_SLIDING = _in([("k1", "v1", ts) for ts in (10, 11, 10, 13, 10, 24, 5, 7, 90)], shift=0)
_SESSIONS = _in(
    [("k1", "v1", 0), ("k1", "v1", 5), ("k1", "v1", 1), ("k2", "v1", 11), ("k1", "v1", 5), ("k1", "v1", 30)]
)
_GROUP_BY = _in([("A", "a", 0), ("tick", "tick", 10)], topic="topic")
_JOIN_RIGHT = [
    *_in([("B", "1", 0), ("A", "1", 0), ("tick", "tick", 10), ("A", "2", 11)], topic="right"),
    *_in([("A", "a", 12), ("B", "b", 12), ("A", "b", 13)], topic="left"),
    *_in([("tick", "tick1", 21)], topic="right"),
]
_JOIN_LEFT = [
    *_in([("B", "1", 0), ("A", "1", 0), ("tick", "tick", 10), ("A", "2", 11)], topic="left"),
    *_in([("A", "a", 12), ("B", "b", 12), ("A", "b", 13)], topic="right"),
    *_in([("tick", "tick1", 21)], topic="left"),
]
_TABLE_DELETES = _in(
    [("a", "1", 0), ("b", "2", 1), ("a", None, 2), ("c", None, 3), ("b", "3", 4), ("b", None, 5)]
)
_SESSION_MERGES = _in(
    [("a", "1", 0), ("a", "2", 4), ("b", "3", 5), ("a", "4", 2), ("a", "5", 20), ("b", "6", 30)]
)
_CAPACITY = _in([("a", "1", 0), ("b", "2", 1), ("a", "3", 2), ("c", "4", 3), ("d", None, 4)])

_S = "SuppressScenarioTest"
_P = "KTableSuppressProcessorTest"
_VALUE_IO = {"input": SS}, {"output-suppressed": SL, "output-raw": SL}


def _unbounded() -> Any:
    return Suppressed.BufferConfig.unbounded()


SCENARIOS: list[Scenario] = [
    ported(
        "psu_zero_emit_after",
        value_counts(Suppressed.until_time_limit(0, _unbounded())),
        *_VALUE_IO,
        _VALUES,
        f"{_S}.shouldImmediatelyEmitEventsWithZeroEmitAfter: a zero time limit forwards every update, "
        "retractions of the re-grouped table included.",
        java="psu_zero_emit_after",
        partitions=(1,),
    ),
    ported(
        "psu_time_limit",
        value_counts(Suppressed.until_time_limit(2, _unbounded())),
        *_VALUE_IO,
        _TICKS,
        f"{_S}.shouldSuppressIntermediateEventsWithTimeLimit: a key is emitted (its latest value) once "
        "stream time reaches its first buffered time + 2; a later tick keeps the new key buffered.",
        java="psu_time_limit",
        partitions=(1,),
    ),
    ported(
        "psu_record_limit",
        value_counts(
            Suppressed.until_time_limit(
                LONG_MAX, Suppressed.BufferConfig.max_records(1).emit_early_when_full()
            ),
            "serdes",
        ),
        *_VALUE_IO,
        _LIMITS,
        f"{_S}.shouldSuppressIntermediateEventsWithRecordLimit: a one-record buffer emits the oldest key "
        "early when a second key arrives; consecutive updates of one key collapse.",
        java="psu_record_limit",
        partitions=(1,),
    ),
    ported(
        "psu_bytes_limit",
        value_counts(
            Suppressed.until_time_limit(
                LONG_MAX, Suppressed.BufferConfig.max_bytes(200).emit_early_when_full()
            )
        ),
        *_VALUE_IO,
        _LIMITS,
        f"{_S}.shouldSuppressIntermediateEventsWithBytesLimit: a 200-byte buffer holds one entry (a "
        "little over 100 bytes each, as Kafka counts them) and emits early when a second one arrives.",
        java="psu_bytes_limit",
        partitions=(1,),
    ),
    ported(
        "psu_final_time_windows",
        windowed_counts(TimeWindows.of_size_and_grace(2, 1), 2, "psu-counts-tw"),
        {"input": SS},
        {"output-suppressed": win(2, "long"), "output-raw": win(2, "long")},
        _TIME_WINDOWS,
        f"{_S}.shouldSupportFinalResultsForTimeWindows: each window's final count once stream time passes "
        "its end + grace; the last record is beyond grace and dropped.",
        java="psu_final_time_windows",
    ),
    ported(
        "psu_final_large_jump",
        windowed_counts(TimeWindows.of_size_and_grace(2, 2), 2, "psu-counts-jump"),
        {"input": SS},
        {"output-suppressed": win(2, "long"), "output-raw": win(2, "long")},
        _LARGE_JUMP,
        f"{_S}.shouldSupportFinalResultsForTimeWindowsWithLargeJump: one jump in stream time closes three "
        "windows at once, emitted in window order.",
        java="psu_final_large_jump",
    ),
    ported(
        "psu_final_sliding",
        windowed_counts(SlidingWindows.of_time_difference_and_grace(5, 15), 5, "psu-counts-sliding"),
        {"input": SS},
        {"output-suppressed": win(5, "long"), "output-raw": win(5, "long")},
        _SLIDING,
        f"{_S}.shouldSupportFinalResultsForSlidingWindows: final counts of left and right sliding windows; "
        "records beyond grace (5, 7 after 24) are dropped.",
        java="psu_final_sliding",
    ),
    ported(
        "psu_final_sessions",
        windowed_counts(
            SessionWindows.of_inactivity_gap_with_no_grace(5), 0, "psu-counts-sessions", session=True
        ),
        {"input": SS},
        {"output-suppressed": SESS_L, "output-raw": SESS_L},
        _SESSIONS,
        f"{_S}.shouldSupportFinalResultsForSessionWindows: merged sessions' tombstones are dropped by the "
        "final-results buffer; each session is emitted once it closes.",
        java="psu_final_sessions",
        partitions=(1,),
    ),
    ported(
        "psu_before_group_by",
        before_group_by,
        {"topic": SS},
        {"output": SL},
        _GROUP_BY,
        f"{_S}.shouldWorkBeforeGroupBy: a suppressed table feeding a re-grouping count.",
        java="psu_before_group_by",
    ),
    ported(
        "psu_before_join_right",
        before_join("right"),
        {"left": SS, "right": SS},
        {"output": SS},
        _JOIN_RIGHT,
        f"{_S}.shouldWorkBeforeJoinRight: an outer join whose right table is suppressed (10 ms) sees right "
        "updates only when they leave the buffer.",
        java="psu_before_join_right",
    ),
    ported(
        "psu_before_join_left",
        before_join("left"),
        {"left": SS, "right": SS},
        {"output": SS},
        _JOIN_LEFT,
        f"{_S}.shouldWorkBeforeJoinLeft: the same with the left table suppressed.",
        java="psu_before_join_left",
    ),
    ported(
        "psu_table_tombstones",
        table_suppress(Suppressed.until_time_limit(0, Suppressed.BufferConfig.max_records(0))),
        {"input": SS},
        {"output": SS},
        _TABLE_DELETES,
        f"{_P}.suppressShouldNotDropTombstonesForKTable: a time-limit suppression passes a table's "
        "deletes on (also one for a key never seen).",
        java="psu_table_tombstones",
    ),
    ported(
        "psu_session_limit_tombstones",
        session_suppress(Suppressed.until_time_limit(0, Suppressed.BufferConfig.max_records(0))),
        {"input": SS},
        {"output": SESS_L},
        _SESSION_MERGES,
        f"{_P}.suppressShouldNotDropTombstonesForSessionWindows: time-limit suppression forwards the "
        "tombstones of merged sessions.",
        java="psu_session_limit_tombstones",
    ),
    ported(
        "psu_session_final_tombstones",
        session_suppress(Suppressed.until_window_closes(Suppressed.BufferConfig.unbounded())),
        {"input": SS},
        {"output": SESS_L},
        _SESSION_MERGES,
        f"{_P}.finalResultsShouldDropTombstonesForSessionWindows: final-results suppression drops them.",
        java="psu_session_final_tombstones",
    ),
    ported(
        "psu_record_capacity",
        table_suppress(Suppressed.until_time_limit(DAYS_100, Suppressed.BufferConfig.max_records(1))),
        {"input": SS},
        {"output": SS},
        _CAPACITY,
        f"{_P}.suppressShouldEmitWhenOverRecordCapacity: a second key evicts the first (eager buffer).",
        java="psu_record_capacity",
    ),
    ported(
        "psu_byte_capacity",
        table_suppress(Suppressed.until_time_limit(DAYS_100, Suppressed.BufferConfig.max_bytes(60))),
        {"input": SS},
        {"output": SS},
        _CAPACITY,
        f"{_P}.suppressShouldEmitWhenOverByteCapacity: a 60-byte buffer evicts by Kafka's size accounting.",
        java="psu_byte_capacity",
    ),
]
