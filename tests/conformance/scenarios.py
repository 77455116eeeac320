"""The conformance scenarios: every kind of DSL and Processor API operation, with messy input.

Inputs are deterministic, out of order and with late records; timestamps of
multi-topic scenarios are ascending in pipe order so that a task picking its
next record by timestamp (Kafka Streams' PartitionGroup, and so the Spark
runner) and the driver's pipe order agree. Scenarios whose result depends on
how several upstream tasks interleave in a repartition topic use one input
partition (Kafka itself gives no order there).
"""

from __future__ import annotations

from collections.abc import Mapping
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
from kspark.processor import FixedKeyProcessor, Processor, ProcessorContext, PunctuationType, Record
from kspark.serde import Serdes
from kspark.state import Stores

from .harness import Input, Scenario

__all__ = ["SCENARIOS", "BY_NAME"]

S, L, J = Serdes.String(), Serdes.Long(), Serdes.JSON()
SS, SL, SJ = (S, S), (S, L), (S, J)


def _messy(
    n: int, keys: int, *, seed: int = 7, step: int = 1000, late_every: int = 5
) -> list[tuple[str, int]]:
    """(key, timestamp) pairs: mostly ascending, some out of order, every ``late_every``-th far back."""
    out = []
    state = seed
    for i in range(n):
        state = (state * 1103515245 + 12345) % (1 << 31)
        jitter = state % (3 * step)
        ts = i * step + jitter
        if late_every and i % late_every == late_every - 1:
            ts = max(1, ts - 25 * step)  # librdkafka writes timestamp 0 as "now"
        out.append((f"k{state % keys}", ts))
    return out


def _stream(topic: str, records: list[tuple[str, int]], value: Any = None) -> list[Input]:
    return [Input(topic, k, value(i, k) if value else f"v{i}", ts) for i, (k, ts) in enumerate(records)]


# ---------------------------------------------------------------- stateless
def _stateless(t: Mapping[str, str]) -> Topology:
    b = StreamsBuilder()
    (
        b.stream(t["in"], Consumed.with_(S, J))
        .filter(lambda k, v: v["n"] % 3 != 0)
        .map_values(lambda v: {**v, "double": v["n"] * 2})
        .flat_map_values(lambda v: [v, {"n": -v["n"]}] if v["n"] % 2 else [v])
        .peek(lambda k, v: None)
        .to(t["out"], Produced.with_(S, J))
    )
    return b.build()


def _split_merge(t: Mapping[str, str]) -> Topology:
    b = StreamsBuilder()
    branches = (
        b.stream(t["in"], Consumed.with_(S, S))
        .split(Named.as_("p-"))
        .branch(lambda k, v: int(v[1:]) % 2 == 0, Branched.as_("even"))
        .default_branch(Branched.as_("odd"))
    )
    even = branches["p-even"].map_values(lambda v: f"even:{v}")
    odd = branches["p-odd"].map_values(lambda v: f"odd:{v}")
    even.merge(odd).to(t["out"], Produced.with_(S, S))
    return b.build()


# ---------------------------------------------------------------- aggregations
def _count(t: Mapping[str, str]) -> Topology:
    b = StreamsBuilder()
    (
        b.stream(t["in"], Consumed.with_(S, S))
        .group_by_key()
        .count(Materialized.as_("counts"))
        .to_stream()
        .to(t["out"], Produced.with_(S, L))
    )
    return b.build()


def _aggregate_nulls(t: Mapping[str, str]) -> Topology:
    b = StreamsBuilder()
    grouped = b.stream(t["in"], Consumed.with_(S, S)).group_by_key(Grouped.with_(S, S))
    (
        grouped.aggregate(lambda: "", lambda k, v, agg: agg + v[-1], Materialized.with_(S, S))
        .to_stream()
        .to(t["out"], Produced.with_(S, S))
    )
    (
        grouped.reduce(lambda agg, v: v if v > agg else agg, Materialized.with_(S, S))
        .to_stream()
        .to(t["max"], Produced.with_(S, S))
    )
    return b.build()


def _regroup(t: Mapping[str, str]) -> Topology:
    b = StreamsBuilder()
    (
        b.stream(t["in"], Consumed.with_(S, S))
        .group_by(lambda k, v: f"g{int(v[1:]) % 3}", Grouped.with_(S, S))
        .count()
        .to_stream()
        .to(t["out"], Produced.with_(S, L))
    )
    return b.build()


# ---------------------------------------------------------------- tables
def _table_ops(t: Mapping[str, str]) -> Topology:
    b = StreamsBuilder()
    table = b.table(t["in"], Consumed.with_(S, S), Materialized.as_("source"))
    (
        table.filter(lambda k, v: v is not None and int(v[1:]) % 4 != 0)
        .map_values(lambda v: v.upper())
        .to_stream()
        .to(t["out"], Produced.with_(S, S))
    )
    return b.build()


