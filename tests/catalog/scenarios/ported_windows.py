"""Time-window aggregations ported from ``KStreamWindowAggregateTest``, with emit-on-window-close edges.

Kafka's tests run each case with ``EmitStrategy.onWindowUpdate()`` and
``onWindowClose()``, with the record cache on and off; the catalog runs every
scenario with the cache on and off, so each strategy is one scenario here.
Timestamps are those of Kafka's tests shifted by a multiple of the window
advance (so no input has timestamp 0 and windows keep their alignment);
where that moves the first windows away from 0 the doc says so.

The ``pw_final_*`` edge scenarios pin down what ``onWindowClose`` emits at
the retention boundary of Kafka's time-ordered window store: the emit scan
reads from ``max(lower bound, observed - retention)`` where ``observed`` is
the store's largest window start. With the cache on, the store sees a
record's writes only when the cache flushes after the record, so the scan
runs one record behind and still finds windows that the uncached store has
already left behind (a large jump in stream time loses them without the
cache, and emits them with it).
"""

from __future__ import annotations

from kspark import Consumed, Grouped, Materialized, Produced, StreamsBuilder, TimeWindows
from kspark.kstream.windows import EmitStrategy
from kspark.serde import Serdes
from kspark.state import Stores

from ..model import Build, P, Scenario, Topics, W
from .ported_support import EMIT_NOW, SS, THROTTLED, WINS, S, ported

__all__ = ["SCENARIOS"]


def _strategy(final: bool) -> EmitStrategy:
    return EmitStrategy.on_window_close() if final else EmitStrategy.on_window_update()


def _out(size: int = 10) -> Produced:
    return Produced.with_(Serdes.time_windowed(S, size), S)


def hop_agg(
    store: str,
    final: bool,
    grace: int,
    *,
    advance: int = 5,
    retention: int | None = None,
    logging: bool = True,
    in_memory: int | None = None,
    persistent: int | None = None,
) -> Build:
    """Kafka's windowed ``aggregate("0", agg + "+" + v)`` into ``Materialized.as(store)``
    (``in_memory`` / ``persistent``: into a store of the user's of that retention instead)."""

    def build(b: StreamsBuilder, t: Topics) -> None:
        if in_memory is not None:
            m = Materialized.as_(Stores.in_memory_window_store(store, in_memory, 10, False)).with_value_serde(
                S
            )
        elif persistent is not None:
            supplier = Stores.persistent_timestamped_window_store(store, persistent, 10, False)
            m = Materialized.as_(supplier).with_value_serde(S)
        else:
            m = Materialized.as_(store).with_value_serde(S)
        if retention is not None:
            m = m.with_retention(retention)
        if not logging:
            m = m.with_logging_disabled()
        b.stream(t["in"], Consumed.with_(S, S)).group_by_key(Grouped.with_(S, S)).windowed_by(
            TimeWindows.of_size_and_grace(10, grace).advance_by(advance)
        ).emit_strategy(_strategy(final)).aggregate(
            lambda: "0", lambda k, v, agg: agg + "+" + v, m
        ).to_stream().to(t["out"], _out())

    return build


def join_build(final: bool) -> Build:
    """``KStreamWindowAggregateTest.testJoin``: two windowed aggregations and their table-table join."""
    grace = 5 if final else 100
    tag = "fin" if final else "upd"

    def build(b: StreamsBuilder, t: Topics) -> None:
        def agg(topic: str, store: str) -> object:
            return (
                b.stream(t[topic], Consumed.with_(S, S))
                .group_by_key(Grouped.with_(S, S))
                .windowed_by(TimeWindows.of_size_and_grace(10, grace).advance_by(5))
                .emit_strategy(_strategy(final))
                .aggregate(
                    lambda: "0", lambda k, v, a: a + "+" + v, Materialized.as_(store).with_value_serde(S)
                )
            )

        table1 = agg("in1", f"pw-join-{tag}-1")
        table1.to_stream().to(t["out1"], _out())  # type: ignore[attr-defined]
        table2 = agg("in2", f"pw-join-{tag}-2")
        table2.to_stream().to(t["out2"], _out())  # type: ignore[attr-defined]
        table1.join(table2, lambda p1, p2: p1 + "%" + p2).to_stream().to(  # type: ignore[attr-defined]
            t["out3"], _out()
        )

    return build


