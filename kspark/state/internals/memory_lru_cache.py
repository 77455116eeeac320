"""The LRU-bounded in-memory key-value bytes store of ``Stores.lru_map`` (Kafka's
``MemoryLRUCache`` / ``MemoryNavigableLRUCache``).

An access-ordered map: ``get``, ``put`` and ``put_if_absent`` make a key the most recently
used; inserting a new key beyond ``max_cache_size`` evicts the least recently used one (with a
size of 0 the new key itself). An eviction is reported to a listener, which the change-logging
layer sets to log a tombstone for the evicted key (Kafka's
``ChangeLoggingKeyValueBytesStore.maybeSetEvictionListener``), except while the store is being
restored. Range reads, ``all`` and ``prefix_scan`` iterate a sorted snapshot of the entries
(values as of the call) and do not count as accesses, as Kafka's ``TreeMap`` copy.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable

from kspark.key_value import KeyValue
from kspark.state.api import KeyValueIterator
from kspark.state.internals.in_memory_key_value_store import INVALID_RANGE_WARNING, increment_prefix
from kspark.state.internals.in_memory_store import InMemoryStore
from kspark.state.internals.iterators import PeekingKeyValueIterator, empty_iterator

__all__ = ["MemoryLRUCache", "EldestEntryRemovalListener"]

LOG = logging.getLogger(__name__)

EldestEntryRemovalListener = Callable[[bytes, bytes], None]
"""Called with the evicted (key, value) when a put pushes the least recently used entry out."""


class MemoryLRUCache(InMemoryStore):
    """At most ``max_cache_size`` entries of ``bytes -> bytes``, the least recently used evicted."""

    def __init__(self, name: str, max_cache_size: int) -> None:
        super().__init__(name, persistent=False)
        self.max_cache_size = max_cache_size
        self._map: OrderedDict[bytes, bytes] = OrderedDict()
        self._listener: EldestEntryRemovalListener | None = None
        self._restoring = False

    def set_when_eldest_removed(self, listener: EldestEntryRemovalListener) -> None:
        self._listener = listener

    def _clear(self) -> None:
        self._map.clear()

    def size(self) -> int:
        return len(self._map)

    # -- writes --------------------------------------------------------------

    def put(self, key: bytes, value: bytes | None) -> None:
        self._check_open()
        if key is None:
            raise ValueError("key cannot be null")
        if value is None:
            self._map.pop(key, None)
            return
        if key in self._map:
            # an update is an access: the key becomes the most recently used (no eviction)
            self._map[key] = value
            self._map.move_to_end(key)
            return
        self._map[key] = value
        if len(self._map) > self.max_cache_size:
            eldest, eldest_value = self._map.popitem(last=False)
            if not self._restoring and self._listener is not None:
                self._listener(eldest, eldest_value)

    def put_if_absent(self, key: bytes, value: bytes | None) -> bytes | None:
        original = self.get(key)
        if original is None:
            self.put(key, value)
        return original

    def put_all(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        for key, value in entries:
            self.put(key, value)

    def delete(self, key: bytes) -> bytes | None:
        self._check_open()
        if key is None:
            raise ValueError("key cannot be null")
        return self._map.pop(key, None)

    def restore(self, records: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Apply changelog records; what a restore evicts is not logged (Kafka's ``restoring``)."""
        self._restoring = True
        try:
            for key, value in records:
                self.put(key, value)
        finally:
            self._restoring = False

    # -- reads ---------------------------------------------------------------

    def get(self, key: bytes) -> bytes | None:
        self._check_open()
        if key is None:
            raise ValueError("key cannot be null")
        value = self._map.get(key)
        if value is not None:
            self._map.move_to_end(key)  # an access-ordered LinkedHashMap's get
        return value

    def approximate_num_entries(self) -> int:
        self._check_open()
        return len(self._map)

    def range(self, from_key: bytes | None, to_key: bytes | None) -> KeyValueIterator[bytes, bytes]:
        return self._range(from_key, to_key, forward=True)

    def reverse_range(self, from_key: bytes | None, to_key: bytes | None) -> KeyValueIterator[bytes, bytes]:
        return self._range(from_key, to_key, forward=False)

    def all(self) -> KeyValueIterator[bytes, bytes]:
        return self._range(None, None, forward=True)

    def reverse_all(self) -> KeyValueIterator[bytes, bytes]:
        return self._range(None, None, forward=False)

    def prefix_scan(self, prefix: bytes) -> KeyValueIterator[bytes, bytes]:
        self._check_open()
        upper = increment_prefix(prefix)
        pairs = [
            KeyValue(k, v)
            for k, v in sorted(self._map.items())
            if k >= prefix and (upper is None or k < upper)
        ]
        return PeekingKeyValueIterator(iter(pairs), self._name)

    def _range(
        self, from_key: bytes | None, to_key: bytes | None, *, forward: bool
    ) -> KeyValueIterator[bytes, bytes]:
        self._check_open()
        if from_key is not None and to_key is not None and from_key > to_key:
            LOG.warning(INVALID_RANGE_WARNING)
            return empty_iterator(self._name)
        pairs = [
            KeyValue(k, v)
            for k, v in sorted(self._map.items(), reverse=not forward)
            if (from_key is None or k >= from_key) and (to_key is None or k <= to_key)
        ]
        return PeekingKeyValueIterator(iter(pairs), self._name)
