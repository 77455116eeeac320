"""Store iterators: peekable, closable ``KeyValueIterator`` implementations.

The in-memory stores hand out iterators over a *snapshot of the keys* taken
when the iterator is created (Kafka's ``InMemoryKeyValueIterator`` copies the
key set into a ``TreeSet`` the same way), so a processor may delete or put
while it iterates; values are looked up lazily and keys deleted meanwhile are
skipped, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from kspark.errors import InvalidStateStoreException
from kspark.key_value import KeyValue
from kspark.state.api import KeyValueIterator

__all__ = ["PeekingKeyValueIterator", "MappedKeyValueIterator", "ChainedKeyValueIterator", "empty_iterator"]

K = TypeVar("K")
V = TypeVar("V")
K2 = TypeVar("K2")
V2 = TypeVar("V2")

_MISSING: Any = object()


class PeekingKeyValueIterator(KeyValueIterator[K, V]):
    """Turns any iterator of ``KeyValue`` into a peekable, closable store iterator."""

    def __init__(self, source: Iterable[KeyValue[K, V]], store_name: str = "") -> None:
        self._source: Iterator[KeyValue[K, V]] = iter(source)
        self._next: KeyValue[K, V] = _MISSING
        self._closed = False
        self._store_name = store_name

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidStateStoreException(
                f"Iterator for store {self._store_name} has already been closed."
            )

    def has_next(self) -> bool:
        """Java-style look-ahead: whether ``next`` would return a pair."""
        self._check_open()
        if self._next is _MISSING:
            self._next = next(self._source, _MISSING)
        return self._next is not _MISSING

    def __next__(self) -> KeyValue[K, V]:
        if not self.has_next():
            raise StopIteration
        result, self._next = self._next, _MISSING
        return result

    def peek_next_key(self) -> K:
        if not self.has_next():
            raise StopIteration
        return self._next.key

    def close(self) -> None:
        self._closed = True
        self._next = _MISSING

    def __iter__(self) -> PeekingKeyValueIterator[K, V]:
        return self


class MappedKeyValueIterator(PeekingKeyValueIterator[K2, V2]):
    """An iterator whose pairs are converted lazily (bytes to objects in the typed layer)."""

    def __init__(
        self,
        inner: KeyValueIterator[K, V],
        key_fn: Callable[[K], K2],
        value_fn: Callable[[V], V2],
        store_name: str = "",
    ) -> None:
        self._inner = inner
        super().__init__((KeyValue(key_fn(kv.key), value_fn(kv.value)) for kv in inner), store_name)

    def close(self) -> None:
        super().close()
        self._inner.close()


class ChainedKeyValueIterator(PeekingKeyValueIterator[K, V]):
    """Several iterators one after the other (Kafka's composite stores concatenate, not merge)."""

    def __init__(self, iterators: Iterable[KeyValueIterator[K, V]], store_name: str = "") -> None:
        self._parts = list(iterators)
        super().__init__((kv for it in self._parts for kv in it), store_name)

    def close(self) -> None:
        super().close()
        for it in self._parts:
            it.close()


def empty_iterator(store_name: str = "") -> PeekingKeyValueIterator[Any, Any]:
    return PeekingKeyValueIterator((), store_name)
