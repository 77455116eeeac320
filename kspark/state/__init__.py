"""State stores: ``Stores`` factories, ``QueryableStoreTypes`` and the store interfaces.

Interfaces are in :mod:`kspark.state.api`; implementations (in-memory bytes
stores, change-logging and typed layers, builders) in
:mod:`kspark.state.internals`.
"""

from __future__ import annotations

from kspark.state.api import (
    KeyValueIterator,
    KeyValueStore,
    ReadOnlyKeyValueStore,
    ReadOnlySessionStore,
    ReadOnlyWindowStore,
    SessionStore,
    StateStore,
    StoreBuilder,
    ValueAndTimestamp,
    WindowStore,
)
from kspark.state.dsl_store_suppliers import (
    BuiltInDslStoreSuppliers,
    DslKeyValueParams,
    DslSessionParams,
    DslStoreSuppliers,
    DslWindowParams,
)
from kspark.state.queryable import QueryableStoreType, QueryableStoreTypes
from kspark.state.rocksdb_config_setter import RocksDBConfigSetter
from kspark.state.stores import Stores
from kspark.state.versioned import VersionedKeyValueStore, VersionedRecord

__all__ = [
    "Stores",
    "QueryableStoreTypes",
    "QueryableStoreType",
    "StateStore",
    "KeyValueStore",
    "ReadOnlyKeyValueStore",
    "WindowStore",
    "ReadOnlyWindowStore",
    "SessionStore",
    "ReadOnlySessionStore",
    "StoreBuilder",
    "KeyValueIterator",
    "ValueAndTimestamp",
    "VersionedKeyValueStore",
    "VersionedRecord",
    "DslStoreSuppliers",
    "BuiltInDslStoreSuppliers",
    "DslKeyValueParams",
    "DslWindowParams",
    "DslSessionParams",
    "RocksDBConfigSetter",
]
