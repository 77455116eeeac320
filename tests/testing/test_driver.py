"""TopologyTestDriver end-to-end with Processor API topologies."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import pytest

from kspark.errors import StreamsException
from kspark.key_value import KeyValue
from kspark.processor import (
    Headers,
    Processor,
    ProcessorContext,
    PunctuationType,
    Record,
    Topology,
)
from kspark.serde import Serdes
from kspark.state import Stores
from kspark.testing import NoSuchElementException, TestRecord, TopologyTestDriver

S = Serdes.String()


def string_topology(*chain: tuple[str, Any]) -> Topology:
    """in -> chain of processors -> out, all String serdes."""
    t = Topology().add_source("src", "in", key_deserializer=S, value_deserializer=S)
    parent = "src"
    for name, supplier in chain:
        t.add_processor(name, supplier, parent)
        parent = name
    t.add_sink("sink", "out", parent, key_serializer=S, value_serializer=S)
    return t


class Dedupe(Processor[str, str]):
    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store: Any = context.get_state_store("seen")

    def process(self, record: Record[str, str]) -> None:
        if self.store.get(record.key) is None:
            self.store.put(record.key, record.value)
            self.context.forward(record)


def dedupe_topology() -> Topology:
    t = string_topology(("dedupe", Dedupe))
    t.add_state_store(
        Stores.key_value_store_builder(Stores.in_memory_key_value_store("seen"), S, S), "dedupe"
    )
    return t


def test_dedupe_with_key_value_store() -> None:
    with TopologyTestDriver(dedupe_topology(), {"application.id": "test"}) as d:
        i = d.create_input_topic("in", S, S)
        o = d.create_output_topic("out", S, S)
        i.pipe_input("a", "1", timestamp=5)
        i.pipe_input("a", "2", timestamp=6)
        i.pipe_input("b", "3", timestamp=4)
        assert o.read_records_to_list() == [TestRecord("a", "1", None, 5), TestRecord("b", "3", None, 4)]
        assert list(d.get_key_value_store("seen").all()) == [KeyValue("a", "1"), KeyValue("b", "3")]
        # the store logs to <application.id>-<store>-changelog, which the driver captures like any topic
        changelog = d.create_output_topic("test-seen-changelog", S, S)
        assert changelog.read_key_values_to_list() == [KeyValue("a", "1"), KeyValue("b", "3")]
        assert set(d.get_all_state_stores()) == {"seen"}


def test_output_api_shapes_and_empty_topics() -> None:
    with TopologyTestDriver(string_topology()) as d:
        i = d.create_input_topic("in", S, S)
        o = d.create_output_topic("out", S, S)
        assert o.is_empty() and o.get_queue_size() == 0
        assert o.read_values_to_list() == []
        with pytest.raises(NoSuchElementException, match="Uninitialized topic: out"):
            o.read_value()
        i.pipe_key_value_list([KeyValue("a", "1"), ("b", "2")], start_timestamp=100, advance=10)
        i.pipe_value_list(["v"], start_timestamp=7)
        i.pipe_input(TestRecord("k", "x", [("h", b"1")], 9))
        assert o.get_queue_size() == 4
        assert o.read_key_value() == KeyValue("a", "1")
        assert o.read_record() == TestRecord("b", "2", None, 110)
        assert o.read_value() == "v"
        assert o.read_key_values_to_map() == {"k": "x"}
        with pytest.raises(NoSuchElementException, match="Empty topic: out"):
            o.read_record()


def test_input_topic_clock_auto_advance() -> None:
    with TopologyTestDriver(string_topology()) as d:
        i = d.create_input_topic("in", S, S, start_timestamp=1000, auto_advance=timedelta(milliseconds=5))
        o = d.create_output_topic("out", S, S)
        i.pipe_input("a", "1")
        i.pipe_input("b", "2")
        i.advance_time(100)
        i.pipe_input("c", "3")
        i.pipe_input("d", "4", timestamp=1)
        assert [r.timestamp for r in o.read_records_to_list()] == [1000, 1005, 1110, 1]


def test_unknown_input_topic_names_the_topic() -> None:
    with TopologyTestDriver(string_topology()) as d, pytest.raises(ValueError, match="Unknown topic: nope"):
        d.create_input_topic("nope", S, S).pipe_input("k", "v", timestamp=0)


class AddHeader(Processor[str, str]):
    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[str, str]) -> None:
        assert self.context.headers() is record.headers
        headers = record.headers.copy().add("seen-by", b"p")
        self.context.forward(record.with_headers(headers).with_value(record.value.upper()))


def test_headers_flow_through_and_are_compared() -> None:
    with TopologyTestDriver(string_topology(("p", AddHeader))) as d:
        i = d.create_input_topic("in", S, S)
        o = d.create_output_topic("out", S, S)
        i.pipe_input("k", "v", timestamp=3, headers=Headers([("origin", b"test")]))
        out = o.read_record()
        assert out == TestRecord("k", "V", [("origin", b"test"), ("seen-by", b"p")], 3)
        assert out != TestRecord("k", "V", [("origin", b"test")], 3)


class Tag(Processor[str, str]):
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[str, str]) -> None:
        self.context.forward(record.with_value(self.prefix + record.value))


def test_sink_that_is_also_a_source_is_fed_back_before_pipe_returns() -> None:
    t = Topology()
    t.add_source("src", "in", key_deserializer=S, value_deserializer=S)
    t.add_processor("direct", lambda: Tag("direct-"), "src")
    t.add_processor("to-mid", lambda: Tag("mid-"), "src")
    t.add_sink("out-sink-1", "out", "direct", key_serializer=S, value_serializer=S)
    t.add_sink("mid-sink", "mid", "to-mid", key_serializer=S, value_serializer=S)
    t.add_source("mid-src", "mid", key_deserializer=S, value_deserializer=S)
    t.add_processor("via", lambda: Tag("via-"), "mid-src")
    t.add_sink("out-sink-2", "out", "via", key_serializer=S, value_serializer=S)
    assert len(t.internal_builder.subtopology_ids()) == 2
    with TopologyTestDriver(t) as d:
        i = d.create_input_topic("in", S, S)
        o = d.create_output_topic("out", S, S)
        mid = d.create_output_topic("mid", S, S)
        i.pipe_input("k", "x", timestamp=10)
        i.pipe_input("k", "y", timestamp=11)
        assert o.read_records_to_list() == [
            TestRecord("k", "direct-x", None, 10),
            TestRecord("k", "via-mid-x", None, 10),
            TestRecord("k", "direct-y", None, 11),
            TestRecord("k", "via-mid-y", None, 11),
        ]
        assert mid.read_values_to_list() == ["mid-x", "mid-y"]


def test_internal_repartition_topic_is_decorated_and_fed_back() -> None:
    from kspark.processor.internals.builder import InternalTopologyBuilder

    b = InternalTopologyBuilder()
    b.add_source("src", ["in"], key_deserializer=S.deserializer(), value_deserializer=S.deserializer())
    b.add_processor("rekey", lambda: RekeyByValue(), "src")
    b.add_internal_topic("by-value-repartition", "repartition")
    b.add_sink(
        "rsink",
        "by-value-repartition",
        "rekey",
        key_serializer=S.serializer(),
        value_serializer=S.serializer(),
    )
    b.add_source(
        "rsrc",
        ["by-value-repartition"],
        key_deserializer=S.deserializer(),
        value_deserializer=S.deserializer(),
    )
    b.add_sink("sink", "out", "rsrc", key_serializer=S.serializer(), value_serializer=S.serializer())
    with TopologyTestDriver(Topology(b), {"application.id": "app"}) as d:
        d.create_input_topic("in", S, S).pipe_input("k", "v", timestamp=1)
        assert d.create_output_topic("out", S, S).read_key_value() == KeyValue("v", "v")
        assert d.create_output_topic("app-by-value-repartition", S, S).read_key_value() == KeyValue("v", "v")


class RekeyByValue(Processor[str, str]):
    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[str, str]) -> None:
        self.context.forward(record.with_key(record.value))


class Punctuating(Processor[str, str]):
    """Records the punctuation times; forwards a record on each punctuation."""

    def __init__(self, kind: PunctuationType, interval: int, cancel_after: int | None = None) -> None:
        self.kind, self.interval, self.cancel_after = kind, interval, cancel_after
        self.fired: list[int] = []

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.cancellable = context.schedule(self.interval, self.kind, self.punctuate)

    def punctuate(self, ts: int) -> None:
        self.fired.append(ts)
        assert self.context.record_metadata() is None
        assert self.context.timestamp() == ts
        self.context.forward(Record("tick", str(ts), ts))
        if self.cancel_after is not None and len(self.fired) >= self.cancel_after:
            self.cancellable.cancel()

    def process(self, record: Record[str, str]) -> None:
        assert self.context.current_stream_time_ms() >= record.timestamp
        assert self.context.record_metadata() is not None
        self.context.forward(record)


def test_stream_time_punctuation_is_aligned_and_skips_missed_intervals() -> None:
    with TopologyTestDriver(
        string_topology(("p", lambda: Punctuating(PunctuationType.STREAM_TIME, 10)))
    ) as d:
        i = d.create_input_topic("in", S, S)
        o = d.create_output_topic("out", S, S)
        for ts in (0, 5, 25, 22, 30):
            i.pipe_input("k", str(ts), timestamp=ts)
        # fires at 0 (first record), then at stream time 25 (10 and 20 missed), then at 30;
        # the late record at 22 does not advance stream time
        assert o.read_key_values_to_list() == [
            KeyValue("k", "0"),
            KeyValue("tick", "0"),
            KeyValue("k", "5"),
            KeyValue("k", "25"),
            KeyValue("tick", "25"),
            KeyValue("k", "22"),
            KeyValue("k", "30"),
            KeyValue("tick", "30"),
        ]


def test_wall_clock_punctuation_fires_on_advance_and_can_be_cancelled() -> None:
    holder: list[Punctuating] = []

    def supplier() -> Punctuating:
        p = Punctuating(PunctuationType.WALL_CLOCK_TIME, 10, cancel_after=3)
        holder.append(p)
        return p

    with TopologyTestDriver(string_topology(("p", supplier)), initial_wall_clock_time=1000) as d:
        o = d.create_output_topic("out", S, S)
        d.advance_wall_clock_time(5)
        assert holder[0].fired == []
        d.advance_wall_clock_time(timedelta(milliseconds=5))
        d.advance_wall_clock_time(35)  # now 1045: fires once, next due 1050
        d.advance_wall_clock_time(5)  # 1050: third fire, then cancelled
        d.advance_wall_clock_time(100)
        assert holder[0].fired == [1010, 1045, 1050]
        assert [r.timestamp for r in o.read_records_to_list()] == [1010, 1045, 1050]


class Failing(Processor[str, str]):
    def process(self, record: Record[str, str]) -> None:
        if record.value == "boom":
            raise ValueError("boom!")


def test_processing_error_fails_by_default_naming_the_processor() -> None:
    with TopologyTestDriver(string_topology(("failing", Failing))) as d:
        i = d.create_input_topic("in", S, S)
        i.pipe_input("k", "ok", timestamp=1)
        with pytest.raises(
            StreamsException, match="taskId=0_0, processor=failing, topic=in, partition=0, offset=1"
        ):
            i.pipe_input("k", "boom", timestamp=2)


def test_processing_error_with_log_and_continue_drops_and_counts() -> None:
    cfg = {"processing.exception.handler": "log_and_continue"}
    with TopologyTestDriver(string_topology(("failing", Failing)), cfg) as d:
        d.create_input_topic("in", S, S).pipe_input("k", "boom", timestamp=2)
        assert d.dropped_records_total() == 1.0


def test_deserialization_error_log_and_continue_counts_dropped_record() -> None:
    L = Serdes.Long()
    t = Topology().add_source("src", "in", key_deserializer=S, value_deserializer=L)
    t.add_sink("sink", "out", "src", key_serializer=S, value_serializer=L)
    cfg = {"default.deserialization.exception.handler": "log_and_continue"}
    with TopologyTestDriver(t, cfg) as d:
        good = d.create_input_topic("in", S, L)
        bad = d.create_input_topic("in", S, S)
        good.pipe_input("a", 1, timestamp=1)
        bad.pipe_input("b", "not eight bytes", timestamp=2)
        good.pipe_input("c", 3, timestamp=3)
        assert d.create_output_topic("out", S, L).read_key_values_to_list() == [
            KeyValue("a", 1),
            KeyValue("c", 3),
        ]
        ((name, value),) = [(n, v) for n, v in d.metrics().items() if n.group == "stream-task-metrics"]
        assert (name.name, name.group, name.tags, value) == (
            "dropped-records-total",
            "stream-task-metrics",
            {"thread-id": "main", "task-id": "0_0"},
            1.0,
        )


def test_e2e_latency_of_source_and_terminal_nodes_is_the_wall_clock_minus_the_timestamp() -> None:
    t = Topology().add_source("src", "in", key_deserializer=S, value_deserializer=S)
    t.add_processor("tag", lambda: Tag("!"), "src")
    t.add_sink("sink", "out", "tag", key_serializer=S, value_serializer=S)
    t.add_processor("drop", Failing, "src")  # a terminal node without a sink
    cfg = {"processing.exception.handler": "log_and_continue"}
    with TopologyTestDriver(t, cfg, initial_wall_clock_time=10_000) as d:

        def e2e() -> dict[tuple[str, str], float]:
            return {
                (n.tags["processor-node-id"], n.name.rsplit("-", 1)[1]): v
                for n, v in d.metrics().items()
                if n.group == "stream-processor-node-metrics"
            }

        assert {node for node, _ in e2e()} == {"src", "sink", "drop"}  # "tag" has a child
        assert all(math.isnan(v) for v in e2e().values())  # Kafka's NaN before any record
        i = d.create_input_topic("in", S, S)
        i.pipe_input("k", "a", timestamp=9_000)
        i.pipe_input("k", "boom", timestamp=7_000)
        d.advance_wall_clock_time(1_000)
        i.pipe_input("k", "b", timestamp=10_500)
        got = e2e()
    # src: 1,000, 3,000 and 500 ms; every record reaches both terminals ("boom" fails in "drop",
    # whose handler continues: Kafka Streams records it there all the same).
    assert (got["src", "avg"], got["src", "min"], got["src", "max"]) == (1_500.0, 500.0, 3_000.0)
    assert (got["sink", "avg"], got["sink", "min"], got["sink", "max"]) == (1_500.0, 500.0, 3_000.0)
    assert got["drop", "max"] == 3_000.0


def test_deserialization_error_log_and_fail_raises() -> None:
    L = Serdes.Long()
    t = Topology().add_source("src", "in", key_deserializer=S, value_deserializer=L)
    t.add_sink("sink", "out", "src", key_serializer=S, value_serializer=L)
    with (
        TopologyTestDriver(t, {"default.deserialization.exception.handler": "log_and_fail"}) as d,
        pytest.raises(StreamsException, match="Deserialization exception handler is set to fail"),
    ):
        d.create_input_topic("in", S, S).pipe_input("b", "bad", timestamp=2)


def test_dead_letter_queue_receives_the_raw_record() -> None:
    L = Serdes.Long()
    t = Topology().add_source("src", "in", key_deserializer=S, value_deserializer=L)
    t.add_sink("sink", "out", "src", key_serializer=S, value_serializer=L)
    cfg = {
        "deserialization.exception.handler": "log_and_continue",
        "errors.dead.letter.queue.topic.name": "dlq",
    }
    with TopologyTestDriver(t, cfg) as d:
        d.create_input_topic("in", S, S).pipe_input("b", "bad", timestamp=2)
        rec = d.create_output_topic("dlq", S, S).read_record()
        assert (rec.key, rec.value, rec.timestamp) == ("b", "bad", 2)
        assert rec.headers.last_header("__streams.errors.topic").value == b"in"  # type: ignore[union-attr]


def test_negative_timestamp_fails_by_default_and_is_dropped_with_log_and_skip() -> None:
    with (
        TopologyTestDriver(string_topology()) as d,
        pytest.raises(StreamsException, match="invalid \\(negative\\) timestamp"),
    ):
        d.pipe_raw("in", -1, b"k", b"v")
    cfg = {"default.timestamp.extractor": "LogAndSkipOnInvalidTimestamp"}
    with TopologyTestDriver(string_topology(), cfg) as d:
        d.pipe_raw("in", -1, b"k", b"v")
        d.pipe_raw("in", 4, b"k", b"w")
        assert d.create_output_topic("out", S, S).read_values_to_list() == ["w"]
        assert d.dropped_records_total() == 1.0


def test_default_serdes_from_config_and_missing_serde_names_the_node() -> None:
    t = Topology().add_source("src", "in").add_sink("sink", "out", "src")
    with TopologyTestDriver(t, {"default.key.serde": "string", "default.value.serde": "long"}) as d:
        d.create_input_topic("in", S, Serdes.Long()).pipe_input("k", 7, timestamp=0)
        assert d.create_output_topic("out", S, Serdes.Long()).read_key_value() == KeyValue("k", 7)
    from kspark.errors import TopologyException

    with pytest.raises(TopologyException, match="Source node src has no key deserializer"):
        TopologyTestDriver(Topology().add_source("src", "in").add_sink("sink", "out", "src"))


class Router(Processor[str, str]):
    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[str, str]) -> None:
        self.context.forward(record, child_name=record.value)


def test_forward_to_named_child_and_unknown_child() -> None:
    t = Topology().add_source("src", "in", key_deserializer=S, value_deserializer=S)
    t.add_processor("router", Router, "src")
    t.add_sink("left", "left-out", "router", key_serializer=S, value_serializer=S)
    t.add_sink("right", "right-out", "router", key_serializer=S, value_serializer=S)
    with TopologyTestDriver(t) as d:
        i = d.create_input_topic("in", S, S)
        i.pipe_input("k", "left", timestamp=0)
        i.pipe_input("k", "right", timestamp=1)
        assert d.create_output_topic("left-out", S, S).read_values_to_list() == ["left"]
        assert d.create_output_topic("right-out", S, S).read_values_to_list() == ["right"]
        with pytest.raises(StreamsException, match="Unknown downstream node: middle"):
            i.pipe_input("k", "middle", timestamp=2)


def test_topic_name_extractor_and_partitioner() -> None:
    t = Topology().add_source("src", "in", key_deserializer=S, value_deserializer=S)
    t.add_sink(
        "sink",
        lambda k, v, ctx: f"{ctx.topic}-{k}",
        "src",
        key_serializer=S,
        value_serializer=S,
        partitioner=lambda topic, k, v, n: [] if v == "drop" else None,
    )
    with TopologyTestDriver(t) as d:
        i = d.create_input_topic("in", S, S)
        i.pipe_input("a", "1", timestamp=0)
        i.pipe_input("b", "drop", timestamp=0)
        assert d.create_output_topic("in-a", S, S).read_values_to_list() == ["1"]
        assert d.create_output_topic("in-b", S, S).is_empty()
        assert d.dropped_records_total() == 1.0


def test_production_exception_handler_on_serialization_error() -> None:
    L = Serdes.Long()
    t = Topology().add_source("src", "in", key_deserializer=S, value_deserializer=S)
    t.add_sink("sink", "out", "src", key_serializer=S, value_serializer=L)
    with (
        TopologyTestDriver(t) as d,
        pytest.raises(StreamsException, match="serialize the value of a record for topic out"),
    ):
        d.create_input_topic("in", S, S).pipe_input("k", "not a long", timestamp=0)
    with TopologyTestDriver(t, {"production.exception.handler": "log_and_continue"}) as d:
        d.create_input_topic("in", S, S).pipe_input("k", "not a long", timestamp=0)
        assert d.create_output_topic("out", S, L).is_empty()
        assert d.dropped_records_total() == 1.0


class GlobalLoader(Processor[str, str]):
    def init(self, context: ProcessorContext) -> None:
        self.store: Any = context.get_state_store("countries")

    def process(self, record: Record[str, str]) -> None:
        self.store.put(record.key, record.value)


class Enrich(Processor[str, str]):
    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store: Any = context.get_state_store("countries")

    def process(self, record: Record[str, str]) -> None:
        self.context.forward(record.with_value(f"{record.value}@{self.store.get(record.value)}"))


def test_global_store_is_updated_from_its_topic_and_readable_by_processors() -> None:
    t = string_topology(("enrich", Enrich))
    store = Stores.key_value_store_builder(
        Stores.in_memory_key_value_store("countries"), S, S
    ).with_logging_disabled()
    t.add_global_store(
        store, "gsrc", "countries-topic", "gload", GlobalLoader, key_deserializer=S, value_deserializer=S
    )
    with TopologyTestDriver(t) as d:
        d.create_input_topic("countries-topic", S, S).pipe_input("nl", "Netherlands", timestamp=0)
        d.create_input_topic("in", S, S).pipe_input("u1", "nl", timestamp=1)
        assert d.create_output_topic("out", S, S).read_value() == "nl@Netherlands"
        assert d.get_key_value_store("countries").get("nl") == "Netherlands"


def test_timestamped_store_accessors() -> None:
    class Put(Processor[str, str]):
        def init(self, context: ProcessorContext) -> None:
            self.store: Any = context.get_state_store("ts")

        def process(self, record: Record[str, str]) -> None:
            from kspark.state import ValueAndTimestamp

            self.store.put(record.key, ValueAndTimestamp(record.value, record.timestamp))

    t = string_topology(("put", Put))
    t.add_state_store(
        Stores.timestamped_key_value_store_builder(Stores.persistent_timestamped_key_value_store("ts"), S, S),
        "put",
    )
    with TopologyTestDriver(t) as d:
        d.create_input_topic("in", S, S).pipe_input("k", "v", timestamp=42)
        ts_store = d.get_timestamped_key_value_store("ts")
        assert (ts_store.get("k").value, ts_store.get("k").timestamp) == ("v", 42)
        assert d.get_key_value_store("ts").get("k") == "v"
        assert d.get_window_store("ts") is None
        assert d.get_key_value_store("missing") is None


def test_fixed_key_processor_may_not_change_the_key() -> None:
    from kspark.processor import FixedKeyProcessor

    class Upper(FixedKeyProcessor[str, str]):
        def init(self, context: ProcessorContext) -> None:
            self.context = context

        def process(self, record: Record[str, str]) -> None:
            self.context.forward(record.with_value(record.value.upper()))
            if record.value == "rekey":
                self.context.forward(record.with_key("other"))

    with TopologyTestDriver(string_topology(("upper", Upper))) as d:
        i = d.create_input_topic("in", S, S)
        i.pipe_input("k", "v", timestamp=0)
        assert d.create_output_topic("out", S, S).read_key_value() == KeyValue("k", "V")
        with pytest.raises(StreamsException, match="processor=upper"):
            i.pipe_input("k", "rekey", timestamp=1)


def test_window_store_access() -> None:
    class WindowPut(Processor[str, str]):
        def init(self, context: ProcessorContext) -> None:
            self.store: Any = context.get_state_store("w")

        def process(self, record: Record[str, str]) -> None:
            self.store.put(record.key, record.value, record.timestamp - record.timestamp % 10)

    t = string_topology(("wput", WindowPut))
    t.add_state_store(
        Stores.window_store_builder(Stores.in_memory_window_store("w", 1000, 10, False), S, S), "wput"
    )
    with TopologyTestDriver(t) as d:
        i = d.create_input_topic("in", S, S)
        i.pipe_input("k", "a", timestamp=13)
        i.pipe_input("k", "b", timestamp=27)
        w = d.get_window_store("w")
        assert [(kv.key, kv.value) for kv in w.fetch("k", 0, 100)] == [(10, "a"), (20, "b")]
        assert d.get_key_value_store("w") is None
        assert d.get_session_store("w") is None


def _left_join_topology() -> Topology:
    from kspark import JoinWindows, StreamsBuilder

    b = StreamsBuilder()
    left = b.stream("l")
    right = b.stream("r")
    left.left_join(right, lambda a, c: f"{a}+{c}", JoinWindows.of_time_difference_and_grace(5, 0)).to("out")
    return b.build()


def _on_close_count_topology() -> Topology:
    from kspark import Materialized, Produced, StreamsBuilder, TimeWindows
    from kspark.kstream.windows import EmitStrategy

    b = StreamsBuilder()
    # a retention beyond size + grace keeps the just-closed window readable whatever the store's
    # expiry bound (Kafka's time-ordered on-close store keeps it with the default retention)
    b.stream("in").group_by_key().windowed_by(TimeWindows.of_size_and_grace(10, 0)).emit_strategy(
        EmitStrategy.on_window_close()
    ).count(Materialized().with_retention(100)).to_stream().map(
        lambda k, v: KeyValue(f"{k.key}@{k.window.start}", v)
    ).to("out", Produced.with_(S, Serdes.Long()))
    return b.build()


STRING_DEFAULTS = {"default.key.serde": "string", "default.value.serde": "string"}


def test_driver_disables_the_outer_join_emit_throttle_as_kafkas_driver() -> None:
    # Kafka's driver puts __emit.interval.ms.kstreams.outer.join.spurious.results.fix__=0 when absent:
    # the record that closes a window emits its unmatched records, without advancing the wall clock
    with TopologyTestDriver(_left_join_topology(), STRING_DEFAULTS) as d:
        li = d.create_input_topic("l", S, S)
        o = d.create_output_topic("out", S, S)
        li.pipe_input("a", "A", timestamp=0)
        li.pipe_input("z", "Z", timestamp=6)
        assert o.read_key_values_to_list() == [KeyValue("a", "A+None")]
        li.pipe_input("y", "Y", timestamp=12)
        assert o.read_key_values_to_list() == [KeyValue("z", "Z+None")]


def test_driver_keeps_an_outer_join_emit_interval_the_user_set() -> None:
    config = {**STRING_DEFAULTS, "__emit.interval.ms.kstreams.outer.join.spurious.results.fix__": 1000}
    with TopologyTestDriver(_left_join_topology(), config) as d:
        li = d.create_input_topic("l", S, S)
        o = d.create_output_topic("out", S, S)
        li.pipe_input("a", "A", timestamp=0)  # scans the empty store: the throttle runs until 1000
        li.pipe_input("z", "Z", timestamp=6)
        assert o.is_empty()
        d.advance_wall_clock_time(1000)
        li.pipe_input("y", "Y", timestamp=12)
        assert o.read_key_values_to_list() == [KeyValue("a", "A+None"), KeyValue("z", "Z+None")]


def test_driver_disables_the_windowed_aggregation_emit_throttle_as_kafkas_driver() -> None:
    with TopologyTestDriver(_on_close_count_topology(), STRING_DEFAULTS) as d:
        i = d.create_input_topic("in", S, S)
        o = d.create_output_topic("out", S, Serdes.Long())
        i.pipe_input("k", "v", timestamp=1)
        i.pipe_input("k", "v", timestamp=10)  # closes [0,10)
        assert o.read_key_values_to_list() == [KeyValue("k@0", 1)]
        i.pipe_input("k", "v", timestamp=20)  # closes [10,20)
        assert o.read_key_values_to_list() == [KeyValue("k@10", 1)]


def test_driver_keeps_a_windowed_aggregation_emit_interval_the_user_set() -> None:
    config = {**STRING_DEFAULTS, "__emit.interval.ms.kstreams.windowed.aggregation__": 1000}
    with TopologyTestDriver(_on_close_count_topology(), config) as d:
        i = d.create_input_topic("in", S, S)
        o = d.create_output_topic("out", S, Serdes.Long())
        i.pipe_input("k", "v", timestamp=1)  # the first record starts the throttle (next emit at 1000)
        i.pipe_input("k", "v", timestamp=10)
        assert o.is_empty()
        d.advance_wall_clock_time(1000)
        i.pipe_input("k", "v", timestamp=20)
        assert o.read_key_values_to_list() == [KeyValue("k@0", 1), KeyValue("k@10", 1)]


def test_driver_default_application_id_and_bootstrap_servers_are_kafkas() -> None:
    with TopologyTestDriver(string_topology()) as d:
        assert d.config.application_id().startswith("dummy-topology-test-driver-app-id-")
        int(d.config.application_id().removeprefix("dummy-topology-test-driver-app-id-"))
        assert d.config.bootstrap_servers() == ["dummy-bootstrap-host:0"]
