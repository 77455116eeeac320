"""The time-ordered stores of emit-on-window-close aggregations read with Kafka's bounds.

Expected values follow Kafka 4.1's ``AbstractDualSchemaRocksDBSegmentedBytesStore``
and ``RocksDBTimeOrderedSessionSegmentedBytesStore``: the time-first window
schema reads from ``observed - retention`` (no ``+ 1``), the session store's
scan by end time has no retention bound and orders by end, start, key.
"""

from __future__ import annotations

from typing import Any

import pytest

from kspark.kstream.windowed import SessionWindow, Window, Windowed
from kspark.serde import Serdes
from kspark.state import Stores
from kspark.state.internals.builders import SessionBytesStoreSupplier, WindowBytesStoreSupplier
from kspark.state.internals.time_ordered_stores import TimeOrderedSessionStore, TimeOrderedWindowStore

from .conftest import FakeContext

S = Serdes.String()


def _window_store(time_ordered: bool, retention: int, size: int) -> Any:
    supplier = (
        WindowBytesStoreSupplier("w", retention, size, False, persistent=True, time_ordered=True)
        if time_ordered
        else Stores.persistent_window_store("w", retention, size, False)
    )
    store = Stores.window_store_builder(supplier, S, S).build()
    store.init(FakeContext(), store)
    return store


def _session_store(time_ordered: bool, retention: int) -> Any:
    supplier = (
        SessionBytesStoreSupplier("s", retention, persistent=True, time_ordered=True)
        if time_ordered
        else Stores.persistent_session_store("s", retention)
    )
    store = Stores.session_store_builder(supplier, S, S).build()
    store.init(FakeContext(), store)
    return store


def _starts(it: Any) -> list[tuple[str, int]]:
    with it:
        return [(kv.key.key, kv.key.window.start) for kv in it]


def test_suppliers_make_time_ordered_stores_that_report_persistent() -> None:
    w = WindowBytesStoreSupplier("w", 100, 10, False, persistent=False, time_ordered=True)
    assert w.persistent and type(w.get()) is TimeOrderedWindowStore
    assert w.segment_interval_ms() == 60_000
    s = SessionBytesStoreSupplier("s", 100, persistent=False, time_ordered=True)
    assert s.persistent and type(s.get()) is TimeOrderedSessionStore


def test_window_reads_include_the_start_exactly_retention_behind() -> None:
    # retention 15, observed 115: the time-first schema reads from 100, the key-first one from 101
    for time_ordered, expected in (
        (True, [("a", 100), ("a", 105), ("b", 115)]),
        (False, [("a", 105), ("b", 115)]),
    ):
        store = _window_store(time_ordered, 15, 10)
        store.put("a", "1", 100)
        store.put("a", "2", 105)
        store.put("b", "3", 115)
        assert _starts(store.fetch_all(0, 200)) == expected
        assert _starts(store.all()) == expected
        assert (store.fetch("a", 100) is not None) is time_ordered
        assert store.fetch("a", 99) is None


def test_window_range_ending_below_the_read_bound_is_empty() -> None:
    store = _window_store(True, 15, 10)
    store.put("a", "1", 100)
    store.put("a", "2", 120)  # reads start at 105
    assert _starts(store.fetch_all(0, 104)) == []
    assert _starts(store.fetch_all(0, 105)) == []
    assert _starts(store.fetch_all(105, 120)) == [("a", 120)]


def test_window_fetch_all_orders_by_start_then_key() -> None:
    store = _window_store(True, 1000, 10)
    for key, start in (("b", 10), ("a", 20), ("c", 10), ("a", 10)):
        store.put(key, key, start)
    assert _starts(store.fetch_all(0, 30)) == [("a", 10), ("b", 10), ("c", 10), ("a", 20)]


def test_late_window_put_is_kept_while_its_segment_is_live() -> None:
    store = _window_store(True, 15, 10)
    store.put("a", "1", 200)
    store.put("a", "late", 5)  # segment 0 is live (segments of 60 s): stored, but never read back
    assert store.fetch("a", 5) is None
    assert _starts(store.fetch_all(0, 300)) == [("a", 200)]


def _sessions(it: Any) -> list[tuple[str, int, int]]:
    with it:
        return [(kv.key.key, kv.key.window.start, kv.key.window.end) for kv in it]


def test_session_scan_by_end_time_orders_by_end_start_key_and_ignores_retention() -> None:
    store = _session_store(True, 10)
    for key, start, end in (("b", 5, 8), ("a", 7, 8), ("c", 2, 8), ("a", 1, 3), ("z", 100, 100)):
        store.put(Windowed(key, SessionWindow(start, end)), key)
    # observed 100, retention 10: key lookups hide everything ending before 91, the scan does not
    assert _sessions(store.find_sessions_by_end_time(0, 99)) == [
        ("a", 1, 3),
        ("c", 2, 8),
        ("b", 5, 8),
        ("a", 7, 8),
    ]
    assert _sessions(store.find_sessions("a", 0, 200)) == []
    assert store.fetch_session("b", 5, 8) is None


def test_key_ordered_and_cached_session_stores_cannot_scan_by_end_time() -> None:
    # Kafka: RocksDBSessionStore and CachingSessionStore keep SessionStore's default, which throws
    store = _session_store(False, 1000)
    with pytest.raises(NotImplementedError, match="not supported by this implementation of SessionStore"):
        store.find_sessions_by_end_time(0, 99)
    supplier = SessionBytesStoreSupplier("s", 1000, persistent=True, time_ordered=True)
    cached = Stores.session_store_builder(supplier, S, S).with_caching_enabled().build()
    cached.init(FakeContext(), cached)
    with pytest.raises(NotImplementedError, match="not supported by this implementation of SessionStore"):
        cached.find_sessions_by_end_time(0, 99)


def test_window_keys_are_windows_of_the_store_size() -> None:
    store = _window_store(True, 100, 10)
    store.put("a", "1", 50)
    with store.fetch_all(0, 100) as it:
        assert [kv.key for kv in it] == [Windowed("a", Window(50, 60))]
