"""``QueryableStoreTypes``: what kind of store an interactive query wants, and its read-only view.

A ``QueryableStoreType`` says whether it ``accepts`` a store and ``create``s
the read-only view over one store or over several (one per task); several
stores are consulted in order and their iterators concatenated, as Kafka's
``CompositeReadOnly*Store``. A timestamped store queried as a plain
``key_value_store()`` / ``window_store()`` has its values unwrapped from
``ValueAndTimestamp`` (Kafka's ``ReadOnlyKeyValueStoreFacade``). Every read
checks the store is open and raises ``InvalidStateStoreException`` if not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kspark.errors import InvalidStateStoreException
from kspark.kstream.windowed import Windowed
from kspark.state.api import (
    KeyValueIterator,
    ReadOnlyKeyValueStore,
    ReadOnlySessionStore,
    ReadOnlyWindowStore,
    SessionStore,
    StateStore,
    ValueAndTimestamp,
)
from kspark.state.internals.iterators import ChainedKeyValueIterator, MappedKeyValueIterator
from kspark.state.internals.metered import (
    MeteredKeyValueStore,
    MeteredTimestampedKeyValueStore,
    MeteredTimestampedWindowStore,
    MeteredWindowStore,
)

__all__ = [
    "QueryableStoreType",
    "QueryableStoreTypes",
    "ReadOnlyKeyValueView",
    "ReadOnlyWindowView",
    "ReadOnlySessionView",
]


def _unwrap(value: Any) -> Any:
    return value.value if isinstance(value, ValueAndTimestamp) else value


def _same(value: Any) -> Any:
    return value


def _same_key(key: Any) -> Any:
    return key


class _View:
    def __init__(self, stores: Sequence[StateStore], value_fn: Callable[[Any], Any]) -> None:
        if not stores:
            raise InvalidStateStoreException("No store to query")
        self._stores = list(stores)
        self._value_fn = value_fn

    @property
    def name(self) -> str:
        return self._stores[0].name

    def _open_stores(self) -> list[Any]:
        for store in self._stores:
            if not store.is_open():
                raise InvalidStateStoreException(
                    f"State store {store.name} is not open: the app may not be running or is migrating."
                )
        return self._stores

    def _chain(self, parts: list[KeyValueIterator[Any, Any]]) -> KeyValueIterator[Any, Any]:
        mapped = [MappedKeyValueIterator(it, _same_key, self._value_fn, self.name) for it in parts]
        return ChainedKeyValueIterator(mapped, self.name)


class ReadOnlyKeyValueView(_View, ReadOnlyKeyValueStore[Any, Any]):
    """Reads of key-value stores."""

    def get(self, key: Any) -> Any:
        for store in self._open_stores():
            value = store.get(key)
            if value is not None:
                return self._value_fn(value)
        return None

    def range(self, from_key: Any, to_key: Any) -> KeyValueIterator[Any, Any]:
        return self._chain([s.range(from_key, to_key) for s in self._open_stores()])

    def reverse_range(self, from_key: Any, to_key: Any) -> KeyValueIterator[Any, Any]:
        return self._chain([s.reverse_range(from_key, to_key) for s in self._open_stores()])

    def all(self) -> KeyValueIterator[Any, Any]:
        return self._chain([s.all() for s in self._open_stores()])

    def reverse_all(self) -> KeyValueIterator[Any, Any]:
        return self._chain([s.reverse_all() for s in self._open_stores()])

    def prefix_scan(self, prefix: Any, prefix_key_serializer: Any) -> KeyValueIterator[Any, Any]:
        return self._chain([s.prefix_scan(prefix, prefix_key_serializer) for s in self._open_stores()])

    def approximate_num_entries(self) -> int:
        return sum(s.approximate_num_entries() for s in self._open_stores())


class ReadOnlyWindowView(_View, ReadOnlyWindowStore[Any, Any]):
    """Reads of window stores."""

    def fetch(self, key: Any, time_from: int, time_to: int | None = None) -> Any:
        if time_to is None:
            for store in self._open_stores():
                value = store.fetch(key, time_from)
                if value is not None:
                    return self._value_fn(value)
            return None
        # Kafka returns the first task's non-empty result for a single key
        for store in self._open_stores():
            it = store.fetch(key, time_from, time_to)
            if it.has_next():
                return self._chain([it])
            it.close()
        return self._chain([])

    def backward_fetch(self, key: Any, time_from: int, time_to: int) -> KeyValueIterator[int, Any]:
        for store in self._open_stores():
            it = store.backward_fetch(key, time_from, time_to)
            if it.has_next():
                return self._chain([it])
            it.close()
        return self._chain([])

    def fetch_range(
        self, key_from: Any, key_to: Any, time_from: int, time_to: int
    ) -> KeyValueIterator[Windowed[Any], Any]:
        return self._chain([s.fetch_range(key_from, key_to, time_from, time_to) for s in self._open_stores()])

    def fetch_all(self, time_from: int, time_to: int) -> KeyValueIterator[Windowed[Any], Any]:
        return self._chain([s.fetch_all(time_from, time_to) for s in self._open_stores()])

    def backward_fetch_all(self, time_from: int, time_to: int) -> KeyValueIterator[Windowed[Any], Any]:
        return self._chain([s.backward_fetch_all(time_from, time_to) for s in self._open_stores()])

    def all(self) -> KeyValueIterator[Windowed[Any], Any]:
        return self._chain([s.all() for s in self._open_stores()])

    def backward_all(self) -> KeyValueIterator[Windowed[Any], Any]:
        return self._chain([s.backward_all() for s in self._open_stores()])


class ReadOnlySessionView(_View, ReadOnlySessionStore[Any, Any]):
    """Reads of session stores."""

    def fetch(self, key: Any) -> KeyValueIterator[Windowed[Any], Any]:
        return self._first_non_empty(lambda store: store.fetch(key))

    def backward_fetch(self, key: Any) -> KeyValueIterator[Windowed[Any], Any]:
        return self._first_non_empty(lambda store: store.backward_fetch(key))

    def fetch_session(self, key: Any, session_start: int, session_end: int) -> Any:
        for store in self._open_stores():
            value = store.fetch_session(key, session_start, session_end)
            if value is not None:
                return value
        return None

    def find_sessions(
        self, key: Any, earliest_session_end_time: int, latest_session_start_time: int
    ) -> KeyValueIterator[Windowed[Any], Any]:
        return self._first_non_empty(
            lambda store: store.find_sessions(key, earliest_session_end_time, latest_session_start_time)
        )

    def backward_find_sessions(
        self, key: Any, earliest_session_end_time: int, latest_session_start_time: int
    ) -> KeyValueIterator[Windowed[Any], Any]:
        return self._first_non_empty(
            lambda store: store.backward_find_sessions(
                key, earliest_session_end_time, latest_session_start_time
            )
        )

    def _first_non_empty(self, read: Callable[[Any], Any]) -> KeyValueIterator[Windowed[Any], Any]:
        """The first task's non-empty result for a single key (as Kafka's composite stores)."""
        for store in self._open_stores():
            it = read(store)
            if it.has_next():
                return self._chain([it])
            it.close()
        return self._chain([])


class QueryableStoreType:
    """A kind of store an interactive query asks for: ``accepts(store)``, ``create(stores)``."""

    def __init__(
        self,
        name: str,
        accepts: Callable[[StateStore], bool],
        view: Callable[[Sequence[StateStore], Callable[[Any], Any]], Any],
        value_fn: Callable[[StateStore], Callable[[Any], Any]],
    ) -> None:
        self.name = name
        self._accepts = accepts
        self._view = view
        self._value_fn = value_fn

    def accepts(self, store: StateStore) -> bool:
        return self._accepts(store)

    def create(self, stores: StateStore | Sequence[StateStore]) -> Any:
        """The read-only view of one store, or of the same store over several tasks."""
        store_list = [stores] if isinstance(stores, StateStore) else list(stores)
        for store in store_list:
            if not self.accepts(store):
                raise InvalidStateStoreException(
                    f"Cannot get state store {store.name} because the queryable store type "
                    f"[{self.name}] does not accept the actual store type [{type(store).__name__}]."
                )
        return self._view(store_list, self._value_fn(store_list[0]) if store_list else _same)

    def __repr__(self) -> str:
        return f"QueryableStoreTypes.{self.name}()"


def _unwrap_if_timestamped(timestamped: type) -> Callable[[StateStore], Callable[[Any], Any]]:
    return lambda store: _unwrap if isinstance(store, timestamped) else _same


class QueryableStoreTypes:
    """The store types ``KafkaStreams.store`` and the test driver understand."""

    @staticmethod
    def key_value_store() -> QueryableStoreType:
        """Any key-value store; timestamped values are unwrapped to plain values."""
        return QueryableStoreType(
            "key_value_store",
            lambda s: isinstance(s, MeteredKeyValueStore),
            ReadOnlyKeyValueView,
            _unwrap_if_timestamped(MeteredTimestampedKeyValueStore),
        )

    @staticmethod
    def timestamped_key_value_store() -> QueryableStoreType:
        """Only timestamped key-value stores; values are ``ValueAndTimestamp``."""
        return QueryableStoreType(
            "timestamped_key_value_store",
            lambda s: isinstance(s, MeteredTimestampedKeyValueStore),
            ReadOnlyKeyValueView,
            lambda _: _same,
        )

    @staticmethod
    def window_store() -> QueryableStoreType:
        """Any window store; timestamped values are unwrapped to plain values."""
        return QueryableStoreType(
            "window_store",
            lambda s: isinstance(s, MeteredWindowStore),
            ReadOnlyWindowView,
            _unwrap_if_timestamped(MeteredTimestampedWindowStore),
        )

    @staticmethod
    def timestamped_window_store() -> QueryableStoreType:
        """Only timestamped window stores; values are ``ValueAndTimestamp``."""
        return QueryableStoreType(
            "timestamped_window_store",
            lambda s: isinstance(s, MeteredTimestampedWindowStore),
            ReadOnlyWindowView,
            lambda _: _same,
        )

    @staticmethod
    def session_store() -> QueryableStoreType:
        """Session stores."""
        return QueryableStoreType(
            "session_store",
            lambda s: isinstance(s, SessionStore),
            ReadOnlySessionView,
            lambda _: _same,
        )
