"""InternalTopologyBuilder / Topology: validation, sub-topology grouping and describe() text."""

from __future__ import annotations

from typing import Any

import pytest

from kspark.errors import TopologyException
from kspark.processor import Processor, Record, Topology
from kspark.processor.internals.builder import InternalTopologyBuilder
from kspark.serde import Serdes
from kspark.state import Stores


class Noop(Processor[Any, Any]):
    def process(self, record: Record[Any, Any]) -> None:
        pass


def kv_store(name: str) -> Any:
    return Stores.key_value_store_builder(
        Stores.in_memory_key_value_store(name), Serdes.String(), Serdes.String()
    )


def window_store(name: str) -> Any:
    return Stores.window_store_builder(
        Stores.in_memory_window_store(name, 200, 100, True), Serdes.Integer(), Serdes.String()
    )


# ---------------------------------------------------------------- validation


def test_duplicate_name_is_rejected_naming_the_node() -> None:
    t = Topology().add_source("src", "a")
    with pytest.raises(TopologyException, match="Processor src is already added"):
        t.add_processor("src", Noop, "src")


def test_unknown_parent_is_rejected_naming_parent_and_child() -> None:
    t = Topology().add_source("src", "a")
    with pytest.raises(TopologyException, match="Predecessor processor nope is not added yet for p"):
        t.add_processor("p", Noop, "nope")


def test_processor_needs_a_parent_and_cannot_be_its_own() -> None:
    t = Topology().add_source("src", "a")
    with pytest.raises(TopologyException, match="must have at least one parent"):
        t.add_processor("p", Noop)
    with pytest.raises(TopologyException, match="cannot be a predecessor of itself"):
        t.add_processor("p", Noop, "p")


def test_sink_cannot_be_a_parent() -> None:
    t = Topology().add_source("src", "a").add_sink("sink", "out", "src")
    with pytest.raises(TopologyException, match="Sink sink cannot be used as a parent"):
        t.add_sink("sink2", "out2", "sink")


def test_topic_registered_twice_is_rejected() -> None:
    t = Topology().add_source("s1", "a")
    with pytest.raises(TopologyException, match="Topic a has already been registered"):
        t.add_source("s2", "b", "a")


def test_source_needs_a_topic() -> None:
    with pytest.raises(TopologyException, match="at least one topic"):
        Topology().add_source("s")


def test_unknown_store_and_store_on_source_are_rejected() -> None:
    t = Topology().add_source("src", "a").add_processor("p", Noop, "src")
    with pytest.raises(TopologyException, match="StateStore missing is not added yet"):
        t.connect_processor_and_state_stores("p", "missing")
    with pytest.raises(TopologyException, match="Processor ghost is not added yet"):
        t.add_state_store(kv_store("s"), "ghost")
    with pytest.raises(TopologyException, match="cannot connect a state store s to a source node"):
        t.connect_processor_and_state_stores("src", "s")


def test_processor_instance_as_supplier_is_rejected() -> None:
    t = Topology().add_source("src", "a")
    with pytest.raises(TopologyException, match="Processor p: the supplier is a Processor instance"):
        t.add_processor("p", Noop(), "src")  # type: ignore[arg-type]


def test_global_store_validation() -> None:
    t = Topology().add_source("src", "a")
    with pytest.raises(TopologyException, match="Processor src is already added"):
        t.add_global_store(kv_store("g").with_logging_disabled(), "src", "g-topic", "gp", Noop)
    with pytest.raises(TopologyException, match="must not have logging enabled"):
        t.add_global_store(kv_store("g"), "gs", "g-topic", "gp", Noop)
    t.add_global_store(kv_store("g").with_logging_disabled(), "gs", "g-topic", "gp", Noop)
    t.add_processor("p", Noop, "src")
    with pytest.raises(TopologyException, match="Global StateStore g can be used by a Processor"):
        t.connect_processor_and_state_stores("p", "g")


def test_copartition_with_different_partition_counts_fails_at_build() -> None:
    b = InternalTopologyBuilder()
    b.add_internal_topic("r1", "repartition", 2)
    b.add_internal_topic("r2", "repartition", 3)
    b.add_source("s1", ["r1"])
    b.add_source("s2", ["r2"])
    b.copartition_sources(["s1", "s2"])
    b.set_application_id("app")
    with pytest.raises(TopologyException, match=r"do not have the same number of partitions: \[r1=2, r2=3\]"):
        b.build_topology()


# ---------------------------------------------------------------- grouping


