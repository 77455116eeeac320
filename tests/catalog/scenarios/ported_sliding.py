"""Sliding-window aggregations ported from ``KStreamSlidingWindowAggregateTest``.

Kafka's test runs every case on its emit-on-update path (over an in-memory
window store, iterated backwards) and its emit-on-window-close path (over the
DSL's time-ordered store, never cached); each path is a scenario here. Inputs
at or after the time difference are shifted by 100 (sliding windows only
differ near 0, where records before the time difference share the window
``[0, difference]``); the "early record" cases keep their timestamps from 0
(on Spark, where the catalog shifts such inputs far from 0, they check
ordinary windows instead).

``ps_final_retention`` is the edge of the emit-final scan at the
time-ordered store's retention (``2 * difference + grace``): Kafka reads
from ``observed - retention`` inclusive, so a left window exactly that far
behind the store's largest window start is still emitted.
"""

from __future__ import annotations

from kspark import Consumed, Grouped, Materialized, Produced, SlidingWindows, StreamsBuilder
from kspark.kstream.windows import EmitStrategy
from kspark.serde import Serdes
from kspark.state import Stores

from ..model import Build, P, Scenario, Step, Topics
from .ported_support import EMIT_NOW, SS, S, ported, win

__all__ = ["SCENARIOS"]


def sliding_agg(
    store: str, final: bool, diff: int, grace: int, *, in_memory: bool = False, reduce: bool = False
) -> Build:
    """A sliding-window ``aggregate("0", agg + "+" + v)`` (or ``reduce(a + "+" + v)``) to ``out``.

    ``in_memory``: materialized in ``Stores.in_memory_window_store(store, 50000, 10)`` (Kafka's test
    store of the update path), else in ``Materialized.as(store)``."""

    def build(b: StreamsBuilder, t: Topics) -> None:
        if in_memory:
            m = Materialized.as_(Stores.in_memory_window_store(store, 50000, 10, False))
        else:
            m = Materialized.as_(store).with_value_serde(S)
        windowed = (
            b.stream(t["in"], Consumed.with_(S, S))
            .group_by_key(Grouped.with_(S, S))
            .windowed_by(SlidingWindows.of_time_difference_and_grace(diff, grace))
            .emit_strategy(EmitStrategy.on_window_close() if final else EmitStrategy.on_window_update())
        )
        if reduce:
            table = windowed.reduce(lambda a, v: a + "+" + v, m)
        else:
            table = windowed.aggregate(lambda: "0", lambda k, v, agg: agg + "+" + v, m)
        table.to_stream().to(t["out"], Produced.with_(Serdes.time_windowed(S, diff), S))

    return build


def sliding_join(final: bool) -> Build:
    """``testJoin``: two sliding-window aggregations joined as KTables."""
    grace = 0 if final else 100

    def build(b: StreamsBuilder, t: Topics) -> None:
        def agg(topic: str, store: str) -> object:
            m = (
                Materialized.as_(store).with_value_serde(S)
                if final
                else Materialized.as_(Stores.in_memory_window_store(store, 50000, 10, False))
            )
            return (
                b.stream(t[topic], Consumed.with_(S, S))
                .group_by_key(Grouped.with_(S, S))
                .windowed_by(SlidingWindows.of_time_difference_and_grace(10, grace))
                .emit_strategy(EmitStrategy.on_window_close() if final else EmitStrategy.on_window_update())
                .aggregate(lambda: "0", lambda k, v, a: a + "+" + v, m)
            )

        tag = "fin" if final else "upd"
        out = Produced.with_(Serdes.time_windowed(S, 10), S)
        table1 = agg("in1", f"ps-join-{tag}-1")
        table2 = agg("in2", f"ps-join-{tag}-2")
        table1.to_stream().to(t["out1"], out)  # type: ignore[attr-defined]
        table2.to_stream().to(t["out2"], out)  # type: ignore[attr-defined]
        table1.join(table2, lambda p1, p2: p1 + "%" + p2).to_stream().to(t["out3"], out)  # type: ignore[attr-defined]

    return build


def _in(records: list[tuple[str, str, int]], shift: int = 100) -> list[Step]:
    return [P("in", k, v, ts + shift) for k, v, ts in records]


