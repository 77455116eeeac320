"""Store suppliers and builders (Kafka's ``*BytesStoreSupplier`` and ``*StoreBuilder``).

A supplier makes the inner bytes store; a builder layers it as Kafka does:
typed/metered (serdes) -> caching (when caching is on) -> change-logging
(when logging is on) -> inner store. Logging is on by default and caching
off, as in Kafka (the DSL's ``Materialized`` turns caching on by default).
The caching layer buffers writes in the task's record cache until the task
commits (``flush``) or the cache bound evicts them
(:mod:`kspark.state.internals.caching`); ``store.caching_enabled`` tells
whether the built store has one.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any, Self, TypeVar

from kspark.serde.api import Serde
from kspark.state.api import StoreBuilder
from kspark.state.internals.caching import CachingKeyValueStore, CachingSessionStore, CachingWindowStore
from kspark.state.internals.change_logging import (
    ChangeLoggingKeyValueBytesStore,
    ChangeLoggingSessionBytesStore,
    ChangeLoggingWindowBytesStore,
)
from kspark.state.internals.in_memory_key_value_store import InMemoryKeyValueStore
from kspark.state.internals.in_memory_session_store import InMemorySessionStore
from kspark.state.internals.in_memory_window_store import InMemoryWindowStore
from kspark.state.internals.memory_lru_cache import MemoryLRUCache
from kspark.state.internals.metered import (
    MeteredKeyValueStore,
    MeteredSessionStore,
    MeteredTimestampedKeyValueStore,
    MeteredTimestampedWindowStore,
    MeteredWindowStore,
    _MeteredStore,
)
from kspark.state.internals.rocksdb_key_value_store import RocksDBKeyValueStore
from kspark.state.internals.rocksdb_session_store import RocksDBSessionStore
from kspark.state.internals.rocksdb_window_store import RocksDBWindowStore
from kspark.state.internals.segmented_stores import default_segment_interval
from kspark.state.internals.time_ordered_stores import TimeOrderedSessionStore, TimeOrderedWindowStore

__all__ = [
    "SerdeSpec",
    "KeyValueBytesStoreSupplier",
    "LruMapBytesStoreSupplier",
    "WindowBytesStoreSupplier",
    "SessionBytesStoreSupplier",
    "KeyValueStoreBuilder",
    "TimestampedKeyValueStoreBuilder",
    "WindowStoreBuilder",
    "TimestampedWindowStoreBuilder",
    "SessionStoreBuilder",
    "millis",
]

LOG = logging.getLogger(__name__)

_M = TypeVar("_M", bound=_MeteredStore)

SerdeSpec = Serde[Any] | str | None
"""A serde, a config serde name (``"string"``...), or ``None`` for the config default."""


def millis(value: int | timedelta, what: str) -> int:
    """Milliseconds of an int or a ``timedelta``; rejects anything else, naming ``what``."""
    if isinstance(value, timedelta):
        return int(value / timedelta(milliseconds=1))
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be int milliseconds or a datetime.timedelta, got {value!r}")
    return value


def _check_name(name: str) -> None:
    if name is None:
        raise ValueError("name cannot be null")
    if not isinstance(name, str) or not name:
        raise ValueError(f"store name must be a non-empty str, got {name!r}")


class KeyValueBytesStoreSupplier:
    """Makes key-value bytes stores: RocksDB ones when ``persistent`` (Kafka's
    ``RocksDBKeyValueBytesStoreSupplier``), in-memory ones otherwise."""

    def __init__(self, name: str, *, persistent: bool, timestamped: bool = False) -> None:
        _check_name(name)
        self.name = name
        self.persistent = persistent
        self.timestamped = timestamped

    def get(self) -> InMemoryKeyValueStore | RocksDBKeyValueStore:
        if self.persistent:
            return RocksDBKeyValueStore(self.name)
        return InMemoryKeyValueStore(self.name)

    def metrics_scope(self) -> str:
        return "rocksdb" if self.persistent else "in-memory"

    def __repr__(self) -> str:
        return f"KeyValueBytesStoreSupplier({self.name!r}, persistent={self.persistent})"


class LruMapBytesStoreSupplier(KeyValueBytesStoreSupplier):
    """Makes LRU-bounded in-memory key-value stores (Kafka's ``Stores.lruMap`` supplier)."""

    def __init__(self, name: str, max_cache_size: int) -> None:
        super().__init__(name, persistent=False)
        if isinstance(max_cache_size, bool) or not isinstance(max_cache_size, int):
            raise ValueError(f"maxCacheSize must be an int, got {max_cache_size!r}")
        if max_cache_size < 0:
            raise ValueError("maxCacheSize cannot be negative")
        self.max_cache_size = max_cache_size

    def get(self) -> MemoryLRUCache:  # type: ignore[override]
        return MemoryLRUCache(self.name, self.max_cache_size)

    def metrics_scope(self) -> str:
        return "in-memory-lru"

    def __repr__(self) -> str:
        return f"LruMapBytesStoreSupplier({self.name!r}, max_cache_size={self.max_cache_size})"


class WindowBytesStoreSupplier:
    """Makes window bytes stores (persistent: RocksDB segments on disk, as Kafka's RocksDB store);
    validates sizes as Kafka's ``Stores`` does. ``time_ordered``: the store of an emit-on-close
    aggregation (Kafka's ``RocksDbIndexedTimeOrderedWindowBytesStoreSupplier``, always persistent)."""

    def __init__(
        self,
        name: str,
        retention_period: int | timedelta,
        window_size: int | timedelta,
        retain_duplicates: bool,
        *,
        persistent: bool,
        timestamped: bool = False,
        time_ordered: bool = False,
    ) -> None:
        _check_name(name)
        retention = millis(retention_period, "retentionPeriod")
        size = millis(window_size, "windowSize")
        if retention < 0:
            raise ValueError("retentionPeriod cannot be negative")
        if size < 0:
            raise ValueError("windowSize cannot be negative")
        if size > retention:
            raise ValueError(
                f"The retention period of the window store {name} must be no smaller than its window size. "
                f"Got size=[{size}], retention=[{retention}]"
            )
        self.name = name
        self._retention = retention
        self._window_size = size
        self._retain_duplicates = bool(retain_duplicates)
        self.persistent = persistent or time_ordered
        self.timestamped = timestamped or time_ordered
        self.time_ordered = time_ordered

    def get(self) -> InMemoryWindowStore | RocksDBWindowStore:
        if self.time_ordered:
            return TimeOrderedWindowStore(
                self.name,
                self._retention,
                self._window_size,
                self._retain_duplicates,
                self.segment_interval_ms(),
            )
        if self.persistent:
            return RocksDBWindowStore(
                self.name,
                self._retention,
                self._window_size,
                self._retain_duplicates,
                self.segment_interval_ms(),
            )
        return InMemoryWindowStore(self.name, self._retention, self._window_size, self._retain_duplicates)

    def retention_period(self) -> int:
        return self._retention

    def window_size(self) -> int:
        return self._window_size

    def retain_duplicates(self) -> bool:
        return self._retain_duplicates

    def segment_interval_ms(self) -> int:
        # Kafka's default for persistent stores; the in-memory store has no segments
        return default_segment_interval(self._retention) if self.persistent else 1

    def metrics_scope(self) -> str:
        return "rocksdb-window" if self.persistent else "in-memory-window"


class SessionBytesStoreSupplier:
    """Makes session bytes stores (persistent: RocksDB segments on disk, as Kafka's RocksDB store).
    ``time_ordered``: the store of an emit-on-close aggregation (Kafka's
    ``RocksDbTimeOrderedSessionBytesStoreSupplier``, always persistent)."""

    def __init__(
        self, name: str, retention_period: int | timedelta, *, persistent: bool, time_ordered: bool = False
    ) -> None:
        _check_name(name)
        retention = millis(retention_period, "retentionPeriod")
        if retention < 0:
            raise ValueError("retentionPeriod cannot be negative")
        self.name = name
        self._retention = retention
        self.persistent = persistent or time_ordered
        self.time_ordered = time_ordered

    def get(self) -> InMemorySessionStore | RocksDBSessionStore:
        if self.time_ordered:
            return TimeOrderedSessionStore(self.name, self._retention, self.segment_interval_ms())
        if self.persistent:
            return RocksDBSessionStore(self.name, self._retention, self.segment_interval_ms())
        return InMemorySessionStore(self.name, self._retention)

    def retention_period(self) -> int:
        return self._retention

    def segment_interval_ms(self) -> int:
        return default_segment_interval(self._retention) if self.persistent else 1

    def metrics_scope(self) -> str:
        return "rocksdb-session" if self.persistent else "in-memory-session"


class _AbstractStoreBuilder(StoreBuilder[Any, Any]):
    def __init__(self, supplier: Any, key_serde: SerdeSpec, value_serde: SerdeSpec) -> None:
        if supplier is None:
            raise ValueError("supplier cannot be null")
        self.supplier = supplier
        self.key_serde = key_serde
        self.value_serde = value_serde
        self._caching = False
        self._logging = True
        self._log_config: dict[str, str] = {}

    @property
    def name(self) -> str:
        name: str = self.supplier.name
        return name

    def with_caching_enabled(self) -> Self:
        self._caching = True
        return self

    def with_caching_disabled(self) -> Self:
        self._caching = False
        return self

    def with_logging_enabled(self, config: dict[str, str] | None = None) -> Self:
        self._logging = True
        self._log_config = dict(config or {})
        return self

    def with_logging_disabled(self) -> Self:
        self._logging = False
        self._log_config = {}
        return self

    def logging_enabled(self) -> bool:
        return self._logging

    def caching_enabled(self) -> bool:
        return self._caching

    def log_config(self) -> dict[str, str]:
        return dict(self._log_config)

    def _finish(self, store: _M, caching: bool) -> _M:
        store.caching_enabled = caching
        scope = getattr(self.supplier, "metrics_scope", None)
        if callable(scope):  # a user's supplier may not say; Kafka's interface requires it
            store.metrics_scope = str(scope())
        return store

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, logging={self._logging}, caching={self._caching})"


