"""The scenarios first written for kspark's driver against Java Kafka Streams' (the reference suite).

Each topology here has its twin in ``jvm/reference-harness/.../Scenarios.java``
(same name, written call for call so the generated names agree); the inputs
are out of order, with nulls and late records, chosen to hit each operator's
edges: join windows' bounds and the outer join's early-return asymmetry,
grace, session merges, suppression, both punctuation types.
"""

from __future__ import annotations

from typing import Any

from kspark import (
    Branched,
    Consumed,
    Grouped,
    JoinWindows,
    KeyValue,
    Materialized,
    Named,
    Produced,
    Repartitioned,
    SessionWindows,
    SlidingWindows,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
    Topology,
)
from kspark.kstream.suppressed import BufferConfig
from kspark.processor import Processor, ProcessorContext, PunctuationType, Record
from kspark.serde import Serdes
from kspark.state import Stores

from ..model import Build, P, Scenario, Step, Topics, W

__all__ = ["SCENARIOS", "TOPOLOGIES"]

S = Serdes.String()
L = Serdes.Long()


def j(x: Any) -> str:
    """Java's ``String.valueOf``: what a Java joiner's ``a + "/" + b`` prints for null."""
    return "null" if x is None else str(x)


# ----------------------------------------------------------------------------- topologies


def stateless(b: StreamsBuilder, t: Topics) -> None:
    s = b.stream(t["in"])
    (
        s.filter(lambda k, v: v is not None)
        .filter_not(lambda k, v: v.startswith("x"))
        .map_values(lambda v: v.upper())
        .map(lambda k, v: KeyValue("nk" if k is None else k + "!", v + v))
        .peek(lambda k, v: None)
        .to(t["out"])
    )


def flat_map(b: StreamsBuilder, t: Topics) -> None:
    s = b.stream(t["in"])
    s.flat_map(lambda k, v: [] if v is None else [KeyValue(p, k) for p in v.split(",")]).flat_map_values(
        lambda v: ["none"] if v is None else [v, v + "2"]
    ).to(t["out"])


def select_key_count(b: StreamsBuilder, t: Topics) -> None:
    s = b.stream(t["in"])
    s.select_key(lambda k, v: v).group_by_key().count().to_stream().to(t["out"], Produced.with_(S, L))


def merge(b: StreamsBuilder, t: Topics) -> None:
    a = b.stream(t["a"])
    c = b.stream(t["b"])
    a.merge(c).map_values(lambda v: j(v) + "m").to(t["out"])


def split(b: StreamsBuilder, t: Topics) -> None:
    s = b.stream(t["in"])
    m = (
        s.split(Named.as_("p-"))
        .branch(lambda k, v: v is not None and v.startswith("a"), Branched.as_("a"))
        .branch(lambda k, v: v is not None and v.startswith("b"), Branched.as_("b"))
        .default_branch(Branched.as_("rest"))
    )
    m["p-a"].to(t["out-a"])
    m["p-b"].to(t["out-b"])
    m["p-rest"].to(t["out-rest"])


def repartition(b: StreamsBuilder, t: Topics) -> None:
    s = b.stream(t["in"])
    s.repartition(Repartitioned.as_("rp")).map_values(lambda v: j(v) + "r").to(t["out"])
    s.map(lambda k, v: KeyValue(v, k)).repartition().to(t["out2"])


def group_by_key_aggs(b: StreamsBuilder, t: Topics) -> None:
    g = b.stream(t["in"]).group_by_key()
    g.count(Materialized.as_("counts")).to_stream().to(t["count-out"], Produced.with_(S, L))
    g.reduce(lambda a, v: j(a) + "|" + j(v), Materialized.as_("reduced")).to_stream().to(t["reduce-out"])
    g.aggregate(
        lambda: "init", lambda k, v, agg: j(agg) + "+" + j(v), Materialized.as_("agged")
    ).to_stream().to(t["agg-out"])


def group_by_count(b: StreamsBuilder, t: Topics) -> None:
    b.stream(t["in"]).group_by(lambda k, v: v, Grouped.as_("byval")).count().to_stream().to(
        t["out"], Produced.with_(S, L)
    )


