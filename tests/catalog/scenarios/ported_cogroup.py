"""Cogrouped aggregations (KIP-150) ported from Kafka's ``*CogroupedKStreamImplTest`` classes.

``CogroupedKStreamImplTest``: one, two and three cogrouped streams, distinct
and shared keys, aggregators that differ per stream, value types that
differ per stream, a named processor and store, a table-table join of the
result, and the repartition cases (a named ``Grouped``, a generated topic
named after the store, one cogrouped stream aggregated twice, a grouped
stream both cogrouped and aggregated alone), whose Kafka tests check the
topology only; here their data runs too. ``TimeWindowedCogroupedKStreamImplTest``,
``SlidingWindowedCogroupedKStreamImplTest`` and
``SessionWindowedCogroupedKStreamImplTest``: the windowed variants, with
one stream adding (``agg+v``) and the other removing (``agg-v``) into the
same windows.

Beyond Kafka's tests: cogrouping a grouped stream again replaces its
aggregator (Kafka's map keeps the stream's place), each aggregate
processor keeps its own stream time (a record of one stream is late by
that stream's time only), and a windowed cogroup suppressed until its
windows close.

In the repartition scenarios each new key comes from one original key, so
the order in which its records reach the repartition topic is defined on
Spark with several partitions too.
"""

from __future__ import annotations

from typing import Any

from kspark import (
    Consumed,
    Grouped,
    KeyValue,
    Materialized,
    Named,
    Produced,
    SessionWindows,
    SlidingWindows,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
)
from kspark.serde import Serdes

from ..model import Build, P, Scenario, Step, Topics
from .ported_support import SESS_S, SL, SS, L, S, ported, win

__all__ = ["SCENARIOS"]

_D = "CogroupedKStreamImplTest"
_TW = "TimeWindowedCogroupedKStreamImplTest"
_SW = "SlidingWindowedCogroupedKStreamImplTest"
_SE = "SessionWindowedCogroupedKStreamImplTest"
OUT = Produced.with_(S, S)


def _concat(key: str, value: str, agg: str) -> str:
    """Kafka's test ``STRING_AGGREGATOR``."""
    return agg + value


def _adder(key: str, value: str, agg: str) -> str:
    """``MockAggregator.TOSTRING_ADDER``."""
    return agg + "+" + value


def _remover(key: str, value: str, agg: str) -> str:
    """``MockAggregator.TOSTRING_REMOVER``."""
    return agg + "-" + value


def _empty() -> str:
    return ""


def _zero_str() -> str:
    """``MockInitializer.STRING_INIT``."""
    return "0"


def _swap(key: Any, value: Any) -> KeyValue[Any, Any]:
    return KeyValue(value, key)


def _grouped(b: StreamsBuilder, topic: str) -> Any:
    return b.stream(topic, Consumed.with_(S, S)).group_by_key()


def cg_streams(n: int) -> Build:
    """``n`` String streams (``one``, ``two``, ``three``) cogrouped by concatenation, ``aggregate("")``."""

    def build(b: StreamsBuilder, t: Topics) -> None:
        groups = [_grouped(b, t[topic]) for topic in ("one", "two", "three")[:n]]
        cogrouped = groups[0].cogroup(_concat)
        for g in groups[1:]:
            cogrouped = cogrouped.cogroup(g, _concat)
        cogrouped.aggregate(_empty).to_stream().to(t["output"], OUT)

    build.__name__ = f"cg_streams_{n}"
    return build


def cg_mixed_aggregators(b: StreamsBuilder, t: Topics) -> None:
    (
        _grouped(b, t["one"])
        .cogroup(_remover)
        .cogroup(_grouped(b, t["two"]), _adder)
        .aggregate(_zero_str, Materialized.as_("pcg-mixed-store").with_value_serde(S))
        .to_stream()
        .to(t["output"], OUT)
    )


def cg_mixed_types(b: StreamsBuilder, t: Topics) -> None:
    def parse_sum(key: str, value: str, agg: int) -> int:
        return agg + int(value)

    def add(key: str, value: int, agg: int) -> int:
        return agg + value

    (
        _grouped(b, t["one"])
        .cogroup(parse_sum)
        .cogroup(b.stream(t["two"], Consumed.with_(S, L)).group_by_key(), add)
        .aggregate(lambda: 0, Materialized.as_("pcg-types-store").with_value_serde(L))
        .to_stream()
        .to(t["output"], Produced.with_(S, L))
    )


