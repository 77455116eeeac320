"""``Stores``: factories of store suppliers and builders, as Kafka's ``Stores`` class.

Durations are int milliseconds or ``timedelta``. A persistent key-value
store (``persistent_key_value_store``, ``persistent_timestamped_key_value_store``,
and every DSL key-value store under ``default.dsl.store=rocksDB``) is a
RocksDB database on local disk, in ``<task state dir>/rocksdb/<store name>``
as in Kafka Streams, or in a temporary directory removed at close when the
task has no state directory (the TopologyTestDriver); see
:mod:`kspark.state.internals.rocksdb_key_value_store`. It answers as the
in-memory one does, except that its iterators read a snapshot of keys *and*
values (Kafka's RocksDB iterators), where the in-memory store's read values
live. Persistent window and session stores (``persistent_window_store``,
``persistent_timestamped_window_store``, ``persistent_session_store`` and the
DSL's windowed, session and stream-stream join stores) are RocksDB databases
too, one per time segment of ``max(retention / 2, 60_000)`` ms, in
``<task state dir>/rocksdb/<store name>/<store name>.<segment start>``, with
Kafka's *segmented* retention (a late put is kept while its segment is live;
expired segments are deleted from disk) and Kafka's RocksDB scan order
(segment, then key bytes, then time); see
:mod:`kspark.state.internals.rocksdb_segments`. The in-memory ones follow
Kafka's in-memory rules. The time-ordered stores of emit-on-window-close
aggregations keep the segmented rules in memory
(:mod:`kspark.state.internals.time_ordered_stores`). The other stores live in
memory and report ``persistent()`` as asked, so topology descriptions and
metadata match Kafka Streams.
"""

from __future__ import annotations

from datetime import timedelta

from kspark.state.internals.builders import (
    KeyValueBytesStoreSupplier,
    KeyValueStoreBuilder,
    LruMapBytesStoreSupplier,
    SerdeSpec,
    SessionBytesStoreSupplier,
    SessionStoreBuilder,
    TimestampedKeyValueStoreBuilder,
    TimestampedWindowStoreBuilder,
    WindowBytesStoreSupplier,
    WindowStoreBuilder,
)
from kspark.state.internals.versioned import VersionedBytesStoreSupplier, VersionedKeyValueStoreBuilder

__all__ = ["Stores"]

Duration = int | timedelta


class Stores:
    """Store suppliers (``in_memory_*``, ``persistent_*``) and builders (``*_builder``)."""

    @staticmethod
    def in_memory_key_value_store(name: str) -> KeyValueBytesStoreSupplier:
        return KeyValueBytesStoreSupplier(name, persistent=False)

    @staticmethod
    def lru_map(name: str, max_cache_size: int) -> KeyValueBytesStoreSupplier:
        """An in-memory key-value store of at most ``max_cache_size`` entries that evicts the least
        recently used one (reads and writes count as uses); with logging on, an eviction writes a
        tombstone to the changelog, as Kafka's ``Stores.lruMap``."""
        return LruMapBytesStoreSupplier(name, max_cache_size)

    @staticmethod
    def persistent_key_value_store(name: str) -> KeyValueBytesStoreSupplier:
        return KeyValueBytesStoreSupplier(name, persistent=True)

    @staticmethod
    def persistent_timestamped_key_value_store(name: str) -> KeyValueBytesStoreSupplier:
        return KeyValueBytesStoreSupplier(name, persistent=True, timestamped=True)

    @staticmethod
    def persistent_versioned_key_value_store(
        name: str, history_retention: Duration, segment_interval: Duration | None = None
    ) -> VersionedBytesStoreSupplier:
        """A versioned key-value store (KIP-889) keeping ``history_retention`` of old versions;
        ``segment_interval`` defaults as Kafka's (see :mod:`kspark.state.internals.versioned`)."""
        return VersionedBytesStoreSupplier(name, history_retention, segment_interval)

    @staticmethod
    def in_memory_window_store(
        name: str, retention_period: Duration, window_size: Duration, retain_duplicates: bool
    ) -> WindowBytesStoreSupplier:
        return WindowBytesStoreSupplier(
            name, retention_period, window_size, retain_duplicates, persistent=False
        )

    @staticmethod
    def persistent_window_store(
        name: str, retention_period: Duration, window_size: Duration, retain_duplicates: bool
    ) -> WindowBytesStoreSupplier:
        return WindowBytesStoreSupplier(
            name, retention_period, window_size, retain_duplicates, persistent=True
        )

    @staticmethod
    def persistent_timestamped_window_store(
        name: str, retention_period: Duration, window_size: Duration, retain_duplicates: bool
    ) -> WindowBytesStoreSupplier:
        return WindowBytesStoreSupplier(
            name, retention_period, window_size, retain_duplicates, persistent=True, timestamped=True
        )

    @staticmethod
    def in_memory_session_store(name: str, retention_period: Duration) -> SessionBytesStoreSupplier:
        return SessionBytesStoreSupplier(name, retention_period, persistent=False)

    @staticmethod
    def persistent_session_store(name: str, retention_period: Duration) -> SessionBytesStoreSupplier:
        return SessionBytesStoreSupplier(name, retention_period, persistent=True)

    @staticmethod
    def key_value_store_builder(
        supplier: KeyValueBytesStoreSupplier, key_serde: SerdeSpec, value_serde: SerdeSpec
    ) -> KeyValueStoreBuilder:
        """A builder of a typed key-value store; a ``None`` serde means the config's default."""
        return KeyValueStoreBuilder(supplier, key_serde, value_serde)

    @staticmethod
    def timestamped_key_value_store_builder(
        supplier: KeyValueBytesStoreSupplier, key_serde: SerdeSpec, value_serde: SerdeSpec
    ) -> TimestampedKeyValueStoreBuilder:
        return TimestampedKeyValueStoreBuilder(supplier, key_serde, value_serde)

    @staticmethod
    def versioned_key_value_store_builder(
        supplier: VersionedBytesStoreSupplier, key_serde: SerdeSpec, value_serde: SerdeSpec
    ) -> VersionedKeyValueStoreBuilder:
        """A builder of a typed ``VersionedKeyValueStore`` (never cached, as in Kafka)."""
        return VersionedKeyValueStoreBuilder(supplier, key_serde, value_serde)

    @staticmethod
    def window_store_builder(
        supplier: WindowBytesStoreSupplier, key_serde: SerdeSpec, value_serde: SerdeSpec
    ) -> WindowStoreBuilder:
        return WindowStoreBuilder(supplier, key_serde, value_serde)

    @staticmethod
    def timestamped_window_store_builder(
        supplier: WindowBytesStoreSupplier, key_serde: SerdeSpec, value_serde: SerdeSpec
    ) -> TimestampedWindowStoreBuilder:
        return TimestampedWindowStoreBuilder(supplier, key_serde, value_serde)

    @staticmethod
    def session_store_builder(
        supplier: SessionBytesStoreSupplier, key_serde: SerdeSpec, value_serde: SerdeSpec
    ) -> SessionStoreBuilder:
        return SessionStoreBuilder(supplier, key_serde, value_serde)
