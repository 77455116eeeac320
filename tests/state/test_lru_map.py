"""``Stores.lru_map`` (after Kafka's InMemoryLRUCacheStoreTest): MemoryLRUCache and
MemoryNavigableLRUCache (access-ordered, the least recently used entry evicted past the size;
with logging on, an eviction logs a tombstone; a restore evicts silently)."""

from __future__ import annotations

from typing import Any

import pytest

from kspark import Topology
from kspark.processor import Processor, ProcessorContext, Record
from kspark.serde import Serdes
from kspark.state import Stores
from kspark.state.internals.memory_lru_cache import MemoryLRUCache
from kspark.testing import TopologyTestDriver

S = Serdes.String()
L = Serdes.Long()


def _open(size: int) -> MemoryLRUCache:
    store = Stores.lru_map("lru", size).get()
    assert isinstance(store, MemoryLRUCache)
    store.init(None, store)  # type: ignore[arg-type]
    return store


def test_the_least_recently_used_entry_is_evicted() -> None:
    store = _open(2)
    evicted: list[tuple[bytes, bytes]] = []
    store.set_when_eldest_removed(lambda k, v: evicted.append((k, v)))
    store.put(b"a", b"1")
    store.put(b"b", b"2")
    assert store.get(b"a") == b"1"  # a read is a use: b is now the eldest
    store.put(b"c", b"3")
    assert evicted == [(b"b", b"2")]
    store.put(b"a", b"4")  # an update is a use, and evicts nothing
    assert evicted == [(b"b", b"2")]
    store.put(b"d", b"5")
    assert evicted == [(b"b", b"2"), (b"c", b"3")]
    assert [(kv.key, kv.value) for kv in store.all()] == [(b"a", b"4"), (b"d", b"5")]
    assert store.approximate_num_entries() == 2


def test_iteration_is_in_key_order_and_no_use() -> None:
    store = _open(3)
    for k in (b"c", b"a", b"b"):
        store.put(k, k.upper())
    assert [kv.key for kv in store.all()] == [b"a", b"b", b"c"]
    assert [kv.key for kv in store.reverse_range(b"a", b"b")] == [b"b", b"a"]
    assert [kv.key for kv in store.prefix_scan(b"b")] == [b"b"]
    assert list(store.range(b"c", b"a")) == []
    store.put(b"d", b"D")  # iterating did not touch c: it is still the eldest
    assert store.get(b"c") is None


def test_null_value_deletes_and_size_zero_keeps_nothing() -> None:
    store = _open(2)
    store.put(b"a", b"1")
    store.put(b"a", None)
    assert store.get(b"a") is None and store.size() == 0
    assert store.put_if_absent(b"a", b"2") is None
    assert store.put_if_absent(b"a", b"3") == b"2"
    zero = _open(0)
    evicted: list[bytes] = []
    zero.set_when_eldest_removed(lambda k, v: evicted.append(k))
    zero.put(b"x", b"1")
    assert zero.get(b"x") is None and evicted == [b"x"]


def test_a_restore_evicts_without_telling_the_listener() -> None:
    store = _open(1)
    evicted: list[bytes] = []
    store.set_when_eldest_removed(lambda k, v: evicted.append(k))
    store.restore([(b"a", b"1"), (b"b", b"2")])
    assert evicted == [] and store.get(b"b") == b"2" and store.get(b"a") is None


def test_bad_arguments_are_refused_as_kafka_does() -> None:
    with pytest.raises(ValueError, match="maxCacheSize cannot be negative"):
        Stores.lru_map("x", -1)
    with pytest.raises(ValueError, match="name cannot be null"):
        Stores.lru_map(None, 1)  # type: ignore[arg-type]
    supplier = Stores.lru_map("x", 1)
    assert supplier.metrics_scope() == "in-memory-lru" and not supplier.persistent


class _Counter(Processor[str, str]):
    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store: Any = context.get_state_store("counts")

    def process(self, record: Record[str, str]) -> None:
        count = (self.store.get(record.key) or 0) + 1
        self.store.put(record.key, count)
        self.context.forward(record.with_value(count))


def _changelog() -> list[tuple[Any, Any, Any]]:
    builder = Stores.key_value_store_builder(Stores.lru_map("counts", 2), S, L)
    topo = Topology()
    topo.add_source("src", "in", key_deserializer=S, value_deserializer=S)
    topo.add_processor("count", _Counter, "src")
    topo.add_state_store(builder, "count")
    topo.add_sink("sink", "out", "count", key_serializer=S, value_serializer=L)
    with TopologyTestDriver(topo, {"application.id": "lru"}) as d:
        inp = d.create_input_topic("in", S, S)
        changelog = d.create_output_topic("lru-counts-changelog", S, L)
        for i, key in enumerate("abacd"):
            inp.pipe_input(key, "v", timestamp=10 + i)
        return [(r.key, r.value, r.timestamp) for r in changelog.read_records_to_list()]


def test_with_logging_an_eviction_logs_a_tombstone_before_the_put_that_caused_it() -> None:
    assert _changelog() == [
        ("a", 1, 10),
        ("b", 1, 11),
        ("a", 2, 12),
        ("b", None, 13),  # c evicts b (a was used since)
        ("c", 1, 13),
        ("a", None, 14),  # d evicts a
        ("d", 1, 14),
    ]


class _Context:
    """What the change-logging layer needs of a context: the record timestamp and log_change."""

    def __init__(self) -> None:
        self.logged: list[tuple[bytes, bytes | None]] = []

    def timestamp(self) -> int:
        return 7

    def log_change(self, store: str, key: bytes, value: bytes | None, timestamp: int) -> None:
        self.logged.append((key, value))


def test_a_timestamped_builder_logs_no_eviction_as_kafka_whose_marker_hides_the_lru_store() -> None:
    from kspark.state.internals.change_logging import ChangeLoggingKeyValueBytesStore

    for timestamped, tombstones in ((False, [(b"a", None)]), (True, [])):
        context = _Context()
        layer = ChangeLoggingKeyValueBytesStore(Stores.lru_map("s", 1).get(), timestamped=timestamped)
        layer.init(context, layer)  # type: ignore[arg-type]
        value = b"\x00" * 8 + b"v"
        layer.put(b"a", value)
        layer.put(b"b", value)
        assert [kv for kv in context.logged if kv[1] is None] == tombstones
