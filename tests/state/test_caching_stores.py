"""Caching layers: layering, reads merged with the store below, writes reaching the changelog and the
flush listener only when the cache flushes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kspark.kstream.windowed import SessionWindow, TimeWindow, Windowed
from kspark.processor.api import Headers
from kspark.serde import Serdes
from kspark.state import Stores, ValueAndTimestamp
from kspark.state.internals.caching import CachingKeyValueStore, CachingSessionStore, CachingWindowStore
from kspark.state.internals.change_logging import ChangeLoggingKeyValueBytesStore

from .conftest import FakeContext


@dataclass
class _RecordContext:
    timestamp: int
    headers: Headers = field(default_factory=Headers)


class CachingContext(FakeContext):
    """A FakeContext with a switchable record context, as the engine's context has."""

    def __init__(self, cache_bytes: int = 10_000, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cache_bytes = cache_bytes
        self.record_context: Any = _RecordContext(0)

    def app_config(self) -> dict[str, Any]:
        return {"application.id": "app", "statestore.cache.max.bytes": self.cache_bytes}

    def at(self, timestamp: int) -> None:
        self.record_context = _RecordContext(timestamp)

    def timestamp(self) -> int:
        ts: int = self.record_context.timestamp
        return ts


class Listener:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, Any, Any, int]] = []

    def __call__(self, key: Any, new: Any, old: Any, timestamp: int, headers: Any) -> None:
        self.calls.append((key, new, old, timestamp))


def build(builder: Any, ctx: CachingContext) -> Any:
    store = builder.build()
    store.init(ctx, store)
    return store


def kv_store(ctx: CachingContext, *, timestamped: bool = False) -> Any:
    supplier = Stores.in_memory_key_value_store("kv")
    make = Stores.timestamped_key_value_store_builder if timestamped else Stores.key_value_store_builder
    return build(make(supplier, None, None).with_caching_enabled(), ctx)


def test_layers_are_metered_caching_change_logging_inner() -> None:
    store = kv_store(CachingContext())
    assert store.caching_enabled
    assert isinstance(store.wrapped, CachingKeyValueStore)
    assert isinstance(store.wrapped.wrapped, ChangeLoggingKeyValueBytesStore)
    window = Stores.window_store_builder(Stores.in_memory_window_store("w", 100, 10, False), None, None)
    assert isinstance(window.with_caching_enabled().build().wrapped, CachingWindowStore)
    session = Stores.session_store_builder(Stores.in_memory_session_store("s", 100), None, None)
    assert isinstance(session.with_caching_enabled().build().wrapped, CachingSessionStore)
    plain = Stores.key_value_store_builder(Stores.in_memory_key_value_store("p"), None, None).build()
    assert not plain.caching_enabled and not isinstance(plain.wrapped, CachingKeyValueStore)


def test_retained_duplicates_disable_window_caching() -> None:
    builder = Stores.window_store_builder(Stores.in_memory_window_store("w", 100, 10, True), None, None)
    store = builder.with_caching_enabled().build()
    assert not store.caching_enabled
    assert not isinstance(store.wrapped, CachingWindowStore)


def test_key_value_writes_reach_the_changelog_once_per_key_at_flush() -> None:
    ctx = CachingContext()
    store = kv_store(ctx)
    ctx.at(1)
    store.put("a", "1")
    ctx.at(2)
    store.put("b", "2")
    ctx.at(3)
    store.put("a", "3")
    store.delete("c")  # never stored: Kafka's caching store still writes (and logs) the tombstone
    assert ctx.logged == []
    assert store.get("a") == "3"
    store.flush()
    assert ctx.logged == [("kv", b"b", b"2", 2), ("kv", b"a", b"3", 3), ("kv", b"c", None, 3)]
    store.flush()
    assert len(ctx.logged) == 3


def test_key_value_reads_merge_the_cache_with_the_store() -> None:
    ctx = CachingContext()
    store = kv_store(ctx)
    store.put_all([("a", "1"), ("b", "2"), ("c", "3"), ("ab", "4")])
    store.flush()
    store.put("b", None)
    store.put("bb", "5")
    store.put("a", "6")
    assert store.get("b") is None
    assert [(kv.key, kv.value) for kv in store.all()] == [("a", "6"), ("ab", "4"), ("bb", "5"), ("c", "3")]
    assert [kv.key for kv in store.reverse_all()] == ["c", "bb", "ab", "a"]
    assert [kv.key for kv in store.range("ab", "c")] == ["ab", "bb", "c"]
    assert [kv.key for kv in store.reverse_range("a", "bb")] == ["bb", "ab", "a"]
    assert [kv.key for kv in store.prefix_scan("a", Serdes.String())] == ["a", "ab"]
    assert store.put_if_absent("a", "x") == "6"
    assert store.put_if_absent("d", "7") is None
    assert store.delete("c") == "3"
    assert [kv.key for kv in store.all()] == ["a", "ab", "bb", "d"]