# ----------------------------------------------------------------------------- steps

_BASIC = [
    P("in", k, v, ts + 100)
    for k, v, ts in [
        ("A", "1", 0),
        ("B", "2", 1),
        ("C", "3", 2),
        ("D", "4", 3),
        ("A", "1", 4),
        ("A", "1", 5),
        ("B", "2", 6),
        ("D", "4", 7),
        ("B", "2", 8),
        ("C", "3", 9),
        ("A", "1", 10),
        ("B", "2", 11),
        ("D", "4", 12),
        ("B", "2", 13),
        ("C", "3", 14),
        ("B", "1", 3),
        ("B", "2", 2),
        ("B", "3", 9),
    ]
]

_JOIN_UPDATE = [
    P(topic, k, v, ts + 100)
    for topic, k, v, ts in [
        ("in1", "A", "1", 0),
        ("in1", "B", "2", 1),
        ("in1", "C", "3", 2),
        ("in1", "D", "4", 3),
        ("in1", "A", "1", 9),
        ("in1", "A", "1", 5),
        ("in1", "B", "2", 6),
        ("in1", "D", "4", 7),
        ("in1", "B", "2", 8),
        ("in1", "C", "3", 9),
        ("in2", "A", "a", 0),
        ("in2", "B", "b", 1),
        ("in2", "C", "c", 2),
        ("in2", "D", "d", 20),
        ("in2", "A", "a", 20),
        ("in2", "A", "a", 5),
        ("in2", "B", "b", 6),
        ("in2", "D", "d", 7),
        ("in2", "D", "d", 18),
        ("in2", "A", "a", 21),
    ]
]

_JOIN_FINAL = [
    P(topic, k, v, ts + 100)
    for topic, k, v, ts in [
        ("in1", "A", "1", 0),
        ("in1", "B", "2", 1),
        ("in1", "C", "3", 2),
        ("in1", "D", "4", 3),
        ("in1", "A", "1", 9),
        ("in1", "A", "1", 15),
        ("in1", "A", "1", 10),
        ("in1", "B", "2", 11),
        ("in1", "D", "4", 12),
        ("in1", "B", "2", 13),
        ("in1", "C", "3", 14),
        ("in1", "A", "1", 20),
        ("in2", "A", "a", 0),
        ("in2", "B", "b", 1),
        ("in2", "C", "c", 2),
        ("in2", "D", "d", 10),
        ("in2", "A", "a", 15),
        ("in2", "A", "a", 5),
        ("in2", "B", "b", 6),
        ("in2", "D", "d", 7),
        ("in2", "D", "d", 18),
        ("in2", "A", "a", 21),
    ]
]

_EXPIRED = [P("in", "k", str(ts), ts + 1000) for ts in (100, 0, 1, 2, 3, 4, 5, 6, 105, 106)]
_EXPIRED_BY_GRACE = [
    P("in", "k", v, ts + 1000) for v, ts in [("100", 200), *((str(i), 100 + i) for i in range(6)), ("6", 6)]
]

# KStreamWindowAggregateTest's processor-level emit-final cases, on the DSL (hopping 10/5, grace 5)
_NOT_ENOUGH = [
    P("in", k, v, ts + 100)
    for k, v, ts in [("A", "1", 0), ("B", "2", 5), ("C", "3", 15), ("D", "4", 15), ("E", "5", 19)]
]
_INTERVAL0 = [
    P("in", k, v, ts + 100)
    for k, v, ts in [("A", "1", 0), ("A", "1", 5), ("B", "2", 10), ("C", "3", 15), ("D", "4", 20)]
]
_LARGE_INTERVAL = [
    *(P("in", k, v, ts + 100) for k, v, ts in [("A", "1", 0), ("A", "1", 5), ("B", "2", 10), ("C", "3", 15)]),
    W(10000),
    P("in", "D", "4", 120),
    W(100),
    P("in", "E", "5", 140),
]

