"""Plain-value views of timestamped stores, as Kafka's ``KeyValueStoreFacade``/``WindowStoreFacade``.

``driver.get_key_value_store(name)`` on a timestamped store returns one of
these: reads give the plain value (the ``ValueAndTimestamp``'s value), writes
store the value with timestamp -1 (Kafka's ``NO_TIMESTAMP``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kspark.key_value import KeyValue
from kspark.state.api import ValueAndTimestamp

__all__ = ["KeyValueStoreFacade", "WindowStoreFacade", "is_timestamped"]


def is_timestamped(store: Any) -> bool:
    return "Timestamped" in type(store).__name__


def _plain(v: Any) -> Any:
    return v.value if isinstance(v, ValueAndTimestamp) else v


class _PlainIterator(Iterator[KeyValue[Any, Any]]):
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __next__(self) -> KeyValue[Any, Any]:
        kv = next(self._inner)
        return KeyValue(kv.key, _plain(kv.value))

    def peek_next_key(self) -> Any:
        return self._inner.peek_next_key()

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close:
            close()

    def __enter__(self) -> _PlainIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class KeyValueStoreFacade:
    """A timestamped key-value store seen with plain values."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return str(self.inner.name)

    def get(self, key: Any) -> Any:
        return _plain(self.inner.get(key))

    def put(self, key: Any, value: Any) -> None:
        self.inner.put(key, ValueAndTimestamp.make(value, -1))

    def put_if_absent(self, key: Any, value: Any) -> Any:
        return _plain(self.inner.put_if_absent(key, ValueAndTimestamp.make(value, -1)))

    def put_all(self, entries: Any) -> None:
        for k, v in entries:
            self.put(k, v)

    def delete(self, key: Any) -> Any:
        return _plain(self.inner.delete(key))

    def range(self, from_key: Any, to_key: Any) -> _PlainIterator:
        return _PlainIterator(self.inner.range(from_key, to_key))

    def reverse_range(self, from_key: Any, to_key: Any) -> _PlainIterator:
        return _PlainIterator(self.inner.reverse_range(from_key, to_key))

    def all(self) -> _PlainIterator:
        return _PlainIterator(self.inner.all())

    def reverse_all(self) -> _PlainIterator:
        return _PlainIterator(self.inner.reverse_all())

    def prefix_scan(self, prefix: Any, serializer: Any) -> _PlainIterator:
        return _PlainIterator(self.inner.prefix_scan(prefix, serializer))

    def approximate_num_entries(self) -> int:
        return int(self.inner.approximate_num_entries())

    def __getattr__(self, item: str) -> Any:
        return getattr(self.inner, item)


class WindowStoreFacade:
    """A timestamped window store seen with plain values."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return str(self.inner.name)

    def put(self, key: Any, value: Any, window_start_timestamp: int) -> None:
        self.inner.put(key, ValueAndTimestamp.make(value, -1), window_start_timestamp)

    def fetch(self, key: Any, time_from: int, time_to: int | None = None) -> Any:
        result = self.inner.fetch(key, time_from, time_to)
        if time_to is None:
            return _plain(result)
        return _PlainIterator(result)

    def backward_fetch(self, key: Any, time_from: int, time_to: int) -> _PlainIterator:
        return _PlainIterator(self.inner.backward_fetch(key, time_from, time_to))

    def fetch_range(self, key_from: Any, key_to: Any, time_from: int, time_to: int) -> _PlainIterator:
        return _PlainIterator(self.inner.fetch_range(key_from, key_to, time_from, time_to))

    def fetch_all(self, time_from: int, time_to: int) -> _PlainIterator:
        return _PlainIterator(self.inner.fetch_all(time_from, time_to))

    def all(self) -> _PlainIterator:
        return _PlainIterator(self.inner.all())

    def __getattr__(self, item: str) -> Any:
        return getattr(self.inner, item)
