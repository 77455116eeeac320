"""Kafka Streams 4.1 store features, ported from Kafka Streams' tests: read-only stores (KIP-813),
foreign-key joins of versioned tables (KIP-914), LRU map stores, DSL store types (KIP-954).

Sources: ``ReadOnlyStoreTest`` (a read-only store fed by its topic, read by another processor);
``InMemoryLRUCacheStoreTest`` (``Stores.lruMap``: the least recently used entry evicted);
``KTableKTableForeignKeyVersionedJoinIntegrationTest`` (Kafka's FK join tests over versioned
tables, whose out-of-order updates the join skips); ``SlidingWindowedKStreamIntegrationTest``
and ``KStreamKStreamJoinTest`` with ``Materialized.withStoreType`` / ``StreamJoined.withDslStoreSuppliers``
(in-memory and RocksDB window stores keep old windows by different rules, which an emit-on-close
sliding aggregation's look-back shows). The Java twins are in
``jvm/reference-harness/.../PortedStores.java``.
"""

from __future__ import annotations

from typing import Any

from kspark import (
    Consumed,
    Grouped,
    JoinWindows,
    Materialized,
    Produced,
    SlidingWindows,
    StreamJoined,
    StreamsBuilder,
    Topology,
)
from kspark.kstream.windows import EmitStrategy
from kspark.processor import Processor, ProcessorContext, Record
from kspark.serde import Serdes
from kspark.state import BuiltInDslStoreSuppliers, Stores

from ..model import Build, P, Scenario, Topics
from .ported_support import EMIT_NOW, SL, SS, L, S, j, win

__all__ = ["SCENARIOS"]


class StoreUpdater(Processor[str, str]):
    """A read-only store's update processor: puts each record as it comes (a null value deletes)."""

    def init(self, context: ProcessorContext) -> None:
        self.store: Any = context.get_state_store("pst-ro-store")

    def process(self, record: Record[str, str]) -> None:
        self.store.put(record.key, record.value)


class StoreReader(Processor[str, str]):
    """Forwards ``value -- <the read-only store's value for the key>`` (Java's null as ``null``)."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store: Any = context.get_state_store("pst-ro-store")

    def process(self, record: Record[str, str]) -> None:
        self.context.forward(record.with_value(f"{j(record.value)} -- {j(self.store.get(record.key))}"))


def read_only_store(topo: Topology, t: Topics) -> None:
    topo.add_read_only_state_store(
        Stores.key_value_store_builder(Stores.in_memory_key_value_store("pst-ro-store"), S, S),
        "pst-ro-source",
        None,
        S.deserializer(),
        S.deserializer(),
        t["store-topic"],
        "pst-ro-updater",
        StoreUpdater,
    )
    topo.add_source(
        "pst-ro-input", t["in"], key_deserializer=S.deserializer(), value_deserializer=S.deserializer()
    )
    topo.add_processor("pst-ro-reader", StoreReader, "pst-ro-input")
    topo.connect_processor_and_state_stores("pst-ro-reader", "pst-ro-store")
    topo.add_sink(
        "pst-ro-sink",
        t["out"],
        "pst-ro-reader",
        key_serializer=S.serializer(),
        value_serializer=S.serializer(),
    )


# store updates and lookups interleaved in timestamp order: a key before its first update, an
# update, an overwrite, a tombstone, a key updated again after its tombstone
_READ_ONLY_STEPS = [
    P("in", "A", "a0", 1000),
    P("store-topic", "A", "foo", 1001),
    P("store-topic", "B", "bar", 1002),
    P("in", "A", "a1", 1003),
    P("in", "B", "b1", 1004),
    P("store-topic", "A", "foo2", 1005),
    P("in", "A", "a2", 1006),
    P("store-topic", "B", None, 1007),
    P("in", "B", "b2", 1008),
    P("in", "C", "c1", 1009),
    P("store-topic", "B", "bar2", 1010),
    P("store-topic", "C", "baz", 1011),
    P("in", "B", "b3", 1012),
    P("in", "C", "c2", 1013),
]


class LruCounter(Processor[str, str]):
    """Counts per key in an LRU map of two entries: an evicted key's count starts again at 1."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store: Any = context.get_state_store("pst-lru-counts")

    def process(self, record: Record[str, str]) -> None:
        count = self.store.get(record.key)
        count = 1 if count is None else count + 1
        self.store.put(record.key, count)
        self.context.forward(record.with_value(count))


