"""``GlobalKTable``: a table fully replicated to every task, read by stream joins through a key selector."""

from __future__ import annotations

from kspark.kstream.internals.value_getters import KTableValueGetterSupplier

__all__ = ["GlobalKTable"]


class GlobalKTable:
    """A global table; ``_value_getter_supplier`` reads its (always materialized) store."""

    def __init__(
        self, value_getter_supplier: KTableValueGetterSupplier, queryable_store_name: str | None
    ) -> None:
        self._value_getter_supplier = value_getter_supplier
        self._queryable_store_name = queryable_store_name

    def queryable_store_name(self) -> str | None:
        return self._queryable_store_name

    def __repr__(self) -> str:
        return f"GlobalKTable({self._value_getter_supplier.store_names()[0]})"