def named_ops(b: StreamsBuilder, t: Topics) -> None:
    s = b.stream(t["in"], Consumed.as_("src"))
    (
        s.filter(lambda k, v: v is not None, Named.as_("not-null"))
        .map_values(lambda v: v + "!", Named.as_("bang"))
        .group_by_key(Grouped.as_("grp"))
        .count(named=Named.as_("cnt"), materialized=Materialized.as_("cstore"))
        .to_stream(named=Named.as_("to-s"))
        .to(t["out"], Produced.with_(S, L).with_name("sink"))
    )


def to_table(b: StreamsBuilder, t: Topics) -> None:
    b.stream(t["in"]).to_table(Materialized.as_("tt")).to_stream().to(t["out"])


def table_ops(b: StreamsBuilder, t: Topics) -> None:
    table = b.table(t["t"], materialized=Materialized.as_("t-store"))
    table.filter(lambda k, v: not v.startswith("x")).map_values(lambda v: v + "!").to_stream().to(t["out"])


def table_unmaterialized(b: StreamsBuilder, t: Topics) -> None:
    b.table(t["t"]).filter_not(lambda k, v: v == "drop").map_values(lambda v: v + v).to_stream().to(t["out"])


def table_group_by_aggregate(b: StreamsBuilder, t: Topics) -> None:
    b.table(t["t"]).group_by(lambda k, v: KeyValue(v, k)).aggregate(
        lambda: "",
        lambda k, v, agg: j(agg) + "+" + j(v),
        lambda k, v, agg: j(agg) + "-" + j(v),
        Materialized.as_("agg"),
    ).to_stream().to(t["out"])


def table_group_by_count(b: StreamsBuilder, t: Topics) -> None:
    b.table(t["t"]).group_by(lambda k, v: KeyValue(v, v)).count().to_stream().to(
        t["out"], Produced.with_(S, L)
    )


def table_table(kind: str) -> Build:
    def build(b: StreamsBuilder, t: Topics) -> None:
        left = b.table(t["l"])
        right = b.table(t["r"])
        op = {"inner": left.join, "left": left.left_join, "outer": left.outer_join}[kind]
        op(right, lambda a, c: j(a) + "/" + j(c)).to_stream().to(t["out"])

    return build


def stream_table(left: bool) -> Build:
    def build(b: StreamsBuilder, t: Topics) -> None:
        s = b.stream(t["s"])
        table = b.table(t["t"])
        op = s.left_join if left else s.join
        op(table, lambda sv, tv: j(sv) + "/" + j(tv)).to(t["out"])

    return build


def global_join(b: StreamsBuilder, t: Topics) -> None:
    s = b.stream(t["s"])
    g = b.global_table(t["g"])
    s.join(g, lambda k, v: v, lambda sv, gv: j(sv) + "/" + j(gv)).to(t["out"])
    s.left_join(g, lambda k, v: v, lambda sv, gv: j(sv) + "/" + j(gv)).to(t["out-left"])


def tumbling_count(b: StreamsBuilder, t: Topics) -> None:
    b.stream(t["in"]).group_by_key().windowed_by(TimeWindows.of_size_and_grace(10, 5)).count().to_stream().to(
        t["out"], Produced.with_(Serdes.time_windowed(S, 10), L)
    )


def hopping_reduce(b: StreamsBuilder, t: Topics) -> None:
    b.stream(t["in"]).group_by_key().windowed_by(TimeWindows.of_size_and_grace(10, 2).advance_by(5)).reduce(
        lambda a, v: j(a) + j(v)
    ).to_stream().to(t["out"], Produced.with_(Serdes.time_windowed(S, 10), S))


def sliding(b: StreamsBuilder, t: Topics) -> None:
    w = b.stream(t["in"]).group_by_key().windowed_by(SlidingWindows.of_time_difference_and_grace(10, 5))
    w.count().to_stream().to(t["count-out"], Produced.with_(Serdes.time_windowed(S, 10), L))
    w.aggregate(lambda: "", lambda k, v, agg: j(agg) + j(v), Materialized.with_(S, S)).to_stream().to(
        t["agg-out"], Produced.with_(Serdes.time_windowed(S, 10), S)
    )


