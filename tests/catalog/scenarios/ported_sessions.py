"""Session-window aggregations ported from ``KStreamSessionWindowAggregateProcessorTest``.

Kafka's test drives the processor with both emit strategies over a session
store of retention ``3 * gap`` (gap 5 minutes); here the same inputs go
through the DSL (``count`` with that retention), shifted by 1000 ms, once
per strategy. Under ``onWindowClose`` a session is emitted once, after the
first record whose stream time passes its end + gap + grace, stamped with
its end; each scenario then ends with one record far ahead so the sessions
still open are emitted too.

``pss_final_edges`` is an edge case beyond Kafka's test: sessions of several
keys ending at the same time are emitted in the time-ordered store's order
(end, then start, then key), a session ending exactly at the close time
waits, and a merge removes sessions that were not yet emitted.
"""

from __future__ import annotations

from kspark import Consumed, Grouped, Materialized, Produced, SessionWindows, StreamsBuilder
from kspark.kstream.windows import EmitStrategy
from kspark.serde import Serdes
from kspark.state import Stores

from ..model import Build, P, Scenario, Step, Topics, W
from .ported_support import EMIT_NOW, SESS_L, SS, THROTTLED, L, S, ported

__all__ = ["SCENARIOS"]

GAP = 5 * 60 * 1000
SHIFT = 1000


def session_count(
    store: str, final: bool, gap: int, grace: int, retention: int | None = None, in_memory: int | None = None
) -> Build:
    """Session-windowed ``count`` into ``Materialized.as(store)`` (optionally with a retention), or with
    ``in_memory`` into ``Stores.in_memory_session_store(store, in_memory ms)``."""

    def build(b: StreamsBuilder, t: Topics) -> None:
        if in_memory is not None:
            m = Materialized.as_(Stores.in_memory_session_store(store, in_memory))
        else:
            m = Materialized.as_(store)
        if retention is not None:
            m = m.with_retention(retention)
        b.stream(t["in"], Consumed.with_(S, S)).group_by_key(Grouped.with_(S, S)).windowed_by(
            SessionWindows.of_inactivity_gap_and_grace(gap, grace)
        ).emit_strategy(EmitStrategy.on_window_close() if final else EmitStrategy.on_window_update()).count(
            m
        ).to_stream().to(t["out"], Produced.with_(Serdes.session_windowed(S), L))

    return build


def _in(records: list[tuple[str, str, int]], shift: int = SHIFT) -> list[Step]:
    return [P("in", k, v, ts + shift) for k, v, ts in records]


_FAR = ("zz", "end", 10 * GAP)  # closes every session of the inputs below

