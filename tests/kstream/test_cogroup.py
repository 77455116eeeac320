"""Cogrouped aggregations (KIP-150) on the TopologyTestDriver: values, timestamps, names, errors.

The describe() texts are those Kafka's ``CogroupedKStreamImplTest`` expects
(the cases without topology optimization); the catalog (ported_cogroup.py)
compares the same topologies' outputs with Java's driver.
"""

from __future__ import annotations

from typing import Any

import pytest

from kspark import (
    Consumed,
    Grouped,
    JoinWindows,
    KeyValue,
    Materialized,
    Named,
    SessionWindows,
    SlidingWindows,
    StreamsBuilder,
    TimeWindows,
)
from kspark.kstream.cogrouped_kstream import (
    CogroupedKStream,
    SessionWindowedCogroupedKStream,
    TimeWindowedCogroupedKStream,
)
from kspark.serde import Serdes
from kspark.testing import TopologyTestDriver

S = Serdes.String()
L = Serdes.Long()
CONFIG = {
    "application.id": "app",
    "bootstrap.servers": "dummy:9092",
    "default.key.serde": "string",
    "default.value.serde": "string",
}
SC = Consumed.with_(S, S)


def concat(key: str, value: str, agg: str) -> str:
    return agg + value


def adder(key: str, value: str, agg: str) -> str:
    return agg + "+" + value


def remover(key: str, value: str, agg: str) -> str:
    return agg + "-" + value


def swap(key: Any, value: Any) -> KeyValue[Any, Any]:
    return KeyValue(value, key)


def records(
    d: TopologyTestDriver, topic: str = "output", key_serde: Any = S, value_serde: Any = S
) -> list[Any]:
    return [
        (r.key, r.value, r.timestamp)
        for r in d.create_output_topic(topic, key_serde, value_serde).read_records_to_list()
    ]


def test_two_streams_fold_into_one_aggregate_with_the_largest_timestamp() -> None:
    b = StreamsBuilder()
    g1 = b.stream("one", SC).group_by_key()
    g2 = b.stream("two", SC).group_by_key()
    table = g1.cogroup(concat).cogroup(g2, concat).aggregate(lambda: "", Materialized.as_("agg"))
    table.to_stream().to("output")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        one = d.create_input_topic("one", S, S)
        two = d.create_input_topic("two", S, S)
        one.pipe_input("k1", "A", timestamp=10)
        two.pipe_input("k1", "B", timestamp=5)
        two.pipe_input("k2", "C", timestamp=7)
        one.pipe_input("k1", None, timestamp=20)
        one.pipe_input("k2", "D", timestamp=30)
        assert records(d) == [("k1", "A", 10), ("k1", "AB", 10), ("k2", "C", 7), ("k2", "CD", 30)]
        assert d.dropped_records_total() == 1
        store = d.get_key_value_store("agg")
        assert store.get("k1") == "AB" and store.get("k2") == "CD"


def test_each_stream_has_its_own_aggregator_and_value_type() -> None:
    b = StreamsBuilder()
    strings = b.stream("one", SC).group_by_key()
    longs = b.stream("two", Consumed.with_(S, L)).group_by_key()
    table = (
        strings.cogroup(lambda k, v, agg: agg + int(v))
        .cogroup(longs, lambda k, v, agg: agg - v)
        .aggregate(lambda: 100, Materialized.with_(S, L))
    )
    table.to_stream().to("output")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        d.create_input_topic("one", S, S).pipe_input("k", "5", timestamp=1)
        d.create_input_topic("two", S, L).pipe_input("k", 30, timestamp=2)
        assert records(d, value_serde=L) == [("k", 105, 1), ("k", 75, 2)]


