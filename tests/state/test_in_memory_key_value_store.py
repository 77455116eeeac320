"""Key-value stores as processors see them: order by serialized bytes, ranges, prefix scans."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kspark.errors import InvalidStateStoreException
from kspark.key_value import KeyValue
from kspark.serde import Serde, Serdes
from kspark.state import Stores
from kspark.state.internals.in_memory_key_value_store import increment_prefix

from .conftest import FakeContext


def kv_store(
    key_serde: Serde[Any], value_serde: Serde[Any] | None = None, *, persistent: bool = False
) -> Any:
    supplier = Stores.persistent_key_value_store("s") if persistent else Stores.in_memory_key_value_store("s")
    store = Stores.key_value_store_builder(supplier, key_serde, value_serde or Serdes.String()).build()
    store.init(FakeContext(), store)
    return store


KEY_CASES: list[tuple[Callable[[], Serde[Any]], st.SearchStrategy[Any]]] = [
    (Serdes.String, st.text(max_size=6)),
    (Serdes.Long, st.integers(-(2**63), 2**63 - 1)),
    (Serdes.Integer, st.integers(-(2**31), 2**31 - 1)),
]


@pytest.mark.parametrize(("serde_factory", "keys"), KEY_CASES)
def test_iteration_order_is_serialized_byte_order(serde_factory: Callable[[], Serde[Any]], keys: Any) -> None:
    @settings(max_examples=60, deadline=None)
    @given(st.lists(keys, max_size=30))
    def check(ks: list[Any]) -> None:
        serde = serde_factory()
        store = kv_store(serde)
        for k in ks:
            store.put(k, repr(k))
        raw = serde.serializer()
        expected = sorted(set(ks), key=lambda k: raw.serialize("t", k) or b"")
        assert [kv.key for kv in store.all()] == expected
        assert [kv.key for kv in store.reverse_all()] == expected[::-1]
        assert [kv.value for kv in store.all()] == [repr(k) for k in expected]
        assert store.approximate_num_entries() == len(expected)

    check()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(-1000, 1000), max_size=30), st.integers(-1000, 1000), st.integers(-1000, 1000))
def test_range_is_inclusive_by_bytes(keys: list[int], lo: int, hi: int) -> None:
    store = kv_store(Serdes.Long())
    for k in keys:
        store.put(k, "v")

    def ser(k: int) -> bytes:
        return k.to_bytes(8, "big", signed=True)  # Kafka's Long layout

    expected = sorted({k for k in keys if ser(lo) <= ser(k) <= ser(hi)}, key=ser)
    assert [kv.key for kv in store.range(lo, hi)] == expected
    assert [kv.key for kv in store.reverse_range(lo, hi)] == expected[::-1]


def test_negative_longs_sort_after_positive_ones() -> None:
    store = kv_store(Serdes.Long())
    for k in [-5, 7, -1, 0, 2**62]:
        store.put(k, str(k))
    assert [kv.key for kv in store.all()] == [0, 7, 2**62, -5, -1]
    # from > to by bytes: Kafka logs a warning and returns nothing
    assert list(store.range(-1, 1)) == []
    assert [kv.key for kv in store.range(1, -1)] == [7, 2**62, -5, -1]


def test_open_ended_ranges() -> None:
    store = kv_store(Serdes.String())
    store.put_all([KeyValue("a", "1"), ("b", "2"), KeyValue("c", "3")])
    assert list(store.range(None, "b")) == [KeyValue("a", "1"), KeyValue("b", "2")]
    assert list(store.range("b", None)) == [KeyValue("b", "2"), KeyValue("c", "3")]
    assert list(store.reverse_range("b", None)) == [KeyValue("c", "3"), KeyValue("b", "2")]
    assert [kv.key for kv in store.range(None, None)] == ["a", "b", "c"]


def test_put_none_deletes_and_delete_returns_old() -> None:
    store = kv_store(Serdes.String())
    store.put("a", "1")
    store.put("a", None)
    assert store.get("a") is None
    store.put("b", "2")
    assert store.delete("b") == "2"
    assert store.delete("b") is None
    assert store.approximate_num_entries() == 0


def test_put_if_absent_returns_previous() -> None:
    store = kv_store(Serdes.String())
    assert store.put_if_absent("a", "1") is None
    assert store.put_if_absent("a", "2") == "1"
    assert store.get("a") == "1"


def test_prefix_scan() -> None:
    store = kv_store(Serdes.String())
    for k in ["k", "k1", "k2", "ka", "l", "j", "k\U0010ffff"]:
        store.put(k, k)
    assert [kv.key for kv in store.prefix_scan("k", Serdes.String().serializer())] == [
        "k",
        "k1",
        "k2",
        "ka",
        "k\U0010ffff",
    ]
    assert list(store.prefix_scan("z", Serdes.String().serializer())) == []
    assert increment_prefix(b"a\xff") == b"b"
    assert increment_prefix(b"\xff\xff") is None


def test_iterator_is_a_key_snapshot_and_skips_deleted_keys() -> None:
    store = kv_store(Serdes.String())
    for k in "abcd":
        store.put(k, k)
    it = store.all()
    assert next(it) == KeyValue("a", "a")
    store.delete("b")
    store.put("c", "C")
    store.put("bb", "new")  # added after the snapshot: not seen, as in Kafka
    assert it.peek_next_key() == "c"
    assert list(it) == [KeyValue("c", "C"), KeyValue("d", "d")]


def test_closed_iterator_raises() -> None:
    store = kv_store(Serdes.String())
    store.put("a", "1")
    it = store.all()
    it.close()
    with pytest.raises(InvalidStateStoreException, match="already been closed"):
        next(it)


def test_closed_store_raises_and_reports() -> None:
    store = kv_store(Serdes.String())
    assert store.is_open()
    store.close()
    assert not store.is_open()
    with pytest.raises(InvalidStateStoreException, match="Store s is currently closed"):
        store.get("a")
    with pytest.raises(InvalidStateStoreException):
        store.put("a", "b")


def test_null_key_refused() -> None:
    store = kv_store(Serdes.String())
    with pytest.raises(ValueError, match="key cannot be null"):
        store.put(None, "v")


def test_persistent_flag() -> None:
    assert kv_store(Serdes.String(), persistent=True).persistent() is True
    assert kv_store(Serdes.String()).persistent() is False