def _table_regroup(t: Mapping[str, str]) -> Topology:
    b = StreamsBuilder()
    (
        b.table(t["in"], Consumed.with_(S, S))
        .group_by(lambda k, v: KeyValue(f"g{int(v[1:]) % 2}", v), Grouped.with_(S, S))
        .aggregate(
            lambda: 0,
            lambda k, v, agg: agg + int(v[1:]),
            lambda k, v, agg: agg - int(v[1:]),
            Materialized.with_(S, L),
        )
        .to_stream()
        .to(t["out"], Produced.with_(S, L))
    )
    return b.build()


def _table_joins(t: Mapping[str, str]) -> Topology:
    b = StreamsBuilder()
    left = b.table(t["left"], Consumed.with_(S, S))
    right = b.table(t["right"], Consumed.with_(S, S))
    left.join(right, lambda a, c: f"{a}+{c}").to_stream().to(t["inner"], Produced.with_(S, S))
    left.left_join(right, lambda a, c: f"{a}+{c}").to_stream().to(t["leftj"], Produced.with_(S, S))
    left.outer_join(right, lambda a, c: f"{a}+{c}").to_stream().to(t["outer"], Produced.with_(S, S))
    return b.build()


def _stream_table(t: Mapping[str, str]) -> Topology:
    b = StreamsBuilder()
    table = b.table(t["table"], Consumed.with_(S, S))
    stream = b.stream(t["stream"], Consumed.with_(S, S))
    stream.join(table, lambda s, tv: f"{s}*{tv}").to(t["inner"], Produced.with_(S, S))
    stream.left_join(table, lambda s, tv: f"{s}*{tv}").to(t["leftj"], Produced.with_(S, S))
    return b.build()


# ---------------------------------------------------------------- windows
TW = Serdes.time_windowed(S, 10_000)


def _tumbling(t: Mapping[str, str]) -> Topology:
    b = StreamsBuilder()
    (
        b.stream(t["in"], Consumed.with_(S, S))
        .group_by_key()
        .windowed_by(TimeWindows(size=10_000, grace=5_000))
        .count()
        .to_stream()
        .to(t["out"], Produced.with_(TW, L))
    )
    return b.build()


def _hopping(t: Mapping[str, str]) -> Topology:
    b = StreamsBuilder()
    (
        b.stream(t["in"], Consumed.with_(S, S))
        .group_by_key()
        .windowed_by(TimeWindows(size=10_000, grace=3_000, advance=5_000))
        .reduce(lambda a, v: a + "," + v)
        .to_stream()
        .to(t["out"], Produced.with_(TW, S))
    )
    return b.build()


def _hopping_count(t: Mapping[str, str]) -> Topology:
    b = StreamsBuilder()
    (
        b.stream(t["in"], Consumed.with_(S, S))
        .group_by_key()
        .windowed_by(TimeWindows(size=10_000, grace=3_000, advance=4_000))
        .count()
        .to_stream()
        .map(lambda wk, n: KeyValue(f"{wk.key}@{wk.window.start}", n))
        .to(t["out"], Produced.with_(S, L))
    )
    return b.build()


def _null_keys_and_values(records: list[tuple[str, int]]) -> list[Input]:
    """Every 7th key null (skipped, and not moving stream time), every 5th value null (counted)."""
    return [
        Input("in", None if i % 7 == 6 else k, None if i % 5 == 4 else f"v{i}", ts)
        for i, (k, ts) in enumerate(records)
    ]


def _sliding(t: Mapping[str, str]) -> Topology:
    b = StreamsBuilder()
    (
        b.stream(t["in"], Consumed.with_(S, S))
        .group_by_key()
        .windowed_by(SlidingWindows(time_difference=4_000, grace=6_000))
        .aggregate(lambda: 0, lambda k, v, agg: agg + 1, Materialized.with_(S, L))
        .to_stream()
        .to(t["out"], Produced.with_(Serdes.time_windowed(S, 4_000), L))
    )
    return b.build()


def _session(t: Mapping[str, str]) -> Topology:
    b = StreamsBuilder()
    (
        b.stream(t["in"], Consumed.with_(S, S))
        .group_by_key()
        .windowed_by(SessionWindows(gap=3_000, grace=4_000))
        .count()
        .to_stream()
        .to(t["out"], Produced.with_(Serdes.session_windowed(S), L))
    )
    return b.build()