def test_describe_names_processors_and_store_after_named_and_materialized() -> None:
    b = StreamsBuilder()
    g1 = b.stream("one", SC).group_by_key()
    g2 = b.stream("two", SC).group_by_key()
    g1.cogroup(concat).cogroup(g2, concat).aggregate(
        lambda: "", Named.as_("test"), Materialized.as_("store")
    ).to_stream().to("output")
    assert str(b.build().describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [one])\n"
        "      --> test-cogroup-agg-0\n"
        "    Source: KSTREAM-SOURCE-0000000001 (topics: [two])\n"
        "      --> test-cogroup-agg-1\n"
        "    Processor: test-cogroup-agg-0 (stores: [store])\n"
        "      --> test-cogroup-merge\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: test-cogroup-agg-1 (stores: [store])\n"
        "      --> test-cogroup-merge\n"
        "      <-- KSTREAM-SOURCE-0000000001\n"
        "    Processor: test-cogroup-merge (stores: [])\n"
        "      --> KTABLE-TOSTREAM-0000000005\n"
        "      <-- test-cogroup-agg-0, test-cogroup-agg-1\n"
        "    Processor: KTABLE-TOSTREAM-0000000005 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000006\n"
        "      <-- test-cogroup-merge\n"
        "    Sink: KSTREAM-SINK-0000000006 (topic: output)\n"
        "      <-- KTABLE-TOSTREAM-0000000005\n\n"
    )


def test_a_rekeyed_stream_repartitions_through_its_grouped_name() -> None:
    b = StreamsBuilder()
    one = b.stream("one", SC)
    two = b.stream("two", SC)
    g1 = one.map(swap).group_by_key(Grouped.as_("repartition-test"))
    g2 = two.group_by_key()
    g1.cogroup(concat).cogroup(g2, concat).aggregate(lambda: "").to_stream().to("output")
    topology = b.build()
    assert str(topology.describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [one])\n"
        "      --> KSTREAM-MAP-0000000002\n"
        "    Processor: KSTREAM-MAP-0000000002 (stores: [])\n"
        "      --> repartition-test-repartition-filter\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: repartition-test-repartition-filter (stores: [])\n"
        "      --> repartition-test-repartition-sink\n"
        "      <-- KSTREAM-MAP-0000000002\n"
        "    Sink: repartition-test-repartition-sink (topic: repartition-test-repartition)\n"
        "      <-- repartition-test-repartition-filter\n\n"
        "  Sub-topology: 1\n"
        "    Source: KSTREAM-SOURCE-0000000001 (topics: [two])\n"
        "      --> COGROUPKSTREAM-AGGREGATE-0000000008\n"
        "    Source: repartition-test-repartition-source (topics: [repartition-test-repartition])\n"
        "      --> COGROUPKSTREAM-AGGREGATE-0000000007\n"
        "    Processor: COGROUPKSTREAM-AGGREGATE-0000000007 (stores: "
        "[COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003])\n"
        "      --> COGROUPKSTREAM-MERGE-0000000009\n"
        "      <-- repartition-test-repartition-source\n"
        "    Processor: COGROUPKSTREAM-AGGREGATE-0000000008 (stores: "
        "[COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003])\n"
        "      --> COGROUPKSTREAM-MERGE-0000000009\n"
        "      <-- KSTREAM-SOURCE-0000000001\n"
        "    Processor: COGROUPKSTREAM-MERGE-0000000009 (stores: [])\n"
        "      --> KTABLE-TOSTREAM-0000000010\n"
        "      <-- COGROUPKSTREAM-AGGREGATE-0000000007, COGROUPKSTREAM-AGGREGATE-0000000008\n"
        "    Processor: KTABLE-TOSTREAM-0000000010 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000011\n"
        "      <-- COGROUPKSTREAM-MERGE-0000000009\n"
        "    Sink: KSTREAM-SINK-0000000011 (topic: output)\n"
        "      <-- KTABLE-TOSTREAM-0000000010\n\n"
    )
    with TopologyTestDriver(topology, CONFIG) as d:
        in_one = d.create_input_topic("one", S, S)
        in_two = d.create_input_topic("two", S, S)
        in_one.pipe_input("a", "k1", timestamp=1)
        in_two.pipe_input("k1", "X", timestamp=2)
        in_one.pipe_input("b", "k1", timestamp=3)
        in_one.pipe_input("c", None, timestamp=4)  # a null new key never reaches the repartition topic
        assert records(d) == [("k1", "a", 1), ("k1", "aX", 2), ("k1", "aXb", 3)]


