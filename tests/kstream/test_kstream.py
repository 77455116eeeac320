"""KStream operators on the TopologyTestDriver: exact keys, values, timestamps and order."""

from __future__ import annotations

from typing import Any

import pytest

from kspark import Branched, Consumed, Named, Produced, Repartitioned, StreamsBuilder
from kspark.key_value import KeyValue
from kspark.processor.api import FixedKeyProcessor, Processor, Record
from kspark.serde import Serdes
from kspark.testing import TopologyTestDriver

S = Serdes.String()
CONFIG = {
    "application.id": "app",
    "bootstrap.servers": "dummy:9092",
    "default.key.serde": "string",
    "default.value.serde": "string",
}


def run(
    builder: StreamsBuilder,
    inputs: list[tuple[Any, Any, int]],
    out: str = "out",
    in_topic: str = "in",
    value_serde: Any = S,
) -> list[tuple[Any, Any, int]]:
    with TopologyTestDriver(builder.build(), CONFIG) as d:
        i = d.create_input_topic(in_topic, S, S)
        o = d.create_output_topic(out, S, value_serde)
        for k, v, ts in inputs:
            i.pipe_input(k, v, timestamp=ts)
        return [(r.key, r.value, r.timestamp) for r in o.read_records_to_list()]


def test_filter_and_filter_not() -> None:
    b = StreamsBuilder()
    s = b.stream("in")
    s.filter(lambda k, v: v.startswith("a")).to("out")
    s.filter_not(lambda k, v: v.startswith("a")).to("out2")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        i = d.create_input_topic("in", S, S)
        i.pipe_input("k1", "apple", timestamp=5)
        i.pipe_input(None, "avocado", timestamp=6)
        i.pipe_input("k2", "banana", timestamp=7)
        assert [
            (r.key, r.value, r.timestamp) for r in d.create_output_topic("out", S, S).read_records_to_list()
        ] == [("k1", "apple", 5), (None, "avocado", 6)]
        assert d.create_output_topic("out2", S, S).read_key_values_to_list() == [KeyValue("k2", "banana")]


def test_map_accepts_tuple_and_key_value_and_map_values_flat_map() -> None:
    b = StreamsBuilder()
    s = b.stream("in")
    s.map(lambda k, v: (v, k)).to("out")
    s.map(lambda k, v: KeyValue(k + "!", v)).map_values(lambda v: v.upper()).to("out2")
    s.flat_map(lambda k, v: [(k, c) for c in v]).to("out3")
    s.flat_map_values(lambda k, v: [k, v]).to("out4")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        d.create_input_topic("in", S, S).pipe_input("a", "xy", timestamp=3)
        assert d.create_output_topic("out", S, S).read_key_values_to_list() == [("xy", "a")]
        assert d.create_output_topic("out2", S, S).read_key_values_to_list() == [("a!", "XY")]
        assert d.create_output_topic("out3", S, S).read_key_values_to_list() == [("a", "x"), ("a", "y")]
        recs = d.create_output_topic("out4", S, S).read_records_to_list()
        assert [(r.key, r.value, r.timestamp) for r in recs] == [("a", "a", 3), ("a", "xy", 3)]


def test_select_key_peek_foreach() -> None:
    seen: list[tuple[Any, Any]] = []
    each: list[tuple[Any, Any]] = []
    b = StreamsBuilder()
    s = b.stream("in").peek(lambda k, v: seen.append((k, v))).select_key(lambda k, v: v[:1])
    s.to("out")
    s.foreach(lambda k, v: each.append((k, v)))
    assert run(b, [("k", "hello", 10), ("j", "world", 11)]) == [("h", "hello", 10), ("w", "world", 11)]
    assert seen == [("k", "hello"), ("j", "world")]
    assert each == [("h", "hello"), ("w", "world")]


def test_merge_keeps_arrival_order() -> None:
    b = StreamsBuilder()
    b.stream("a").merge(b.stream("b")).to("out")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        a = d.create_input_topic("a", S, S)
        bb = d.create_input_topic("b", S, S)
        a.pipe_input("1", "x", timestamp=1)
        bb.pipe_input("2", "y", timestamp=2)
        a.pipe_input("3", "z", timestamp=3)
        assert d.create_output_topic("out", S, S).read_key_values_to_list() == [
            ("1", "x"),
            ("2", "y"),
            ("3", "z"),
        ]


def test_split_branch_names_and_routing() -> None:
    b = StreamsBuilder()
    branches = (
        b.stream("in")
        .split(Named.as_("p-"))
        .branch(lambda k, v: v.startswith("a"), Branched.as_("a"))
        .branch(lambda k, v: v.startswith("b"))
        .default_branch(Branched.as_("rest"))
    )
    assert sorted(branches) == ["p-2", "p-a", "p-rest"]
    branches["p-a"].to("A")
    branches["p-2"].to("B")
    branches["p-rest"].to("R")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        i = d.create_input_topic("in", S, S)
        for v in ["apple", "banana", "cherry", "avocado"]:
            i.pipe_input("k", v, timestamp=1)
        assert d.create_output_topic("A", S, S).read_values_to_list() == ["apple", "avocado"]
        assert d.create_output_topic("B", S, S).read_values_to_list() == ["banana"]
        assert d.create_output_topic("R", S, S).read_values_to_list() == ["cherry"]