def lru_papi(topo: Topology, t: Topics) -> None:
    topo.add_source(
        "pst-lru-src", t["in"], key_deserializer=S.deserializer(), value_deserializer=S.deserializer()
    )
    topo.add_processor("pst-lru-count", LruCounter, "pst-lru-src")
    topo.add_state_store(
        Stores.key_value_store_builder(Stores.lru_map("pst-lru-counts", 2), S, L), "pst-lru-count"
    )
    topo.add_sink(
        "pst-lru-sink",
        t["out"],
        "pst-lru-count",
        key_serializer=S.serializer(),
        value_serializer=L.serializer(),
    )


def lru_dsl(b: StreamsBuilder, t: Topics) -> None:
    """``groupByKey().count(Materialized.as(Stores.lruMap(..., 2)))``: Kafka's timestamped store over
    the LRU map, the record cache above it."""
    b.stream(t["in"], Consumed.with_(S, S)).group_by_key().count(
        Materialized.as_(Stores.lru_map("pst-lru-dsl", 2))
    ).to_stream().to(t["out"], Produced.with_(S, L))


# a, b fill the map; a read of a (its count) makes b the eldest, so c evicts b; b comes back
# (evicting a), a comes back (evicting c), ...
_LRU_STEPS = [P("in", k, "v", 1000 + i) for i, k in enumerate("abacbabbcca")]


def store_type_sliding(store: str, store_type: Any) -> Build:
    """An emit-on-close sliding aggregation (difference 10, grace 5) materialized with
    ``Materialized.as(store).withStoreType(store_type)``: under ROCKS_DB Kafka's time-ordered
    store, under IN_MEMORY its in-memory window store, which forgets windows sooner."""

    def build(b: StreamsBuilder, t: Topics) -> None:
        m = Materialized.as_(store).with_value_serde(S).with_store_type(store_type)
        (
            b.stream(t["in"], Consumed.with_(S, S))
            .group_by_key(Grouped.with_(S, S))
            .windowed_by(SlidingWindows.of_time_difference_and_grace(10, 5))
            .emit_strategy(EmitStrategy.on_window_close())
            .aggregate(lambda: "0", lambda k, v, agg: agg + "+" + v, m)
            .to_stream()
            .to(t["out"], Produced.with_(Serdes.time_windowed(S, 10), S))
        )

    return build


# out-of-order records within the grace: the in-memory store no longer has a window that the
# look-back of a later record (2 * difference) would extend, the time-ordered store still has it
_STORE_TYPE_STEPS = [
    P("in", k, v, ts)
    for k, v, ts in [
        ("A", "v0", 986),
        ("A", "v1", 982),
        ("B", "v2", 983),
        ("B", "v3", 998),
        ("B", "v4", 994),
        ("B", "v5", 997),
        ("B", "v6", 993),
        ("A", "v7", 994),
        ("A", "v8", 1002),
        ("B", "v9", 993),
        ("A", "v10", 1030),
        ("B", "v11", 1030),
    ]
]


def stream_joined_in_memory(b: StreamsBuilder, t: Topics) -> None:
    """An outer join whose three stores come from ``StreamJoined.withDslStoreSuppliers(IN_MEMORY)``."""
    left = b.stream(t["a"], Consumed.with_(S, S))
    right = b.stream(t["b"], Consumed.with_(S, S))
    joined = StreamJoined.with_(S, S, S).with_dsl_store_suppliers(BuiltInDslStoreSuppliers.IN_MEMORY)
    left.outer_join(
        right, lambda v1, v2: j(v1) + "+" + j(v2), JoinWindows.of_time_difference_and_grace(10, 5), joined
    ).to(t["out"], Produced.with_(S, S))