def _suppress(t: Mapping[str, str]) -> Topology:
    b = StreamsBuilder()
    (
        b.stream(t["in"], Consumed.with_(S, S))
        .group_by_key()
        .windowed_by(TimeWindows(size=10_000, grace=2_000))
        .count()
        .suppress(Suppressed.until_window_closes())
        .to_stream()
        .to(t["out"], Produced.with_(TW, L))
    )
    return b.build()


def _stream_joins(t: Mapping[str, str]) -> Topology:
    b = StreamsBuilder()
    left = b.stream(t["left"], Consumed.with_(S, S))
    right = b.stream(t["right"], Consumed.with_(S, S))
    windows = JoinWindows.of(3_000, grace=2_000)
    left.join(right, lambda a, c: f"{a}+{c}", windows).to(t["inner"], Produced.with_(S, S))
    left.left_join(right, lambda a, c: f"{a}+{c}", windows).to(t["leftj"], Produced.with_(S, S))
    left.outer_join(right, lambda a, c: f"{a}+{c}", windows).to(t["outer"], Produced.with_(S, S))
    return b.build()


def _global_joins(t: Mapping[str, str]) -> Topology:
    b = StreamsBuilder()
    users = b.global_table(t["users"], Consumed.with_(S, S))
    views = b.stream(t["in"], Consumed.with_(S, S))
    views.join(users, lambda k, v: f"u{int(v[1:]) % 4}", lambda v, u: f"{v}@{u}").to(
        t["inner"], Produced.with_(S, S)
    )
    views.left_join(users, lambda k, v: f"u{int(v[1:]) % 5}", lambda v, u: f"{v}@{u}").to(
        t["leftj"], Produced.with_(S, S)
    )
    return b.build()


# The global table is complete before the stream starts: Kafka Streams gives no order
# between a global topic and the stream, so only this input has one defined result.
_USERS = [Input("users", f"u{i}", f"name{i}", 1 + i) for i in range(4)] + [
    Input("users", "u1", "renamed1", 10),
    Input("users", "u3", None, 11),
]


def _rekey_to_table(t: Mapping[str, str]) -> Topology:
    b = StreamsBuilder()
    (
        b.stream(t["in"], Consumed.with_(S, S))
        .select_key(lambda k, v: f"g{int(v[1:]) % 3}")
        .repartition(Repartitioned.with_(S, S))
        .to_table(Materialized.with_(S, S))
        .to_stream()
        .to(t["out"], Produced.with_(S, S))
    )
    return b.build()


def _time_limit(t: Mapping[str, str]) -> Topology:
    b = StreamsBuilder()
    (
        b.table(t["in"], Consumed.with_(S, S))
        .suppress(Suppressed.until_time_limit(3_000, BufferConfig.unbounded()))
        .to_stream()
        .to(t["out"], Produced.with_(S, S))
    )
    return b.build()


class _Upper(FixedKeyProcessor[str, str]):
    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[str, str]) -> None:
        self.context.forward(record.with_value(record.value.upper()))


def _values_and_extractor(t: Mapping[str, str]) -> Topology:
    b = StreamsBuilder()
    (
        b.stream(t["in"], Consumed.with_(S, S))
        .process_values(_Upper)
        .to(lambda k, v, ctx: t["even"] if int(v[1:]) % 2 == 0 else t["odd"], Produced.with_(S, S))
    )
    return b.build()


