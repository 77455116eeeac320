"""QueryableStoreTypes: accepted store kinds and read-only views."""

from __future__ import annotations

from typing import Any

import pytest

from kspark.errors import InvalidStateStoreException
from kspark.key_value import KeyValue
from kspark.kstream.windowed import SessionWindow, Window, Windowed
from kspark.serde import Serdes
from kspark.state import QueryableStoreTypes, Stores, ValueAndTimestamp

from .conftest import FakeContext


def opened(builder: Any) -> Any:
    store = builder.build()
    store.init(FakeContext(), store)
    return store


def test_timestamped_store_as_plain_key_value_unwraps() -> None:
    store = opened(
        Stores.timestamped_key_value_store_builder(Stores.in_memory_key_value_store("t"), None, None)
    )
    store.put("a", ValueAndTimestamp("1", 5))
    plain = QueryableStoreTypes.key_value_store().create(store)
    assert plain.get("a") == "1"
    assert list(plain.all()) == [KeyValue("a", "1")]
    ts = QueryableStoreTypes.timestamped_key_value_store().create(store)
    assert ts.get("a") == ValueAndTimestamp("1", 5)


def test_type_mismatch_is_refused() -> None:
    store = opened(Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"), None, None))
    assert QueryableStoreTypes.key_value_store().accepts(store)
    assert not QueryableStoreTypes.timestamped_key_value_store().accepts(store)
    assert not QueryableStoreTypes.window_store().accepts(store)
    with pytest.raises(InvalidStateStoreException, match="does not accept"):
        QueryableStoreTypes.window_store().create(store)


def test_view_has_no_writes_and_checks_open() -> None:
    store = opened(Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"), None, None))
    view = QueryableStoreTypes.key_value_store().create(store)
    assert not hasattr(view, "put")
    store.close()
    with pytest.raises(InvalidStateStoreException, match="not open"):
        view.get("a")


def test_composite_over_tasks_concatenates() -> None:
    a = opened(Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"), None, None))
    b = opened(Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"), None, None))
    a.put("x", "1")
    b.put("a", "2")
    view = QueryableStoreTypes.key_value_store().create([a, b])
    assert [kv.key for kv in view.all()] == ["x", "a"]
    assert view.get("a") == "2"
    assert view.approximate_num_entries() == 2


def test_window_and_session_views() -> None:
    w = opened(
        Stores.timestamped_window_store_builder(
            Stores.in_memory_window_store("w", 100, 10, False), None, None
        )
    )
    w.put("k", ValueAndTimestamp("v", 3), 10)
    view = QueryableStoreTypes.window_store().create(w)
    assert view.fetch("k", 10) == "v"
    assert list(view.fetch("k", 0, 20)) == [KeyValue(10, "v")]
    assert list(view.fetch_all(0, 20)) == [KeyValue(Windowed("k", Window(10, 20)), "v")]
    s = opened(Stores.session_store_builder(Stores.in_memory_session_store("s", 100), None, Serdes.Long()))
    s.put(Windowed("k", SessionWindow(1, 2)), 9)
    sview = QueryableStoreTypes.session_store().create(s)
    assert list(sview.fetch("k")) == [KeyValue(Windowed("k", Window(1, 2)), 9)]
    assert sview.fetch_session("k", 1, 2) == 9
    assert not QueryableStoreTypes.session_store().accepts(w)


def test_window_and_session_views_read_backwards() -> None:
    w = opened(
        Stores.timestamped_window_store_builder(
            Stores.in_memory_window_store("w", 100, 10, False), None, None
        )
    )
    for key, start in [("a", 10), ("b", 10), ("a", 20)]:
        w.put(key, ValueAndTimestamp(f"{key}{start}", start), start)
    view = QueryableStoreTypes.window_store().create(w)
    forward = [(kv.key.key, kv.key.window.start) for kv in view.fetch_all(0, 30)]
    assert forward == [("a", 10), ("b", 10), ("a", 20)]
    assert [(kv.key.key, kv.key.window.start) for kv in view.backward_fetch_all(0, 30)] == forward[::-1]
    assert [(kv.key.key, kv.key.window.start) for kv in view.backward_all()] == forward[::-1]
    s = opened(Stores.session_store_builder(Stores.in_memory_session_store("s", 100), None, Serdes.Long()))
    s.put(Windowed("k", SessionWindow(1, 2)), 1)
    s.put(Windowed("k", SessionWindow(5, 8)), 2)
    sview = QueryableStoreTypes.session_store().create(s)
    assert [kv.value for kv in sview.fetch("k")] == [1, 2]
    assert [kv.value for kv in sview.backward_fetch("k")] == [2, 1]
    assert [kv.value for kv in sview.backward_find_sessions("k", 0, 10)] == [2, 1]
    assert list(sview.backward_find_sessions("other", 0, 10)) == []