def stream_joined_suppliers(b: StreamsBuilder, t: Topics) -> None:
    """A left join whose two window stores come from ``withThisStoreSupplier`` (in memory) and
    ``withOtherStoreSupplier`` (persistent): the stores carry the suppliers' names."""
    left = b.stream(t["a"], Consumed.with_(S, S))
    right = b.stream(t["b"], Consumed.with_(S, S))
    joined = (
        StreamJoined.with_(S, S, S)
        .with_this_store_supplier(Stores.in_memory_window_store("pst-this-window", 25, 20, True))
        .with_other_store_supplier(Stores.persistent_window_store("pst-other-window", 25, 20, True))
    )
    left.left_join(
        right, lambda v1, v2: j(v1) + "+" + j(v2), JoinWindows.of_time_difference_and_grace(10, 5), joined
    ).to(t["out"], Produced.with_(S, S))


_JOIN_STEPS = [
    P("a", "A", "a1", 1000),
    P("b", "A", "b1", 1005),
    P("a", "B", "a2", 1008),
    P("b", "A", "b2", 1020),
    P("a", "A", "a3", 1012),
    P("b", "C", "c1", 1040),
    P("a", "B", "a4", 1001),
    P("b", "B", "b3", 1060),
]

VERSIONED_RETENTION = 100


def _fk_joiner(v1: Any, v2: Any) -> str:
    return "(" + j(v1) + "," + j(v2) + ")"


def fk_versioned(left_join: bool, left_versioned: bool, right_versioned: bool, prefix: str) -> Build:
    """``left.[left]join(right, value -> fk, joiner, Materialized.with(null, S))`` over tables
    materialized in versioned stores (``<prefix>-left`` / ``<prefix>-right``) or plain ones."""

    def table_store(name: str, versioned: bool) -> Materialized:
        if versioned:
            return Materialized.as_(Stores.persistent_versioned_key_value_store(name, VERSIONED_RETENTION))
        return Materialized.as_(name)

    def build(b: StreamsBuilder, t: Topics) -> None:
        lt = b.table(t["l"], Consumed.with_(S, S), table_store(prefix + "-left", left_versioned))
        rt = b.table(t["r"], Consumed.with_(S, S), table_store(prefix + "-right", right_versioned))
        m = Materialized.with_(None, S).with_caching_disabled()
        op = lt.left_join if left_join else lt.join
        op(rt, lambda v: v.split("|")[1], _fk_joiner, m).to_stream().to(t["out"], Produced.with_(S, S))

    return build


def _fk(topic: str, key: str, value: str | None, dt: int) -> Any:
    return P(topic, key, value, 1000 + dt)


# in-order updates, out-of-order ones within the history retention on both sides (skipped by a
# join of a versioned table, joined by one of a plain table), one older than the retention
# (refused by a versioned store: not forwarded at all), a tombstone and an update older than it
_FK_VERSIONED_STEPS = [
    _fk("r", "rhs1", "rhsValue1", 0),
    _fk("r", "rhs2", "rhsValue2", 1),
    _fk("l", "lhs1", "lhsValue1|rhs1", 10),
    _fk("r", "rhs1", "rhsValue1old", -5),
    _fk("l", "lhs1", "lhsValue1old|rhs2", 5),
    _fk("l", "lhs2", "lhsValue2|rhs2", 12),
    _fk("r", "rhs2", "rhsValue2new", 13),
    _fk("l", "lhs2", "lhsValue2ancient|rhs1", -200),
    _fk("l", "lhs1", None, 20),
    _fk("l", "lhs1", "lhsValue1late|rhs2", 15),
    _fk("r", "rhs1", None, 21),
    _fk("r", "rhs1", "rhsValue1older", 16),
    _fk("l", "lhs3", "lhsValue3|rhs1", 22),
    _fk("r", "rhs1", "rhsValue1again", 23),
]

_FK_VERSIONED_DOC = (
    "KTableKTableForeignKeyVersionedJoinIntegrationTest: a foreign-key {kind} of {which}; the "
    "subscription-send (left) and foreign-table-join (right) processors skip a versioned table's "
    "out-of-order updates and count them as dropped (KIP-914), a plain table's are joined."
)