def session_count(b: StreamsBuilder, t: Topics) -> None:
    b.stream(t["in"]).group_by_key().windowed_by(
        SessionWindows.of_inactivity_gap_and_grace(5, 3)
    ).count().to_stream().to(t["out"], Produced.with_(Serdes.session_windowed(S), L))


def session_aggregate(b: StreamsBuilder, t: Topics) -> None:
    b.stream(t["in"]).group_by_key().windowed_by(SessionWindows.of_inactivity_gap_and_grace(5, 3)).aggregate(
        lambda: "",
        lambda k, v, agg: j(agg) + j(v),
        lambda k, a1, a2: j(a1) + "&" + j(a2),
        Materialized.as_("sess").with_value_serde(S),
    ).to_stream().to(t["out"], Produced.with_(Serdes.session_windowed(S), S))


def stream_stream(kind: str) -> Build:
    def build(b: StreamsBuilder, t: Topics) -> None:
        left = b.stream(t["l"])
        right = b.stream(t["r"])
        w = JoinWindows.of_time_difference_and_grace(5, 3).after(8)
        op = {"inner": left.join, "left": left.left_join, "outer": left.outer_join}[kind]
        op(right, lambda a, c: j(a) + "/" + j(c), w).to(t["out"])

    return build


def suppress_window(b: StreamsBuilder, t: Topics) -> None:
    b.stream(t["in"]).group_by_key().windowed_by(TimeWindows.of_size_and_grace(10, 2)).count(
        Materialized.with_(S, L)
    ).suppress(Suppressed.until_window_closes(BufferConfig.unbounded())).to_stream().to(
        t["out"], Produced.with_(Serdes.time_windowed(S, 10), L)
    )


def suppress_time_limit(b: StreamsBuilder, t: Topics) -> None:
    b.stream(t["in"]).group_by_key().count().suppress(
        Suppressed.until_time_limit(10, BufferConfig.unbounded())
    ).to_stream().to(t["out"], Produced.with_(S, L))


