"""KTable operators: sources, filter/map_values, old/new propagation, table-table joins, group_by."""

from __future__ import annotations

from typing import Any

import pytest

from kspark import Consumed, Grouped, Materialized, StreamsBuilder
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


def records(d: TopologyTestDriver, topic: str, vs: Any = S) -> list[tuple[Any, Any, int]]:
    return [(r.key, r.value, r.timestamp) for r in d.create_output_topic(topic, S, vs).read_records_to_list()]


def test_table_source_materialized_forwards_updates_and_tombstones() -> None:
    b = StreamsBuilder()
    b.table("t", Consumed.with_(S, S), Materialized.as_("store")).to_stream().to("out")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        i = d.create_input_topic("t", S, S)
        i.pipe_input("a", "1", timestamp=5)
        i.pipe_input("a", "2", timestamp=6)
        i.pipe_input(None, "x", timestamp=7)
        i.pipe_input("a", None, timestamp=8)
        assert records(d, "out") == [("a", "1", 5), ("a", "2", 6), ("a", None, 8)]
        assert d.dropped_records_total() == 1
        assert d.get_key_value_store("store").get("a") is None


def test_unmaterialized_table_has_no_store() -> None:
    b = StreamsBuilder()
    b.table("t").to_stream().to("out")
    text = str(b.build().describe())
    assert "Source: KSTREAM-SOURCE-0000000001 (topics: [t])" in text
    assert "Processor: KTABLE-SOURCE-0000000002 (stores: [])" in text
    assert "Processor: KTABLE-TOSTREAM-0000000003 (stores: [])" in text


def test_filter_on_materialized_source_avoids_spurious_tombstones() -> None:
    b = StreamsBuilder()
    t = b.table("t", materialized=Materialized.as_("src"))
    t.filter(lambda k, v: int(v) > 5).to_stream().to("out")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        i = d.create_input_topic("t", S, S)
        i.pipe_input("a", "1", timestamp=1)  # never passed: old and new None -> nothing
        i.pipe_input("a", "7", timestamp=2)
        i.pipe_input("a", "3", timestamp=3)  # falls out: tombstone
        assert records(d, "out") == [("a", "7", 2), ("a", None, 3)]


def test_filter_on_unmaterialized_source_forwards_tombstones() -> None:
    b = StreamsBuilder()
    b.table("t").filter(lambda k, v: int(v) > 5).to_stream().to("out")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        i = d.create_input_topic("t", S, S)
        i.pipe_input("a", "1", timestamp=1)
        i.pipe_input("a", "7", timestamp=2)
        assert records(d, "out") == [("a", None, 1), ("a", "7", 2)]


def test_map_values_materialized_queryable() -> None:
    b = StreamsBuilder()
    b.table("t").map_values(lambda v: v + v, Materialized.as_("doubled")).to_stream().to("out")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        i = d.create_input_topic("t", S, S)
        i.pipe_input("a", "x", timestamp=1)
        i.pipe_input("a", None, timestamp=2)
        assert records(d, "out") == [("a", "xx", 1), ("a", None, 2)]


def test_to_stream_with_key_mapper() -> None:
    b = StreamsBuilder()
    b.table("t").to_stream(lambda k, v: k + v).to("out")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        d.create_input_topic("t", S, S).pipe_input("a", "b", timestamp=4)
        assert records(d, "out") == [("ab", "b", 4)]


def test_table_table_inner_left_outer_joins_timestamps_are_max() -> None:
    b = StreamsBuilder()
    left = b.table("l")
    right = b.table("r")
    left.join(right, lambda a, c: a + "-" + c).to_stream().to("inner")
    left.left_join(right, lambda a, c: f"{a}-{c}").to_stream().to("left")
    left.outer_join(right, lambda a, c: f"{a}-{c}").to_stream().to("outer")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        li = d.create_input_topic("l", S, S)
        ri = d.create_input_topic("r", S, S)
        li.pipe_input("k", "L1", timestamp=10)
        ri.pipe_input("k", "R1", timestamp=5)
        ri.pipe_input("j", "R2", timestamp=20)
        li.pipe_input("k", None, timestamp=30)
        assert records(d, "inner") == [("k", "L1-R1", 10), ("k", None, 30)]
        assert records(d, "left") == [("k", "L1-None", 10), ("k", "L1-R1", 10), ("k", None, 30)]
        assert records(d, "outer") == [
            ("k", "L1-None", 10),
            ("k", "L1-R1", 10),
            ("j", "None-R2", 20),
            ("k", "None-R1", 30),
        ]