def cg_named(b: StreamsBuilder, t: Topics) -> None:
    (
        _grouped(b, t["one"])
        .cogroup(_concat)
        .cogroup(_grouped(b, t["two"]), _concat)
        .aggregate(_empty, Named.as_("pcg-named"), Materialized.as_("pcg-named-store"))
        .to_stream()
        .to(t["output"], OUT)
    )


def cg_table_join(b: StreamsBuilder, t: Topics) -> None:
    table1 = (
        _grouped(b, t["one"])
        .cogroup(_concat)
        .cogroup(_grouped(b, t["two"]), _concat)
        .aggregate(_empty, Named.as_("pcg-join"), Materialized.as_("pcg-join-store"))
    )
    table2 = b.table(t["three"], Consumed.with_(S, S))
    joined = table1.join(table2, lambda v1, v2: v1 + "+" + v2, Materialized.with_(S, S))
    joined.to_stream().to(t["output"], OUT)


def cg_repartition_named(b: StreamsBuilder, t: Topics) -> None:
    grouped_one = b.stream(t["one"], Consumed.with_(S, S)).map(_swap).group_by_key(Grouped.as_("pcg-rekey"))
    (
        grouped_one.cogroup(_concat)
        .cogroup(_grouped(b, t["two"]), _concat)
        .aggregate(_empty)
        .to_stream()
        .to(t["output"], OUT)
    )


def cg_repartition_store(b: StreamsBuilder, t: Topics) -> None:
    grouped_one = b.stream(t["one"], Consumed.with_(S, S)).group_by(lambda k, v: v)
    (
        grouped_one.cogroup(_concat)
        .cogroup(_grouped(b, t["two"]), _concat)
        .aggregate(_empty, Named.as_("pcg-gen"), Materialized.as_("pcg-gen-store"))
        .to_stream()
        .to(t["output"], OUT)
    )


def cg_used_twice(b: StreamsBuilder, t: Topics) -> None:
    grouped_one = b.stream(t["one"], Consumed.with_(S, S)).map(_swap).group_by_key(Grouped.as_("pcg-twice"))
    cogrouped = grouped_one.cogroup(_concat)
    cogrouped.aggregate(_empty).to_stream().to(t["out1"], OUT)
    cogrouped.aggregate(lambda: "#").to_stream().to(t["out2"], OUT)


def cg_grouped_reused(b: StreamsBuilder, t: Topics) -> None:
    grouped_one = b.stream(t["one"], Consumed.with_(S, S)).map(_swap).group_by_key()
    (
        grouped_one.cogroup(_concat)
        .cogroup(_grouped(b, t["two"]), _concat)
        .aggregate(_empty)
        .to_stream()
        .to(t["out1"], OUT)
    )
    grouped_one.aggregate(_empty, _concat).to_stream().to(t["out2"], OUT)


def cg_replace(b: StreamsBuilder, t: Topics) -> None:
    grouped_one = _grouped(b, t["one"])
    (
        grouped_one.cogroup(_concat)
        .cogroup(_grouped(b, t["two"]), _concat)
        .cogroup(grouped_one, _adder)
        .aggregate(_empty)
        .to_stream()
        .to(t["output"], OUT)
    )


def _add_remove(b: StreamsBuilder, t: Topics) -> Any:
    """The windowed tests' setup: ``topic`` adds, ``topic2`` removes (both ``Grouped.with(S, S)``)."""
    g1 = b.stream(t["one"], Consumed.with_(S, S)).group_by_key(Grouped.with_(S, S))
    g2 = b.stream(t["two"], Consumed.with_(S, S)).group_by_key(Grouped.with_(S, S))
    return g1.cogroup(_adder).cogroup(g2, _remover)


def cg_windowed(b: StreamsBuilder, t: Topics) -> None:
    (
        _add_remove(b, t)
        .windowed_by(TimeWindows.of_size_with_no_grace(500))
        .aggregate(_zero_str, Materialized.with_(S, S))
        .to_stream()
        .to(t["output"], Produced.with_(Serdes.time_windowed(S, 500), S))
    )