# ---------------------------------------------------------------- Processor API
class _SumAndFlush(Processor[str, str]):
    """Sums per key in a store; every 5 s of stream time forwards all sums (cross-key scan)."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store("sums")
        context.schedule(5_000, PunctuationType.STREAM_TIME, self.flush)

    def process(self, record: Record[str, str]) -> None:
        self.store.put(record.key, (self.store.get(record.key) or 0) + int(record.value[1:]))

    def flush(self, timestamp: int) -> None:
        for kv in list(self.store.all()):
            self.context.forward(Record(kv.key, kv.value, timestamp))


def _processor_api(t: Mapping[str, str]) -> Topology:
    topo = Topology()
    topo.add_source("src", t["in"], key_deserializer=S.deserializer(), value_deserializer=S.deserializer())
    topo.add_processor("sum", _SumAndFlush, "src")
    topo.add_state_store(
        Stores.key_value_store_builder(Stores.in_memory_key_value_store("sums"), S, L), "sum"
    )
    topo.add_sink("sink", t["out"], "sum", key_serializer=S.serializer(), value_serializer=L.serializer())
    return topo


def _two_topics(a: str, b: str, n: int, keys: int) -> list[Input]:
    """Alternating records of two topics with ascending timestamps (see module docstring)."""
    out = []
    for i in range(n):
        ts = 1 + i * 700 + (i % 3) * 100
        key = f"k{(i * 7) % keys}"
        topic = a if (i * 5) % 3 else b
        value = None if i % 11 == 10 and topic != "stream" else f"{topic[0]}{i}"
        out.append(Input(topic, key, value, ts))
    return out


_OUTER_EMIT_NOW = {"__emit.interval.ms.kstreams.outer.join.spurious.results.fix__": 0}

SCENARIOS: list[Scenario] = [
    Scenario(
        "stateless_chain",
        _stateless,
        _stream("in", _messy(30, 6), lambda i, k: {"n": i}),
        {"in": SJ},
        {"out": SJ},
        3,
    ),
    Scenario("split_merge", _split_merge, _stream("in", _messy(24, 5)), {"in": SS}, {"out": SS}, 3),
    Scenario("count", _count, _stream("in", _messy(40, 5)), {"in": SS}, {"out": SL}, 3),
    Scenario(
        "aggregate_and_reduce_with_nulls",
        _aggregate_nulls,
        _stream("in", _messy(30, 4), lambda i, k: None if i % 7 == 3 else f"v{i}"),
        {"in": SS},
        {"out": SS, "max": SS},
        3,
    ),
    Scenario("group_by_repartition", _regroup, _stream("in", _messy(30, 6)), {"in": SS}, {"out": SL}, 1),
    Scenario(
        "table_filter_map_values",
        _table_ops,
        _stream("in", _messy(30, 5), lambda i, k: None if i % 6 == 5 else f"v{i}"),
        {"in": SS},
        {"out": SS},
        3,
    ),
    Scenario(
        "table_group_by_aggregate",
        _table_regroup,
        _stream("in", _messy(30, 5, late_every=0)),
        {"in": SS},
        {"out": SL},
        1,
    ),
    Scenario(
        "table_table_joins",
        _table_joins,
        _two_topics("left", "right", 30, 5),
        {"left": SS, "right": SS},
        {"inner": SS, "leftj": SS, "outer": SS},
        2,
    ),
    Scenario(
        "stream_table_joins",
        _stream_table,
        _two_topics("stream", "table", 30, 5),
        {"stream": SS, "table": SS},
        {"inner": SS, "leftj": SS},
        2,
    ),
    Scenario(
        "tumbling_window_count", _tumbling, _stream("in", _messy(40, 4)), {"in": SS}, {"out": (TW, L)}, 3
    ),
    Scenario(
        "hopping_window_count",
        _hopping_count,
        _null_keys_and_values(_messy(40, 3, seed=11)),
        {"in": SS},
        {"out": (S, L)},
        3,
    ),
    Scenario(
        "hopping_window_reduce", _hopping, _stream("in", _messy(30, 3)), {"in": SS}, {"out": (TW, S)}, 3
    ),
    Scenario(
        "sliding_window_aggregate",
        _sliding,
        _stream("in", _messy(30, 3)),
        {"in": SS},
        {"out": (Serdes.time_windowed(S, 4_000), L)},
        3,
    ),
    Scenario(
        "session_window_count",
        _session,
        _stream("in", _messy(30, 3, step=1500)),
        {"in": SS},
        {"out": (Serdes.session_windowed(S), L)},
        3,
    ),
    Scenario(
        "suppress_final_counts", _suppress, _stream("in", _messy(40, 4)), {"in": SS}, {"out": (TW, L)}, 3
    ),
    Scenario(
        "stream_stream_joins",
        _stream_joins,
        [Input(r.topic, r.key, r.value or "x", r.timestamp) for r in _two_topics("left", "right", 30, 4)],
        {"left": SS, "right": SS},
        {"inner": SS, "leftj": SS, "outer": SS},
        2,
        _OUTER_EMIT_NOW,
    ),
    Scenario(
        "processor_api_punctuation", _processor_api, _stream("in", _messy(30, 4)), {"in": SS}, {"out": SL}, 3
    ),
    Scenario(
        "stream_global_table_joins",
        _global_joins,
        _USERS + _stream("in", _messy(24, 5)),
        {"users": SS, "in": SS},
        {"inner": SS, "leftj": SS},
        3,
        global_topics=frozenset({"users"}),
    ),
    Scenario(
        "select_key_repartition_to_table",
        _rekey_to_table,
        _stream("in", _messy(24, 5)),
        {"in": SS},
        {"out": SS},
    ),
    Scenario(
        "suppress_until_time_limit",
        _time_limit,
        _stream("in", _messy(30, 4, late_every=0)),
        {"in": SS},
        {"out": SS},
        3,
    ),
    Scenario(
        "process_values_and_topic_extractor",
        _values_and_extractor,
        _stream("in", _messy(24, 5)),
        {"in": SS},
        {"even": SS, "odd": SS},
        3,
    ),
]

BY_NAME = {s.name: s for s in SCENARIOS}