def test_group_by_repartitions_through_the_store_name() -> None:
    b = StreamsBuilder()
    g1 = b.stream("one", SC).group_by(lambda k, v: v)
    g2 = b.stream("two", SC).group_by_key()
    g1.cogroup(concat).cogroup(g2, concat).aggregate(lambda: "", Materialized.as_("store"))
    description = str(b.build().describe())
    assert "Sink: store-repartition-sink (topic: store-repartition)" in description
    assert "Source: store-repartition-source (topics: [store-repartition])" in description


def test_one_cogrouped_stream_aggregated_twice_shares_its_repartition_topic() -> None:
    b = StreamsBuilder()
    g = b.stream("one", SC).map(swap).group_by_key(Grouped.as_("foo"))
    cogrouped = g.cogroup(concat)
    cogrouped.aggregate(lambda: "")
    cogrouped.aggregate(lambda: "")
    assert str(b.build().describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [one])\n"
        "      --> KSTREAM-MAP-0000000001\n"
        "    Processor: KSTREAM-MAP-0000000001 (stores: [])\n"
        "      --> foo-repartition-filter\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: foo-repartition-filter (stores: [])\n"
        "      --> foo-repartition-sink\n"
        "      <-- KSTREAM-MAP-0000000001\n"
        "    Sink: foo-repartition-sink (topic: foo-repartition)\n"
        "      <-- foo-repartition-filter\n\n"
        "  Sub-topology: 1\n"
        "    Source: foo-repartition-source (topics: [foo-repartition])\n"
        "      --> COGROUPKSTREAM-AGGREGATE-0000000006, COGROUPKSTREAM-AGGREGATE-0000000012\n"
        "    Processor: COGROUPKSTREAM-AGGREGATE-0000000006 (stores: "
        "[COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000002])\n"
        "      --> COGROUPKSTREAM-MERGE-0000000007\n"
        "      <-- foo-repartition-source\n"
        "    Processor: COGROUPKSTREAM-AGGREGATE-0000000012 (stores: "
        "[COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000008])\n"
        "      --> COGROUPKSTREAM-MERGE-0000000013\n"
        "      <-- foo-repartition-source\n"
        "    Processor: COGROUPKSTREAM-MERGE-0000000007 (stores: [])\n"
        "      --> none\n"
        "      <-- COGROUPKSTREAM-AGGREGATE-0000000006\n"
        "    Processor: COGROUPKSTREAM-MERGE-0000000013 (stores: [])\n"
        "      --> none\n"
        "      <-- COGROUPKSTREAM-AGGREGATE-0000000012\n\n"
    )


def test_a_grouped_stream_in_two_cogroups_gets_two_repartition_topics() -> None:
    b = StreamsBuilder()
    g1 = b.stream("one", SC).map(swap).group_by_key()
    g2 = b.stream("two", SC).group_by_key()
    g1.cogroup(concat).cogroup(g2, concat).aggregate(lambda: "")
    g1.cogroup(concat).cogroup(g2, concat).aggregate(lambda: "")
    description = str(b.build().describe())
    for store in ("0000000003", "0000000010"):
        topic = f"COGROUPKSTREAM-AGGREGATE-STATE-STORE-{store}-repartition"
        assert f"Sink: {topic}-sink (topic: {topic})" in description