def cg_hopping_named(b: StreamsBuilder, t: Topics) -> None:
    (
        b.stream(t["one"], Consumed.with_(S, S))
        .group_by_key(Grouped.with_(S, S))
        .cogroup(_adder)
        .windowed_by(TimeWindows.of_size_with_no_grace(500).advance_by(200))
        .aggregate(_zero_str, Named.as_("pcg-hop"), Materialized.with_(S, S))
        .to_stream()
        .to(t["output"], Produced.with_(Serdes.time_windowed(S, 500), S))
    )


def cg_windowed_late(b: StreamsBuilder, t: Topics) -> None:
    (
        _add_remove(b, t)
        .windowed_by(TimeWindows.of_size_and_grace(100, 10))
        .aggregate(_zero_str, Materialized.with_(S, S))
        .to_stream()
        .to(t["output"], Produced.with_(Serdes.time_windowed(S, 100), S))
    )


def cg_sliding(b: StreamsBuilder, t: Topics) -> None:
    (
        _add_remove(b, t)
        .windowed_by(SlidingWindows.of_time_difference_and_grace(500, 2000))
        .aggregate(_zero_str, Materialized.with_(S, S))
        .to_stream()
        .to(t["output"], Produced.with_(Serdes.time_windowed(S, 500), S))
    )


def cg_session(b: StreamsBuilder, t: Topics) -> None:
    (
        _add_remove(b, t)
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(100, 86_400_000))
        .aggregate(_zero_str, lambda k, a1, a2: a1 + "+" + a2, Materialized.with_(S, S))
        .to_stream()
        .to(t["output"], Produced.with_(Serdes.session_windowed(S), S))
    )


def cg_suppressed(b: StreamsBuilder, t: Topics) -> None:
    (
        _add_remove(b, t)
        .windowed_by(TimeWindows.of_size_and_grace(100, 0))
        .aggregate(_zero_str, Materialized.as_("pcg-suppress-store").with_key_serde(S).with_value_serde(S))
        .suppress(Suppressed.until_window_closes(Suppressed.BufferConfig.unbounded()))
        .to_stream()
        .to(t["output"], Produced.with_(Serdes.time_windowed(S, 100), S))
    )


def _steps(*records: tuple[str, str, Any, int]) -> list[Step]:
    return [P(topic, k, v, ts) for topic, k, v, ts in records]


_SHARED = _steps(
    ("one", "k1", "A", 0),
    ("one", "k2", "A", 1),
    ("one", "k1", "A", 10),
    ("one", "k2", "A", 100),
    ("two", "k2", "B", 100),
    ("two", "k2", "B", 200),
    ("two", "k1", "B", 1),
    ("two", "k2", "B", 500),
    ("two", "k1", "B", 500),
    ("two", "k2", "B", 500),
    ("two", "k3", "B", 500),
    ("two", "k2", "B", 100),
)
_DIGITS = _steps(
    ("one", "k1", "1", 0),
    ("one", "k2", "1", 1),
    ("one", "k1", "1", 10),
    ("one", "k2", "1", 100),
    ("two", "k1", "2", 500),
    ("two", "k2", "2", 500),
    ("two", "k1", "2", 500),
    ("two", "k2", "2", 100),
)
_TYPES = _steps(
    ("one", "k1", "1", 0),
    ("one", "k2", "1", 1),
    ("one", "k1", "1", 10),
    ("one", "k2", "1", 100),
    ("two", "k2", 2, 100),
    ("two", "k2", 2, 200),
    ("two", "k1", 2, 1),
    ("two", "k2", 2, 500),
    ("two", "k1", 2, 500),
    ("two", "k2", 3, 500),
    ("two", "k3", 2, 500),
    ("two", "k2", 2, 100),
)
# one: new key = value, each new key from one original key ("a" or "b")
_REKEY = _steps(
    ("one", "a", "k1", 1),
    ("two", "k1", "X", 2),
    ("one", "a", "k2", 3),
    ("one", "b", "k3", 4),
    ("two", "k2", "Y", 5),
    ("one", "a", "k1", 6),
    ("one", "b", "k3", 7),
    ("two", "k3", "Z", 8),
    ("one", "a", None, 9),
)
_MIX_MANY = _steps(
    ("one", "k1", "A", 0),
    ("one", "k2", "A", 0),
    ("one", "k2", "A", 1),
    ("one", "k1", "A", 2),
    ("two", "k1", "B", 3),
    ("two", "k2", "B", 3),
    ("two", "k2", "B", 501),
    ("two", "k1", "B", 501),
)

