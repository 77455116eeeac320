"""Caching layers (Kafka's ``CachingKeyValueStore``, ``CachingWindowStore``, ``CachingSessionStore``).

A caching layer sits between the typed (metered) layer and the
change-logging layer: ``metered -> caching -> change-logging -> inner``, as
Kafka layers them. Writes go into the task's record cache
(:mod:`kspark.state.internals.cache`) only; reads look in the cache first,
then in the store below, and range reads merge both (cached tombstones hide
stored entries) in the order of the inner store, so a caching store reads
exactly as the uncached one would.

When the cache flushes the store's dirty entries (at ``flush()`` — the
task's commit — or when the cache bound evicts one), each entry is written
to the store below (so the changelog gets only the last value per key per
flush) and, if a processor registered a flush listener
(``set_flush_listener``, done by the DSL's tuple forwarders), handed to it
with the value the store held before (the old value) when old values were
asked for. Both happen with the task's record context switched to the one of
the write that set the entry, so forwarded records and changelog records
carry that write's timestamp and headers. As in Kafka, an entry that was
neither in the store nor is now (written and deleted between two flushes) is
dropped silently, and a key-value read that misses the cache puts a clean
copy of the stored value into it (read-through, except on global stores).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from kspark.key_value import KeyValue
from kspark.kstream.windowed import SessionWindow, Windowed
from kspark.state.api import KeyValueIterator, StateStore
from kspark.state.internals.cache import DirtyEntry, LRUCacheEntry, NamedCache, ThreadCache, task_cache
from kspark.state.internals.change_logging import WrappedStateStore
from kspark.state.internals.in_memory_key_value_store import INVALID_RANGE_WARNING, increment_prefix
from kspark.state.internals.in_memory_session_store import SCAN_BY_END_UNSUPPORTED
from kspark.state.internals.in_memory_window_store import window_for
from kspark.state.internals.iterators import PeekingKeyValueIterator, empty_iterator

if TYPE_CHECKING:
    from kspark.processor.api import ProcessorContext

__all__ = [
    "RawFlushListener",
    "CachingLayer",
    "CachingKeyValueStore",
    "CachingWindowStore",
    "CachingSessionStore",
]

LOG = logging.getLogger(__name__)

RawFlushListener = Callable[[Any, bytes | None, bytes | None, int, Any], None]
"""``(key, new value bytes, old value bytes, timestamp, headers)``; key is ``bytes`` for key-value
stores and ``Windowed[bytes]`` for window and session stores."""

_LONG_MIN = -(1 << 63)
_LONG_MAX = (1 << 63) - 1


class CachingLayer(WrappedStateStore):
    """What the three caching layers share: the namespace, flushing and the record context switch."""

    def __init__(self, wrapped: Any) -> None:
        super().__init__(wrapped)
        self._cache: ThreadCache | None = None
        self._named: NamedCache | None = None
        self._flush_listener: RawFlushListener | None = None
        self._send_old_values = False
        self._read_through = True

    @staticmethod
    def _key_size(key: Any) -> int:
        raise NotImplementedError

    def init(self, context: ProcessorContext, root: StateStore) -> None:
        super().init(context, root)
        self._cache = task_cache(context)
        self._named = self._cache.named_cache(self.name, self._key_size)
        self._cache.add_dirty_entry_flush_listener(self.name, self._on_flush)
        # Kafka reads through only on the stream thread; a global store is read by other tasks
        self._read_through = not getattr(context, "is_global", False)

    def set_flush_listener(self, listener: RawFlushListener, send_old_values: bool) -> bool:
        """Forward flushed entries to ``listener``; True tells the forwarder that caching is on."""
        self._flush_listener = listener
        self._send_old_values = send_old_values
        return True

    @property
    def cache(self) -> ThreadCache:
        if self._cache is None:
            raise RuntimeError(f"Caching store {self.name} used before init")
        return self._cache

    @property
    def named_cache(self) -> NamedCache:
        if self._named is None:
            raise RuntimeError(f"Caching store {self.name} used before init")
        return self._named

    def flush(self) -> None:
        self.cache.flush(self.name)
        self.wrapped.flush()

    def close(self) -> None:
        try:
            if self._cache is not None:
                self._cache.flush(self.name)
        finally:
            if self._cache is not None:
                self._cache.close(self.name)
            self.wrapped.close()

    # -- writes ----------------------------------------------------------------

    def _put_dirty(self, cache_key: Any, value: bytes | None) -> None:
        record_context = getattr(self._context, "record_context", None)
        self.cache.put(self.name, cache_key, LRUCacheEntry(value, True, record_context))

    def _cached(self, cache_key: Any) -> LRUCacheEntry | None:
        # The store's own namespace, not the task cache's lookup by name (which asked the layers
        # below for the name): from init to close the task cache holds this very namespace, and
        # after close it is empty, as the task cache's answer then is.
        return self.named_cache.get(cache_key)

    @contextmanager
    def _entry_context(self, entry: LRUCacheEntry) -> Iterator[None]:
        ctx = self._context
        if ctx is None or entry.record_context is None or not hasattr(ctx, "record_context"):
            yield
            return
        previous = ctx.record_context
        ctx.record_context = entry.record_context
        try:
            yield
        finally:
            ctx.record_context = previous

    def _on_flush(self, entries: list[DirtyEntry]) -> None:
        for dirty in entries:
            self._flush_entry(dirty)

    def _flush_entry(self, dirty: DirtyEntry) -> None:
        new = dirty.new_value
        if self._flush_listener is None:
            with self._entry_context(dirty.entry):
                self._write_below(dirty.key, new)
            return
        old = self._read_below(dirty.key) if new is None or self._send_old_values else None
        # neither stored before nor now: written and deleted between two flushes
        if new is None and old is None:
            return
        with self._entry_context(dirty.entry):
            self._write_below(dirty.key, new)
            self._flush_listener(
                self._listener_key(dirty.key),
                new,
                old if self._send_old_values else None,
                dirty.entry.timestamp(),
                dirty.entry.headers(),
            )

    def _write_below(self, cache_key: Any, value: bytes | None) -> None:
        raise NotImplementedError

    def _read_below(self, cache_key: Any) -> bytes | None:
        raise NotImplementedError

    def _listener_key(self, cache_key: Any) -> Any:
        return cache_key

    # -- merged reads ----------------------------------------------------------

    def _merge(
        self,
        below: KeyValueIterator[Any, bytes],
        ident: Callable[[KeyValue[Any, bytes]], Any],
        cached_keys: Iterable[Any],
        make: Callable[[Any, bytes], KeyValue[Any, bytes]],
        order: Callable[[Any], Any],
        reverse: bool,
    ) -> KeyValueIterator[Any, bytes]:
        """The store's pairs overlaid with the cached ones, sorted as the inner store sorts them."""
        with below:
            merged: dict[Any, KeyValue[Any, bytes]] = {ident(kv): kv for kv in below}
        named = self.named_cache
        for cache_key in cached_keys:
            entry = named.peek(cache_key)
            if entry is None:
                continue
            if entry.value is None:
                merged.pop(cache_key, None)
            else:
                merged[cache_key] = make(cache_key, entry.value)
        ordered = sorted(merged, key=order, reverse=reverse)
        return PeekingKeyValueIterator([merged[k] for k in ordered], self.name)


