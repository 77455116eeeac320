"""Grouped-stream aggregations: count, reduce, aggregate, null handling, repartition naming."""

from __future__ import annotations

import pytest

from kspark import Grouped, Materialized, StreamsBuilder
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


def test_count_emits_every_update_with_max_timestamp_and_drops_nulls() -> None:
    b = StreamsBuilder()
    b.stream("in").group_by_key().count(Materialized.as_("counts")).to_stream().to("out")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        i = d.create_input_topic("in", S, S)
        i.pipe_input("a", "x", timestamp=10)
        i.pipe_input("a", "y", timestamp=5)
        i.pipe_input(None, "z", timestamp=6)
        i.pipe_input("b", None, timestamp=7)
        i.pipe_input("b", "w", timestamp=8)
        out = d.create_output_topic("out", S, L).read_records_to_list()
        assert [(r.key, r.value, r.timestamp) for r in out] == [("a", 1, 10), ("a", 2, 10), ("b", 1, 8)]
        assert d.dropped_records_total() == 2
        store = d.get_key_value_store("counts")
        assert store.get("a") == 2 and store.get("b") == 1


def test_reduce_and_aggregate() -> None:
    b = StreamsBuilder()
    g = b.stream("in").group_by_key()
    g.reduce(lambda agg, v: agg + "+" + v).to_stream().to("reduced")
    g.aggregate(lambda: "", lambda k, v, agg: agg + v, Materialized.with_(S, S)).to_stream().to("agg")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        i = d.create_input_topic("in", S, S)
        i.pipe_input("k", "1", timestamp=1)
        i.pipe_input("k", "2", timestamp=3)
        i.pipe_input("j", "3", timestamp=2)
        assert d.create_output_topic("reduced", S, S).read_key_values_to_list() == [
            ("k", "1"),
            ("k", "1+2"),
            ("j", "3"),
        ]
        assert d.create_output_topic("agg", S, S).read_key_values_to_list() == [
            ("k", "1"),
            ("k", "12"),
            ("j", "3"),
        ]


def test_group_by_repartitions_with_store_named_topic() -> None:
    b = StreamsBuilder()
    b.stream("in").group_by(lambda k, v: v).count().to_stream().to("out")
    topo = b.build()
    text = str(topo.describe())
    # names as Kafka: KEY-SELECT 1, store 2 (burned by MaterializedInternal), AGGREGATE 3, repartition 4/5/6
    assert "Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])" in text
    assert (
        "Sink: KSTREAM-SINK-0000000004 (topic: KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition)" in text
    )
    assert (
        "Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])" in text
    )
    with TopologyTestDriver(topo, CONFIG) as d:
        i = d.create_input_topic("in", S, S)
        for k, v, t in [("1", "a", 1), ("2", "b", 2), ("3", "a", 3)]:
            i.pipe_input(k, v, timestamp=t)
        out = d.create_output_topic("out", S, L).read_records_to_list()
        assert [(r.key, r.value, r.timestamp) for r in out] == [("a", 1, 1), ("b", 1, 2), ("a", 2, 3)]


def test_grouped_name_names_repartition_topic_and_is_shared() -> None:
    b = StreamsBuilder()
    g = b.stream("in").group_by(lambda k, v: v, Grouped.as_("grp"))
    g.count()
    g.reduce(lambda a, v: a)
    text = str(b.build().describe())
    assert "Processor: grp (stores: [])" in text  # Kafka 4.1 names the key selector by the Grouped name
    assert text.count("Sink: grp-repartition-sink (topic: grp-repartition)") == 1
    assert "Source: grp-repartition-source (topics: [grp-repartition])" in text


def test_count_with_unnamed_materialized_burns_a_name() -> None:
    b = StreamsBuilder()
    b.stream("in").group_by_key().count(Materialized.with_(S, L))
    text = str(b.build().describe())
    # store name 1 burned, store 2 used, processor 3
    assert (
        "Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])" in text
    )


def test_named_or_materialized_first_argument() -> None:
    b = StreamsBuilder()
    grouped = b.stream("in").group_by_key()
    # a Materialized may stand in the named position; two of them, or a non-name, is an error
    grouped.count(Materialized.as_("first"))
    with pytest.raises(TypeError, match="named must be a Named or a str"):
        grouped.count(Materialized.as_("a"), Materialized.as_("b"))
    with pytest.raises(TypeError, match="named must be a Named or a str"):
        grouped.count(42)  # type: ignore[arg-type]
    assert "(stores: [first])" in str(b.build().describe())