class KeyValueStoreBuilder(_AbstractStoreBuilder):
    """Builds a typed key-value store."""

    _metered: type[MeteredKeyValueStore] = MeteredKeyValueStore
    _timestamped = False

    def build(self) -> MeteredKeyValueStore:
        inner: Any = self.supplier.get()
        if self._logging:
            inner = ChangeLoggingKeyValueBytesStore(inner, timestamped=self._timestamped)
        if self._caching:
            inner = CachingKeyValueStore(inner)
        return self._finish(self._metered(inner, self.key_serde, self.value_serde), self._caching)


class TimestampedKeyValueStoreBuilder(KeyValueStoreBuilder):
    """Builds a key-value store of ``ValueAndTimestamp`` values."""

    _metered = MeteredTimestampedKeyValueStore
    _timestamped = True


class WindowStoreBuilder(_AbstractStoreBuilder):
    """Builds a typed window store (caching is never used with retained duplicates, as in Kafka)."""

    _metered: type[MeteredWindowStore] = MeteredWindowStore
    _timestamped = False

    def build(self) -> MeteredWindowStore:
        retain_duplicates: bool = self.supplier.retain_duplicates()
        inner: Any = self.supplier.get()
        if self._logging:
            inner = ChangeLoggingWindowBytesStore(
                inner, retain_duplicates=retain_duplicates, timestamped=self._timestamped
            )
        caching = self._caching
        if caching and retain_duplicates:
            LOG.warning("Disabling caching for %s since store was configured to retain duplicates", self.name)
            caching = False
        if caching:
            inner = CachingWindowStore(inner, self.supplier.window_size())
        return self._finish(self._metered(inner, self.key_serde, self.value_serde), caching)

    def retention_period(self) -> int:
        result: int = self.supplier.retention_period()
        return result


class TimestampedWindowStoreBuilder(WindowStoreBuilder):
    """Builds a window store of ``ValueAndTimestamp`` values."""

    _metered = MeteredTimestampedWindowStore
    _timestamped = True


class SessionStoreBuilder(_AbstractStoreBuilder):
    """Builds a typed session store."""

    def build(self) -> MeteredSessionStore:
        inner: Any = self.supplier.get()
        if self._logging:
            inner = ChangeLoggingSessionBytesStore(inner)
        if self._caching:
            inner = CachingSessionStore(inner)
        return self._finish(MeteredSessionStore(inner, self.key_serde, self.value_serde), self._caching)

    def retention_period(self) -> int:
        result: int = self.supplier.retention_period()
        return result