_SMALL = _in(
    [
        ("A", "1", 10),
        ("A", "2", 10),
        ("A", "3", 14),
        ("A", "4", 15),
        ("A", "5", 20),
        ("A", "6", 22),
        ("A", "7", 30),
    ]
)
_REDUCE = _in(
    [("A", "1", 10), ("A", "2", 14), ("A", "3", 15), ("A", "4", 22), ("A", "5", 26), ("A", "6", 30)]
)
_LARGE = _in(
    [
        ("A", "1", 10),
        ("A", "2", 20),
        ("A", "3", 22),
        ("A", "4", 15),
        ("B", "1", 12),
        ("B", "2", 13),
        ("B", "3", 18),
        ("B", "4", 19),
        ("B", "5", 25),
        ("B", "6", 14),
        ("C", "1", 11),
        ("C", "2", 15),
        ("C", "3", 16),
        ("C", "4", 21),
        ("C", "5", 23),
        ("D", "4", 11),
        ("D", "2", 12),
        ("D", "3", 29),
        ("D", "5", 16),
    ]
)
_JOIN = [
    P(topic, k, v, ts + 100)
    for topic, k, v, ts in [
        ("in1", "A", "1", 10),
        ("in1", "B", "2", 11),
        ("in1", "C", "3", 12),
        ("in1", "A", "1", 15),
        ("in1", "B", "2", 16),
        ("in1", "C", "3", 19),
        ("in2", "A", "a", 10),
        ("in2", "C", "c", 12),
        ("in2", "A", "a", 15),
        ("in2", "B", "b", 16),
        ("in2", "C", "c", 17),
    ]
]
_EARLY_SMALL = _in(
    [
        ("A", "1", 0),
        ("A", "2", 5),
        ("A", "3", 6),
        ("A", "4", 3),
        ("A", "5", 13),
        ("A", "6", 10),
        ("A", "7", 70),
    ],
    0,
)
_EARLY_REPEATED = _in(
    [
        ("A", "1", 0),
        ("A", "2", 2),
        ("A", "3", 4),
        ("A", "4", 0),
        ("A", "5", 2),
        ("A", "6", 2),
        ("A", "7", 0),
        ("A", "8", 7),
    ],
    0,
)
_EARLY_LARGE = _in(
    [
        ("E", "1", 0),
        ("E", "3", 5),
        ("E", "4", 6),
        ("E", "2", 3),
        ("E", "6", 13),
        ("E", "5", 10),
        ("E", "7", 4),
        ("E", "8", 2),
        ("E", "9", 15),
    ],
    0,
)
_NO_GRACE = _in(
    [("A", "1", 100), ("A", "2", 105), ("A", "3", 106), ("A", "4", 103), ("A", "5", 113), ("A", "6", 110)], 0
)
_NO_GRACE_LARGE = _in(
    [
        ("E", "1", 100),
        ("E", "3", 105),
        ("E", "4", 106),
        ("E", "2", 103),
        ("E", "6", 113),
        ("E", "5", 110),
        ("E", "7", 104),
        ("E", "8", 102),
        ("E", "9", 115),
    ],
    0,
)
_EXPIRED = _in(
    [
        ("k", "100", 200),
        *((("k", str(i), 100 + i)) for i in range(6)),
        ("k", "6", 15),
        ("k", "101", 300),
        ("k", "102", 400),
    ],
    0,
)
# difference 10, grace 0: retention 20. b at 120 leaves a's left window [90,100] exactly 20 behind the
# store's largest start (110), c at 141 leaves b's [110,120] 21 behind (131): emitted, then lost.
_RETENTION = _in(
    [
        ("a", "1", 100),
        ("b", "2", 120),
        ("a", "3", 125),
        ("b", "4", 126),
        ("c", "5", 141),
        ("c", "6", 150),
        ("d", "7", 175),
    ],
    0,
)

_D = "KStreamSlidingWindowAggregateTest"