def test_cogrouping_a_stream_again_replaces_its_aggregator_in_place() -> None:
    b = StreamsBuilder()
    g1 = b.stream("one", SC).group_by_key()
    g2 = b.stream("two", SC).group_by_key()
    cogrouped = g1.cogroup(concat).cogroup(g2, concat)
    assert cogrouped.cogroup(g1, adder) is cogrouped
    cogrouped.aggregate(lambda: "").to_stream().to("output")
    topology = b.build()
    assert (
        "COGROUPKSTREAM-AGGREGATE-0000000003 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000002])\n"
        "      --> COGROUPKSTREAM-MERGE-0000000005\n      <-- KSTREAM-SOURCE-0000000000"
        in str(topology.describe())
    )
    with TopologyTestDriver(topology, CONFIG) as d:
        d.create_input_topic("one", S, S).pipe_input("k", "A", timestamp=1)
        d.create_input_topic("two", S, S).pipe_input("k", "B", timestamp=2)
        assert records(d) == [("k", "+A", 1), ("k", "+AB", 2)]


def test_time_windowed_cogroup_adds_and_removes_into_the_same_windows() -> None:
    b = StreamsBuilder()
    g1 = b.stream("one", SC).group_by_key(Grouped.with_(S, S))
    g2 = b.stream("two", SC).group_by_key(Grouped.with_(S, S))
    windowed = g1.cogroup(adder).cogroup(g2, remover).windowed_by(TimeWindows.of_size_with_no_grace(500))
    assert isinstance(windowed, TimeWindowedCogroupedKStream)
    windowed.aggregate(
        lambda: "0", Materialized.as_("w").with_key_serde(S).with_value_serde(S)
    ).to_stream().to("output")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        one = d.create_input_topic("one", S, S)
        two = d.create_input_topic("two", S, S)
        one.pipe_input("k1", "A", timestamp=0)
        two.pipe_input("k1", "B", timestamp=3)
        two.pipe_input("k1", "C", timestamp=501)
        out = records(d, key_serde=Serdes.time_windowed(S, 500))
        assert [(w.key, w.window.start, v, ts) for w, v, ts in out] == [
            ("k1", 0, "0+A", 0),
            ("k1", 0, "0+A-B", 3),
            ("k1", 500, "0-C", 501),
        ]
        assert [kv.value for kv in d.get_window_store("w").fetch("k1", 0, 1000)] == ["0+A-B", "0-C"]


def test_sliding_windowed_cogroup() -> None:
    b = StreamsBuilder()
    g1 = b.stream("one", SC).group_by_key()
    g2 = b.stream("two", SC).group_by_key()
    windowed = (
        g1.cogroup(adder)
        .cogroup(g2, remover)
        .windowed_by(SlidingWindows.of_time_difference_and_grace(10, 100))
    )
    assert isinstance(windowed, TimeWindowedCogroupedKStream)
    windowed.aggregate(lambda: "0", Materialized.with_(S, S)).to_stream().to("output")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        d.create_input_topic("one", S, S).pipe_input("k", "A", timestamp=100)
        d.create_input_topic("two", S, S).pipe_input("k", "B", timestamp=105)
        out = records(d, key_serde=Serdes.time_windowed(S, 10))
        assert [(w.window.start, w.window.end, v, ts) for w, v, ts in out] == [
            (90, 100, "0+A", 100),
            (101, 111, "0-B", 105),
            (95, 105, "0+A-B", 105),
        ]


def test_session_windowed_cogroup_merges_sessions_across_streams() -> None:
    b = StreamsBuilder()
    g1 = b.stream("one", SC).group_by_key()
    g2 = b.stream("two", SC).group_by_key()
    windowed = (
        g1.cogroup(adder)
        .cogroup(g2, remover)
        .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(100))
    )
    assert isinstance(windowed, SessionWindowedCogroupedKStream)
    windowed.aggregate(lambda: "0", lambda k, a1, a2: a1 + "|" + a2, Materialized.with_(S, S)).to_stream().to(
        "output"
    )
    with TopologyTestDriver(b.build(), {**CONFIG, "statestore.cache.max.bytes": 0}) as d:
        d.create_input_topic("one", S, S).pipe_input("k", "A", timestamp=0)
        d.create_input_topic("two", S, S).pipe_input("k", "B", timestamp=50)
        out = records(d, key_serde=Serdes.session_windowed(S))
        assert [(w.window.start, w.window.end, v, ts) for w, v, ts in out] == [
            (0, 0, "0+A", 0),
            (0, 0, None, 0),
            (0, 50, "0|0+A-B", 50),
        ]