SCENARIOS = [
    Scenario(
        "pst_lru_papi",
        lru_papi,
        {"in": SS},
        {"out": SL},
        _LRU_STEPS,
        java="pst_lru_papi",
        papi=True,
        doc="InMemoryLRUCacheStoreTest.testEvict: a processor counting per key in Stores.lru_map(2); a "
        "read or write makes a key the most recently used, a new key evicts the least recently used, "
        "whose count starts again.",
    ),
    Scenario(
        "pst_lru_dsl",
        lru_dsl,
        {"in": SS},
        {"out": SL},
        _LRU_STEPS,
        java="pst_lru_dsl",
        doc="InMemoryLRUCacheStoreTest.testEvict through the DSL: a count materialized in "
        "Stores.lru_map(2) (a timestamped store over the LRU map, with and without the record cache).",
    ),
    Scenario(
        "pst_read_only_store",
        read_only_store,
        {"store-topic": SS, "in": SS},
        {"out": SS},
        _READ_ONLY_STEPS,
        java="pst_read_only_store",
        papi=True,
        doc="ReadOnlyStoreTest.shouldConnectProcessorAndWriteDataToReadOnlyStore: a read-only store "
        "(Topology.addReadOnlyStateStore) fed by its topic and read by another processor connected to "
        "it; updates, an overwrite, a tombstone, keys looked up before their first update.",
    ),
    Scenario(
        "pst_store_type_rocks_db",
        store_type_sliding("pst-type-rocks", "rocks_db"),
        {"in": SS},
        {"out": win(10)},
        _STORE_TYPE_STEPS,
        java="pst_store_type_rocks_db",
        config=EMIT_NOW,
        doc="SlidingWindowedKStreamIntegrationTest (emit final) with Materialized.withStoreType("
        "ROCKS_DB): the time-ordered window store of Kafka's RocksDB suppliers.",
    ),
    Scenario(
        "pst_store_type_in_memory",
        store_type_sliding("pst-type-mem", Materialized.StoreType.IN_MEMORY),
        {"in": SS},
        {"out": win(10)},
        _STORE_TYPE_STEPS,
        java="pst_store_type_in_memory",
        config=EMIT_NOW,
        doc="SlidingWindowedKStreamIntegrationTest (emit final) with Materialized.withStoreType("
        "IN_MEMORY): the in-memory window store, whose retention drops a window the RocksDB store "
        "still serves to a late record's look-back (the outputs differ from pst_store_type_rocks_db).",
    ),
    Scenario(
        "pst_stream_joined_in_memory",
        stream_joined_in_memory,
        {"a": SS, "b": SS},
        {"out": SS},
        _JOIN_STEPS,
        java="pst_stream_joined_in_memory",
        doc="KStreamKStreamOuterJoinTest with StreamJoined.withDslStoreSuppliers(IN_MEMORY): the two "
        "window stores and the outer-join store in memory; late and unmatched records.",
    ),
    Scenario(
        "pst_stream_joined_suppliers",
        stream_joined_suppliers,
        {"a": SS, "b": SS},
        {"out": SS},
        _JOIN_STEPS,
        java="pst_stream_joined_suppliers",
        doc="KStreamKStreamJoinTest with StreamJoined.withThisStoreSupplier / withOtherStoreSupplier: "
        "the join's window stores are the given suppliers', named after them.",
    ),
    Scenario(
        "pst_fk_versioned",
        fk_versioned(False, True, True, "pst-fk"),
        {"l": SS, "r": SS},
        {"out": SS},
        _FK_VERSIONED_STEPS,
        java="pst_fk_versioned",
        doc=_FK_VERSIONED_DOC.format(kind="join", which="two versioned tables"),
    ),
    Scenario(
        "pst_fk_versioned_left",
        fk_versioned(True, True, False, "pst-fkl"),
        {"l": SS, "r": SS},
        {"out": SS},
        _FK_VERSIONED_STEPS,
        java="pst_fk_versioned_left",
        doc=_FK_VERSIONED_DOC.format(kind="left join", which="a versioned left table and a plain right one"),
    ),
    Scenario(
        "pst_fk_versioned_right",
        fk_versioned(True, False, True, "pst-fkr"),
        {"l": SS, "r": SS},
        {"out": SS},
        _FK_VERSIONED_STEPS,
        java="pst_fk_versioned_right",
        doc=_FK_VERSIONED_DOC.format(kind="left join", which="a plain left table and a versioned right one"),
        # with 2 partitions the right table's updates and the subscriptions reach its task in an
        # order Kafka Streams does not define either: only each key's last result is defined
        spark_compare="final",
    ),
]