_WITHIN_GAP = _in([("john", "first", 0), ("john", "second", 500), _FAR])
_MERGE = _in([("mel", "first", 0), ("mel", "second", GAP + 1), ("mel", "third", GAP // 2), _FAR])
_SAME_TIME = _in([("mel", "first", 0), ("mel", "second", 0), _FAR])
_APART = _in(
    [
        ("mel", "first", 0),
        ("mel", "second", GAP + 1),
        ("mel", "second", GAP + 1),
        ("mel", "third", 2 * GAP + 2),
        ("mel", "third", 2 * GAP + 2),
        ("mel", "third", 2 * GAP + 2),
        _FAR,
    ]
)
_MULTIPLE = _in(
    [
        ("a", "1", 0),
        ("b", "1", 0),
        ("c", "1", 0),
        ("d", "1", 0),
        ("d", "2", GAP // 2),
        ("a", "2", GAP + 1),
        ("b", "2", GAP + 1),
        ("a", "3", GAP + 1 + GAP // 2),
        ("c", "3", GAP + 1 + GAP // 2),
        _FAR,
    ]
)
_REMOVED = _in([("a", "1", 0), ("a", "1", 5), ("a", "1", 100), _FAR])
# gap 10: the late record's session [1000,1000] ends before close time 1011 - 10 - grace
_LATE_ZERO = _in(
    [("dummy", "dummy", 0), ("OnTime1", "1", 0), ("dummy", "dummy", 11), ("Late1", "1", 0), ("z", "z", 50)]
)
_LATE_ONE = _in(
    [
        ("dummy", "dummy", 0),
        ("OnTime1", "1", 0),
        ("dummy", "dummy", 11),
        ("OnTime2", "1", 0),
        ("dummy", "dummy", 12),
        ("Late1", "1", 0),
        ("z", "z", 50),
    ]
)
# gap 5, grace 2: close time = stream time - 7; sessions ending at 1010 close once stream time is 1018
_EDGES = _in(
    [
        ("b", "1", 1004),
        ("a", "2", 1010),
        ("c", "3", 1008),
        ("b", "4", 1010),  # b's session becomes [1004,1010]
        ("c", "5", 1010),  # c's [1008,1010]
        ("d", "6", 1017),  # close 1010: nothing ends before 1010
        ("e", "7", 1018),  # close 1011: the three sessions ending at 1010, by start then key
        ("f", "8", 1020),
        ("f", "9", 1024),  # f's [1020,1024]
        ("g", "10", 1030),  # close 1023: d [1017], e [1018]
        ("f", "11", 1027),  # merges into f's [1020,1027], not yet emitted
        ("h", "12", 1040),  # close 1033: f [1020,1027], g [1030]
        ("i", "13", 1100),
    ],
    0,
)

# the edges' inputs with the wall clock moving between them (emit interval 1000 ms)
_THROTTLED = [*_EDGES[:6], W(999), *_EDGES[6:8], W(1), *_EDGES[8:11], W(5000), *_EDGES[11:]]

_D = "KStreamSessionWindowAggregateProcessorTest"


def _pair(
    name: str, method: str, what: str, steps: list[Step], *, gap: int = GAP, grace: int = 0
) -> list[Scenario]:
    retention = 3 * GAP  # the store of Kafka's test, whatever the processor's gap
    return [
        ported(
            name,
            session_count(f"{name}-store", False, gap, grace, retention),
            {"in": SS},
            {"out": SESS_L},
            steps,
            f"{_D}.{method} (update): {what}",
            java=name,
        ),
        ported(
            f"{name}_final",
            session_count(f"{name}-final-store", True, gap, grace, retention),
            {"in": SS},
            {"out": SESS_L},
            steps,
            f"{_D}.{method} (emit final): {what}",
            java=f"{name}_final",
            config=EMIT_NOW,
        ),
    ]


SCENARIOS: list[Scenario] = [
    *_pair(
        "pss_within_gap",
        "shouldCreateSingleSessionWhenWithinGap",
        "two records within the gap make one session.",
        _WITHIN_GAP,
    ),
    *_pair(
        "pss_merge",
        "shouldMergeSessions",
        "a record between two sessions within the gap of both merges them (retracting both).",
        _MERGE,
    ),
    *_pair(
        "pss_same_time",
        "shouldUpdateSessionIfTheSameTime",
        "two records at the same time update one session.",
        _SAME_TIME,
    ),
    *_pair(
        "pss_apart",
        "shouldHaveMultipleSessionsForSameIdWhenTimestampApartBySessionGap",
        "records gap + 1 apart start new sessions; on close, a session ending exactly at close time - 1 is "
        "emitted (the emit range is inclusive).",
        _APART,
    ),
    *_pair(
        "pss_multiple",
        "shouldHandleMultipleSessionsAndMerging",
        "sessions of four keys, some extended and some new.",
        _MULTIPLE,
    ),
    *_pair(
        "pss_removed",
        "shouldImmediatelyForwardRemovedSessionsWhenMerging",
        "a merge retracts the old session with a tombstone before the merged one (update only).",
        _REMOVED,
    ),
    *_pair(
        "pss_late_zero_grace",
        "shouldLogAndMeterWhenSkippingLateRecordWithZeroGrace",
        "gap 10, grace 0: a record whose session would end before stream time - gap is dropped.",
        _LATE_ZERO,
        gap=10,
    ),
    *_pair(
        "pss_late_grace",
        "shouldLogAndMeterWhenSkippingLateRecordWithNonzeroGrace",
        "gap 10, grace 1: one record is still on time within grace, the next one late.",
        _LATE_ONE,
        gap=10,
        grace=1,
    ),
    ported(
        "pss_final_edges",
        session_count("pss-edges-store", True, 5, 2),
        {"in": SS},
        {"out": SESS_L},
        _EDGES,
        "Edge beyond KStreamSessionWindowAggregateProcessorTest (emit final, gap 5, grace 2): "
        "sessions of several keys ending together are emitted by "
        "start then key; a session ending at the close time waits one more ms; a merge replaces a "
        "session that was not yet emitted, so only the merged session is emitted.",
        java="pss_final_edges",
        config=EMIT_NOW,
    ),
    ported(
        "pss_final_throttled",
        session_count("pss-throttled-store", True, 5, 2),
        {"in": SS},
        {"out": SESS_L},
        _THROTTLED,
        "Edge beyond KStreamSessionWindowAggregateProcessorTest (emit final): "
        "sessions throttled by a 1000 ms emit interval (KStreamSessionWindowAggregate's "
        "shouldEmitFinal): the first record emits and schedules the next emit a second later on the "
        "wall clock; records before it emit nothing, the first one after it emits every session closed "
        "meanwhile.",
        java="pss_final_throttled",
        config={"__emit.interval.ms.kstreams.windowed.aggregation__": "1000"},
        spark_skip=THROTTLED,
    ),
    ported(
        "pss_final_in_memory",
        session_count("pss-in-memory-store", True, 5, 2, in_memory=12),
        {"in": SS},
        {"out": SESS_L},
        _EDGES,
        "Edge beyond KStreamSessionWindowAggregateProcessorTest (emit final): "
        "a user's in-memory session store (retention 12): its scan by end time "
        "keeps only sessions ending after observed - retention, in its own order (end, key, start).",
        java="pss_final_in_memory",
        config=EMIT_NOW,
    ),
]