def test_node_groups_split_at_topics_and_join_through_stores() -> None:
    b = InternalTopologyBuilder()
    b.add_source("s1", ["a"])
    b.add_processor("p1", Noop, "s1")
    b.add_internal_topic("rep", "repartition")
    b.add_sink("k1", "rep", "p1")
    b.add_source("s2", ["rep"])
    b.add_processor("p2", Noop, "s2")
    b.add_source("s3", ["c"])
    b.add_processor("p3", Noop, "s3")
    b.add_state_store(kv_store("shared"), "p2", "p3")
    assert b.node_groups() == {0: ["s1", "p1", "k1"], 1: ["s2", "p2", "s3", "p3"]}
    b.set_application_id("app")
    assert b.decorate_topic("rep") == "app-rep"
    topo = b.build_topology(["s2", "p2", "s3", "p3"])
    assert sorted(topo.sources_by_topic) == ["app-rep", "c"]
    assert topo.repartition_topics == {"app-rep"}
    assert list(topo.state_store_builders) == ["shared"]


# ---------------------------------------------------------------- describe


def test_describe_linear_topology() -> None:
    t = (
        Topology()
        .add_source("source", "input")
        .add_processor("process", Noop, "source")
        .add_sink("sink", "output", "process")
    )
    assert str(t.describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: source (topics: [input])\n"
        "      --> process\n"
        "    Processor: process (stores: [])\n"
        "      --> sink\n"
        "      <-- source\n"
        "    Sink: sink (topic: output)\n"
        "      <-- process\n\n"
    )


def test_describe_stream_stream_join_like_kafka() -> None:
    # Kafka's TopologyTest.streamStreamJoinTopologyWithDefaultStoresNames, written with the Processor API:
    # note "<-- KSTREAM-JOINTHIS-0000000004, KSTREAM-JOINOTHER-0000000005", an order Kafka's
    # mutable-size TreeSet produces and that plain name order would not.
    t = Topology()
    t.add_source("KSTREAM-SOURCE-0000000000", "input-topic1")
    t.add_source("KSTREAM-SOURCE-0000000001", "input-topic2")
    t.add_processor("KSTREAM-WINDOWED-0000000002", Noop, "KSTREAM-SOURCE-0000000000")
    t.add_processor("KSTREAM-WINDOWED-0000000003", Noop, "KSTREAM-SOURCE-0000000001")
    t.add_processor("KSTREAM-JOINTHIS-0000000004", Noop, "KSTREAM-WINDOWED-0000000002")
    t.add_processor("KSTREAM-JOINOTHER-0000000005", Noop, "KSTREAM-WINDOWED-0000000003")
    t.add_processor(
        "KSTREAM-MERGE-0000000006", Noop, "KSTREAM-JOINTHIS-0000000004", "KSTREAM-JOINOTHER-0000000005"
    )
    t.add_state_store(
        window_store("KSTREAM-JOINTHIS-0000000004-store"),
        "KSTREAM-WINDOWED-0000000002",
        "KSTREAM-JOINOTHER-0000000005",
    )
    t.add_state_store(
        window_store("KSTREAM-JOINOTHER-0000000005-store"),
        "KSTREAM-WINDOWED-0000000003",
        "KSTREAM-JOINTHIS-0000000004",
    )
    assert str(t.describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [input-topic1])\n"
        "      --> KSTREAM-WINDOWED-0000000002\n"
        "    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic2])\n"
        "      --> KSTREAM-WINDOWED-0000000003\n"
        "    Processor: KSTREAM-WINDOWED-0000000002 (stores: [KSTREAM-JOINTHIS-0000000004-store])\n"
        "      --> KSTREAM-JOINTHIS-0000000004\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: KSTREAM-WINDOWED-0000000003 (stores: [KSTREAM-JOINOTHER-0000000005-store])\n"
        "      --> KSTREAM-JOINOTHER-0000000005\n"
        "      <-- KSTREAM-SOURCE-0000000001\n"
        "    Processor: KSTREAM-JOINOTHER-0000000005 (stores: [KSTREAM-JOINTHIS-0000000004-store])\n"
        "      --> KSTREAM-MERGE-0000000006\n"
        "      <-- KSTREAM-WINDOWED-0000000003\n"
        "    Processor: KSTREAM-JOINTHIS-0000000004 (stores: [KSTREAM-JOINOTHER-0000000005-store])\n"
        "      --> KSTREAM-MERGE-0000000006\n"
        "      <-- KSTREAM-WINDOWED-0000000002\n"
        "    Processor: KSTREAM-MERGE-0000000006 (stores: [])\n"
        "      --> none\n"
        "      <-- KSTREAM-JOINTHIS-0000000004, KSTREAM-JOINOTHER-0000000005\n\n"
    )


