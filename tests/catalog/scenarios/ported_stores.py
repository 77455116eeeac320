"""Kafka Streams 4.1 store features, ported from Kafka Streams' tests: read-only stores (KIP-813).

Sources: ``ReadOnlyStoreTest`` (a read-only store fed by its topic, read by another processor).
The Java twins are in ``jvm/reference-harness/.../PortedStores.java``.
"""

from __future__ import annotations

from typing import Any

from kspark import Topology
from kspark.processor import Processor, ProcessorContext, Record
from kspark.state import Stores

from ..model import P, Scenario, Topics
from .ported_support import SS, S, j

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
        "pst-ro-sink", t["out"], "pst-ro-reader", key_serializer=S.serializer(), value_serializer=S.serializer()
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

SCENARIOS = [
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
]
