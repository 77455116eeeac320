"""Window stores against a brute-force model of Kafka's InMemoryWindowStore."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kspark.key_value import KeyValue
from kspark.kstream.windowed import Window, Windowed
from kspark.serde import Serdes
from kspark.state import Stores, ValueAndTimestamp

from .conftest import FakeContext

RETENTION = 50
SIZE = 10


def window_store(
    retain_duplicates: bool = False, ctx: FakeContext | None = None, timestamped: bool = False
) -> Any:
    supplier = Stores.in_memory_window_store("w", RETENTION, SIZE, retain_duplicates)
    build = Stores.timestamped_window_store_builder if timestamped else Stores.window_store_builder
    store = build(supplier, Serdes.String(), Serdes.String()).build()
    store.init(ctx or FakeContext(), store)
    return store


class Model:
    """Kafka's rules, stated directly: observed time = max start put; live = start > observed - retention."""

    def __init__(self, retain_duplicates: bool) -> None:
        self.dups = retain_duplicates
        self.observed = -1
        self.records: dict[tuple[int, bytes], list[tuple[int, str]]] = {}
        self.seq = 0

    def put(self, key: str, value: str | None, start: int) -> None:
        self.observed = max(self.observed, start)
        if start <= self.observed - RETENTION:
            return
        kb = key.encode()
        if self.dups:
            if value is not None:
                self.seq += 1
                self.records.setdefault((start, kb), []).append((self.seq, value))
        elif value is None:
            self.records.pop((start, kb), None)
        else:
            self.records[(start, kb)] = [(0, value)]

    def live(self) -> list[tuple[int, bytes, str]]:
        min_live = self.observed - RETENTION + 1
        out: list[tuple[int, bytes, str, int]] = []
        for (start, kb), vals in self.records.items():
            if start >= min_live:
                out.extend((start, kb, v, seq) for seq, v in vals)
        # duplicates sort by key + 4-byte sequence number, as the store's key bytes do
        out.sort(key=lambda r: (r[0], r[1] + r[3].to_bytes(4, "big") if self.dups else r[1]))
        return [(s, kb, v) for s, kb, v, _ in out]


ops = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "ab", "c"]),
        st.none() | st.sampled_from(["x", "y", "z"]),
        st.integers(0, 200),
    ),
    max_size=40,
)


@pytest.mark.parametrize("dups", [False, True])
def test_fetch_matches_model(dups: bool) -> None:
    @settings(max_examples=120, deadline=None)
    @given(ops, st.sampled_from(["a", "b", "ab", "c"]), st.integers(0, 220), st.integers(0, 220))
    def check(puts: list[tuple[str, str | None, int]], key: str, t1: int, t2: int) -> None:
        store, model = window_store(dups), Model(dups)
        for k, v, t in puts:
            store.put(k, v, t)
            model.put(k, v, t)
        live = model.live()
        expected = [KeyValue(s, v) for s, kb, v in live if kb == key.encode() and t1 <= s <= t2]
        assert list(store.fetch(key, t1, t2)) == expected
        assert list(store.backward_fetch(key, t1, t2)) == expected[::-1]
        all_expected = [KeyValue(Windowed(kb.decode(), Window(s, s + SIZE)), v) for s, kb, v in live]
        assert list(store.all()) == all_expected
        ranged = [kv for kv in all_expected if t1 <= kv.key.window.start <= t2]
        assert list(store.fetch_all(t1, t2)) == ranged
        assert list(store.backward_fetch_all(t1, t2)) == ranged[::-1]
        in_keys = [kv for kv in ranged if "a" <= kv.key.key <= "b"]
        assert list(store.fetch_range("a", "b", t1, t2)) == in_keys
        if not dups:
            single = {(s, kb): v for s, kb, v in live}
            assert store.fetch(key, t1) == single.get((t1, key.encode()))

    check()


def test_put_older_than_retention_is_dropped_and_counted() -> None:
    ctx = FakeContext()
    store = window_store(ctx=ctx)
    store.put("a", "new", 100)
    store.put("a", "old", 50)  # 50 <= 100 - 50: expired
    store.put("a", "edge", 51)
    assert ctx.dropped == ["expired window store segment"]
    assert list(store.fetch("a", 0, 200)) == [KeyValue(51, "edge"), KeyValue(100, "new")]
    store.put("b", "later", 101)  # now 51 <= 101 - 50: 51 expires
    assert list(store.fetch("a", 0, 200)) == [KeyValue(100, "new")]
    assert store.fetch("a", 51) is None


def test_all_orders_by_start_then_key_bytes() -> None:
    store = window_store()
    store.put("b", "1", 10)
    store.put("a", "2", 20)
    store.put("a", "3", 10)
    assert [(kv.key.key, kv.key.window.start, kv.value) for kv in store.all()] == [
        ("a", 10, "3"),
        ("b", 10, "1"),
        ("a", 20, "2"),
    ]
    assert [kv.value for kv in store.backward_all()] == ["2", "1", "3"]


def test_duplicates_are_kept_and_delete_is_noop() -> None:
    store = window_store(retain_duplicates=True)
    store.put("a", "1", 0)
    store.put("a", "2", 0)
    store.put("a", None, 0)
    assert list(store.fetch("a", 0, 0)) == [KeyValue(0, "1"), KeyValue(0, "2")]
    assert store.fetch("a", 0) is None  # Kafka looks up the bare key: never found with duplicates


def test_invalid_key_range_is_empty() -> None:
    store = window_store()
    store.put("a", "1", 0)
    assert list(store.fetch_range("b", "a", 0, 10)) == []


def test_window_end_clamped_and_windowed_keys() -> None:
    supplier = Stores.in_memory_window_store("w", 2**63 - 1, 2**63 - 1, False)
    store = Stores.window_store_builder(supplier, Serdes.String(), Serdes.String()).build()
    store.init(FakeContext(), store)
    store.put("a", "1", 5)
    assert list(store.all()) == [KeyValue(Windowed("a", Window(5, 2**63 - 1)), "1")]


def test_timestamped_window_store_holds_value_and_timestamp() -> None:
    ctx = FakeContext()
    store = window_store(ctx=ctx, timestamped=True)
    store.put("a", ValueAndTimestamp("v", 7), 0)
    assert store.fetch("a", 0) == ValueAndTimestamp("v", 7)
    assert store.wrapped.wrapped.fetch_window(b"a", 0) == (7).to_bytes(8, "big") + b"v"
    # changelog: plain value with the value's timestamp, key + start + seqnum
    assert ctx.logged == [("w", b"a" + (0).to_bytes(8, "big") + (0).to_bytes(4, "big"), b"v", 7)]


def test_size_validation() -> None:
    with pytest.raises(
        ValueError, match=r"must be no smaller than its window size. Got size=\[10\], retention=\[5\]"
    ):
        Stores.in_memory_window_store("w", 5, 10, False)
    with pytest.raises(ValueError, match="retentionPeriod cannot be negative"):
        Stores.persistent_window_store("w", -1, 0, False)
    with pytest.raises(ValueError, match="windowSize cannot be negative"):
        Stores.in_memory_window_store("w", 1, -1, False)
