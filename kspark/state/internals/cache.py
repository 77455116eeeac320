"""The record cache of KIP-63 (Kafka's ``ThreadCache``, ``NamedCache`` and ``LRUCacheEntry``).

One :class:`ThreadCache` per task is shared by the task's caching stores; each
store owns a :class:`NamedCache` (a namespace) in it. A cache is LRU over all
its entries; a write marks its entry dirty, and a flush hands the dirty
entries of one namespace to that namespace's listener in the order of their
*last* update (Kafka's ``dirtyKeys`` ordering). When a put takes the cache
past its bound, entries of the namespace that was just written are evicted
eldest first; evicting a dirty entry flushes the whole namespace, the evicted
entry first, exactly as Kafka's ``NamedCache.evict``.

Deviations from Kafka, on purpose:

* Size. Kafka gives every stream thread ``statestore.cache.max.bytes /
  num.stream.threads`` bytes shared by the thread's tasks. kspark runs tasks
  independently (one per Spark partition on the Spark runner), so **each task
  gets the full configured size**. With ``0`` there is no cache at all: the
  typed store layer drops its caching layer at ``init``, as Kafka's
  ``InternalTopologyBuilder.rewriteTopology`` strips caching from every store
  factory, so writes reach the store and DSL processors forward at once
  (a ``ThreadCache`` of size 0 would instead evict on every put, and its
  flush would swallow deletes of absent keys).
* Accounting. An entry costs ``len(key) + len(value) + ENTRY_OVERHEAD_BYTES``
  (key: the store's cache key bytes, see :func:`cache_key_size`). Kafka counts
  the key, the value, three 8-byte LRU references, a dirty flag and the record
  context (offset, timestamp, partition, topic, headers); the fixed 64 bytes
  stand in for all of that, so a bound behaves like Kafka's within a few
  percent for typical small records.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from sortedcontainers import SortedList

__all__ = [
    "ENTRY_OVERHEAD_BYTES",
    "DEFAULT_CACHE_MAX_BYTES",
    "LRUCacheEntry",
    "DirtyEntry",
    "NamedCache",
    "ThreadCache",
    "task_cache",
    "configured_cache_max_bytes",
]

ENTRY_OVERHEAD_BYTES = 64
"""What one entry costs beyond its key and value bytes (see the module docstring)."""

DEFAULT_CACHE_MAX_BYTES = 10 * 1024 * 1024
"""Kafka's default ``statestore.cache.max.bytes``, used when the context has no config."""


@dataclass
class LRUCacheEntry:
    """A cached value (``None`` = deleted) and the record context of the write that set it.

    ``record_context`` is whatever the task context held when the value was
    written; the cache restores it while the entry is flushed, so forwarded
    records and changelog writes carry that record's timestamp, offset and
    headers, as Kafka's ``LRUCacheEntry.context()``.
    """

    value: bytes | None
    dirty: bool = False
    record_context: Any = None
    size: int = 0

    def timestamp(self, default: int = -1) -> int:
        rc = self.record_context
        ts = getattr(rc, "timestamp", None)
        return ts if isinstance(ts, int) else default

    def headers(self) -> Any:
        return getattr(self.record_context, "headers", None)


@dataclass(frozen=True)
class DirtyEntry:
    """A dirty entry handed to a namespace's flush listener."""

    key: Any
    new_value: bytes | None
    entry: LRUCacheEntry = field(compare=False)


FlushListener = Callable[[list[DirtyEntry]], None]


def _value_size(value: bytes | None) -> int:
    return 0 if value is None else len(value)


