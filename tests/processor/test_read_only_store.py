"""Read-only state stores (KIP-813, ``Topology.add_read_only_state_store``) on the driver and in a
Spark runner's task (no Spark needed: the task is the engine's StreamTask)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from kspark import Topology
from kspark.errors import TopologyException
from kspark.processor import Processor, ProcessorContext, Record
from kspark.processor.internals.builder import _SourceFactory
from kspark.processor.internals.records import RawRecord
from kspark.runtime.spark.task_state import fold_changelog
from kspark.runtime.spark.tasks import TopologySpec, _split_changelog
from kspark.runtime.spark.versioned_changelog import restored_latest
from kspark.serde import Serdes
from kspark.state import Stores
from kspark.testing import TopologyTestDriver

S = Serdes.String()


class _Updater(Processor[str, str]):
    def init(self, context: ProcessorContext) -> None:
        self.store: Any = context.get_state_store("ro")

    def process(self, record: Record[str, str]) -> None:
        self.store.put(record.key, record.value)


class _Reader(Processor[str, str]):
    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store: Any = context.get_state_store("ro")

    def process(self, record: Record[str, str]) -> None:
        self.context.forward(record.with_value(f"{record.value} -- {self.store.get(record.key)}"))


def _topology() -> tuple[Topology, Any]:
    store_builder = Stores.key_value_store_builder(Stores.in_memory_key_value_store("ro"), S, S)
    topo = Topology()
    topo.add_read_only_state_store(store_builder, "ro-src", None, S, S, "store-topic", "ro-update", _Updater)
    topo.add_source("in-src", "in", key_deserializer=S, value_deserializer=S)
    topo.add_processor("reader", _Reader, "in-src")
    topo.connect_processor_and_state_stores("reader", "ro")
    topo.add_sink("sink", "out", "reader", key_serializer=S, value_serializer=S)
    return topo, store_builder


def test_the_store_is_fed_by_its_topic_its_logging_off_and_the_topic_its_changelog() -> None:
    topo, store_builder = _topology()
    builder = topo.internal_builder
    assert not store_builder.logging_enabled()
    assert builder.source_changelog_topics() == {"ro": "store-topic"}
    assert builder.read_only_store_names() == ["ro"]
    assert builder.store_users("ro") == ["ro-update", "reader"]
    assert builder.source_topics_of("ro-src") == ["store-topic"]
    # the source reads from the earliest offset, as Kafka's (AutoOffsetReset.earliest())
    source = builder._factories["ro-src"]
    assert isinstance(source, _SourceFactory) and source.offset_reset == "earliest"
    # one sub-topology: the store joins the source's and the reader's
    assert len(builder.node_groups()) == 1


def test_other_processors_read_what_the_update_processor_wrote() -> None:
    topo, _ = _topology()
    with TopologyTestDriver(topo, {"application.id": "ro-app"}) as driver:
        store_topic = driver.create_input_topic("store-topic", S, S)
        inp = driver.create_input_topic("in", S, S)
        out = driver.create_output_topic("out", S, S)
        store_topic.pipe_input("1", "foo")
        store_topic.pipe_input("2", "bar")
        inp.pipe_input("1", "bar")
        inp.pipe_input("2", "foo")
        store_topic.pipe_input("2", None)
        inp.pipe_input("2", "baz")
        assert [(kv.key, kv.value) for kv in out.read_key_values_to_list()] == [
            ("1", "bar -- foo"),
            ("2", "foo -- bar"),
            ("2", "baz -- None"),
        ]
        assert [(kv.key, kv.value) for kv in driver.get_key_value_store("ro").all()] == [("1", "foo")]
        # nothing is written for the store: its changelog is its source topic
        assert "ro-app-ro-changelog" not in driver.produced_topic_names()


def test_bad_arguments_name_what_was_wrong() -> None:
    topo = Topology()
    with pytest.raises(TopologyException, match="StoreBuilder with a name"):
        topo.add_read_only_state_store(object(), "s", None, S, S, "t", "p", _Updater)
    builder = Stores.key_value_store_builder(Stores.in_memory_key_value_store("ro"), S, S)
    with pytest.raises(TopologyException, match="topic must be a non-empty string"):
        topo.add_read_only_state_store(builder, "s", None, S, S, "", "p", _Updater)
    topo.add_source("taken", "t")
    with pytest.raises(TopologyException, match="already been registered"):
        topo.add_read_only_state_store(builder, "s", None, S, S, "t", "p", _Updater)


def _spark_spec(topo: Topology) -> TopologySpec:
    app = "ro-app"
    return TopologySpec(
        topo,
        {"application.id": app, "bootstrap.servers": "unused:9092"},
        0,
        {f"{app}-ro-changelog": "ro"},
        "instance",
        {},
        read_only_stores=frozenset({"ro"}),
    )


def _raw(topic: str, offset: int, key: str, value: str | None, ts: int) -> RawRecord:
    data = None if value is None else value.encode()
    return RawRecord(topic, 0, offset, ts, key.encode(), data)


def test_on_spark_a_read_only_store_is_logged_into_the_task_state_only_and_restores() -> None:
    topo, _ = _topology()
    spec = _spark_spec(topo)
    task = spec.build_task(0)
    task.add_records(
        "store-topic", 0, [_raw("store-topic", 0, "1", "foo", 1), _raw("store-topic", 1, "2", "bar", 2)]
    )
    task.add_records("store-topic", 0, [_raw("store-topic", 2, "2", None, 3)])
    while task.process():
        pass
    task.commit()
    emitted, entries = _split_changelog(spec, task.drain_output(), set(), set())
    # nothing goes to Kafka for the store (neither its source topic nor a changelog topic) ...
    assert emitted == []
    # ... but its updates are the task's changelog state, as a logged store's
    assert entries == [("ro", b"1", b"foo", 1), ("ro", b"2", b"bar", 2), ("ro", b"2", None, 3)]
    latest: dict[Any, dict[Any, tuple[Any, int]]] = {}
    fold_changelog(latest, pickle.loads(pickle.dumps(entries)))
    # a task rebuilt elsewhere restores the store from that state
    rebuilt = spec.build_task(0)
    restore = rebuilt.context.restore_callbacks["ro"]
    assert restore is not None
    restore(restored_latest(latest["ro"]))
    rebuilt.add_records("in", 0, [_raw("in", 0, "1", "x", 10), _raw("in", 1, "2", "y", 11)])
    while rebuilt.process():
        pass
    rebuilt.commit()
    emitted, entries = _split_changelog(spec, rebuilt.drain_output(), set(), set())
    assert [(r.topic, r.key, r.value) for r in emitted] == [
        ("out", b"1", b"x -- foo"),
        ("out", b"2", b"y -- None"),
    ]
    assert entries == []
