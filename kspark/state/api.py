"""State store interfaces: what processors, the DSL and interactive queries program against.

Mirrors Kafka Streams' ``org.apache.kafka.streams.state``: a ``StateStore``
lifecycle, the read-only views that interactive queries get, and the
read-write stores processors get. Iterators yield ``KeyValue`` in the order of
the *serialized* key bytes (unsigned lexicographic), as Kafka Streams' stores
order them; implementations live in ``kspark.state.internals``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from kspark.key_value import KeyValue
from kspark.kstream.windowed import Windowed

if TYPE_CHECKING:
    from kspark.processor.api import ProcessorContext

__all__ = [
    "StateStore",
    "ReadOnlyKeyValueStore",
    "KeyValueStore",
    "ReadOnlyWindowStore",
    "WindowStore",
    "ReadOnlySessionStore",
    "SessionStore",
    "ValueAndTimestamp",
    "StoreBuilder",
    "KeyValueIterator",
]

K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True)
class ValueAndTimestamp(Generic[V]):
    """A value with the timestamp of the record that last set it (timestamped stores)."""

    value: V
    timestamp: int

    def __init__(self, value: V, timestamp: int) -> None:
        # Frozen all the same (the dataclass's __setattr__ refuses writes), but built without the
        # generated __init__'s object.__setattr__ per field: 0.6 µs -> 0.3 µs a value, and a
        # timestamped store makes one per read (a stream-table join: one per record).
        fields = self.__dict__
        fields["value"] = value
        fields["timestamp"] = timestamp

    @staticmethod
    def make(value: V | None, timestamp: int) -> ValueAndTimestamp[V] | None:
        """Kafka's ``ValueAndTimestamp.make``: ``None`` for a ``None`` value."""
        return None if value is None else ValueAndTimestamp(value, timestamp)

    @staticmethod
    def get_value_or_null(vt: ValueAndTimestamp[V] | None) -> V | None:
        return None if vt is None else vt.value


class KeyValueIterator(Iterator[KeyValue[K, V]]):
    """An iterator over ``KeyValue`` pairs that can be closed early and peeked."""

    @abstractmethod
    def peek_next_key(self) -> K:
        """The key of the next pair without consuming it; StopIteration at the end."""

    def close(self) -> None:
        """Release the iterator's resources."""

    def __enter__(self) -> KeyValueIterator[K, V]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class StateStore(ABC):
    """A named store owned by a task; the runtime opens, flushes and closes it."""

    @property
    @abstractmethod
    def name(self) -> str: ...

    @abstractmethod
    def init(self, context: ProcessorContext, root: StateStore) -> None:
        """Open the store for the task whose context is given (``root``: the outermost wrapper)."""

    def flush(self) -> None:  # noqa: B027 - optional hook
        """Make buffered writes durable / forward cached entries."""

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def persistent(self) -> bool: ...

    @abstractmethod
    def is_open(self) -> bool: ...


class ReadOnlyKeyValueStore(ABC, Generic[K, V]):
    """Reads of a key-value store (what interactive queries see)."""

    @abstractmethod
    def get(self, key: K) -> V | None: ...

    @abstractmethod
    def range(self, from_key: K | None, to_key: K | None) -> KeyValueIterator[K, V]:
        """Pairs with ``from_key <= key <= to_key`` by serialized bytes; ``None`` = unbounded."""

    @abstractmethod
    def reverse_range(self, from_key: K | None, to_key: K | None) -> KeyValueIterator[K, V]: ...

    @abstractmethod
    def all(self) -> KeyValueIterator[K, V]: ...

    @abstractmethod
    def reverse_all(self) -> KeyValueIterator[K, V]: ...

    @abstractmethod
    def prefix_scan(self, prefix: Any, prefix_key_serializer: Any) -> KeyValueIterator[K, V]:
        """Pairs whose serialized key starts with the serialized ``prefix``."""

    @abstractmethod
    def approximate_num_entries(self) -> int: ...


class KeyValueStore(StateStore, ReadOnlyKeyValueStore[K, V]):
    """A read-write key-value store; ``put(k, None)`` deletes, as in Kafka Streams."""

    @abstractmethod
    def put(self, key: K, value: V | None) -> None: ...

    @abstractmethod
    def put_if_absent(self, key: K, value: V) -> V | None:
        """Put only if absent; returns the previous value (``None`` if it was absent)."""

    @abstractmethod
    def put_all(self, entries: Iterable[KeyValue[K, V] | tuple[K, V]]) -> None: ...

    @abstractmethod
    def delete(self, key: K) -> V | None:
        """Remove ``key``; returns the old value."""


