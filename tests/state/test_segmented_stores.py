"""Persistent window and session stores expire by segments, as Kafka's RocksDB segmented stores.

Expected values follow ``AbstractRocksDBSegmentedBytesStore`` / ``AbstractSegments``
(4.1.1): segment interval ``max(retention / 2, 60_000)``, a put is dropped only
when its segment is below ``segment_id(observed - retention)``, reads clamp to
``observed - retention + 1``.
"""

from __future__ import annotations

from typing import Any

import pytest

from kspark.key_value import KeyValue
from kspark.kstream.windowed import SessionWindow, Window, Windowed
from kspark.serde import Serdes
from kspark.state import Stores
from kspark.state.internals.in_memory_session_store import InMemorySessionStore
from kspark.state.internals.in_memory_window_store import InMemoryWindowStore
from kspark.state.internals.rocksdb_session_store import RocksDBSessionStore
from kspark.state.internals.rocksdb_window_store import RocksDBWindowStore
from kspark.state.internals.segmented_stores import default_segment_interval, segment_id

from .conftest import FakeContext

S = Serdes.String()


def window_store(persistent: bool, retention: int, size: int, dups: bool = False) -> tuple[Any, FakeContext]:
    factory = Stores.persistent_window_store if persistent else Stores.in_memory_window_store
    store = Stores.window_store_builder(factory("w", retention, size, dups), S, S).build()
    ctx = FakeContext()
    store.init(ctx, store)
    return store, ctx


def session_store(persistent: bool, retention: int) -> tuple[Any, FakeContext]:
    factory = Stores.persistent_session_store if persistent else Stores.in_memory_session_store
    store = Stores.session_store_builder(factory("s", retention), S, S).build()
    ctx = FakeContext()
    store.init(ctx, store)
    return store, ctx


def test_segment_id_is_java_long_division() -> None:
    assert [segment_id(t, 60_000) for t in (0, 59_999, 60_000, 125_000)] == [0, 0, 1, 2]
    # truncation toward zero, not floor: stream time below the retention maps to segment 0
    assert segment_id(-1, 60_000) == 0 and segment_id(-60_001, 60_000) == -1
    assert default_segment_interval(20) == 60_000 and default_segment_interval(300_000) == 150_000


def test_suppliers_make_segmented_stores_only_when_persistent() -> None:
    assert type(Stores.persistent_window_store("w", 300_000, 10, False).get()) is RocksDBWindowStore
    timestamped = Stores.persistent_timestamped_window_store("w", 300_000, 10, False).get()
    assert isinstance(timestamped, RocksDBWindowStore) and timestamped.segment_interval == 150_000
    assert type(Stores.in_memory_window_store("w", 300_000, 10, False).get()) is InMemoryWindowStore
    session = Stores.persistent_session_store("s", 20).get()
    assert isinstance(session, RocksDBSessionStore) and session.segment_interval == 60_000
    assert type(Stores.persistent_session_store("s", 20).get()) is RocksDBSessionStore
    assert type(Stores.in_memory_session_store("s", 20).get()) is InMemorySessionStore


def test_late_window_put_in_a_live_segment_is_kept_but_never_read() -> None:
    # the ss_* reference scenarios: a join store (retention 20) gets l4@3 at stream time 42
    persistent, pctx = window_store(True, 20, 10, dups=True)
    memory, mctx = window_store(False, 20, 10, dups=True)
    for store in (persistent, memory):
        store.put("a", "v42", 42)
        store.put("a", "late", 3)
    assert pctx.dropped == [] and len(mctx.dropped) == 1
    # the segmented store holds it, but reads start at 42 - 20 + 1
    assert list(persistent.fetch("a", 0, 100)) == [KeyValue(42, "v42")]
    assert list(persistent.fetch("a", 3, 3)) == []
    assert [kv.key.window for kv in persistent.all()] == [Window(42, 52)]
    assert list(memory.fetch("a", 0, 100)) == [KeyValue(42, "v42")]


def test_window_put_is_dropped_only_below_the_min_live_segment() -> None:
    # retention 200_000 -> segments of 100_000; at observed 350_000 the min live segment is 1
    store, ctx = window_store(True, 200_000, 10)
    store.put("k", "now", 350_000)
    store.put("k", "seg1", 100_000)
    assert ctx.dropped == []
    store.put("k", "seg0", 99_999)
    assert len(ctx.dropped) == 1
    assert store.fetch("k", 100_000) is None  # stored, but older than 350_000 - 200_000 + 1
    store.put("k", "edge", 150_001)
    assert store.fetch("k", 150_001) == "edge"
    assert list(store.fetch("k", 0, 400_000)) == [KeyValue(150_001, "edge"), KeyValue(350_000, "now")]
    # a put advances the observed time first: the segment of its own start is always live
    store.put("k", "far", 1_000_000)
    assert ctx.dropped == ["expired window store segment"]
    assert list(store.fetch("k", 0, 2_000_000)) == [KeyValue(1_000_000, "far")]