def _bytes_key_size(key: bytes) -> int:
    return len(key)


class CachingKeyValueStore(CachingLayer):
    """Caches a key-value bytes store; cache keys are the key bytes."""

    _key_size = staticmethod(_bytes_key_size)

    def _write_below(self, cache_key: bytes, value: bytes | None) -> None:
        self.wrapped.put(cache_key, value)

    def _read_below(self, cache_key: bytes) -> bytes | None:
        result: bytes | None = self.wrapped.get(cache_key)
        return result

    def _get_internal(self, key: bytes) -> bytes | None:
        # _cached inlined: a stream-table join reads its table once a record
        entry = self.named_cache.get(key)
        if entry is not None:
            return entry.value
        raw: bytes | None = self.wrapped.get(key)
        if raw is None:
            return None
        if self._read_through:
            self.cache.put(self.name, key, LRUCacheEntry(raw))
        return raw

    get = _get_internal

    def put(self, key: bytes, value: bytes | None) -> None:
        self._put_dirty(key, value)

    def put_if_absent(self, key: bytes, value: bytes | None) -> bytes | None:
        previous = self._get_internal(key)
        if previous is None:
            self._put_dirty(key, value)
        return previous

    def put_all(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        for key, value in entries:
            self._put_dirty(key, value)

    def delete(self, key: bytes) -> bytes | None:
        previous = self._get_internal(key)
        self._put_dirty(key, None)
        return previous

    def approximate_num_entries(self) -> int:
        result: int = self.wrapped.approximate_num_entries()
        return result

    def range(self, from_key: bytes | None, to_key: bytes | None) -> KeyValueIterator[bytes, bytes]:
        return self._range(from_key, to_key, forward=True)

    def reverse_range(self, from_key: bytes | None, to_key: bytes | None) -> KeyValueIterator[bytes, bytes]:
        return self._range(from_key, to_key, forward=False)

    def all(self) -> KeyValueIterator[bytes, bytes]:
        return self._range(None, None, forward=True)

    def reverse_all(self) -> KeyValueIterator[bytes, bytes]:
        return self._range(None, None, forward=False)

    def prefix_scan(self, prefix: bytes) -> KeyValueIterator[bytes, bytes]:
        upper = increment_prefix(prefix)
        cached = [k for k in self.named_cache.keys_in_range(prefix, upper) if k.startswith(prefix)]
        return self._merge_lazily(self.wrapped.prefix_scan(prefix), cached, reverse=False)

    def _range(
        self, from_key: bytes | None, to_key: bytes | None, *, forward: bool
    ) -> KeyValueIterator[bytes, bytes]:
        if from_key is not None and to_key is not None and from_key > to_key:
            LOG.warning(INVALID_RANGE_WARNING)
            return empty_iterator(self.name)
        if forward:
            below = self.wrapped.range(from_key, to_key)
        else:
            below = self.wrapped.reverse_range(from_key, to_key)
        cached = self.named_cache.keys_in_range(from_key, to_key, reverse=not forward)
        return self._merge_lazily(below, cached, reverse=not forward)

    def _merge_lazily(
        self, below: KeyValueIterator[bytes, bytes], cached_keys: list[bytes], *, reverse: bool
    ) -> KeyValueIterator[bytes, bytes]:
        """The store's pairs (read as they are needed: a RocksDB store may hold more than memory)
        overlaid with the cached entries in range (taken now; the cache is bounded), in key order
        (``reverse``: descending, ``cached_keys`` too), as Kafka's
        ``MergedSortedCacheKeyValueBytesStoreIterator``. Cached tombstones hide stored entries."""
        named = self.named_cache
        cached: list[tuple[bytes, bytes | None]] = []
        for key in cached_keys:
            entry = named.peek(key)
            if entry is not None:
                cached.append((key, entry.value))

        def merged() -> Iterator[KeyValue[bytes, bytes]]:
            i = 0
            try:
                for kv in below:
                    while i < len(cached) and (cached[i][0] > kv.key if reverse else cached[i][0] < kv.key):
                        key, value = cached[i]
                        i += 1
                        if value is not None:
                            yield KeyValue(key, value)
                    if i < len(cached) and cached[i][0] == kv.key:
                        key, value = cached[i]
                        i += 1
                        if value is not None:
                            yield KeyValue(key, value)
                        continue
                    yield kv
                for key, value in cached[i:]:
                    if value is not None:
                        yield KeyValue(key, value)
            finally:
                below.close()

        return _MergedIterator(merged(), below, self.name)


class _MergedIterator(PeekingKeyValueIterator[bytes, bytes]):
    """A merged scan; closing it closes the store iterator below."""

    def __init__(
        self, pairs: Iterator[KeyValue[bytes, bytes]], below: KeyValueIterator[bytes, bytes], name: str
    ) -> None:
        super().__init__(pairs, name)
        self._below = below

    def close(self) -> None:
        super().close()
        self._below.close()


class CachingWindowStore(CachingLayer):
    """Caches a window bytes store; cache keys are ``(key bytes, window start)``."""

    def __init__(self, wrapped: Any, window_size: int) -> None:
        super().__init__(wrapped)
        self.window_size = window_size

    @staticmethod
    def _key_size(key: tuple[bytes, int]) -> int:
        # Kafka's cache key: key + 8-byte start + 4-byte seqnum
        return len(key[0]) + 12

    def _write_below(self, cache_key: tuple[bytes, int], value: bytes | None) -> None:
        self.wrapped.put(cache_key[0], value, cache_key[1])

    def _read_below(self, cache_key: tuple[bytes, int]) -> bytes | None:
        result: bytes | None = self.wrapped.fetch_window(cache_key[0], cache_key[1])
        return result

    def _listener_key(self, cache_key: tuple[bytes, int]) -> Windowed[bytes]:
        return Windowed(cache_key[0], window_for(cache_key[1], self.window_size))

    def put(self, key: bytes, value: bytes | None, window_start_timestamp: int) -> None:
        self._put_dirty((key, window_start_timestamp), value)

    def fetch_window(self, key: bytes, window_start_timestamp: int) -> bytes | None:
        entry = self._cached((key, window_start_timestamp))
        if entry is not None:
            return entry.value
        result: bytes | None = self.wrapped.fetch_window(key, window_start_timestamp)
        return result

    def fetch(self, key: bytes, time_from: int, time_to: int) -> KeyValueIterator[int, bytes]:
        return self._fetch_key(key, time_from, time_to, forward=True)

    def backward_fetch(self, key: bytes, time_from: int, time_to: int) -> KeyValueIterator[int, bytes]:
        return self._fetch_key(key, time_from, time_to, forward=False)

    def fetch_range(
        self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        below = self.wrapped.fetch_range(key_from, key_to, time_from, time_to)
        return self._fetch_keys(below, key_from, key_to, time_from, time_to, forward=True)

    def backward_fetch_range(
        self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        below = self.wrapped.backward_fetch_range(key_from, key_to, time_from, time_to)
        return self._fetch_keys(below, key_from, key_to, time_from, time_to, forward=False)

    def fetch_all(self, time_from: int, time_to: int) -> KeyValueIterator[Windowed[bytes], bytes]:
        below = self.wrapped.fetch_all(time_from, time_to)
        return self._fetch_keys(below, None, None, time_from, time_to, forward=True)

    def backward_fetch_all(self, time_from: int, time_to: int) -> KeyValueIterator[Windowed[bytes], bytes]:
        below = self.wrapped.backward_fetch_all(time_from, time_to)
        return self._fetch_keys(below, None, None, time_from, time_to, forward=False)

    def all(self) -> KeyValueIterator[Windowed[bytes], bytes]:
        return self._fetch_keys(self.wrapped.all(), None, None, _LONG_MIN, _LONG_MAX, forward=True)

    def backward_all(self) -> KeyValueIterator[Windowed[bytes], bytes]:
        below = self.wrapped.backward_all()
        return self._fetch_keys(below, None, None, _LONG_MIN, _LONG_MAX, forward=False)

    def _fetch_key(
        self, key: bytes, time_from: int, time_to: int, *, forward: bool
    ) -> KeyValueIterator[int, bytes]:
        if key is None:
            raise ValueError("key cannot be null")
        below = self.wrapped.fetch(key, time_from, time_to)
        cached = self.named_cache.keys_in_range((key, time_from), (key, time_to))
        return self._merge(
            below,
            lambda kv: (key, kv.key),
            cached,
            lambda ck, v: KeyValue(ck[1], v),
            lambda ck: ck[1],
            reverse=not forward,
        )

    def _fetch_keys(
        self,
        below: KeyValueIterator[Windowed[bytes], bytes],
        key_from: bytes | None,
        key_to: bytes | None,
        time_from: int,
        time_to: int,
        *,
        forward: bool,
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        if key_from is not None and key_to is not None and key_from > key_to:
            below.close()
            return empty_iterator(self.name)
        low = None if key_from is None else (key_from, _LONG_MIN)
        high = None if key_to is None else (key_to, _LONG_MAX)
        cached = [ck for ck in self.named_cache.keys_in_range(low, high) if time_from <= ck[1] <= time_to]
        # merged in the order of the store below (Kafka's merge compares segmented cache keys, which
        # follow the inner store's layout)
        order = getattr(self.wrapped, "iteration_order", None) or _start_then_key
        return self._merge(
            below,
            lambda kv: (kv.key.key, kv.key.window.start),
            cached,
            lambda ck, v: KeyValue(self._listener_key(ck), v),
            lambda ck: order(ck[0], ck[1]),
            reverse=not forward,
        )


class CachingSessionStore(CachingLayer):
    """Caches a session bytes store; cache keys are ``(key bytes, session end, session start)``."""

    @staticmethod
    def _key_size(key: tuple[bytes, int, int]) -> int:
        # Kafka's session key bytes: key + 8-byte end + 8-byte start
        return len(key[0]) + 16

    def _write_below(self, cache_key: tuple[bytes, int, int], value: bytes | None) -> None:
        self.wrapped.put(self._listener_key(cache_key), value)

    def _read_below(self, cache_key: tuple[bytes, int, int]) -> bytes | None:
        key, end, start = cache_key
        result: bytes | None = self.wrapped.fetch_session(key, start, end)
        return result

    def _listener_key(self, cache_key: tuple[bytes, int, int]) -> Windowed[bytes]:
        key, end, start = cache_key
        return Windowed(key, SessionWindow(start, end))

    def put(self, session_key: Windowed[bytes], aggregate: bytes | None) -> None:
        window = session_key.window
        self._put_dirty((session_key.key, window.end, window.start), aggregate)

    def remove(self, session_key: Windowed[bytes]) -> None:
        self.put(session_key, None)

    def fetch_session(self, key: bytes, session_start_time: int, session_end_time: int) -> bytes | None:
        if key is None:
            raise ValueError("key cannot be null")
        entry = self._cached((key, session_end_time, session_start_time))
        if entry is not None:
            return entry.value
        result: bytes | None = self.wrapped.fetch_session(key, session_start_time, session_end_time)
        return result

    def find_sessions(
        self, key: bytes, earliest_session_end_time: int, latest_session_start_time: int
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        if key is None:
            raise ValueError("key cannot be null")
        below = self.wrapped.find_sessions(key, earliest_session_end_time, latest_session_start_time)
        return self._find(
            below, key, key, earliest_session_end_time, _LONG_MAX, latest_session_start_time, True
        )

    def backward_find_sessions(
        self, key: bytes, earliest_session_end_time: int, latest_session_start_time: int
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        if key is None:
            raise ValueError("key cannot be null")
        below = self.wrapped.backward_find_sessions(key, earliest_session_end_time, latest_session_start_time)
        return self._find(
            below, key, key, earliest_session_end_time, _LONG_MAX, latest_session_start_time, False
        )

    def find_sessions_range(
        self,
        key_from: bytes | None,
        key_to: bytes | None,
        earliest_session_end_time: int,
        latest_session_start_time: int,
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        below = self.wrapped.find_sessions_range(
            key_from, key_to, earliest_session_end_time, latest_session_start_time
        )
        return self._find(
            below, key_from, key_to, earliest_session_end_time, _LONG_MAX, latest_session_start_time, True
        )

    def backward_find_sessions_range(
        self,
        key_from: bytes | None,
        key_to: bytes | None,
        earliest_session_end_time: int,
        latest_session_start_time: int,
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        below = self.wrapped.backward_find_sessions_range(
            key_from, key_to, earliest_session_end_time, latest_session_start_time
        )
        return self._find(
            below, key_from, key_to, earliest_session_end_time, _LONG_MAX, latest_session_start_time, False
        )

    def find_sessions_by_end_time(
        self, earliest_session_end_time: int, latest_session_end_time: int
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        # Kafka's CachingSessionStore does not implement findSessions(earliestEnd, latestEnd) (the
        # SessionStore default throws); emit-final session stores are never cached
        raise NotImplementedError(SCAN_BY_END_UNSUPPORTED)

    def fetch(self, key: bytes) -> KeyValueIterator[Windowed[bytes], bytes]:
        if key is None:
            raise ValueError("key cannot be null")
        return self._find(self.wrapped.fetch(key), key, key, _LONG_MIN, _LONG_MAX, _LONG_MAX, True)

    def backward_fetch(self, key: bytes) -> KeyValueIterator[Windowed[bytes], bytes]:
        if key is None:
            raise ValueError("key cannot be null")
        below = self.wrapped.backward_fetch(key)
        return self._find(below, key, key, _LONG_MIN, _LONG_MAX, _LONG_MAX, False)

    def fetch_range(
        self, key_from: bytes | None, key_to: bytes | None
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        below = self.wrapped.fetch_range(key_from, key_to)
        return self._find(below, key_from, key_to, _LONG_MIN, _LONG_MAX, _LONG_MAX, True)

    def backward_fetch_range(
        self, key_from: bytes | None, key_to: bytes | None
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        below = self.wrapped.backward_fetch_range(key_from, key_to)
        return self._find(below, key_from, key_to, _LONG_MIN, _LONG_MAX, _LONG_MAX, False)

    def _find(
        self,
        below: KeyValueIterator[Windowed[bytes], bytes],
        key_from: bytes | None,
        key_to: bytes | None,
        earliest_end: int,
        latest_end: int,
        latest_start: int,
        forward: bool,
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        if key_from is not None and key_to is not None and key_from > key_to:
            below.close()
            return empty_iterator(self.name)
        low = None if key_from is None else (key_from, _LONG_MIN, _LONG_MIN)
        high = None if key_to is None else (key_to, _LONG_MAX, _LONG_MAX)
        cached = [
            ck
            for ck in self.named_cache.keys_in_range(low, high)
            if earliest_end <= ck[1] <= latest_end and ck[2] <= latest_start
        ]
        # merged in the order of the store below: a RocksDB store's (segment, key, end, start), else
        # the in-memory store's (end, key, then start descending)
        order = getattr(self.wrapped, "iteration_order", None)
        return self._merge(
            below,
            lambda kv: (kv.key.key, kv.key.window.end, kv.key.window.start),
            cached,
            lambda ck, v: KeyValue(self._listener_key(ck), v),
            (lambda ck: order(ck[0], ck[2], ck[1])) if order is not None else _end_key_start_descending,
            reverse=not forward,
        )


def _start_then_key(key: bytes, window_start: int) -> Any:
    return (window_start, key)


def _end_key_start_descending(cache_key: tuple[bytes, int, int]) -> Any:
    return (cache_key[1], cache_key[0], -cache_key[2])