# Hopping 10/5, grace 0 (retention 10): stream time lands exactly on window starts (where the
# uncached store's observed time equals stream time), then jumps past retention.
_HOP_EDGE = [
    P("in", "a", "1", 101),
    P("in", "b", "2", 104),
    P("in", "a", "3", 105),  # closes [95,105): a
    P("in", "c", "4", 109),
    P("in", "b", "5", 110),  # closes [100,110): a, b
    P("in", "a", "6", 115),  # closes [105,115)
    P("in", "c", "7", 112),  # late for [105,115)? no: end 115 > close 115 is false -> dropped there
    P("in", "a", "8", 140),  # jump: [110,120) .. [125,135) closed, some beyond retention
    P("in", "d", "9", 141),
    P("in", "d", "10", 160),
    P("in", "e", "11", 200),
]
# Tumbling 10, grace 5 (retention 15): a jump leaves closed windows behind the store's retention.
_TUMBLE_JUMP = [
    P("in", "a", "1", 101),
    P("in", "b", "2", 108),
    P("in", "a", "3", 112),
    P("in", "a", "4", 125),  # close 120: [100,110) and [110,120) closed
    P("in", "b", "5", 131),
    P("in", "c", "6", 160),  # jump: close 155, [120,130) and [130,140) closed
    P("in", "c", "7", 150),  # within grace of [150,160)
    P("in", "d", "8", 175),
    P("in", "d", "9", 176),
    P("in", "e", "10", 300),
]

_D = "KStreamWindowAggregateTest"