def test_table_table_join_describe_names() -> None:
    b = StreamsBuilder()
    b.table("l").join(b.table("r"), lambda a, c: a).to_stream().to("out")
    text = str(b.build().describe())
    # l: store 0, source 1, table-source 2; r: store 3, source 4, table-source 5; merge 6, this 7, other 8
    assert "Processor: KTABLE-JOINTHIS-0000000007 (stores: [r-STATE-STORE-0000000003])" in text
    assert "Processor: KTABLE-JOINOTHER-0000000008 (stores: [l-STATE-STORE-0000000000])" in text
    assert "Processor: KTABLE-MERGE-0000000006 (stores: [])" in text
    assert "Processor: KTABLE-SOURCE-0000000002 (stores: [l-STATE-STORE-0000000000])" in text


def test_group_by_with_subtractor_moves_key_between_groups() -> None:
    # KTableAggregateTest-style: user -> region; count users per region
    b = StreamsBuilder()
    (
        b.table("users")
        .group_by(lambda user, region: (region, user), Grouped.with_(S, S))
        .count(Materialized.as_("per-region"))
        .to_stream()
        .to("out")
    )
    with TopologyTestDriver(b.build(), CONFIG) as d:
        i = d.create_input_topic("users", S, S)
        i.pipe_input("alice", "eu", timestamp=1)
        i.pipe_input("bob", "eu", timestamp=2)
        i.pipe_input("alice", "us", timestamp=3)  # subtract from eu, then add to us
        i.pipe_input("bob", None, timestamp=4)  # delete: subtract from eu
        assert records(d, "out", L) == [("eu", 1, 1), ("eu", 2, 2), ("eu", 1, 3), ("us", 1, 3), ("eu", 0, 4)]
        store = d.get_key_value_store("per-region")
        assert store.get("eu") == 0 and store.get("us") == 1


def test_group_by_without_grouped_serdes_uses_config_defaults() -> None:
    # No Grouped: the repartition topic's Change serde gets its inner serde from
    # default.value.serde when the sink/source initialise (Kafka's WrappingNullableUtils).
    b = StreamsBuilder()
    b.table("users").group_by(lambda user, region: (region, user)).count().to_stream().to("out")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        i = d.create_input_topic("users", S, S)
        i.pipe_input("alice", "eu", timestamp=1)
        i.pipe_input("bob", "eu", timestamp=2)
        i.pipe_input("alice", "us", timestamp=3)  # subtract from eu, then add to us
        i.pipe_input("bob", None, timestamp=4)  # delete: subtract from eu
        assert records(d, "out", L) == [("eu", 1, 1), ("eu", 2, 2), ("eu", 1, 3), ("us", 1, 3), ("eu", 0, 4)]


def test_group_by_same_group_update_is_one_change() -> None:
    b = StreamsBuilder()
    (
        b.table("t")
        .group_by(lambda k, v: ("all", v), Grouped.with_(S, S))
        .reduce(lambda a, v: str(int(a) + int(v)), lambda a, v: str(int(a) - int(v)))
        .to_stream()
        .to("out")
    )
    with TopologyTestDriver(b.build(), CONFIG) as d:
        i = d.create_input_topic("t", S, S)
        i.pipe_input("x", "5", timestamp=1)
        i.pipe_input("y", "2", timestamp=2)
        i.pipe_input("x", "1", timestamp=3)
        assert records(d, "out") == [("all", "5", 1), ("all", "7", 2), ("all", "3", 3)]