def test_flush_listener_gets_typed_entries_with_old_values_when_asked() -> None:
    ctx = CachingContext()
    store = kv_store(ctx, timestamped=True)
    listener = Listener()
    assert store.set_flush_listener(listener, True)
    ctx.at(5)
    store.put("a", ValueAndTimestamp("1", 5))
    store.flush()
    ctx.at(7)
    store.put("a", ValueAndTimestamp("2", 6))
    store.put("a", ValueAndTimestamp("3", 7))
    store.put("gone", ValueAndTimestamp("x", 7))
    store.delete("gone")  # never flushed: neither old nor new, so dropped silently
    store.flush()
    assert listener.calls == [
        ("a", ValueAndTimestamp("1", 5), None, 5),
        ("a", ValueAndTimestamp("3", 7), ValueAndTimestamp("1", 5), 7),
    ]
    assert [(k, ts) for _, k, _, ts in ctx.logged] == [(b"a", 5), (b"a", 7)]


def test_without_old_values_only_deletes_read_the_store() -> None:
    ctx = CachingContext()
    store = kv_store(ctx)
    listener = Listener()
    store.set_flush_listener(listener, False)
    store.put("a", "1")
    store.flush()
    store.put("a", "2")
    store.delete("a")
    store.flush()
    # a delete is forwarded (the store had a value) but without the old value
    assert listener.calls == [("a", "1", None, 0), ("a", None, None, 0)]


def test_no_listener_without_a_caching_layer() -> None:
    store = build(
        Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"), None, None), CachingContext()
    )
    assert store.set_flush_listener(Listener(), True) is False


def test_window_store_reads_merge_and_flush_forwards_windowed_keys() -> None:
    ctx = CachingContext()
    supplier = Stores.in_memory_window_store("w", 1000, 10, False)
    store = build(Stores.window_store_builder(supplier, None, None).with_caching_enabled(), ctx)
    listener = Listener()
    store.set_flush_listener(listener, True)
    store.put("a", "1", 0)
    store.put("b", "2", 0)
    store.flush()
    assert listener.calls == [
        (Windowed("a", TimeWindow(0, 10)), "1", None, 0),
        (Windowed("b", TimeWindow(0, 10)), "2", None, 0),
    ]
    ctx.at(3)  # the entries carry the record context of their write, not of the flush
    store.put("a", "3", 10)
    store.put("b", None, 0)
    assert store.fetch("a", 10) == "3"
    assert store.fetch("b", 0) is None
    assert [(kv.key, kv.value) for kv in store.fetch("a", 0, 20)] == [(0, "1"), (10, "3")]
    assert [kv.key for kv in store.backward_fetch("a", 0, 20)] == [10, 0]
    assert [(kv.key.key, kv.key.window.start) for kv in store.fetch_all(0, 20)] == [("a", 0), ("a", 10)]
    assert [(kv.key.key, kv.key.window.start) for kv in store.all()] == [("a", 0), ("a", 10)]
    assert [kv.key.key for kv in store.fetch_range("a", "b", 0, 0)] == ["a"]
    ctx.at(99)
    store.flush()
    assert listener.calls[2:] == [
        (Windowed("a", TimeWindow(10, 20)), "3", None, 3),
        (Windowed("b", TimeWindow(0, 10)), None, "2", 3),
    ]


def test_session_store_reads_merge_in_the_in_memory_store_order() -> None:
    ctx = CachingContext(value_serde=Serdes.Long())
    supplier = Stores.in_memory_session_store("s", 1000)
    store = build(Stores.session_store_builder(supplier, None, None).with_caching_enabled(), ctx)
    listener = Listener()
    store.set_flush_listener(listener, False)
    store.put(Windowed("a", SessionWindow(0, 5)), 1)
    store.put(Windowed("b", SessionWindow(2, 5)), 2)
    store.flush()
    store.put(Windowed("a", SessionWindow(3, 5)), 3)
    store.put(Windowed("a", SessionWindow(8, 9)), 4)
    store.remove(Windowed("b", SessionWindow(2, 5)))
    # end ascending, then key, then start descending
    assert [
        (kv.key.key, kv.key.window.start, kv.key.window.end, kv.value) for kv in store.fetch_range("a", "b")
    ] == [
        ("a", 3, 5, 3),
        ("a", 0, 5, 1),
        ("a", 8, 9, 4),
    ]
    assert [kv.key.window.start for kv in store.find_sessions("a", 6, 10)] == [8]
    assert [kv.key.window.start for kv in store.find_sessions("a", 0, 3)] == [3, 0]
    assert [kv.key.window.start for kv in store.backward_fetch("a")] == [8, 0, 3]
    assert store.fetch_session("a", 3, 5) == 3
    assert store.fetch_session("b", 2, 5) is None
    store.flush()
    assert listener.calls[2:] == [
        (Windowed("a", SessionWindow(3, 5)), 3, None, 0),
        (Windowed("a", SessionWindow(8, 9)), 4, None, 0),
        (Windowed("b", SessionWindow(2, 5)), None, None, 0),
    ]
    assert [kv.key.key for kv in store.fetch_range(None, None)] == ["a", "a", "a"]
