"""The record cache itself: LRU eviction, dirty-entry flush order, size accounting, the per-task bound."""

from __future__ import annotations

from typing import Any

import pytest

from kspark.state.internals.cache import (
    DEFAULT_CACHE_MAX_BYTES,
    ENTRY_OVERHEAD_BYTES,
    DirtyEntry,
    LRUCacheEntry,
    ThreadCache,
    task_cache,
)


def dirty(value: bytes | None) -> LRUCacheEntry:
    return LRUCacheEntry(value, True)


class Recorder:
    def __init__(self) -> None:
        self.flushes: list[list[tuple[Any, bytes | None]]] = []

    def __call__(self, entries: list[DirtyEntry]) -> None:
        self.flushes.append([(e.key, e.new_value) for e in entries])


def cache_with(namespace: str, max_bytes: int) -> tuple[ThreadCache, Recorder]:
    cache = ThreadCache(max_bytes)
    cache.named_cache(namespace)
    recorder = Recorder()
    cache.add_dirty_entry_flush_listener(namespace, recorder)
    return cache, recorder


def test_entry_size_is_key_plus_value_plus_fixed_overhead() -> None:
    cache, _ = cache_with("s", 1000)
    cache.put("s", b"key", dirty(b"value"))
    assert cache.size_bytes() == 3 + 5 + ENTRY_OVERHEAD_BYTES
    cache.put("s", b"key", dirty(b"v"))  # an overwrite replaces the old size
    assert cache.size_bytes() == 3 + 1 + ENTRY_OVERHEAD_BYTES
    cache.put("s", b"key", dirty(None))
    assert cache.size_bytes() == 3 + ENTRY_OVERHEAD_BYTES


def test_flush_hands_dirty_entries_in_order_of_last_update_and_marks_them_clean() -> None:
    cache, rec = cache_with("s", 10_000)
    cache.put("s", b"a", dirty(b"1"))
    cache.put("s", b"b", dirty(b"2"))
    cache.put("s", b"a", dirty(b"3"))
    cache.flush("s")
    assert rec.flushes == [[(b"b", b"2"), (b"a", b"3")]]
    entry = cache.get("s", b"a")
    assert entry is not None and entry.value == b"3" and not entry.dirty
    cache.flush("s")  # nothing dirty: the listener is not called
    assert len(rec.flushes) == 1


def test_flushed_tombstones_leave_the_cache() -> None:
    cache, rec = cache_with("s", 10_000)
    cache.put("s", b"a", dirty(b"1"))
    cache.put("s", b"b", dirty(None))
    cache.flush("s")
    assert rec.flushes == [[(b"a", b"1"), (b"b", None)]]
    assert cache.get("s", b"b") is None
    assert cache.get("s", b"a") is not None


def test_eviction_takes_the_least_recently_used_and_flushes_the_namespace_evicted_first() -> None:
    one = 1 + 1 + ENTRY_OVERHEAD_BYTES
    cache, rec = cache_with("s", 3 * one)
    cache.put("s", b"a", dirty(b"1"))
    cache.put("s", b"b", dirty(b"2"))
    cache.put("s", b"c", dirty(b"3"))
    assert cache.get("s", b"a") is not None  # a read refreshes a: b is now the eldest
    assert rec.flushes == []
    cache.put("s", b"d", dirty(b"4"))
    assert rec.flushes == [[(b"b", b"2"), (b"a", b"1"), (b"c", b"3"), (b"d", b"4")]]
    assert cache.get("s", b"b") is None
    assert cache.size_bytes() == 3 * one


def test_evicting_a_clean_entry_does_not_flush() -> None:
    one = 1 + 1 + ENTRY_OVERHEAD_BYTES
    cache, rec = cache_with("s", one)
    cache.put("s", b"a", LRUCacheEntry(b"1"))
    cache.put("s", b"b", LRUCacheEntry(b"2"))
    assert rec.flushes == []
    assert cache.get("s", b"a") is None and cache.get("s", b"b") is not None


def test_size_zero_evicts_every_put_at_once() -> None:
    cache, rec = cache_with("s", 0)
    cache.put("s", b"a", dirty(b"1"))
    cache.put("s", b"a", dirty(b"2"))
    assert rec.flushes == [[(b"a", b"1")], [(b"a", b"2")]]
    assert cache.size_bytes() == 0


def test_the_bound_is_shared_but_only_the_written_namespace_is_evicted() -> None:
    one = 1 + 1 + ENTRY_OVERHEAD_BYTES
    cache = ThreadCache(2 * one)
    recorders = {}
    for ns in ("x", "y"):
        cache.named_cache(ns)
        recorders[ns] = Recorder()
        cache.add_dirty_entry_flush_listener(ns, recorders[ns])
    cache.put("x", b"a", dirty(b"1"))
    cache.put("x", b"b", dirty(b"2"))
    cache.put("y", b"c", dirty(b"3"))  # over the bound: y evicts its own (only) entry
    assert recorders["x"].flushes == []
    assert recorders["y"].flushes == [[(b"c", b"3")]]


def test_clean_put_over_a_dirty_entry_is_refused() -> None:
    cache, _ = cache_with("s", 1000)
    cache.put("s", b"a", dirty(b"1"))
    with pytest.raises(RuntimeError, match="clean entry"):
        cache.put("s", b"a", LRUCacheEntry(b"1"))


def test_negative_size_is_refused() -> None:
    with pytest.raises(ValueError, match=r"statestore\.cache\.max\.bytes"):
        ThreadCache(-1)


class _Ctx:
    def __init__(self, config: dict[str, Any]) -> None:
        self._config = config

    def app_config(self) -> dict[str, Any]:
        return self._config


def test_task_cache_is_one_per_context_and_sized_from_the_config() -> None:
    a = _Ctx({"statestore.cache.max.bytes": 123})
    b = _Ctx({"cache.max.bytes.buffering": 7})
    assert task_cache(a) is task_cache(a)
    assert task_cache(a) is not task_cache(b)
    assert task_cache(a).max_bytes == 123
    assert task_cache(b).max_bytes == 7
    assert task_cache(_Ctx({})).max_bytes == DEFAULT_CACHE_MAX_BYTES
