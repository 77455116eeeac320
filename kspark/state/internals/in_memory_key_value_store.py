"""The in-memory key-value bytes store (Kafka's ``InMemoryKeyValueStore``).

Keys and values are ``bytes``; keys are ordered by unsigned lexicographic
byte order, which is Python's ``bytes`` order. This is the innermost layer
of the in-memory key-value stores (``Stores.in_memory_key_value_store``,
``Materialized.as_(Stores.in_memory_...)``, ``default.dsl.store=in_memory``);
persistent ones are RocksDB databases
(:mod:`kspark.state.internals.rocksdb_key_value_store`). The typed (metered)
layer above it does the serialization.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from sortedcontainers import SortedDict

from kspark.key_value import KeyValue
from kspark.state.api import KeyValueIterator
from kspark.state.internals.in_memory_store import InMemoryStore
from kspark.state.internals.iterators import PeekingKeyValueIterator, empty_iterator

__all__ = ["InMemoryKeyValueStore", "increment_prefix", "INVALID_RANGE_WARNING"]

LOG = logging.getLogger(__name__)

INVALID_RANGE_WARNING = (
    "Returning empty iterator for fetch with invalid key range: from > to. "
    "This may be due to range arguments set in the wrong order, "
    "or serdes that don't preserve ordering when lexicographically comparing the serialized bytes. "
    "Note that the built-in numerical serdes do not follow this for negative numbers"
)


def increment_prefix(prefix: bytes) -> bytes | None:
    """The smallest byte string greater than every string starting with ``prefix``.

    ``None`` when there is none (the prefix is all ``0xff``): the scan is then
    unbounded above. Kafka's ``Bytes.increment`` throws there instead.
    """
    trimmed = prefix.rstrip(b"\xff")
    if not trimmed:
        return None
    return trimmed[:-1] + bytes([trimmed[-1] + 1])


class InMemoryKeyValueStore(InMemoryStore):
    """A sorted map of ``bytes -> bytes``; ``persistent`` is what ``persistent()`` reports
    (False for the stores ``Stores`` makes; persistent key-value stores are RocksDB ones)."""

    def __init__(self, name: str, *, persistent: bool = False) -> None:
        super().__init__(name, persistent=persistent)
        self._map: SortedDict = SortedDict()

    def _clear(self) -> None:
        self._map.clear()

    # -- writes --------------------------------------------------------------

    def put(self, key: bytes, value: bytes | None) -> None:
        self._check_open()
        if value is None:
            self._map.pop(key, None)
        else:
            self._map[key] = value

    def put_if_absent(self, key: bytes, value: bytes | None) -> bytes | None:
        self._check_open()
        original: bytes | None = self._map.get(key)
        if original is None:
            self.put(key, value)
        return original

    def put_all(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        for key, value in entries:
            self.put(key, value)

    def delete(self, key: bytes) -> bytes | None:
        self._check_open()
        old: bytes | None = self._map.pop(key, None)
        return old

    def restore(self, records: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Apply changelog records (key, value) directly, as Kafka's restore callback does."""
        for key, value in records:
            self.put(key, value)

    # -- reads ---------------------------------------------------------------

    def get(self, key: bytes) -> bytes | None:
        self._check_open()
        value: bytes | None = self._map.get(key)
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
        keys = list(self._map.irange(prefix, upper, inclusive=(True, False)))
        return self._iterator(keys)

    def _range(
        self, from_key: bytes | None, to_key: bytes | None, *, forward: bool
    ) -> KeyValueIterator[bytes, bytes]:
        self._check_open()
        if from_key is not None and to_key is not None and from_key > to_key:
            LOG.warning(INVALID_RANGE_WARNING)
            return empty_iterator(self._name)
        keys = list(self._map.irange(from_key, to_key, inclusive=(True, True), reverse=not forward))
        return self._iterator(keys)

    def _iterator(self, keys: list[bytes]) -> KeyValueIterator[bytes, bytes]:
        return PeekingKeyValueIterator(self._live_pairs(keys, self._map.get), self._name)

    @staticmethod
    def _live_pairs(keys: list[bytes], lookup: Callable[[bytes], Any]) -> Iterator[KeyValue[bytes, bytes]]:
        for key in keys:
            value = lookup(key)
            # a key deleted after the snapshot was taken is skipped, as in Kafka
            if value is not None:
                yield KeyValue(key, value)