def test_split_generated_names_chain_function_and_consumer() -> None:
    b = StreamsBuilder()
    consumed: list[Any] = []
    result = (
        b.stream("in")
        .split()
        .branch(lambda k, v: v == "x", Branched.with_function(lambda s: s.map_values(lambda v: v + "!")))
        .branch(lambda k, v: v == "y", Branched.with_consumer(lambda s: consumed.append(s)))
        .no_default_branch()
    )
    # KSTREAM-BRANCH-0000000001, branch children 1-based; consumer branch absent from the dict
    assert list(result) == ["KSTREAM-BRANCH-00000000011"]
    assert len(consumed) == 1


def test_branched_with_name_and_produced_stream_partitioner() -> None:
    b = StreamsBuilder()
    result = (
        b.stream("in")
        .split(Named.as_("s-"))
        .branch(lambda k, v: v == "x", Branched.with_function(lambda s: s).with_name("named"))
        .no_default_branch()
    )
    assert list(result) == ["s-named"]

    def to_zero(topic: str, key: Any, value: Any, partitions: int) -> int:
        return 0

    produced = Produced.stream_partitioner(to_zero)
    assert produced.partitioner is to_zero
    result["s-named"].to("out", produced.with_key_serde(S))
    assert "Sink: KSTREAM-SINK-0000000003 (topic: out)" in str(b.build().describe())


def test_repartition_naming_and_roundtrip() -> None:
    b = StreamsBuilder()
    b.stream("in").map(lambda k, v: (v, k)).repartition(
        Repartitioned.as_("r").with_number_of_partitions(3)
    ).to("out")
    topo = b.build()
    text = str(topo.describe())
    assert "Sink: r-repartition-sink (topic: r-repartition)" in text
    assert "Source: r-repartition-source (topics: [r-repartition])" in text
    assert "Processor: r-repartition-filter (stores: [])" in text
    assert run(b, [("k", "v", 4)]) == [("v", "k", 4)]


def test_generated_repartition_name() -> None:
    b = StreamsBuilder()
    b.stream("in").repartition().to("out")
    text = str(b.build().describe())
    assert "KSTREAM-REPARTITION-0000000001-repartition" in text
    assert "Sink: KSTREAM-SINK-0000000002" in text
    assert "Processor: KSTREAM-FILTER-0000000003" in text
    assert "Source: KSTREAM-SOURCE-0000000004" in text


def test_to_with_topic_extractor_and_produced_serde() -> None:
    b = StreamsBuilder()
    b.stream("in").to(lambda k, v, ctx: "out-" + k, Produced.with_(S, S))
    with TopologyTestDriver(b.build(), CONFIG) as d:
        i = d.create_input_topic("in", S, S)
        i.pipe_input("a", "1", timestamp=1)
        i.pipe_input("b", "2", timestamp=2)
        assert d.create_output_topic("out-a", S, S).read_key_values_to_list() == [("a", "1")]
        assert d.create_output_topic("out-b", S, S).read_key_values_to_list() == [("b", "2")]


class _Upper(Processor[Any, Any]):
    def init(self, context: Any) -> None:
        self.ctx = context

    def process(self, record: Record[Any, Any]) -> None:
        self.ctx.forward(record.with_key(record.key.upper()).with_value(record.value * 2))


class _ValuesOnly(FixedKeyProcessor[Any, Any]):
    def init(self, context: Any) -> None:
        self.ctx = context

    def process(self, record: Record[Any, Any]) -> None:
        self.ctx.forward(record.with_value(record.value + "?"))


class _KeyChanger(FixedKeyProcessor[Any, Any]):
    def init(self, context: Any) -> None:
        self.ctx = context

    def process(self, record: Record[Any, Any]) -> None:
        self.ctx.forward(record.with_key("other"))


def test_process_and_process_values() -> None:
    b = StreamsBuilder()
    b.stream("in").process(_Upper).process_values(_ValuesOnly).to("out")
    assert run(b, [("a", "x", 9)]) == [("A", "xx?", 9)]


def test_process_values_rejects_key_change() -> None:
    b = StreamsBuilder()
    b.stream("in").process_values(_KeyChanger).to("out")
    with TopologyTestDriver(b.build(), CONFIG) as d, pytest.raises(Exception, match="changed the key"):
        d.create_input_topic("in", S, S).pipe_input("a", "x", timestamp=1)


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.filter(None),
        lambda s: s.map(None),
        lambda s: s.map_values(None),
        lambda s: s.flat_map(None),
        lambda s: s.select_key(None),
        lambda s: s.peek(None),
        lambda s: s.group_by(None),
        lambda s: s.foreach(None),
    ],
)
def test_none_functions_are_rejected_naming_the_operation(call: Any) -> None:
    s = StreamsBuilder().stream("in")
    with pytest.raises(ValueError, match=r"can't be None \(KStream\."):
        call(s)


def test_consumed_serdes_used_for_source() -> None:
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, Serdes.Long())).map_values(lambda v: v + 1).to(
        "out", Produced.with_(S, Serdes.Long())
    )
    with TopologyTestDriver(b.build(), CONFIG) as d:
        d.create_input_topic("in", S, Serdes.Long()).pipe_input("k", 41, timestamp=1)
        assert d.create_output_topic("out", S, Serdes.Long()).read_key_value() == KeyValue("k", 42)