class ReadOnlyWindowStore(ABC, Generic[K, V]):
    """Reads of a window store: values keyed by (key, window start time)."""

    @abstractmethod
    def fetch(self, key: K, time_from: int, time_to: int | None = None) -> Any:
        """``fetch(key, start)``: the value of the window of ``key`` starting at ``start`` (or None).

        ``fetch(key, time_from, time_to)``: a ``KeyValueIterator[int, V]`` of
        ``(window_start, value)`` for windows of ``key`` starting in
        ``[time_from, time_to]``, ordered by start time.
        """

    @abstractmethod
    def backward_fetch(self, key: K, time_from: int, time_to: int) -> KeyValueIterator[int, V]: ...

    @abstractmethod
    def fetch_range(
        self, key_from: K | None, key_to: K | None, time_from: int, time_to: int
    ) -> KeyValueIterator[Windowed[K], V]: ...

    @abstractmethod
    def fetch_all(self, time_from: int, time_to: int) -> KeyValueIterator[Windowed[K], V]: ...

    @abstractmethod
    def backward_fetch_all(self, time_from: int, time_to: int) -> KeyValueIterator[Windowed[K], V]:
        """``fetch_all`` in reverse order."""

    @abstractmethod
    def all(self) -> KeyValueIterator[Windowed[K], V]: ...

    @abstractmethod
    def backward_all(self) -> KeyValueIterator[Windowed[K], V]:
        """``all`` in reverse order."""


class WindowStore(StateStore, ReadOnlyWindowStore[K, V]):
    """A read-write window store with retention; ``put(k, None, t)`` deletes."""

    @abstractmethod
    def put(self, key: K, value: V | None, window_start_timestamp: int) -> None: ...


class ReadOnlySessionStore(ABC, Generic[K, V]):
    """Reads of a session store: aggregates keyed by ``Windowed`` session keys."""

    @abstractmethod
    def fetch(self, key: K) -> KeyValueIterator[Windowed[K], V]:
        """All sessions of ``key`` in Kafka's in-memory store order: by session end
        ascending, then key bytes, then session start descending."""

    @abstractmethod
    def backward_fetch(self, key: K) -> KeyValueIterator[Windowed[K], V]:
        """``fetch`` in reverse order."""

    @abstractmethod
    def fetch_session(self, key: K, session_start: int, session_end: int) -> V | None: ...

    @abstractmethod
    def find_sessions(
        self, key: K, earliest_session_end_time: int, latest_session_start_time: int
    ) -> KeyValueIterator[Windowed[K], V]:
        """Sessions of ``key`` with ``end >= earliest_session_end_time`` and
        ``start <= latest_session_start_time``."""

    @abstractmethod
    def backward_find_sessions(
        self, key: K, earliest_session_end_time: int, latest_session_start_time: int
    ) -> KeyValueIterator[Windowed[K], V]:
        """``find_sessions`` in reverse order."""


class SessionStore(StateStore, ReadOnlySessionStore[K, V]):
    """A read-write session store."""

    @abstractmethod
    def put(self, session_key: Windowed[K], aggregate: V | None) -> None: ...

    @abstractmethod
    def remove(self, session_key: Windowed[K]) -> None: ...


class StoreBuilder(ABC, Generic[K, V]):
    """Builds a store of a name, with caching and change-logging switched on or off."""

    @property
    @abstractmethod
    def name(self) -> str: ...

    @abstractmethod
    def build(self) -> StateStore: ...

    @abstractmethod
    def with_caching_enabled(self) -> StoreBuilder[K, V]: ...

    @abstractmethod
    def with_caching_disabled(self) -> StoreBuilder[K, V]: ...

    @abstractmethod
    def with_logging_enabled(self, config: dict[str, str] | None = None) -> StoreBuilder[K, V]: ...

    @abstractmethod
    def with_logging_disabled(self) -> StoreBuilder[K, V]: ...

    @abstractmethod
    def logging_enabled(self) -> bool: ...

    @abstractmethod
    def log_config(self) -> dict[str, str]: ...
