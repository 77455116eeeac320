"""The versioned key-value store: bytes store, change-logging and typed layers, supplier and builder.

Kafka's ``RocksDBVersionedStore`` keeps the latest version of each key in a
"latest value store" and older versions in segments by their ``validTo``,
dropping a segment once all of it is older than the history retention. The
visible behaviour is that of a per-key map ``timestamp -> value or tombstone``
read and written as below; kspark keeps exactly that map in memory (sorted by
timestamp per key) and drops a key's versions whose ``valid_to`` is at or
before ``observed stream time - history retention`` (no read can reach them:
a read that old only sees the latest version, which is never dropped).

* ``put(key, value, ts)``: refused (``PUT_RETURN_CODE_NOT_PUT``, counted as a
  dropped record, as Kafka's expired-record sensor is the task's
  dropped-records sensor) when ``ts < observed stream time - retention``;
  else the version at ``ts`` is set (``None`` is a tombstone version) and the
  next version's timestamp is returned, or ``-1`` if there is none.
* ``delete(key, ts)``: ``get(key, ts)`` then a tombstone put; ``None`` when refused.
* ``get(key)``: the latest version if it is not a tombstone.
* ``get(key, as_of)``: beyond the retention only the latest version (if not
  after ``as_of``); else the version with the largest timestamp ``<= as_of``.

The change-logging layer logs every put and delete with the write's own
timestamp as the record timestamp (``ChangeLoggingVersionedKeyValueBytesStore``),
refused ones included, as Kafka does; restore replays the records through the
same put, skipping those older than the grace period. The typed layer
(``MeteredVersionedKeyValueStore``) serializes keys and plain values and
returns ``VersionedRecord(value, timestamp)`` without ``valid_to``, as Kafka's.
Versioned stores never cache (Kafka throws on ``with_caching_enabled``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Self

from sortedcontainers import SortedDict

from kspark.state.api import StateStore, StoreBuilder
from kspark.state.internals.change_logging import WrappedStateStore
from kspark.state.internals.in_memory_store import InMemoryStore
from kspark.state.internals.metered import RestoreRecord, _MeteredStore
from kspark.state.versioned import (
    PUT_RETURN_CODE_NOT_PUT,
    PUT_RETURN_CODE_VALID_TO_UNDEFINED,
    VersionedKeyValueStore,
    VersionedRecord,
)

if TYPE_CHECKING:
    from kspark.processor.api import ProcessorContext
    from kspark.serde.api import Serde

__all__ = [
    "InMemoryVersionedKeyValueBytesStore",
    "ChangeLoggingVersionedKeyValueBytesStore",
    "MeteredVersionedKeyValueStore",
    "VersionedBytesStoreSupplier",
    "VersionedKeyValueStoreBuilder",
    "is_versioned_store",
]

_NO_TIMESTAMP = -1  # Kafka's ConsumerRecord.NO_TIMESTAMP: the observed stream time before any put


class InMemoryVersionedKeyValueBytesStore(InMemoryStore):
    """The versioned bytes store (see the module docstring); keys and values are ``bytes``."""

    def __init__(self, name: str, history_retention: int, segment_interval: int) -> None:
        super().__init__(name, persistent=True)
        self.history_retention = history_retention
        self.segment_interval = segment_interval
        # Kafka: history retention doubles as the grace period
        self.grace_period = history_retention
        self.observed_stream_time = _NO_TIMESTAMP
        self._versions: dict[bytes, SortedDict] = {}

    def init(self, context: ProcessorContext, root: StateStore) -> None:
        super().init(context, root)

    def _clear(self) -> None:
        self._versions.clear()
        self.observed_stream_time = _NO_TIMESTAMP

    def _expired(self, timestamp: int) -> bool:
        return timestamp < self.observed_stream_time - self.grace_period

    def _record_expired(self, what: str) -> None:
        hook = getattr(self._context, "record_dropped", None)
        if callable(hook):
            hook(f"Skipping record for expired {what}.")

    # -- writes --------------------------------------------------------------

    def put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        if key is None:
            raise ValueError("key cannot be null")
        self._check_open()
        if self._expired(timestamp):
            self._record_expired("put")
            return PUT_RETURN_CODE_NOT_PUT
        self.observed_stream_time = max(self.observed_stream_time, timestamp)
        return self._do_put(key, value, timestamp)

    def delete(self, key: bytes, timestamp: int) -> VersionedRecord[bytes] | None:
        if key is None:
            raise ValueError("key cannot be null")
        self._check_open()
        if self._expired(timestamp):
            self._record_expired("delete")
            return None
        existing = self.get(key, timestamp)
        self.observed_stream_time = max(self.observed_stream_time, timestamp)
        self._do_put(key, None, timestamp)
        return existing

    def _do_put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        versions = self._versions.get(key)
        if versions is None:
            versions = self._versions[key] = SortedDict()
        versions[timestamp] = value
        index = versions.index(timestamp)
        valid_to = (
            versions.peekitem(index + 1)[0]
            if index + 1 < len(versions)
            else PUT_RETURN_CODE_VALID_TO_UNDEFINED
        )
        self._prune(key, versions)
        return int(valid_to)

    def _prune(self, key: bytes, versions: SortedDict) -> None:
        """Drop versions no read can reach any more: those valid only before the retention."""
        horizon = self.observed_stream_time - self.history_retention
        # a version's valid_to is the next version's timestamp: drop while the *next* one is <= horizon
        while len(versions) > 1 and versions.peekitem(1)[0] <= horizon:
            versions.popitem(0)
        if len(versions) == 1 and versions.peekitem(0)[1] is None and versions.peekitem(0)[0] <= horizon:
            # a lone tombstone older than the retention marks nothing a put or read can still see
            del self._versions[key]

    def restore(self, records: Iterable[RestoreRecord]) -> None:
        """Apply changelog records ``(key, value, timestamp)`` as Kafka's ``restoreBatch``: records
        older than the grace period were never written and are skipped (not counted)."""
        for key, value, timestamp in records:
            if self._expired(timestamp):
                continue
            self.observed_stream_time = max(self.observed_stream_time, timestamp)
            self._do_put(key, value, timestamp)

    # -- reads ---------------------------------------------------------------

    def get(self, key: bytes, as_of_timestamp: int | None = None) -> VersionedRecord[bytes] | None:
        if key is None:
            raise ValueError("key cannot be null")
        self._check_open()
        versions = self._versions.get(key)
        if not versions:
            return None
        latest_ts, latest_value = versions.peekitem(-1)
        if as_of_timestamp is None:
            return None if latest_value is None else VersionedRecord(latest_value, latest_ts)
        if as_of_timestamp < self.observed_stream_time - self.history_retention:
            # beyond the retention only the latest version answers (it never expires)
            if latest_value is not None and latest_ts <= as_of_timestamp:
                return VersionedRecord(latest_value, latest_ts)
            return None
        index = versions.bisect_right(as_of_timestamp) - 1
        if index < 0:
            return None
        ts, value = versions.peekitem(index)
        if value is None:
            return None
        if index + 1 < len(versions):
            return VersionedRecord(value, ts, versions.peekitem(index + 1)[0])
        return VersionedRecord(value, ts)

    def versions(self, key: bytes) -> list[tuple[int, bytes | None]]:
        """The versions of ``key`` the store holds, oldest first (tombstones as ``None``); for tests
        and interactive queries."""
        self._check_open()
        return list(self._versions.get(key, {}).items())

    def keys(self) -> list[bytes]:
        """The keys with at least one version held, in byte order."""
        self._check_open()
        return sorted(self._versions)

    def approximate_num_entries(self) -> int:
        self._check_open()
        return sum(1 for v in self._versions.values() if v and v.peekitem(-1)[1] is not None)


class ChangeLoggingVersionedKeyValueBytesStore(WrappedStateStore):
    """Logs every put and delete with the write's timestamp as the changelog record's timestamp."""

    def put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        valid_to: int = self.wrapped.put(key, value, timestamp)
        self._log(key, value, timestamp)
        return valid_to

    def delete(self, key: bytes, timestamp: int) -> VersionedRecord[bytes] | None:
        old: VersionedRecord[bytes] | None = self.wrapped.delete(key, timestamp)
        self._log(key, None, timestamp)
        return old


class MeteredVersionedKeyValueStore(_MeteredStore, VersionedKeyValueStore[Any]):
    """The typed versioned store processors and the DSL use."""

    _metered_ops: ClassVar[Mapping[str, str]] = {
        "put": "put",
        "delete": "delete",
        "get": "get",
        "flush": "flush",
    }

    def put(self, key: Any, value: Any, timestamp: int) -> int:
        self._check_open()
        _check_timestamp(timestamp, "timestamp")
        result: int = self.wrapped.put(self.raw_key(key), self.raw_value(value), timestamp)
        return result

    def delete(self, key: Any, timestamp: int) -> VersionedRecord[Any] | None:
        self._check_open()
        _check_timestamp(timestamp, "timestamp")
        return self._typed_record(self.wrapped.delete(self.raw_key(key), timestamp))

    def get(self, key: Any, as_of_timestamp: int | None = None) -> VersionedRecord[Any] | None:
        self._check_open()
        if as_of_timestamp is not None:
            _check_timestamp(as_of_timestamp, "as_of_timestamp")
        return self._typed_record(self.wrapped.get(self.raw_key(key), as_of_timestamp))

    def _typed_record(self, raw: VersionedRecord[bytes] | None) -> VersionedRecord[Any] | None:
        if raw is None:
            return None
        value = self.value_from(raw.value)
        # Kafka's typed store goes through ValueAndTimestamp and so drops valid_to
        return None if value is None else VersionedRecord(value, raw.timestamp)

    def _restore(self, records: Iterable[RestoreRecord]) -> None:
        bottom: Any = self.wrapped
        while hasattr(bottom, "wrapped"):
            bottom = bottom.wrapped
        bottom.restore(list(records))


def _check_timestamp(value: Any, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be int epoch milliseconds, got {value!r}")


def is_versioned_store(store: Any) -> bool:
    """Whether ``store`` (a built store, typed layer outermost) is a versioned key-value store."""
    return isinstance(store, VersionedKeyValueStore)


def _millis(value: int | timedelta, what: str) -> int:
    if isinstance(value, timedelta):
        return int(value / timedelta(milliseconds=1))
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be int milliseconds or a datetime.timedelta, got {value!r}")
    return value


def default_segment_interval(history_retention: int) -> int:
    """Kafka's default segment interval of a versioned store (it changes nothing visible here)."""
    if history_retention <= 60_000:
        return max(history_retention // 3, 2_000)
    if history_retention <= 300_000:
        return max(history_retention // 5, 20_000)
    if history_retention <= 3_600_000:
        return max(history_retention // 12, 60_000)
    return max(history_retention // 24, 300_000)


class VersionedBytesStoreSupplier:
    """Makes versioned bytes stores (Kafka's ``RocksDbVersionedKeyValueBytesStoreSupplier``); kspark's
    keep their versions in memory, like every kspark store (``persistent()`` is True, as Kafka reports)."""

    def __init__(
        self, name: str, history_retention: int | timedelta, segment_interval: int | timedelta | None = None
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"store name must be a non-empty str, got {name!r}")
        retention = _millis(history_retention, "historyRetention")
        if retention < 0:
            raise ValueError("historyRetention cannot be negative")
        interval = (
            default_segment_interval(retention)
            if segment_interval is None
            else _millis(segment_interval, "segmentInterval")
        )
        if interval < 1:
            raise ValueError("segmentInterval cannot be zero or negative")
        self.name = name
        self._history_retention = retention
        self._segment_interval = interval
        self.persistent = True
        self.timestamped = False

    def get(self) -> InMemoryVersionedKeyValueBytesStore:
        return InMemoryVersionedKeyValueBytesStore(self.name, self._history_retention, self._segment_interval)

    def history_retention_ms(self) -> int:
        return self._history_retention

    def segment_interval_ms(self) -> int:
        return self._segment_interval

    def metrics_scope(self) -> str:
        return "rocksdb"

    def __repr__(self) -> str:
        return f"VersionedBytesStoreSupplier({self.name!r}, history_retention={self._history_retention})"


class VersionedKeyValueStoreBuilder(StoreBuilder[Any, Any]):
    """Builds a typed versioned store: metered -> change-logging (when on) -> bytes store; no cache."""

    def __init__(
        self,
        supplier: VersionedBytesStoreSupplier,
        key_serde: Serde[Any] | str | None,
        value_serde: Serde[Any] | str | None,
    ) -> None:
        if supplier is None:
            raise ValueError("supplier cannot be null")
        if not isinstance(supplier, VersionedBytesStoreSupplier):
            raise TypeError(
                "Stores.versioned_key_value_store_builder needs a versioned store supplier "
                f"(Stores.persistent_versioned_key_value_store), got {supplier!r}"
            )
        self.supplier = supplier
        self.key_serde = key_serde
        self.value_serde = value_serde
        self._logging = True
        self._log_config: dict[str, str] = {}

    @property
    def name(self) -> str:
        return self.supplier.name

    def build(self) -> MeteredVersionedKeyValueStore:
        inner: Any = self.supplier.get()
        if self._logging:
            inner = ChangeLoggingVersionedKeyValueBytesStore(inner)
        store = MeteredVersionedKeyValueStore(inner, self.key_serde, self.value_serde)
        store.caching_enabled = False
        store.metrics_scope = self.supplier.metrics_scope()
        return store

    def with_caching_enabled(self) -> Self:
        raise ValueError(f"Versioned stores do not support caching (store {self.name})")

    def with_caching_disabled(self) -> Self:
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
        return False

    def log_config(self) -> dict[str, str]:
        return dict(self._log_config)

    def history_retention(self) -> int:
        return self.supplier.history_retention_ms()

    def __repr__(self) -> str:
        return f"VersionedKeyValueStoreBuilder({self.name!r}, logging={self._logging})"