def test_describe_repartitioned_topology_has_two_subtopologies() -> None:
    b = InternalTopologyBuilder()
    b.add_source("KSTREAM-SOURCE-0000000000", ["input-topic"])
    b.add_processor("KSTREAM-KEY-SELECT-0000000001", Noop, "KSTREAM-SOURCE-0000000000")
    b.add_internal_topic("KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition", "repartition")
    b.add_processor("KSTREAM-FILTER-0000000005", Noop, "KSTREAM-KEY-SELECT-0000000001")
    b.add_sink(
        "KSTREAM-SINK-0000000004",
        "KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition",
        "KSTREAM-FILTER-0000000005",
    )
    b.add_source("KSTREAM-SOURCE-0000000006", ["KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition"])
    b.add_processor("KSTREAM-AGGREGATE-0000000003", Noop, "KSTREAM-SOURCE-0000000006")
    b.add_state_store(kv_store("KSTREAM-AGGREGATE-STATE-STORE-0000000002"), "KSTREAM-AGGREGATE-0000000003")
    assert str(b.describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [input-topic])\n"
        "      --> KSTREAM-KEY-SELECT-0000000001\n"
        "    Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])\n"
        "      --> KSTREAM-FILTER-0000000005\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: KSTREAM-FILTER-0000000005 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000004\n"
        "      <-- KSTREAM-KEY-SELECT-0000000001\n"
        "    Sink: KSTREAM-SINK-0000000004 (topic: KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition)\n"
        "      <-- KSTREAM-FILTER-0000000005\n"
        "\n"
        "  Sub-topology: 1\n"
        "    Source: KSTREAM-SOURCE-0000000006 (topics: [KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition])\n"  # noqa: E501
        "      --> KSTREAM-AGGREGATE-0000000003\n"
        "    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])\n"
        "      --> none\n"
        "      <-- KSTREAM-SOURCE-0000000006\n\n"
    )


def test_describe_orders_branches_by_subtree_size_then_name() -> None:
    t = Topology().add_source("src", "in")
    t.add_processor("b-small", Noop, "src")
    t.add_processor("a-big", Noop, "src")
    t.add_processor("a-big-child", Noop, "a-big")
    t.add_processor("c-small", Noop, "src")
    assert str(t.describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: src (topics: [in])\n"
        "      --> a-big, b-small, c-small\n"
        "    Processor: a-big (stores: [])\n"
        "      --> a-big-child\n"
        "      <-- src\n"
        "    Processor: a-big-child (stores: [])\n"
        "      --> none\n"
        "      <-- a-big\n"
        "    Processor: b-small (stores: [])\n"
        "      --> none\n"
        "      <-- src\n"
        "    Processor: c-small (stores: [])\n"
        "      --> none\n"
        "      <-- src\n\n"
    )


def test_describe_prints_topic_and_store_sets_in_java_hash_order() -> None:
    # Kafka prints these sets from a java.util.HashSet: neither insertion nor name order
    t = Topology().add_source("src", "orders", "payments", "clicks")
    t.add_processor("p", Noop, "src")
    t.add_state_store(kv_store("store-b"), "p")
    t.add_state_store(kv_store("store-a"), "p")
    text = str(t.describe())
    assert "Source: src (topics: [payments, clicks, orders])" in text
    assert "Processor: p (stores: [store-a, store-b])" in text


def test_describe_global_store_and_extractor_sink() -> None:
    class Extractor:
        def __call__(self, key: Any, value: Any, ctx: Any) -> str:
            return f"{ctx.topic}-{key}"

        def __str__(self) -> str:
            return "anonymous topic name extractor. topic is [recordContext.topic()]-[key]"

    t = Topology()
    t.add_source("source", "input-topic")
    t.add_sink("sink", Extractor(), "source")
    t.add_global_store(
        kv_store("globalStore").with_logging_disabled(), "globalSource", "globalTopic", "globalProc", Noop
    )
    assert str(t.describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: source (topics: [input-topic])\n"
        "      --> sink\n"
        "    Sink: sink (extractor class: anonymous topic name extractor. topic is [recordContext.topic()]-[key])\n"  # noqa: E501
        "      <-- source\n"
        "\n"
        "  Sub-topology: 1 for global store (will not generate tasks)\n"
        "    Source: globalSource (topics: [globalTopic])\n"
        "      --> globalProc\n"
        "    Processor: globalProc (stores: [globalStore])\n"
        "      --> none\n"
        "      <-- globalSource\n"
    )


def test_describe_global_store_first_takes_id_zero() -> None:
    t = Topology()
    t.add_global_store(kv_store("g").with_logging_disabled(), "gsrc", "gtopic", "gproc", Noop)
    t.add_source("src", "in")
    text = str(t.describe())
    assert text.startswith(
        "Topologies:\n   Sub-topology: 0 for global store (will not generate tasks)\n"
        "    Source: gsrc (topics: [gtopic])"
    )
    assert "  Sub-topology: 1\n    Source: src (topics: [in])\n      --> none\n\n" in text