def test_in_memory_window_store_keeps_its_own_rule() -> None:
    store, ctx = window_store(False, 200_000, 10)
    store.put("k", "now", 350_000)
    store.put("k", "late", 150_000)  # <= 350_000 - 200_000: dropped although its segment would be live
    assert len(ctx.dropped) == 1
    store.put("k", "edge", 150_001)
    assert len(ctx.dropped) == 1


def test_late_session_put_in_a_live_segment_is_kept_but_never_read() -> None:
    persistent, pctx = session_store(True, 20)
    memory, mctx = session_store(False, 20)
    for store in (persistent, memory):
        store.put(Windowed("a", SessionWindow(40, 42)), "now")
        store.put(Windowed("a", SessionWindow(1, 3)), "late")
    assert pctx.dropped == [] and len(mctx.dropped) == 1
    assert persistent.fetch_session("a", 1, 3) is None
    assert [kv.key.window for kv in persistent.find_sessions("a", 0, 100)] == [SessionWindow(40, 42)]
    assert [kv.key.window for kv in persistent.fetch("a")] == [SessionWindow(40, 42)]


def test_session_put_is_dropped_only_below_the_min_live_segment() -> None:
    store, ctx = session_store(True, 200_000)
    store.put(Windowed("k", SessionWindow(349_000, 350_000)), "now")
    store.put(Windowed("k", SessionWindow(100_000, 100_000)), "seg1")
    assert ctx.dropped == []
    store.put(Windowed("k", SessionWindow(99_000, 99_999)), "seg0")
    assert ctx.dropped == ["expired session store segment"]
    store.put(Windowed("k", SessionWindow(150_001, 150_001)), "edge")
    found = [(kv.key.window, kv.value) for kv in store.find_sessions("k", 0, 400_000)]
    assert found == [(SessionWindow(150_001, 150_001), "edge"), (SessionWindow(349_000, 350_000), "now")]


def test_segmented_session_remove_advances_observed_time() -> None:
    store, _ = session_store(True, 20)
    store.put(Windowed("k", SessionWindow(0, 5)), "a")
    store.remove(Windowed("x", SessionWindow(0, 100)))
    assert store.fetch_session("k", 0, 5) is None


@pytest.mark.parametrize("persistent", [True, False])
def test_restore_in_any_order_keeps_what_is_live_at_the_batch_max(persistent: bool) -> None:
    store, ctx = window_store(persistent, 20, 10)
    ((_, restore),) = ctx.registered

    def rec(start: int, value: str) -> tuple[bytes, bytes, int]:
        return b"k" + start.to_bytes(8, "big") + (0).to_bytes(4, "big"), value.encode(), start

    # the expired record comes first, as an unordered (Spark MapState) replay may give it
    restore([rec(3, "old"), rec(30, "mid"), rec(42, "new")])
    assert ctx.dropped == []
    assert list(store.fetch("k", 0, 100)) == [KeyValue(30, "mid"), KeyValue(42, "new")]


def test_persistent_window_store_scans_several_keys_in_rocksdb_order() -> None:
    # RocksDBSegmentedBytesStore: segment by segment, within one by the store key bytes (key, start,
    # seqnum); the in-memory store goes by window start, then key
    rocks, _ = window_store(True, 200_000, 10)
    mem, _ = window_store(False, 200_000, 10)
    for store in (rocks, mem):
        for key, start in (("b", 10), ("a", 20), ("b", 100_005), ("a", 10), ("ab", 10), ("a", 100_000)):
            store.put(key, key, start)

    def order(it: Any) -> list[tuple[str, int]]:
        with it:
            return [(kv.key.key, kv.key.window.start) for kv in it]

    # segments of 100 s (retention 200 s): [0, 100 s) then [100 s, 200 s)
    assert order(rocks.fetch_all(0, 200_000)) == [
        ("a", 10),
        ("a", 20),
        ("ab", 10),
        ("b", 10),
        ("a", 100_000),
        ("b", 100_005),
    ]
    assert order(rocks.backward_fetch_all(0, 200_000)) == list(reversed(order(rocks.fetch_all(0, 200_000))))
    assert order(rocks.fetch_range("a", "b", 0, 50)) == [("a", 10), ("a", 20), ("ab", 10), ("b", 10)]
    assert order(mem.fetch_all(0, 50)) == [("a", 10), ("ab", 10), ("b", 10), ("a", 20)]


def test_caching_layer_merges_in_the_order_of_the_store_below() -> None:
    store = Stores.window_store_builder(Stores.persistent_window_store("w", 200_000, 10, False), S, S)
    cached = store.with_caching_enabled().build()
    cached.init(FakeContext(), cached)
    cached.put("b", "b", 10)
    cached.put("a", "a", 20)  # both only in the cache
    with cached.fetch_all(0, 50) as it:
        assert [(kv.key.key, kv.key.window.start) for kv in it] == [("a", 20), ("b", 10)]