_TWO = {"one": SS, "two": SS}

SCENARIOS: list[Scenario] = [
    ported(
        "pcg_single",
        cg_streams(1),
        {"one": SS},
        {"output": SS},
        _steps(("one", "k1", "A", 0), ("one", "k2", "B", 0), ("one", "k2", None, 0), ("one", "k2", "B", 0))
        + _steps(("one", "k1", "A", 0)),
        f"{_D}.shouldCogroupAndAggregateSingleKStreams, testCogroupHandleNullValues: one stream; a null "
        "value is dropped (and counted).",
        java="cg_streams_1",
    ),
    ported(
        "pcg_two_distinct",
        cg_streams(2),
        _TWO,
        {"output": SS},
        _steps(
            ("one", "k1", "A", 0),
            ("one", "k1", "A", 1),
            ("one", "k1", "A", 10),
            ("one", "k1", "A", 100),
            ("two", "k2", "B", 100),
            ("two", "k2", "B", 200),
            ("two", "k2", "B", 1),
            ("two", "k2", "B", 500),
            ("two", "k2", "B", 500),
            ("two", "k2", "B", 100),
        ),
        f"{_D}.shouldCogroupAndAggregateTwoKStreamsWithDistinctKeys: the result keeps the largest "
        "timestamp seen per key.",
        java="cg_streams_2",
    ),
    ported(
        "pcg_two_shared",
        cg_streams(2),
        _TWO,
        {"output": SS},
        _SHARED,
        f"{_D}.shouldCogroupAndAggregateTwoKStreamsWithSharedKeys: both streams fold into one aggregate "
        "per key.",
        java="cg_streams_2",
    ),
    ported(
        "pcg_three",
        cg_streams(3),
        {"one": SS, "two": SS, "three": SS},
        {"output": SS},
        [{**s, "pipe": "three"} if i >= 8 else s for i, s in enumerate(_SHARED)],
        f"{_D}.testCogroupWithThreeGroupedStreams.",
        java="cg_streams_3",
    ),
    ported(
        "pcg_mixed_aggregators",
        cg_mixed_aggregators,
        _TWO,
        {"output": SS},
        _DIGITS,
        f"{_D}.testCogroupKeyMixedAggregators: one stream removes, the other adds, into a named store.",
    ),
    ported(
        "pcg_mixed_types",
        cg_mixed_types,
        {"one": SS, "two": SL},
        {"output": SL},
        _TYPES,
        f"{_D}.shouldCoGroupStreamsWithDifferentInputTypes, shouldAllowDifferentOutputTypeInCoGroup: "
        "String and Long streams summed into a Long aggregate (Kafka's Integer as Long).",
    ),
    ported(
        "pcg_named",
        cg_named,
        _TWO,
        {"output": SS},
        _SHARED,
        f"{_D}.shouldNameProcessorsAndStoreBasedOnNamedParameter: <named>-cogroup-agg-<i>, "
        "<named>-cogroup-merge, the store named by Materialized.",
    ),
    ported(
        "pcg_table_join",
        cg_table_join,
        {"one": SS, "two": SS, "three": SS},
        {"output": SS},
        _steps(
            ("one", "k1", "A", 5),
            ("two", "k2", "B", 6),
            ("three", "k1", "C", 0),
            ("three", "k2", "D", 10),
            ("one", "k2", "E", 12),
        ),
        f"{_D}.testCogroupWithKTableKTableInnerJoin: the cogrouped table joined with a source table.",
    ),
    ported(
        "pcg_repartition_named",
        cg_repartition_named,
        _TWO,
        {"output": SS},
        _REKEY,
        f"{_D}.shouldNameRepartitionTopic: a re-keyed stream repartitions through its Grouped name "
        "(a null new key is filtered before the topic); the other does not.",
    ),
    ported(
        "pcg_repartition_store",
        cg_repartition_store,
        _TWO,
        {"output": SS},
        _REKEY,
        f"{_D}.shouldInsertRepartitionsTopicForUpstreamKeyModification: group_by repartitions through "
        "<store>-repartition; processors named after Named.",
    ),
    ported(
        "pcg_used_twice",
        cg_used_twice,
        {"one": SS},
        {"out1": SS, "out2": SS},
        [s for s in _REKEY if s["pipe"] == "one"],
        f"{_D}.shouldInsertRepartitionsTopicForCogroupsUsedTwice: two aggregations of one cogrouped "
        "stream share its repartition topic.",
    ),
    ported(
        "pcg_grouped_reused",
        cg_grouped_reused,
        _TWO,
        {"out1": SS, "out2": SS},
        _REKEY,
        f"{_D}.shouldInsertRepartitionsTopicForUpstreamKeyModificationWithGroupedReused: the grouped "
        "stream cogrouped and aggregated alone: two repartition topics.",
    ),
    ported(
        "pcg_replace",
        cg_replace,
        _TWO,
        {"output": SS},
        _SHARED[:6],
        "Edge beyond CogroupedKStreamImplTest: cogrouping a grouped stream again replaces its "
        "aggregator; the stream keeps its place (processor numbering).",
    ),
    ported(
        "pcg_windowed",
        cg_windowed,
        _TWO,
        {"output": win(500)},
        _MIX_MANY,
        f"{_TW}.timeWindowMixAggregatorsManyWindowsTest: tumbling windows of 500, two streams, two windows.",
    ),
    ported(
        "pcg_hopping_named",
        cg_hopping_named,
        {"one": SS},
        {"output": win(500)},
        _steps(
            ("one", "k1", "A", 0),
            ("one", "k2", "A", 0),
            ("one", "k1", "B", 250),
            ("one", "k2", "B", 250),
            ("one", "k2", "A", 500),
            ("one", "k1", "A", 500),
        ),
        f"{_TW}.timeWindowAggregateOverlappingWindowsTest, namedParamShouldSetName: hopping windows "
        "(500 advancing 200), processors named.",
    ),
    ported(
        "pcg_windowed_late",
        cg_windowed_late,
        _TWO,
        {"output": win(100)},
        _steps(
            ("one", "k", "a", 0),
            ("one", "k", "b", 150),
            ("two", "k", "c", 50),
            ("one", "k", "d", 60),
            ("two", "k", "e", 200),
            ("two", "k", "f", 80),
            ("one", "k", "g", 99),
        ),
        "Edge beyond TimeWindowedCogroupedKStreamImplTest: each aggregate processor keeps its own "
        "stream time (size 100, grace 10): a record is late only by the time its own stream has seen.",
    ),
    ported(
        "pcg_sliding",
        cg_sliding,
        _TWO,
        {"output": win(500)},
        _steps(
            ("one", "k1", "A", 500),
            ("one", "k2", "A", 500),
            ("one", "k2", "A", 501),
            ("one", "k1", "A", 502),
            ("two", "k1", "B", 503),
            ("one", "k2", "B", 503),
            ("two", "k2", "B", 504),
            ("one", "k1", "B", 504),
            ("one", "k1", "A", 1000),
        ),
        f"{_SW}.slidingWindowAggregateStreamsTest, slidingWindowAggregateOverlappingWindowsTest: "
        "sliding windows (difference 500, grace 2000) fed by both streams.",
    ),
    ported(
        "pcg_session",
        cg_session,
        _TWO,
        {"output": SESS_S},
        _MIX_MANY[:5]
        + _steps(("two", "k2", "B", 500), ("two", "k2", "B", 501), ("two", "k1", "B", 501))
        + _steps(("one", "k1", "A", 84), ("one", "k1", "A", 450)),
        f"{_SE}.sessionWindowMixAggregatorsManyWindowsTest, sessionWindowAggregateTest2StreamsTest: "
        "sessions (gap 100) merged across both streams.",
    ),
    ported(
        "pcg_suppressed",
        cg_suppressed,
        _TWO,
        {"output": win(100)},
        _steps(
            ("one", "k1", "A", 0),
            ("two", "k1", "B", 50),
            ("one", "k2", "C", 60),
            ("two", "k1", "D", 120),
            ("one", "k2", "E", 150),
            ("one", "k1", "F", 250),
        ),
        "Edge beyond TimeWindowedCogroupedKStreamImplTest: a windowed cogroup (size 100, no grace) "
        "suppressed until its windows close: one final result per window.",
    ),
]
