"""The runner conformance scenarios (formerly tests/conformance): every kind of DSL and Processor API
operation over longer, messy inputs.

Each topology has its twin in ``jvm/.../ConformanceScenarios.java`` (Java name
``conformance_<scenario>``, written call for call). Inputs are deterministic,
out of order and with late records; timestamps of multi-topic scenarios are
ascending in pipe order, so a task picking its next record by timestamp
(Kafka Streams' PartitionGroup, and the Spark runner) and the driver's pipe
order agree. Names a scenario chooses (stores, split and Processor API nodes)
carry a ``conf-`` prefix so that these scenarios share Spark applications with
the other modules' (:func:`tests.catalog.model.names_used`). Joiners print a
null side as Java does (``null``), so both drivers agree on the text.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
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

from ..model import P, Scenario, Step, Topics

__all__ = ["SCENARIOS"]

S, L, J = Serdes.String(), Serdes.Long(), Serdes.JSON()
SS = ("string", "string")
SL = ("string", "long")
SJ = ("string", "json")
TW = Serdes.time_windowed(S, 10_000)
TW_KIND = ("window:10000:string", "long")


def j(x: Any) -> str:
    """Java's ``String.valueOf``: what a Java joiner's ``a + "+" + b`` prints for null."""
    return "null" if x is None else str(x)


# ----------------------------------------------------------------------------- inputs


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
            ts = max(1, ts - 25 * step)
        out.append((f"k{state % keys}", ts))
    return out


def _stream(
    topic: str, records: list[tuple[str, int]], value: Callable[[int, str], Any] | None = None
) -> list[Step]:
    return [P(topic, k, value(i, k) if value else f"v{i}", ts) for i, (k, ts) in enumerate(records)]


def _null_keys_and_values(records: list[tuple[str, int]]) -> list[Step]:
    """Every 7th key null (skipped, and not moving stream time), every 5th value null (counted)."""
    return [
        P("in", None if i % 7 == 6 else k, None if i % 5 == 4 else f"v{i}", ts)
        for i, (k, ts) in enumerate(records)
    ]


def _two_topics(a: str, b: str, n: int, keys: int) -> list[Step]:
    """Alternating records of two topics with ascending timestamps (see the module docstring)."""
    out = []
    for i in range(n):
        ts = 1 + i * 700 + (i % 3) * 100
        key = f"k{(i * 7) % keys}"
        topic = a if (i * 5) % 3 else b
        value = None if i % 11 == 10 and topic != "stream" else f"{topic[0]}{i}"
        out.append(P(topic, key, value, ts))
    return out


# The global table is complete before the stream starts: Kafka Streams gives no order
# between a global topic and the stream, so only this input has one defined result.
_USERS = [P("users", f"u{i}", f"name{i}", 1 + i) for i in range(4)] + [
    P("users", "u1", "renamed1", 10),
    P("users", "u3", None, 11),
]


# ----------------------------------------------------------------------------- stateless


def stateless_chain(b: StreamsBuilder, t: Topics) -> None:
    (
        b.stream(t["in"], Consumed.with_(S, J))
        .filter(lambda k, v: v["n"] % 3 != 0)
        .map_values(lambda v: {**v, "double": v["n"] * 2})
        .flat_map_values(lambda v: [v, {"n": -v["n"]}] if v["n"] % 2 else [v])
        .peek(lambda k, v: None)
        .to(t["out"], Produced.with_(S, J))
    )


def split_merge(b: StreamsBuilder, t: Topics) -> None:
    branches = (
        b.stream(t["in"], Consumed.with_(S, S))
        .split(Named.as_("conf-"))
        .branch(lambda k, v: int(v[1:]) % 2 == 0, Branched.as_("even"))
        .default_branch(Branched.as_("odd"))
    )
    even = branches["conf-even"].map_values(lambda v: f"even:{v}")
    odd = branches["conf-odd"].map_values(lambda v: f"odd:{v}")
    even.merge(odd).to(t["out"], Produced.with_(S, S))


class _Upper(FixedKeyProcessor[str, str]):
    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[str, str]) -> None:
        self.context.forward(record.with_value(record.value.upper()))


class EvenOdd:
    """Topic name extractor by the value's number; ``str()`` is what Java's ``toString()`` prints
    in ``describe()``."""

    def __init__(self, even: str, odd: str) -> None:
        self.even, self.odd = even, odd

    def __call__(self, key: Any, value: str, context: Any) -> str:
        return self.even if int(value[1:]) % 2 == 0 else self.odd

    def __str__(self) -> str:
        return "EvenOdd"


def process_values_and_topic_extractor(b: StreamsBuilder, t: Topics) -> None:
    (
        b.stream(t["in"], Consumed.with_(S, S))
        .process_values(_Upper)
        .to(EvenOdd(t["even"], t["odd"]), Produced.with_(S, S))
    )


# ----------------------------------------------------------------------------- aggregations


def count(b: StreamsBuilder, t: Topics) -> None:
    (
        b.stream(t["in"], Consumed.with_(S, S))
        .group_by_key()
        .count(Materialized.as_("conf-counts"))
        .to_stream()
        .to(t["out"], Produced.with_(S, L))
    )


def reduce_sum(b: StreamsBuilder, t: Topics) -> None:
    (
        b.stream(t["in"], Consumed.with_(S, L))
        .group_by_key()
        .reduce(operator.add)
        .to_stream()
        .to(t["out"], Produced.with_(S, L))
    )


def reduce_max(b: StreamsBuilder, t: Topics) -> None:
    (
        b.stream(t["in"], Consumed.with_(S, L))
        .group_by_key()
        .reduce(max)
        .to_stream()
        .to(t["out"], Produced.with_(S, L))
    )


def aggregate_and_reduce_with_nulls(b: StreamsBuilder, t: Topics) -> None:
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


def group_by_repartition(b: StreamsBuilder, t: Topics) -> None:
    (
        b.stream(t["in"], Consumed.with_(S, S))
        .group_by(lambda k, v: f"g{int(v[1:]) % 3}", Grouped.with_(S, S))
        .count()
        .to_stream()
        .to(t["out"], Produced.with_(S, L))
    )


def select_key_repartition_to_table(b: StreamsBuilder, t: Topics) -> None:
    (
        b.stream(t["in"], Consumed.with_(S, S))
        .select_key(lambda k, v: f"g{int(v[1:]) % 3}")
        .repartition(Repartitioned.with_(S, S))
        .to_table(Materialized.with_(S, S))
        .to_stream()
        .to(t["out"], Produced.with_(S, S))
    )


# ----------------------------------------------------------------------------- tables


def table_filter_map_values(b: StreamsBuilder, t: Topics) -> None:
    table = b.table(t["in"], Consumed.with_(S, S), Materialized.as_("conf-source"))
    (
        table.filter(lambda k, v: v is not None and int(v[1:]) % 4 != 0)
        .map_values(lambda v: v.upper())
        .to_stream()
        .to(t["out"], Produced.with_(S, S))
    )


def table_regroup_sum(b: StreamsBuilder, t: Topics) -> None:
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


def table_table_joins(b: StreamsBuilder, t: Topics) -> None:
    left = b.table(t["left"], Consumed.with_(S, S))
    right = b.table(t["right"], Consumed.with_(S, S))
    left.join(right, lambda a, c: f"{j(a)}+{j(c)}").to_stream().to(t["inner"], Produced.with_(S, S))
    left.left_join(right, lambda a, c: f"{j(a)}+{j(c)}").to_stream().to(t["leftj"], Produced.with_(S, S))
    left.outer_join(right, lambda a, c: f"{j(a)}+{j(c)}").to_stream().to(t["outer"], Produced.with_(S, S))


def stream_table_joins(b: StreamsBuilder, t: Topics) -> None:
    table = b.table(t["table"], Consumed.with_(S, S))
    stream = b.stream(t["stream"], Consumed.with_(S, S))
    stream.join(table, lambda s, tv: f"{j(s)}*{j(tv)}").to(t["inner"], Produced.with_(S, S))
    stream.left_join(table, lambda s, tv: f"{j(s)}*{j(tv)}").to(t["leftj"], Produced.with_(S, S))


def suppress_until_time_limit(b: StreamsBuilder, t: Topics) -> None:
    (
        b.table(t["in"], Consumed.with_(S, S))
        .suppress(Suppressed.until_time_limit(3_000, BufferConfig.unbounded()))
        .to_stream()
        .to(t["out"], Produced.with_(S, S))
    )


def stream_global_table_joins(b: StreamsBuilder, t: Topics) -> None:
    users = b.global_table(t["users"], Consumed.with_(S, S))
    views = b.stream(t["in"], Consumed.with_(S, S))
    views.join(users, lambda k, v: f"u{int(v[1:]) % 4}", lambda v, u: f"{j(v)}@{j(u)}").to(
        t["inner"], Produced.with_(S, S)
    )
    views.left_join(users, lambda k, v: f"u{int(v[1:]) % 5}", lambda v, u: f"{j(v)}@{j(u)}").to(
        t["leftj"], Produced.with_(S, S)
    )


# ----------------------------------------------------------------------------- windows


def tumbling_window_count(b: StreamsBuilder, t: Topics) -> None:
    (
        b.stream(t["in"], Consumed.with_(S, S))
        .group_by_key()
        .windowed_by(TimeWindows(size=10_000, grace=5_000))
        .count()
        .to_stream()
        .to(t["out"], Produced.with_(TW, L))
    )


def hopping_window_count(b: StreamsBuilder, t: Topics) -> None:
    (
        b.stream(t["in"], Consumed.with_(S, S))
        .group_by_key()
        .windowed_by(TimeWindows(size=10_000, grace=3_000, advance=4_000))
        .count()
        .to_stream()
        .map(lambda wk, n: KeyValue(f"{wk.key}@{wk.window.start}", n))
        .to(t["out"], Produced.with_(S, L))
    )


def hopping_window_reduce(b: StreamsBuilder, t: Topics) -> None:
    (
        b.stream(t["in"], Consumed.with_(S, S))
        .group_by_key()
        .windowed_by(TimeWindows(size=10_000, grace=3_000, advance=5_000))
        .reduce(lambda a, v: a + "," + v)
        .to_stream()
        .to(t["out"], Produced.with_(TW, S))
    )


def sliding_window_aggregate(b: StreamsBuilder, t: Topics) -> None:
    (
        b.stream(t["in"], Consumed.with_(S, S))
        .group_by_key()
        .windowed_by(SlidingWindows(time_difference=4_000, grace=6_000))
        .aggregate(lambda: 0, lambda k, v, agg: agg + 1, Materialized.with_(S, L))
        .to_stream()
        .to(t["out"], Produced.with_(Serdes.time_windowed(S, 4_000), L))
    )


def session_window_count(b: StreamsBuilder, t: Topics) -> None:
    (
        b.stream(t["in"], Consumed.with_(S, S))
        .group_by_key()
        .windowed_by(SessionWindows(gap=3_000, grace=4_000))
        .count()
        .to_stream()
        .to(t["out"], Produced.with_(Serdes.session_windowed(S), L))
    )


def suppress_final_counts(b: StreamsBuilder, t: Topics) -> None:
    (
        b.stream(t["in"], Consumed.with_(S, S))
        .group_by_key()
        .windowed_by(TimeWindows(size=10_000, grace=2_000))
        .count()
        .suppress(Suppressed.until_window_closes())
        .to_stream()
        .to(t["out"], Produced.with_(TW, L))
    )


def stream_stream_joins(b: StreamsBuilder, t: Topics) -> None:
    left = b.stream(t["left"], Consumed.with_(S, S))
    right = b.stream(t["right"], Consumed.with_(S, S))
    windows = JoinWindows.of(3_000, grace=2_000)
    left.join(right, lambda a, c: f"{j(a)}+{j(c)}", windows).to(t["inner"], Produced.with_(S, S))
    left.left_join(right, lambda a, c: f"{j(a)}+{j(c)}", windows).to(t["leftj"], Produced.with_(S, S))
    left.outer_join(right, lambda a, c: f"{j(a)}+{j(c)}", windows).to(t["outer"], Produced.with_(S, S))


# ----------------------------------------------------------------------------- Processor API


class SumAndFlush(Processor[str, str]):
    """Sums per key in a store; every 5 s of stream time forwards all sums (cross-key scan)."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store: Any = context.get_state_store("conf-sums")
        context.schedule(5_000, PunctuationType.STREAM_TIME, self.flush)

    def process(self, record: Record[str, str]) -> None:
        self.store.put(record.key, (self.store.get(record.key) or 0) + int(record.value[1:]))

    def flush(self, timestamp: int) -> None:
        with self.store.all() as it:
            for kv in it:
                self.context.forward(Record(kv.key, kv.value, timestamp))