class NamedCache:
    """The entries of one store: LRU order, dirty keys in last-update order, and a sorted key index.

    Keys are whatever the owning store uses (``bytes`` for key-value stores,
    tuples for window and session stores); they must be hashable and mutually
    ordered, so range reads can merge the cache with the store below it.
    """

    def __init__(self, name: str, key_size: Callable[[Any], int]) -> None:
        self.name = name
        self._key_size = key_size
        self._lru: OrderedDict[Hashable, LRUCacheEntry] = OrderedDict()  # eldest first
        self._dirty: dict[Hashable, None] = {}  # an ordered set: last update last
        self._sorted: SortedList = SortedList()
        self.size_bytes = 0
        self.listener: FlushListener | None = None
        self.num_flushes = 0

    def __len__(self) -> int:
        return len(self._lru)

    def is_empty(self) -> bool:
        return not self._lru

    def dirty_keys(self) -> list[Any]:
        return list(self._dirty)

    def get(self, key: Hashable) -> LRUCacheEntry | None:
        entry = self._lru.get(key)
        if entry is not None:
            self._lru.move_to_end(key)
        return entry

    def put(self, key: Hashable, entry: LRUCacheEntry) -> None:
        if not entry.dirty and key in self._dirty:
            raise RuntimeError(
                f"Attempting to put a clean entry for key [{key!r}] into NamedCache [{self.name}] "
                "when it already contains a dirty entry for the same key"
            )
        entry.size = self._key_size(key) + _value_size(entry.value) + ENTRY_OVERHEAD_BYTES
        old = self._lru.get(key)
        if old is not None:
            self.size_bytes -= old.size
            self._lru.move_to_end(key)
        else:
            self._sorted.add(key)
        self._lru[key] = entry
        if entry.dirty:
            # remove then add: flush order is the order of the last update
            self._dirty.pop(key, None)
            self._dirty[key] = None
        self.size_bytes += entry.size

    def delete(self, key: Hashable) -> LRUCacheEntry | None:
        entry = self._lru.pop(key, None)
        if entry is None:
            return None
        self._sorted.remove(key)
        self._dirty.pop(key, None)
        self.size_bytes -= entry.size
        return entry

    def keys_in_range(self, low: Any, high: Any, *, reverse: bool = False) -> list[Any]:
        """Cached keys with ``low <= key <= high`` (``None`` = unbounded), in key order."""
        return list(self._sorted.irange(low, high, inclusive=(True, True), reverse=reverse))

    def peek(self, key: Hashable) -> LRUCacheEntry | None:
        """The entry without touching the LRU order (range reads, as Kafka's cache iterators)."""
        return self._lru.get(key)

    def flush(self) -> None:
        self._flush(None)

    def evict(self) -> None:
        """Drop the eldest entry; if it was dirty, flush the namespace (the evicted entry first)."""
        if not self._lru:
            return
        key, entry = next(iter(self._lru.items()))
        del self._lru[key]
        self._sorted.remove(key)
        self.size_bytes -= entry.size
        if entry.dirty:
            self._flush((key, entry))

    def _flush(self, evicted: tuple[Hashable, LRUCacheEntry] | None) -> None:
        self.num_flushes += 1
        if self.listener is None:
            raise RuntimeError(f"No listener for namespace {self.name} registered with cache")
        if not self._dirty:
            return
        entries: list[DirtyEntry] = []
        if evicted is not None:
            key, entry = evicted
            entries.append(DirtyEntry(key, entry.value, entry))
            self._dirty.pop(key, None)
        deleted: list[Hashable] = []
        for key in self._dirty:
            entry = self._lru[key]
            entries.append(DirtyEntry(key, entry.value, entry))
            entry.dirty = False
            if entry.value is None:
                deleted.append(key)
        # cleared before the listener runs: flushing may write to this cache again
        self._dirty.clear()
        self.listener(entries)
        for key in deleted:
            current = self._lru.get(key)
            # the listener may have re-dirtied the key; only a still-clean tombstone goes
            if current is not None and not current.dirty and current.value is None:
                self.delete(key)

    def clear(self) -> None:
        self._lru.clear()
        self._dirty.clear()
        self._sorted.clear()
        self.size_bytes = 0


class ThreadCache:
    """All named caches of one task, bounded together by ``max_bytes``."""

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError(f"statestore.cache.max.bytes must be >= 0, got {max_bytes}")
        self.max_bytes = max_bytes
        self._caches: dict[str, NamedCache] = {}
        self.num_evicts = 0

    def size_bytes(self) -> int:
        return sum(c.size_bytes for c in self._caches.values())

    def named_cache(self, namespace: str, key_size: Callable[[Any], int] = len) -> NamedCache:
        cache = self._caches.get(namespace)
        if cache is None:
            cache = self._caches[namespace] = NamedCache(namespace, key_size)
        return cache

    def add_dirty_entry_flush_listener(self, namespace: str, listener: FlushListener) -> None:
        self._caches[namespace].listener = listener

    def get(self, namespace: str, key: Hashable) -> LRUCacheEntry | None:
        cache = self._caches.get(namespace)
        return None if cache is None else cache.get(key)

    def put(self, namespace: str, key: Hashable, entry: LRUCacheEntry) -> None:
        cache = self._caches[namespace]
        cache.put(key, entry)
        self._maybe_evict(cache)

    def delete(self, namespace: str, key: Hashable) -> LRUCacheEntry | None:
        cache = self._caches.get(namespace)
        return None if cache is None else cache.delete(key)

    def flush(self, namespace: str) -> None:
        cache = self._caches.get(namespace)
        if cache is not None:
            cache.flush()

    def close(self, namespace: str) -> None:
        cache = self._caches.pop(namespace, None)
        if cache is not None:
            cache.clear()

    def _maybe_evict(self, cache: NamedCache) -> None:
        while self.size_bytes() > self.max_bytes:
            # the put may have caused puts into other caches (a flush forwards downstream);
            # only this namespace is evicted, as in Kafka, so stop once it is empty
            if cache.is_empty():
                return
            cache.evict()
            self.num_evicts += 1


_TASK_CACHES: weakref.WeakKeyDictionary[Any, ThreadCache] = weakref.WeakKeyDictionary()
# Spark's Python workers may run several tasks on threads; each task's cache is its own
_TASK_CACHES_LOCK = threading.Lock()


def configured_cache_max_bytes(context: Any) -> int:
    """The task's ``statestore.cache.max.bytes`` (its deprecated alias if only that is set)."""
    app_config = getattr(context, "app_config", None)
    if not callable(app_config):
        return DEFAULT_CACHE_MAX_BYTES
    config = app_config()
    # StreamsConfig resolves the deprecated alias cache.max.bytes.buffering into this key
    value = config.get("statestore.cache.max.bytes")
    if value is None:
        value = config.get("cache.max.bytes.buffering", DEFAULT_CACHE_MAX_BYTES)
    return int(value)


def task_cache(context: Any) -> ThreadCache:
    """The cache of the task whose context is given (created on first use, sized from its config).

    Keyed by the context object, which is one per task in kspark's engine, so
    every caching store of a task shares one bounded cache.
    """
    with _TASK_CACHES_LOCK:
        cache = _TASK_CACHES.get(context)
        if cache is None:
            cache = _TASK_CACHES[context] = ThreadCache(configured_cache_max_bytes(context))
        return cache
