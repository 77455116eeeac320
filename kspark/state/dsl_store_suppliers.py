"""``DslStoreSuppliers`` (KIP-954): which store suppliers the DSL builds its stores from.

As Kafka's ``DslStoreSuppliers``, ``DslKeyValueParams`` / ``DslWindowParams`` /
``DslSessionParams`` and ``BuiltInDslStoreSuppliers``: ``ROCKS_DB`` (the
default) gives Kafka's persistent stores (timestamped, time-ordered under
emit-on-window-close), ``IN_MEMORY`` its in-memory ones. kspark keeps every
store in memory, but a persistent window or session store follows Kafka's
RocksDB *segmented* retention and an in-memory one Kafka's in-memory rules
(:mod:`kspark.state.stores`), so the choice changes what late records find,
exactly as it does in Kafka. A ``Materialized`` or ``StreamJoined`` picks one
(``with_store_type`` / ``with_dsl_store_suppliers``), else the
``dsl.store.suppliers.class`` given to ``StreamsBuilder.build(props)`` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kspark.state.internals.builders import (
    KeyValueBytesStoreSupplier,
    SessionBytesStoreSupplier,
    WindowBytesStoreSupplier,
)

__all__ = [
    "DslStoreSuppliers",
    "DslKeyValueParams",
    "DslWindowParams",
    "DslSessionParams",
    "BuiltInDslStoreSuppliers",
    "resolve_dsl_store_suppliers",
    "DSL_STORE_SUPPLIERS_CLASS_CONFIG",
]

DSL_STORE_SUPPLIERS_CLASS_CONFIG = "dsl.store.suppliers.class"


@dataclass(frozen=True)
class DslKeyValueParams:
    """What the DSL asks of a key-value store: its name, and whether it holds timestamps."""

    name: str
    is_timestamped: bool


@dataclass(frozen=True)
class DslWindowParams:
    """What the DSL asks of a window store (Kafka's ``DslWindowParams``); times in ms."""

    name: str
    retention_period: int
    window_size: int
    retain_duplicates: bool
    emit_strategy: Any  # kspark.kstream.windows.EmitStrategy
    is_sliding_window: bool
    is_timestamped: bool


@dataclass(frozen=True)
class DslSessionParams:
    """What the DSL asks of a session store (Kafka's ``DslSessionParams``); times in ms."""

    name: str
    retention_period: int
    emit_strategy: Any  # kspark.kstream.windows.EmitStrategy


class DslStoreSuppliers:
    """The store suppliers of the DSL's stores; subclass it to plug in other stores."""

    def configure(self, configs: dict[str, Any]) -> None:
        """Called with the application's configs (Kafka's ``Configurable``); nothing by default."""

    def key_value_store(self, params: DslKeyValueParams) -> KeyValueBytesStoreSupplier:
        raise NotImplementedError

    def window_store(self, params: DslWindowParams) -> WindowBytesStoreSupplier:
        raise NotImplementedError

    def session_store(self, params: DslSessionParams) -> SessionBytesStoreSupplier:
        raise NotImplementedError


def _on_close(emit_strategy: Any) -> bool:
    kind = getattr(emit_strategy, "type", None)
    return callable(kind) and getattr(kind(), "name", None) == "ON_WINDOW_CLOSE"


class RocksDBDslStoreSuppliers(DslStoreSuppliers):
    """Kafka's persistent (RocksDB) stores: kspark's persistent suppliers, same semantics."""

    def key_value_store(self, params: DslKeyValueParams) -> KeyValueBytesStoreSupplier:
        return KeyValueBytesStoreSupplier(params.name, persistent=True, timestamped=params.is_timestamped)

    def window_store(self, params: DslWindowParams) -> WindowBytesStoreSupplier:
        if _on_close(params.emit_strategy):
            # Kafka's RocksDbIndexedTimeOrderedWindowBytesStoreSupplier
            return WindowBytesStoreSupplier(
                params.name,
                params.retention_period,
                params.window_size,
                params.retain_duplicates,
                persistent=True,
                time_ordered=True,
            )
        return WindowBytesStoreSupplier(
            params.name,
            params.retention_period,
            params.window_size,
            params.retain_duplicates,
            persistent=True,
            timestamped=params.is_timestamped,
        )

    def session_store(self, params: DslSessionParams) -> SessionBytesStoreSupplier:
        return SessionBytesStoreSupplier(
            params.name,
            params.retention_period,
            persistent=True,
            time_ordered=_on_close(params.emit_strategy),
        )

    def __repr__(self) -> str:
        return "BuiltInDslStoreSuppliers.ROCKS_DB"


class InMemoryDslStoreSuppliers(DslStoreSuppliers):
    """Kafka's in-memory stores (the emit strategy does not change them, as in Kafka)."""

    def key_value_store(self, params: DslKeyValueParams) -> KeyValueBytesStoreSupplier:
        return KeyValueBytesStoreSupplier(params.name, persistent=False)

    def window_store(self, params: DslWindowParams) -> WindowBytesStoreSupplier:
        return WindowBytesStoreSupplier(
            params.name,
            params.retention_period,
            params.window_size,
            params.retain_duplicates,
            persistent=False,
        )

    def session_store(self, params: DslSessionParams) -> SessionBytesStoreSupplier:
        return SessionBytesStoreSupplier(params.name, params.retention_period, persistent=False)

    def __repr__(self) -> str:
        return "BuiltInDslStoreSuppliers.IN_MEMORY"


class BuiltInDslStoreSuppliers:
    """Kafka's built-in DSL store suppliers: ``ROCKS_DB`` (the default) and ``IN_MEMORY``."""

    RocksDBDslStoreSuppliers = RocksDBDslStoreSuppliers
    InMemoryDslStoreSuppliers = InMemoryDslStoreSuppliers
    ROCKS_DB: DslStoreSuppliers = RocksDBDslStoreSuppliers()
    IN_MEMORY: DslStoreSuppliers = InMemoryDslStoreSuppliers()


_BY_NAME = {"rocks_db": BuiltInDslStoreSuppliers.ROCKS_DB, "in_memory": BuiltInDslStoreSuppliers.IN_MEMORY}


def resolve_dsl_store_suppliers(value: Any, what: str) -> DslStoreSuppliers:
    """A ``DslStoreSuppliers`` from what a user may pass: an instance, a subclass (instantiated, as
    Kafka instantiates ``dsl.store.suppliers.class``), a ``Materialized.StoreType`` member, or the
    names ``"rocks_db"`` / ``"in_memory"`` (case-insensitive)."""
    delegate = getattr(value, "delegate", None)
    if isinstance(delegate, DslStoreSuppliers):
        return delegate
    if isinstance(value, DslStoreSuppliers):
        return value
    if isinstance(value, type) and issubclass(value, DslStoreSuppliers):
        return value()
    if isinstance(value, str) and value.lower() in _BY_NAME:
        return _BY_NAME[value.lower()]
    raise ValueError(
        f"{what}: expected a DslStoreSuppliers (BuiltInDslStoreSuppliers.ROCKS_DB / IN_MEMORY, a "
        f"subclass or an instance of one), Materialized.StoreType, or 'rocks_db' / 'in_memory'; got {value!r}"
    )