def test_windowed_cogroup_names_follow_named() -> None:
    b = StreamsBuilder()
    g = b.stream("topic", SC).group_by_key(Grouped.with_(S, S))
    g.cogroup(adder).windowed_by(TimeWindows.of_size_with_no_grace(500)).aggregate(
        lambda: "0", Named.as_("foo")
    )
    assert str(b.build().describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [topic])\n"
        "      --> foo-cogroup-agg-0\n"
        "    Processor: foo-cogroup-agg-0 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000001])\n"
        "      --> foo-cogroup-merge\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: foo-cogroup-merge (stores: [])\n"
        "      --> none\n"
        "      <-- foo-cogroup-agg-0\n\n"
    )


@pytest.fixture
def cogrouped() -> tuple[StreamsBuilder, Any, CogroupedKStream]:
    b = StreamsBuilder()
    g = b.stream("topic", SC).group_by_key()
    return b, g, g.cogroup(concat)


def test_cogroup_refuses_missing_or_wrong_arguments(
    cogrouped: tuple[StreamsBuilder, Any, CogroupedKStream],
) -> None:
    b, g, c = cogrouped
    with pytest.raises(ValueError, match=r"aggregator can't be None \(KGroupedStream.cogroup\)"):
        g.cogroup(None)
    with pytest.raises(TypeError, match=r"aggregator must be callable \(KGroupedStream.cogroup\)"):
        g.cogroup("agg")
    with pytest.raises(ValueError, match=r"grouped_stream can't be None \(CogroupedKStream.cogroup\)"):
        c.cogroup(None, concat)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="grouped_stream must be a KGroupedStream"):
        c.cogroup(b.stream("other"), concat)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"aggregator can't be None \(CogroupedKStream.cogroup\)"):
        c.cogroup(g, None)  # type: ignore[arg-type]
    other = StreamsBuilder().stream("x").group_by_key()
    with pytest.raises(ValueError, match="belongs to another StreamsBuilder"):
        c.cogroup(other, concat)


def test_aggregate_refuses_missing_or_wrong_arguments(
    cogrouped: tuple[StreamsBuilder, Any, CogroupedKStream],
) -> None:
    _, _, c = cogrouped
    with pytest.raises(ValueError, match=r"initializer can't be None \(CogroupedKStream.aggregate\)"):
        c.aggregate(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="named must be a Named or a str"):
        c.aggregate(lambda: "", 5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="materialized must be a Materialized"):
        c.aggregate(lambda: "", None, "store")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="can't be longer than 249"):
        c.aggregate(lambda: "", Named.as_("n" * 240))
    windowed = c.windowed_by(TimeWindows.of_size_with_no_grace(10))
    with pytest.raises(
        ValueError, match=r"initializer can't be None \(TimeWindowedCogroupedKStream.aggregate\)"
    ):
        windowed.aggregate(None)  # type: ignore[arg-type]
    sessions = c.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(10))
    with pytest.raises(ValueError, match=r"session_merger can't be None"):
        sessions.aggregate(lambda: "", None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="session_merger must be callable"):
        sessions.aggregate(lambda: "", Materialized.with_(S, S))  # type: ignore[arg-type]


def test_windowed_by_refuses_missing_or_other_windows(
    cogrouped: tuple[StreamsBuilder, Any, CogroupedKStream],
) -> None:
    _, _, c = cogrouped
    with pytest.raises(ValueError, match=r"windows can't be None \(CogroupedKStream.windowed_by\)"):
        c.windowed_by(None)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="windows must be TimeWindows, SlidingWindows or SessionWindows"):
        c.windowed_by(JoinWindows.of(10))  # type: ignore[call-overload]