def _pair(
    name: str,
    method: str,
    what: str,
    steps: list[Step],
    *,
    diff: int = 10,
    grace: int | tuple[int, int] = 5,
    update_store: str = "mem",
    reduce: bool = False,
    **spark: object,
) -> list[Scenario]:
    """The update-path and emit-final scenarios of one Kafka test method."""
    g_update, g_final = grace if isinstance(grace, tuple) else (grace, grace)
    in_memory = update_store == "mem"
    return [
        ported(
            name,
            sliding_agg(f"{name}-store", False, diff, g_update, in_memory=in_memory, reduce=reduce),
            {"in": SS},
            {"out": win(diff)},
            steps,
            f"{_D}.{method} (update): {what}",
            java=name,
            **spark,  # type: ignore[arg-type]
        ),
        ported(
            f"{name}_final",
            sliding_agg(f"{name}-final-store", True, diff, g_final, reduce=reduce),
            {"in": SS},
            {"out": win(diff)},
            steps,
            f"{_D}.{method} (emit final): {what}",
            java=f"{name}_final",
            config=EMIT_NOW,
            **spark,  # type: ignore[arg-type]
        ),
    ]


SCENARIOS: list[Scenario] = [
    *_pair(
        "ps_agg_small",
        "testAggregateSmallInput",
        "two records at the same time, then in-order records whose left and right windows overlap.",
        _SMALL,
    ),
    *_pair(
        "ps_reduce_small",
        "testReduceSmallInput",
        "reduce seeds a new window with the first value (no initializer).",
        _REDUCE,
        reduce=True,
    ),
    *_pair(
        "ps_agg_large",
        "testAggregateLargeInput",
        "out-of-order records of four keys (grace 50 on update; grace 10 on emit final, where the late "
        "records' windows are dropped).",
        _LARGE,
        grace=(50, 10),
    ),
    *_pair(
        "ps_early_small",
        "testEarlyRecordsSmallInput",
        "records before the time difference (50) share the window [0,50] and create right windows as "
        "later records arrive; a record at 70 closes them.",
        _EARLY_SMALL,
        diff=50,
        grace=0,
        update_store="named",
    ),
    *_pair(
        "ps_early_repeated",
        "testEarlyRecordsRepeatedInput",
        "early records repeated at the same timestamps (0 and 2) with difference 5.",
        _EARLY_REPEATED,
        diff=5,
        grace=0,
        update_store="named",
    ),
    *_pair(
        "ps_early_large",
        "testEarlyRecordsLargeInput",
        "early and later records out of order (grace 50 on update, 1 on emit final).",
        _EARLY_LARGE,
        grace=(50, 1),
    ),
    *_pair(
        "ps_no_grace_small",
        "testNoGracePeriodSmallInput",
        "difference 50 and no grace: out-of-order records within the window still count.",
        _NO_GRACE,
        diff=50,
        grace=0,
        update_store="named",
    ),
    *_pair(
        "ps_no_grace_large",
        "testNoGracePeriodLargeInput",
        "difference 10, no grace: out-of-order records whose left windows are already closed are dropped.",
        _NO_GRACE_LARGE,
        grace=0,
    ),
    *_pair(
        "ps_expired_grace",
        "shouldLogAndMeterWhenSkippingExpiredWindowByGrace",
        "grace 90: records whose left window ends before stream time - grace are dropped (7 of them).",
        _EXPIRED,
        grace=90,
    ),
    ported(
        "ps_join",
        sliding_join(False),
        {"in1": SS, "in2": SS},
        {"out1": win(10), "out2": win(10), "out3": win(10)},
        _JOIN,
        f"{_D}.testJoin (update): sliding-window KTables joined; right windows created later join too.",
        java="ps_join",
    ),
    ported(
        "ps_join_final",
        sliding_join(True),
        {"in1": SS, "in2": SS},
        {"out1": win(10), "out2": win(10), "out3": win(10)},
        _JOIN,
        f"{_D}.testJoin (emit final, grace 0): only closed windows are emitted and joined.",
        java="ps_join_final",
        config=EMIT_NOW,
    ),
    ported(
        "ps_final_retention",
        sliding_agg("ps-retention-store", True, 10, 0),
        {"in": SS},
        {"out": win(10)},
        _RETENTION,
        "Edge beyond KStreamSlidingWindowAggregateTest (emit final): "
        "sliding windows at the time-ordered store's retention (difference 10, grace 0, "
        "retention 20): a closed window exactly retention ms behind the store's largest window start is "
        "emitted, one a millisecond further behind is not.",
        java="ps_final_retention",
        config=EMIT_NOW,
    ),
]