SCENARIOS: list[Scenario] = [
    ported(
        "pw_agg_basic",
        hop_agg("pw-basic-upd", False, 100),
        {"in": SS},
        {"out": WINS},
        _BASIC,
        f"{_D}.testAggBasic (update): hopping 10/5 windows updated in start order, an out-of-order record "
        "keeps the window's largest timestamp. Shifted by 100: the first records also open [95,105).",
        java="pw_agg_basic",
    ),
    ported(
        "pw_agg_basic_final",
        hop_agg("pw-basic-fin", True, 100),
        {"in": SS},
        {"out": WINS},
        [*_BASIC, P("in", "E", "9", 260)],
        f"{_D}.testAggBasic (emit final): nothing closes within grace 100; one record far ahead then "
        "closes them all at once, emitted in the store's time order (window start, then key).",
        java="pw_agg_basic_final",
        config=EMIT_NOW,
    ),
    ported(
        "pw_join_update",
        join_build(False),
        {"in1": SS, "in2": SS},
        {"out1": WINS, "out2": WINS, "out3": WINS},
        _JOIN_UPDATE,
        f"{_D}.testJoin (update): two windowed aggregations joined as KTables through their window "
        "stores' value getters.",
        java="pw_join_update",
    ),
    ported(
        "pw_join_final",
        join_build(True),
        {"in1": SS, "in2": SS},
        {"out1": WINS, "out2": WINS, "out3": WINS},
        _JOIN_FINAL,
        f"{_D}.testJoin (emit final): final window results joined; with the cache on the second "
        "aggregation's emit scan runs before its store saw the current record, so it emits the [100,110) "
        "windows one record earlier than without the cache (Kafka's test checks both).",
        java="pw_join_final",
        config=EMIT_NOW,
    ),
    ported(
        "pw_expired_update",
        hop_agg("pw-exp-upd", False, 90, retention=100, logging=False),
        {"in": SS},
        {"out": WINS},
        _EXPIRED,
        f"{_D}.shouldLogAndMeterWhenSkippingExpiredWindow (update): records for windows whose end is "
        "not after stream time - grace are dropped (7), the rest update their windows.",
        java="pw_expired_update",
    ),
    ported(
        "pw_expired_final",
        hop_agg("pw-exp-fin", True, 90, retention=100, logging=False),
        {"in": SS},
        {"out": WINS},
        _EXPIRED,
        f"{_D}.shouldLogAndMeterWhenSkippingExpiredWindow (emit final): the same drops; the record at "
        "1105 closes [1005,1015), emitted once with its largest timestamp.",
        java="pw_expired_final",
        config=EMIT_NOW,
    ),
    ported(
        "pw_expired_grace_update",
        hop_agg("pw-grace-upd", False, 90, advance=10, logging=False),
        {"in": SS},
        {"out": WINS},
        _EXPIRED_BY_GRACE,
        f"{_D}.shouldLogAndMeterWhenSkippingExpiredWindowByGrace (update): tumbling 10, grace 90; "
        "[1100,1110) closes exactly at stream time 1200 - 90, so all its records are dropped.",
        java="pw_expired_grace_update",
    ),
    ported(
        "pw_expired_grace_final",
        hop_agg("pw-grace-fin", True, 90, advance=10, logging=False),
        {"in": SS},
        {"out": WINS},
        _EXPIRED_BY_GRACE,
        f"{_D}.shouldLogAndMeterWhenSkippingExpiredWindowByGrace (emit final): the same drops, and no "
        "window closed with data, so nothing is emitted.",
        java="pw_expired_grace_final",
        config=EMIT_NOW,
    ),
    ported(
        "pw_final_not_enough",
        hop_agg("pw-progress", True, 5),
        {"in": SS},
        {"out": WINS},
        _NOT_ENOUGH,
        f"{_D}.shouldNotEmitFinalIfNotProgressEnough: no emit when stream time stands still (D at 115) "
        "or when the close time moves but covers no new window (E at 119).",
        java="pw_final_not_enough",
        config=EMIT_NOW,
    ),
    ported(
        "pw_final_interval0",
        hop_agg("pw-interval0", True, 5),
        {"in": SS},
        {"out": WINS},
        _INTERVAL0,
        f"{_D}.shouldEmitWithInterval0: with no wall-clock throttle every record that moves the close "
        "time emits the newly closed hopping windows.",
        java="pw_final_interval0",
        config=EMIT_NOW,
    ),
    ported(
        "pw_final_large_interval",
        hop_agg("pw-interval-large", True, 5),
        {"in": SS},
        {"out": WINS},
        _LARGE_INTERVAL,
        f"{_D}.shouldEmitWithLargeInterval: a 1000 ms emit interval holds back the closed windows until "
        "the wall clock passes it, then emits them all; the next record within the interval emits none.",
        java="pw_final_large_interval",
        config={"__emit.interval.ms.kstreams.windowed.aggregation__": "1000"},
        spark_skip=THROTTLED,
    ),
    ported(
        "pw_final_hop_edge",
        hop_agg("pw-hop-edge", True, 0),
        {"in": SS},
        {"out": WINS},
        _HOP_EDGE,
        "Edge beyond KStreamWindowAggregateTest (emit final): "
        "hopping windows (10/5, grace 0) at the time-ordered store's retention boundary: a "
        "record exactly on a window start closes the window retention ms behind the store's observed "
        "time, which Kafka still emits (its read bound has no +1); a jump past retention loses the "
        "windows in between without the cache and emits them with it.",
        java="pw_final_hop_edge",
        config=EMIT_NOW,
    ),
    ported(
        "pw_final_hop_in_memory",
        hop_agg("pw-hop-in-memory", True, 0, in_memory=15),
        {"in": SS},
        {"out": WINS},
        _HOP_EDGE,
        "Edge beyond KStreamWindowAggregateTest (emit final): "
        "a user's in-memory window store (retention 15, cached): the emit scan reads the "
        "in-memory store's bounds (from observed - retention + 1) through the cache, not the "
        "time-ordered store's.",
        java="pw_final_hop_in_memory",
        config=EMIT_NOW,
    ),
    ported(
        "pw_final_hop_persistent",
        hop_agg("pw-hop-persistent", True, 0, persistent=100),
        {"in": SS},
        {"out": WINS},
        _HOP_EDGE,
        "Edge beyond KStreamWindowAggregateTest (emit final): "
        "a user's persistent (key-ordered RocksDB) window store (retention 100, cached): "
        "the emit scan uses that store's bounds and order (segment, then key, then window start).",
        java="pw_final_hop_persistent",
        config=EMIT_NOW,
    ),
    ported(
        "pw_final_tumble_jump",
        hop_agg("pw-tumble-jump", True, 5, advance=10),
        {"in": SS},
        {"out": WINS},
        _TUMBLE_JUMP,
        "Edge beyond KStreamWindowAggregateTest (emit final): "
        "tumbling windows (10, grace 5, retention 15) across jumps in stream time: windows "
        "closed by a jump are emitted only while they are within the store's retention bound (one "
        "record behind with the cache on).",
        java="pw_final_tumble_jump",
        config=EMIT_NOW,
    ),
]