class PunctuatingProcessor(Processor[str, str]):
    """Counts per key in a store; punctuates on stream time (every 10) and wall-clock time (every 100)."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store: Any = context.get_state_store("pcounts")
        context.schedule(10, PunctuationType.STREAM_TIME, self._on_stream_time)
        context.schedule(100, PunctuationType.WALL_CLOCK_TIME, self._on_wall_clock)

    def _on_stream_time(self, ts: int) -> None:
        with self.store.all() as it:
            for kv in it:
                self.context.forward(Record(kv.key, f"st:{kv.value}@{ts}", ts))

    def _on_wall_clock(self, ts: int) -> None:
        self.context.forward(Record("wall", f"wc@{ts}", ts))

    def process(self, record: Record[str, str]) -> None:
        old = self.store.get(record.key)
        n = 1 if old is None else old + 1
        self.store.put(record.key, n)
        self.context.forward(record.with_value(f"{record.value}:{n}"))


def punctuation(topo: Topology, t: Topics) -> None:
    topo.add_source("source", t["in"], key_deserializer=S.deserializer(), value_deserializer=S.deserializer())
    topo.add_processor("proc", PunctuatingProcessor, "source")
    topo.add_state_store(
        Stores.key_value_store_builder(Stores.in_memory_key_value_store("pcounts"), S, L), "proc"
    )
    topo.add_sink("sink", t["out"], "proc", key_serializer=S.serializer(), value_serializer=S.serializer())


TOPOLOGIES: dict[str, Build] = {
    "stateless": stateless,
    "flat_map": flat_map,
    "select_key_count": select_key_count,
    "merge": merge,
    "split": split,
    "repartition": repartition,
    "group_by_key_aggs": group_by_key_aggs,
    "group_by_count": group_by_count,
    "named_ops": named_ops,
    "to_table": to_table,
    "table_ops": table_ops,
    "table_unmaterialized": table_unmaterialized,
    "table_group_by_aggregate": table_group_by_aggregate,
    "table_group_by_count": table_group_by_count,
    "tt_inner": table_table("inner"),
    "tt_left": table_table("left"),
    "tt_outer": table_table("outer"),
    "st_join": stream_table(False),
    "st_left_join": stream_table(True),
    "global_join": global_join,
    "tumbling_count": tumbling_count,
    "hopping_reduce": hopping_reduce,
    "sliding": sliding,
    "session_count": session_count,
    "session_aggregate": session_aggregate,
    "ss_inner": stream_stream("inner"),
    "ss_left": stream_stream("left"),
    "ss_outer": stream_stream("outer"),
    "suppress_window": suppress_window,
    "suppress_time_limit": suppress_time_limit,
    "punctuation": punctuation,
}

_WALL_CLOCK = "wall-clock punctuation: on Spark the wall clock is the machine's, not the driver's"
_THROTTLED = "its emits are throttled by the wall clock (emit interval > 0), the machine's on Spark"


def _s(
    name: str,
    topology: str,
    inputs: dict[str, tuple[str, str]],
    outputs: dict[str, tuple[str, str]],
    steps: list[Step],
    config: dict[str, str | int] | None = None,
    **spark: Any,
) -> Scenario:
    return Scenario(
        name, TOPOLOGIES[topology], inputs, outputs, steps, java=topology, config=config or {}, **spark
    )


# ----------------------------------------------------------------------------- inputs

SS = ("string", "string")
SL = ("string", "long")
WIN10 = ("window:10:string", "long")
WIN10S = ("window:10:string", "string")
SESS = ("session:string", "long")
SESSS = ("session:string", "string")

_TT_STEPS = [
    P("l", "a", "l1", 1),
    P("r", "a", "r1", 2),
    P("r", "b", "r2", 3),
    P("l", "b", "l2", 4),
    P("l", "a", None, 5),
    P("r", "b", None, 6),
    P("r", "a", "r3", 7),
    P("l", "c", "l3", 8),
    P("r", "c", None, 9),
    P("l", "b", None, 10),
    P("l", "d", None, 11),
    P("r", "a", "r4", 3),
]
_ST_STEPS = [
    P("s", "a", "s1", 1),
    P("t", "a", "t1", 2),
    P("s", "a", "s2", 3),
    P("s", "b", "s3", 4),
    P("t", "a", None, 5),
    P("s", "a", "s4", 6),
    P("s", None, "s5", 7),
    P("t", "b", "t2", 1),
    P("s", "b", "s6", 2),
    P("s", "b", None, 8),
    P("t", None, "tn", 9),
]
_SS_STEPS = [
    P("l", "a", "l1", 10),
    P("r", "a", "r1", 1),
    P("r", "a", "r2", 2),
    P("r", "a", "r3", 18),
    P("r", "a", "r4", 19),
    W(1000),
    P("l", "b", "l2", 20),
    P("r", "a", "r5", 5),
    P("l", "a", "l3", 30),
    W(1000),
    P("r", "c", "r6", 40),
    P("l", None, "ln", 41),
    P("r", None, "rn", 41),
    P("l", "c", None, 42),
    P("l", "a", "l4", 3),
    W(1000),
    P("l", "d", "l5", 50),
    P("r", "e", "r7", 51),
    P("l", "c", "l6", 44),
    W(1000),
    P("r", "z", "r8", 70),
    W(500),
    P("l", "z", "l7", 90),
    W(600),
    P("l", "z", "l8", 120),
]
# JoinWindows before 5, after 8, grace 3: a left record at t matches right records in [t-5, t+8], a
# right record at t left records in [t-8, t+5]. A parked left record is emitted once stream time
# passes t + 8 + 3, a parked right one once it passes t + 5 + 3; the cheap early return before the
# scan uses the *processing* side's after (left 8, right 5) and the tracker's min time, which a scan
# sets to the last key it visited.
_SS_EDGE_STEPS = [
    P("l", "a", "la0", 0),
    P("r", "a", "ra8", 8),  # 0 + 8: the left record's upper edge, joins
    P("r", "a", "ra9", 9),  # one past: no partner
    P("l", "b", "lb20", 20),
    P("r", "b", "rb15", 15),  # 20 - 5: lower edge, joins
    P("r", "b", "rb14", 14),  # one before: no partner; out of order, parked (14 + 5 >= 20)
    P("l", "c", "lc30", 30),
    P("r", "x", "rx41", 41),  # 30 + 11 = 41: lc30 still open
    P("r", "x", "rx42", 42),  # lc30 closed
    P("r", "d", "rd50", 50),
    P("l", "x", "lx59", 59),
    P("l", "x", "lx60", 60),
    P("r", "x", "rx59", 59),  # not at stream time: no scan
    P("r", "x", "rx62", 62),
    P("l", "e", "le40", 40),  # late: 40 + 8 < 62, emitted at once
    P("r", "e", "re45", 45),  # late: 45 + 5 < 62; le40 is gone from the left window store
    P("l", "f", "lf70", 70),
    P("r", "f", "rf62", 62),  # 70 - 8 from the right: joins
    P("r", "f", "rf78", 78),  # 70 + 8: joins
    P("l", "f", "lf83", 83),  # 78 + 5: joins rf78
    P("l", "g", "lg90", 90),
    P("r", "g", "rg82", 82),  # 90 - 8: joins
    P("l", "y", "ly101", 101),
    P("r", "h", "rh101", 101),
    P("l", "y", "ly110", 110),
    P("r", "y", "ry110", 110),
    P("l", "y", "ly122", 122),
]
# The early return's asymmetry and its min time, step by step (outer join; the left join parks only
# left records): lp49 parked, min 49; rd50 parked; lq59: left check 49 + 11 >= 59, no scan, although
# rd50 closed at 58; rz59 at stream time: right check 49 + 8 < 59, the scan emits rd50 and leaves
# min at 59 (the last key visited) while lp49 is still parked; ly61: 59 + 11 >= 61, so lp49 (closed at
# 60) waits; ly71: 70 < 71, the scan emits lp49, lq59, rz59.
_SS_ASYM_STEPS = [
    P("l", "p", "lp49", 49),
    P("r", "d", "rd50", 50),
    P("l", "q", "lq59", 59),
    P("r", "z", "rz59", 59),
    P("l", "y", "ly61", 61),
    P("l", "y", "ly71", 71),
    P("r", "y", "ry66", 66),  # late, joins ly61 and ly71 (66 - 5 <= 61, 71 <= 66 + 5)
    P("l", "w", "lw60", 60),  # late: 60 + 8 < 71, emitted at once
    P("r", "w", "rw63", 63),  # late, but lw60 (stored within retention) is in [58, 71]: joins
    P("l", "y", "ly85", 85),
]
_WINDOW_STEPS = [
    P("in", "a", "1", 1),
    P("in", "a", "2", 5),
    P("in", "b", "3", 12),
    P("in", "a", "4", 9),
    P("in", "a", "5", 20),
    P("in", "a", "6", 14),
    P("in", "a", "7", 3),
    P("in", "a", "8", 25),
    P("in", "a", "9", 10),
    P("in", "a", "10", 11),
    P("in", "a", "11", 20),
    P("in", None, "12", 30),
    P("in", "a", None, 26),
    P("in", "b", "13", 15),
    P("in", "b", "14", 16),
]
_SESSION_STEPS = [
    P("in", "a", "1", 0),
    P("in", "a", "2", 4),
    P("in", "a", "3", 12),
    P("in", "a", "4", 8),
    P("in", "b", "5", 20),
    P("in", "a", "6", 30),
    P("in", "a", "7", 20),
    P("in", "a", "8", 27),
    P("in", "b", "9", 26),
    P("in", "b", "10", 22),
    P("in", None, "11", 31),
    P("in", "a", None, 32),
    P("in", "a", "12", 40),
]

SCENARIOS: list[Scenario] = [
    _s(
        "stateless",
        "stateless",
        {"in": SS},
        {"out": SS},
        [
            P("in", "a", "v1", 1),
            P("in", "b", None, 2),
            P("in", None, "n", 3),
            P("in", "c", "xskip", 4),
            P("in", "a", "v2", 0),
        ],
    ),
    _s(
        "flat_map",
        "flat_map",
        {"in": SS},
        {"out": SS},
        [P("in", "k", "a,b", 1), P("in", None, "c", 2), P("in", "k", None, 3), P("in", "z", "d,e,f", 5)],
    ),
    _s(
        "select_key_count",
        "select_key_count",
        {"in": SS},
        {"out": SL},
        [
            P("in", "a", "x", 1),
            P("in", "b", "y", 2),
            P("in", "c", "x", 3),
            P("in", "d", None, 4),
            P("in", "e", "y", 5),
            P("in", None, "x", 6),
            P("in", "f", "x", 2),
        ],
        spark_compare="final",  # several partitions: two upstream tasks feed the repartition topic
    ),
    _s(
        "merge",
        "merge",
        {"a": SS, "b": SS},
        {"out": SS},
        [P("a", "k1", "1", 10), P("b", "k2", "2", 5), P("a", None, "3", 7), P("b", "k1", None, 20)],
    ),
    _s(
        "split",
        "split",
        {"in": SS},
        {"out-a": SS, "out-b": SS, "out-rest": SS},
        [
            P("in", "a", "apple", 1),
            P("in", "b", "banana", 2),
            P("in", "c", "cherry", 3),
            P("in", "d", None, 4),
            P("in", None, "avocado", 5),
        ],
    ),
    _s(
        "repartition",
        "repartition",
        {"in": SS},
        {"out": SS, "out2": SS},
        [P("in", "a", "x", 1), P("in", None, "y", 2), P("in", "b", None, 3), P("in", "c", "z", 4)],
    ),
    _s(
        "group_by_key_aggs",
        "group_by_key_aggs",
        {"in": SS},
        {"count-out": SL, "reduce-out": SS, "agg-out": SS},
        [
            P("in", "a", "1", 1),
            P("in", "a", "2", 2),
            P("in", "b", "3", 3),
            P("in", None, "4", 4),
            P("in", "a", None, 5),
            P("in", "b", "5", 3),
            P("in", "a", "6", 10),
        ],
    ),
    _s(
        "group_by_count",
        "group_by_count",
        {"in": SS},
        {"out": SL},
        [
            P("in", "a", "x", 1),
            P("in", "b", "x", 2),
            P("in", "c", None, 3),
            P("in", None, "y", 4),
            P("in", "d", "y", 5),
        ],
        spark_compare="final",  # several partitions: two upstream tasks feed the repartition topic
    ),
    _s(
        "named_ops",
        "named_ops",
        {"in": SS},
        {"out": SL},
        [P("in", "a", "1", 1), P("in", "a", None, 2), P("in", "b", "2", 3), P("in", "a", "3", 4)],
    ),
    _s(
        "to_table",
        "to_table",
        {"in": SS},
        {"out": SS},
        [
            P("in", "a", "1", 1),
            P("in", "a", "2", 2),
            P("in", None, "3", 3),
            P("in", "a", None, 4),
            P("in", "b", "5", 5),
            P("in", "c", None, 6),
        ],
    ),
    _s(
        "table_ops",
        "table_ops",
        {"t": SS},
        {"out": SS},
        [
            P("t", "a", "1", 1),
            P("t", "b", "x2", 2),
            P("t", "a", "x3", 3),
            P("t", "b", "4", 4),
            P("t", "a", None, 5),
            P("t", "c", None, 6),
            P("t", None, "n", 7),
            P("t", "b", None, 8),
            P("t", "d", "5", 2),
        ],
    ),
    _s(
        "table_unmaterialized",
        "table_unmaterialized",
        {"t": SS},
        {"out": SS},
        [
            P("t", "a", "1", 1),
            P("t", "a", "drop", 2),
            P("t", "a", "3", 3),
            P("t", "a", None, 4),
            P("t", "b", "drop", 5),
        ],
    ),
    _s(
        "table_group_by_aggregate",
        "table_group_by_aggregate",
        {"t": SS},
        {"out": SS},
        [
            P("t", "a", "g1", 1),
            P("t", "b", "g1", 2),
            P("t", "a", "g2", 3),
            P("t", "b", None, 4),
            P("t", "a", "g2", 5),
            P("t", "c", "g1", 6),
            P("t", "c", None, 7),
            P("t", "d", None, 8),
        ],
    ),
    _s(
        "table_group_by_count",
        "table_group_by_count",
        {"t": SS},
        {"out": SL},
        [
            P("t", "a", "x", 1),
            P("t", "b", "x", 2),
            P("t", "a", "y", 3),
            P("t", "a", None, 4),
            P("t", "b", "x", 5),
        ],
    ),
    _s("tt_inner", "tt_inner", {"l": SS, "r": SS}, {"out": SS}, _TT_STEPS),
    _s("tt_left", "tt_left", {"l": SS, "r": SS}, {"out": SS}, _TT_STEPS),
    _s("tt_outer", "tt_outer", {"l": SS, "r": SS}, {"out": SS}, _TT_STEPS),
    _s("st_join", "st_join", {"s": SS, "t": SS}, {"out": SS}, _ST_STEPS),
    _s("st_left_join", "st_left_join", {"s": SS, "t": SS}, {"out": SS}, _ST_STEPS),
    _s(
        "global_join",
        "global_join",
        {"g": SS, "s": SS},
        {"out": SS, "out-left": SS},
        [
            P("g", "k1", "g1", 1),
            P("s", "a", "k1", 2),
            P("s", "b", "k2", 3),
            P("s", "c", None, 4),
            P("g", "k2", "g2", 5),
            P("s", "d", "k2", 6),
            P("g", "k1", None, 7),
            P("s", "e", "k1", 8),
            P("s", None, "k2", 9),
        ],
        global_topics=frozenset({"g"}),
    ),
    _s("tumbling_count", "tumbling_count", {"in": SS}, {"out": WIN10}, _WINDOW_STEPS),
    _s("hopping_reduce", "hopping_reduce", {"in": SS}, {"out": WIN10S}, _WINDOW_STEPS),
    _s("sliding", "sliding", {"in": SS}, {"count-out": WIN10, "agg-out": WIN10S}, _WINDOW_STEPS),
    _s("session_count", "session_count", {"in": SS}, {"out": SESS}, _SESSION_STEPS),
    _s("session_aggregate", "session_aggregate", {"in": SS}, {"out": SESSS}, _SESSION_STEPS),
    _s("ss_inner", "ss_inner", {"l": SS, "r": SS}, {"out": SS}, _SS_STEPS),
    _s("ss_left", "ss_left", {"l": SS, "r": SS}, {"out": SS}, _SS_STEPS),
    _s("ss_outer", "ss_outer", {"l": SS, "r": SS}, {"out": SS}, _SS_STEPS),
    _s("ss_inner_edges", "ss_inner", {"l": SS, "r": SS}, {"out": SS}, _SS_EDGE_STEPS),
    _s("ss_left_edges", "ss_left", {"l": SS, "r": SS}, {"out": SS}, _SS_EDGE_STEPS),
    _s("ss_outer_edges", "ss_outer", {"l": SS, "r": SS}, {"out": SS}, _SS_EDGE_STEPS),
    _s("ss_left_asym", "ss_left", {"l": SS, "r": SS}, {"out": SS}, _SS_ASYM_STEPS),
    _s("ss_outer_asym", "ss_outer", {"l": SS, "r": SS}, {"out": SS}, _SS_ASYM_STEPS),
    _s(
        "ss_outer_throttled",
        "ss_outer",
        {"l": SS, "r": SS},
        {"out": SS},
        _SS_STEPS,
        {"__emit.interval.ms.kstreams.outer.join.spurious.results.fix__": "1000"},
        spark_skip=_THROTTLED,
    ),
    _s(
        "ss_left_edges_throttled",
        "ss_left",
        {"l": SS, "r": SS},
        {"out": SS},
        [*_SS_EDGE_STEPS[:8], W(1000), *_SS_EDGE_STEPS[8:14], W(1000), *_SS_EDGE_STEPS[14:]],
        {"__emit.interval.ms.kstreams.outer.join.spurious.results.fix__": "1000"},
        spark_skip=_THROTTLED,
    ),
    _s("suppress_window", "suppress_window", {"in": SS}, {"out": WIN10}, _WINDOW_STEPS),
    _s("suppress_time_limit", "suppress_time_limit", {"in": SS}, {"out": SL}, _WINDOW_STEPS),
    _s(
        "punctuation",
        "punctuation",
        {"in": SS},
        {"out": SS},
        [
            P("in", "a", "1", 1),
            P("in", "b", "2", 5),
            P("in", "a", "3", 12),
            W(150),
            P("in", "a", "4", 25),
            W(50),
            W(100),
            P("in", "c", "5", 40),
            P("in", "c", "6", 39),
        ],
        papi=True,
        spark_skip=_WALL_CLOCK,
    ),
]