def test_group_by_aggregate_repartition_describe() -> None:
    b = StreamsBuilder()
    b.table("t").group_by(lambda k, v: (v, k)).aggregate(lambda: "", lambda k, v, a: a + v, lambda k, v, a: a)
    text = str(b.build().describe())
    # t store 0, source 1, table source 2, select 3, agg store 4, sink 5, source 6, aggregate 7
    assert "Processor: KTABLE-SELECT-0000000003 (stores: [])" in text
    assert (
        "Sink: KSTREAM-SINK-0000000005 (topic: KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition)" in text
    )
    assert (
        "Source: KSTREAM-SOURCE-0000000006 (topics: [KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition])"
        in text
    )
    assert (
        "Processor: KTABLE-AGGREGATE-0000000007 (stores: [KTABLE-AGGREGATE-STATE-STORE-0000000004])" in text
    )
    # the select forces the source to be materialized (old values needed)
    assert "Processor: KTABLE-SOURCE-0000000002 (stores: [t-STATE-STORE-0000000000])" in text


def test_to_table_from_stream() -> None:
    b = StreamsBuilder()
    b.stream("in").to_table(Materialized.as_("tt")).to_stream().to("out")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        i = d.create_input_topic("in", S, S)
        i.pipe_input("a", "1", timestamp=1)
        i.pipe_input("a", "2", timestamp=2)
        assert records(d, "out") == [("a", "1", 1), ("a", "2", 2)]
        assert d.get_key_value_store("tt").get("a") == "2"


def test_group_by_selector_returning_none_puts_the_record_in_no_group() -> None:
    # KTableRepartitionMap: a null KeyValue (or a null new key) is skipped; the old value is still
    # subtracted from its group (KTableAggregateTest.testAggRepartition)
    b = StreamsBuilder()
    b.table("in").group_by(lambda k, v: None if v == "none" else (v, v)).count().to_stream().to("out")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        i = d.create_input_topic("in", S, S)
        i.pipe_input("a", "x", timestamp=1)
        i.pipe_input("a", "none", timestamp=2)
        i.pipe_input("b", "none", timestamp=3)
        assert records(d, "out", L) == [("x", 1, 1), ("x", 0, 2)]


def test_unnamed_table_reduce_store_is_named_like_an_aggregate() -> None:
    # KGroupedTableImpl.reduce names the store with the aggregate prefix; the processor is a reduce
    b = StreamsBuilder()
    b.table("in").group_by(lambda k, v: (v, v)).reduce(
        lambda a, v: a + v, lambda a, v: a, Materialized()
    ).to_stream()
    text = str(b.build().describe())
    assert "KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition" in text
    assert "Processor: KTABLE-REDUCE-0000000007 (stores: [KTABLE-AGGREGATE-STATE-STORE-0000000004])" in text


def test_filter_and_map_values_stores_take_the_materialized_serdes_not_the_parents() -> None:
    # KTableImpl.doFilter / doMapValues: the resulting table inherits the parent's serdes, but the store
    # is built from the Materialized alone (None: the config's defaults), so a Long table's filter
    # store needs its value serde given explicitly
    from kspark.errors import StreamsException

    def build(m: Materialized) -> Any:
        b = StreamsBuilder()
        b.table("in", Consumed.with_(S, L)).filter(lambda k, v: True, m).to_stream().to("out")
        return b.build()

    with TopologyTestDriver(build(Materialized.as_("f").with_value_serde(L)), CONFIG) as d:
        d.create_input_topic("in", S, L).pipe_input("a", 1, timestamp=1)
        assert records(d, "out", L) == [("a", 1, 1)]
        assert d.get_key_value_store("f").get("a") == 1
    with (
        TopologyTestDriver(build(Materialized.as_("f")), CONFIG) as d,
        pytest.raises(StreamsException, match="StringSerializer cannot serialize"),
    ):
        d.create_input_topic("in", S, L).pipe_input("a", 1, timestamp=1)
