"""``MaterializedInternal`` and ``KeyValueStoreMaterializer``: from a ``Materialized`` to a store builder.

``MaterializedInternal`` is the mutable internal twin of the immutable
``Materialized``: the DSL fills in serdes it inherits from upstream and
generates a store name when the user gave none (burning a number of the
shared name counter, as Kafka does). A store without a user-given name is
not queryable (``queryable_store_name`` is ``None``) but may still be
created when an operator needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kspark.kstream.config_objects import Materialized, Named
from kspark.serde import Serdes
from kspark.state.dsl_store_suppliers import BuiltInDslStoreSuppliers, DslKeyValueParams, DslStoreSuppliers

if TYPE_CHECKING:
    from kspark.kstream.internals.internal_builder import InternalStreamsBuilder
    from kspark.state.api import StoreBuilder

__all__ = [
    "MaterializedInternal",
    "KeyValueStoreMaterializer",
    "materialized_internal",
    "split_named_materialized",
    "stream_count_materialized",
]


class MaterializedInternal:
    """Resolved settings of one materialized store."""

    def __init__(
        self,
        materialized: Materialized,
        name_provider: InternalStreamsBuilder | None = None,
        generated_store_prefix: str | None = None,
    ) -> None:
        self.materialized = materialized
        self.key_serde: Any = materialized.key_serde
        self.value_serde: Any = materialized.value_serde
        self.caching = materialized.caching
        self.logging = materialized.logging
        self.log_config = dict(materialized.log_config or {})
        self.store_supplier: Any = materialized.store_supplier
        self.dsl_store_suppliers: Any = materialized.dsl_store_suppliers
        self.retention_ms = materialized.retention_ms()
        self.queryable = materialized.name is not None
        self.store_name: str = materialized.name or ""
        if not self.queryable and name_provider is not None:
            self.store_name = name_provider.new_store_name(generated_store_prefix or "")

    def store_suppliers(self) -> DslStoreSuppliers:
        """The DSL store suppliers of a store without a supplier of its own: the ``Materialized``'s
        store type, else Kafka's default, ``BuiltInDslStoreSuppliers.ROCKS_DB``."""
        chosen: DslStoreSuppliers | None = self.dsl_store_suppliers
        return chosen if chosen is not None else BuiltInDslStoreSuppliers.ROCKS_DB

    @property
    def queryable_store_name(self) -> str | None:
        return self.store_name if self.queryable else None

    def with_key_serde(self, serde: Any) -> MaterializedInternal:
        self.key_serde = serde
        return self

    def with_value_serde(self, serde: Any) -> MaterializedInternal:
        self.value_serde = serde
        return self


def materialized_internal(
    materialized: Materialized | None,
    name_provider: InternalStreamsBuilder | None,
    generated_prefix: str | None,
) -> MaterializedInternal:
    if materialized is not None and not isinstance(materialized, Materialized):
        raise TypeError(f"materialized must be a Materialized, got {materialized!r}")
    return MaterializedInternal(materialized or Materialized(), name_provider, generated_prefix)


def stream_count_materialized(
    materialized: Materialized | None, builder: InternalStreamsBuilder, prefix: str, key_serde: Any
) -> MaterializedInternal:
    """The store of a grouped (or windowed) stream's ``count``: the stream's keys, ``Long`` counts.

    Kafka burns a store name for an unnamed ``Materialized`` here (KGroupedTable's
    count does not), so generated names stay numbered as in Kafka Streams.
    """
    if materialized is not None and materialized.name is None:
        builder.new_store_name(prefix)
    m = materialized_internal(materialized, builder, prefix)
    if m.key_serde is None:
        m.key_serde = key_serde
    if m.value_serde is None:
        m.value_serde = Serdes.Long()
    return m


def split_named_materialized(
    named: Named | str | Materialized | None, materialized: Materialized | None
) -> tuple[str | None, Materialized | None]:
    """The processor name and ``Materialized`` of an operator that takes either one first.

    Kafka overloads ``count(Materialized)`` and ``count(Named, Materialized)``;
    here a ``Materialized`` may stand in the ``named`` position instead.
    """
    if isinstance(named, Materialized):
        if materialized is not None:
            raise TypeError(f"named must be a Named or a str, got {named!r}")
        return None, named
    if isinstance(named, Named):
        return named.name, materialized
    if isinstance(named, str):
        return Named(named).name, materialized
    if named is not None:
        raise TypeError(f"named must be a Named or a str, got {named!r}")
    return None, materialized


class KeyValueStoreMaterializer:
    """Builds the timestamped key-value store of a KTable (``StoreFactory`` of the graph)."""

    def __init__(self, materialized: MaterializedInternal) -> None:
        self.materialized = materialized

    @property
    def name(self) -> str:
        return self.materialized.store_name

    def is_versioned(self) -> bool:
        """Whether the store is versioned (KIP-914: its table is a versioned table)."""
        from kspark.state.internals.versioned import VersionedBytesStoreSupplier

        return isinstance(self.materialized.store_supplier, VersionedBytesStoreSupplier)

    def history_retention(self) -> int:
        if not self.is_versioned():
            raise ValueError("historyRetention is not supported when not a versioned store")
        retention: int = self.materialized.store_supplier.history_retention_ms()
        return retention

    def builder(self) -> StoreBuilder[Any, Any]:
        from kspark.state import Stores  # owned by the state engineer; only needed when a store is built

        m = self.materialized
        if self.is_versioned():
            # versioned stores never cache (Kafka logs that it does not enable caching)
            vb = Stores.versioned_key_value_store_builder(m.store_supplier, m.key_serde, m.value_serde)
            return vb.with_logging_enabled(m.log_config) if m.logging else vb.with_logging_disabled()
        supplier = m.store_supplier or m.store_suppliers().key_value_store(
            DslKeyValueParams(m.store_name, True)
        )
        b = Stores.timestamped_key_value_store_builder(supplier, m.key_serde, m.value_serde)
        b = b.with_caching_enabled() if m.caching else b.with_caching_disabled()
        b = b.with_logging_enabled(m.log_config) if m.logging else b.with_logging_disabled()
        return b