def processor_api_punctuation(topo: Topology, t: Topics) -> None:
    topo.add_source(
        "conf-src", t["in"], key_deserializer=S.deserializer(), value_deserializer=S.deserializer()
    )
    topo.add_processor("conf-sum", SumAndFlush, "conf-src")
    topo.add_state_store(
        Stores.key_value_store_builder(Stores.in_memory_key_value_store("conf-sums"), S, L), "conf-sum"
    )
    topo.add_sink(
        "conf-sink", t["out"], "conf-sum", key_serializer=S.serializer(), value_serializer=L.serializer()
    )


# ----------------------------------------------------------------------------- scenarios


def _c(
    build: Callable[..., None],
    inputs: dict[str, tuple[str, str]],
    outputs: dict[str, tuple[str, str]],
    steps: list[Step],
    doc: str,
    **extra: Any,
) -> Scenario:
    name = build.__name__
    return Scenario(
        name,
        build,
        inputs,
        outputs,
        steps,
        java=f"conformance_{name}",
        doc=doc,
        **extra,
    )


_OUTER_EMIT_NOW = {"__emit.interval.ms.kstreams.outer.join.spurious.results.fix__": "0"}

SCENARIOS: list[Scenario] = [
    _c(
        stateless_chain,
        {"in": SJ},
        {"out": SJ},
        _stream("in", _messy(30, 6), lambda i, k: {"n": i}),
        "JSON values through filter, map_values, flat_map_values and peek (a fused chain on Spark)",
    ),
    _c(
        split_merge,
        {"in": SS},
        {"out": SS},
        _stream("in", _messy(24, 5)),
        "split into named branches and merge them again",
    ),
    _c(count, {"in": SS}, {"out": SL}, _stream("in", _messy(40, 5)), "a plain count"),
    _c(
        reduce_sum,
        {"in": SL},
        {"out": SL},
        _stream("in", _messy(30, 4), lambda i, k: None if i % 9 == 8 else (i * 37) % 23 - 11),
        "a sum reduce of Long values (Spark's aggregation when the cache is on); null values are skipped",
    ),
    _c(
        reduce_max,
        {"in": SL},
        {"out": SL},
        _stream("in", _messy(30, 4, seed=5), lambda i, k: (i * 53) % 29 - 14),
        "a max reduce of Long values (Spark's aggregation when the cache is on)",
    ),
    _c(
        aggregate_and_reduce_with_nulls,
        {"in": SS},
        {"out": SS, "max": SS},
        _stream("in", _messy(30, 4), lambda i, k: None if i % 7 == 3 else f"v{i}"),
        "aggregate and reduce of one grouped stream; null values are skipped",
    ),
    _c(
        group_by_repartition,
        {"in": SS},
        {"out": SL},
        _stream("in", _messy(30, 6)),
        "group_by on a new key: a repartition topic between two sub-topologies",
        spark_compare="final",  # several partitions: two upstream tasks feed the repartition topic
    ),
    _c(
        table_filter_map_values,
        {"in": SS},
        {"out": SS},
        _stream("in", _messy(30, 5), lambda i, k: None if i % 6 == 5 else f"v{i}"),
        "a materialized source table, filtered and mapped, with tombstones",
    ),
    _c(
        table_regroup_sum,
        {"in": SS},
        {"out": SL},
        _stream("in", _messy(30, 5, late_every=0)),
        "a table re-grouped (adder and subtractor through a repartition topic)",
        spark_compare="final",  # several partitions: two upstream tasks feed the repartition topic
    ),
    _c(
        table_table_joins,
        {"left": SS, "right": SS},
        {"inner": SS, "leftj": SS, "outer": SS},
        _two_topics("left", "right", 30, 5),
        "inner, left and outer table-table joins of the same two tables",
    ),
    _c(
        stream_table_joins,
        {"stream": SS, "table": SS},
        {"inner": SS, "leftj": SS},
        _two_topics("stream", "table", 30, 5),
        "inner and left stream-table joins",
    ),
    _c(
        tumbling_window_count,
        {"in": SS},
        {"out": TW_KIND},
        _stream("in", _messy(40, 4)),
        "a tumbling-window count with grace and late records",
    ),
    _c(
        hopping_window_count,
        {"in": SS},
        {"out": SL},
        _null_keys_and_values(_messy(40, 3, seed=11)),
        "a hopping-window count with null keys (skipped) and null values (counted), mapped after",
    ),
    _c(
        hopping_window_reduce,
        {"in": SS},
        {"out": ("window:10000:string", "string")},
        _stream("in", _messy(30, 3)),
        "a hopping-window reduce",
    ),
    _c(
        sliding_window_aggregate,
        {"in": SS},
        {"out": ("window:4000:string", "long")},
        _stream("in", _messy(30, 3)),
        "a sliding-window aggregate",
    ),
    _c(
        session_window_count,
        {"in": SS},
        {"out": ("session:string", "long")},
        _stream("in", _messy(30, 3, step=1500)),
        "a session-window count (merges, late records)",
    ),
    _c(
        suppress_final_counts,
        {"in": SS},
        {"out": TW_KIND},
        _stream("in", _messy(40, 4)),
        "suppress until the window closes: final counts only",
    ),
    _c(
        stream_stream_joins,
        {"left": SS, "right": SS},
        {"inner": SS, "leftj": SS, "outer": SS},
        [P(s["pipe"], s["key"], s["value"] or "x", s["ts"]) for s in _two_topics("left", "right", 30, 4)],
        "inner, left and outer windowed stream-stream joins (outer results emitted at once)",
        config=_OUTER_EMIT_NOW,
    ),
    _c(
        processor_api_punctuation,
        {"in": SS},
        {"out": SL},
        _stream("in", _messy(30, 4)),
        "a Processor API store scanned by a stream-time punctuation",
        papi=True,
    ),
    _c(
        stream_global_table_joins,
        {"users": SS, "in": SS},
        {"inner": SS, "leftj": SS},
        _USERS + _stream("in", _messy(24, 5)),
        "inner and left stream-GlobalKTable joins (the table complete before the stream)",
        global_topics=frozenset({"users"}),
    ),
    _c(
        select_key_repartition_to_table,
        {"in": SS},
        {"out": SS},
        _stream("in", _messy(24, 5)),
        "select_key, an explicit repartition and to_table",
        # several partitions: which of two upstream tasks' records is a key's latest is not defined
        spark_compare="multiset",
    ),
    _c(
        suppress_until_time_limit,
        {"in": SS},
        {"out": SS},
        _stream("in", _messy(30, 4, late_every=0)),
        "a table suppressed until a time limit (stream time)",
    ),
    _c(
        process_values_and_topic_extractor,
        {"in": SS},
        {"even": SS, "odd": SS},
        _stream("in", _messy(24, 5)),
        "process_values and a topic-name extractor sink",
    ),
]
