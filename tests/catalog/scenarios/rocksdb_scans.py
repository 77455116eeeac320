"""Scans over several keys of persistent (RocksDB) window and session stores, in Kafka's order.

Kafka's RocksDB stores return such a scan by segment, then by the store key's bytes (key, then
window start; key, then session end, then start), and a caching layer merges its entries into
that order (``MergedSortedCacheSessionStoreIterator``). A processor here puts each record into a
persistent session store and a persistent window store, then forwards what scans over the key
range ``a``..``z`` return (backward too for the window store), with and without the record cache. Ported
from ``RocksDBSessionStoreTest`` / ``AbstractSessionBytesStoreTest.shouldFetchAllSessionsWithSameRecordKey``
and ``AbstractWindowBytesStoreTest.testFetchRange`` (scans across keys and segments). The Java twins
are in ``jvm/reference-harness/.../RocksDBScans.java``.
"""

from __future__ import annotations

from typing import Any

from kspark import Topology
from kspark.kstream.windowed import SessionWindow, Windowed
from kspark.processor import Processor, ProcessorContext, Record
from kspark.state import Stores

from ..model import P, Scenario, Topics
from .ported_support import SS, S

__all__ = ["SCENARIOS"]

_RETENTION = 120_000  # segments of 60_000 ms


def _show(it: Any) -> str:
    with it:
        return ",".join(f"{kv.key.key}@{kv.key.window.start}/{kv.key.window.end}={kv.value}" for kv in it)


class SessionScanner(Processor[str, str]):
    """Puts the session ``[ts - value, ts]`` of the key, then forwards two scans of ``a``..``z``: all
    sessions, and those ending at 995 or later that start by 61_000. (Kafka's processor-context
    wrapper of a session store refuses backward scans over a key range.)"""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store: Any = context.get_state_store("rdb-scan-sessions")

    def process(self, record: Record[str, str]) -> None:
        start = record.timestamp - int(record.value)
        self.store.put(Windowed(record.key, SessionWindow(start, record.timestamp)), record.value)
        forward = _show(self.store.fetch_range("a", "z"))
        bounded = _show(self.store.find_sessions_range("a", "z", 995, 61_000))
        self.context.forward(record.with_value(forward + " | " + bounded))


class WindowScanner(Processor[str, str]):
    """Puts the window starting at ``ts - value`` for the key, then forwards both scans of ``a``..``z``."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store: Any = context.get_state_store("rdb-scan-windows")

    def process(self, record: Record[str, str]) -> None:
        self.store.put(record.key, record.value, record.timestamp - int(record.value))
        forward = _show(self.store.fetch_range("a", "z", 0, 1_000_000))
        backward = _show(self.store.backward_fetch_range("a", "z", 0, 1_000_000))
        self.context.forward(record.with_value(forward + " | " + backward))


def scans(topo: Topology, t: Topics) -> None:
    topo.add_source(
        "rdb-scan-src", t["in"], key_deserializer=S.deserializer(), value_deserializer=S.deserializer()
    )
    topo.add_processor("rdb-scan-sessions-proc", SessionScanner, "rdb-scan-src")
    topo.add_processor("rdb-scan-windows-proc", WindowScanner, "rdb-scan-src")
    topo.add_state_store(
        Stores.session_store_builder(
            Stores.persistent_session_store("rdb-scan-sessions", _RETENTION), S, S
        ).with_caching_enabled(),
        "rdb-scan-sessions-proc",
    )
    topo.add_state_store(
        Stores.window_store_builder(
            Stores.persistent_window_store("rdb-scan-windows", _RETENTION, 10, False), S, S
        ).with_caching_enabled(),
        "rdb-scan-windows-proc",
    )
    topo.add_sink(
        "rdb-scan-sessions-sink",
        t["sessions"],
        "rdb-scan-sessions-proc",
        key_serializer=S.serializer(),
        value_serializer=S.serializer(),
    )
    topo.add_sink(
        "rdb-scan-windows-sink",
        t["windows"],
        "rdb-scan-windows-proc",
        key_serializer=S.serializer(),
        value_serializer=S.serializer(),
    )


# keys whose bytes interleave ("a" < "ab" < "b"), one key with two sessions of the same end, a
# second segment, a late record still in the live first segment
_STEPS = [
    P("in", "b", "0", 1000),
    P("in", "a", "0", 1000),
    P("in", "ab", "3", 1000),
    P("in", "a", "5", 1000),
    P("in", "a", "0", 61_000),
    P("in", "b", "10", 61_005),
    P("in", "ab", "0", 500),
    P("in", "c", "0", 125_000),
]

SCENARIOS = [
    Scenario(
        "rdb_scans_across_keys",
        scans,
        {"in": SS},
        {"sessions": SS, "windows": SS},
        _STEPS,
        java="rdb_scans_across_keys",
        papi=True,
        # a scan shows every key of its task: with two partitions the keys split between two tasks
        partitions=(1,),
        doc="AbstractSessionBytesStoreTest.shouldFetchAllSessionsWithSameRecordKey and "
        "AbstractWindowBytesStoreTest.testFetchRange on RocksDB stores: forward and backward scans over "
        "several keys of a persistent session store and a persistent window store, across segments, "
        "with the record cache merged in (cache on) and without it.",
    ),
]
