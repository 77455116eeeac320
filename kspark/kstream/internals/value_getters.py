"""KTable value getters and the supplier protocol every KTable-producing processor follows.

A KTable that is not materialized can still be looked up: its value getter
asks the parent's getter and applies the operator (filter, map_values,
join) on the fly, as Kafka Streams' ``KTableValueGetterSupplier`` chain.
Every processor supplier that produces a KTable (``KTableSource``,
``KStreamAggregate``, ``KTableFilter``, the windowed aggregations of the
windows module, ...) subclasses ``KTableProcessorSupplier``:

- ``enable_send_old_values(force_materialization) -> bool``: forward
  ``Change(new, old)`` with the old value filled in; returns False when it
  cannot without materializing and ``force_materialization`` is False;
- ``view() -> KTableValueGetterSupplier``: how downstream reads the table.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from kspark.processor.api import Processor, ProcessorContext
from kspark.state.api import ValueAndTimestamp
from kspark.state.internals.versioned import is_versioned_store

__all__ = [
    "KTableValueGetter",
    "KTableValueGetterSupplier",
    "KTableProcessorSupplier",
    "KTableMaterializedValueGetterSupplier",
    "KTableSourceValueGetterSupplier",
]


class KTableValueGetter(ABC):
    """Reads the current value (with its timestamp) of a key of a table."""

    @abstractmethod
    def init(self, context: ProcessorContext) -> None: ...

    @abstractmethod
    def get(self, key: Any) -> ValueAndTimestamp[Any] | None: ...

    def get_as_of(self, key: Any, as_of_timestamp: int) -> ValueAndTimestamp[Any] | None:
        """The value as of a time (Kafka's ``get(key, asOfTimestamp)``): versioned tables only."""
        raise TypeError("get(key, timestamp) is only supported for versioned stores")

    def is_versioned(self) -> bool:
        """Whether the table read is versioned (KIP-914): then ``get_as_of`` answers."""
        return False

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release what ``init`` acquired."""


class KTableValueGetterSupplier(ABC):
    """Makes value getters; ``store_names`` are the stores a reader must be connected to."""

    @abstractmethod
    def get(self) -> KTableValueGetter: ...

    @abstractmethod
    def store_names(self) -> list[str]: ...


class KTableProcessorSupplier(ABC):
    """A processor supplier whose output is a KTable (values are ``Change``)."""

    @abstractmethod
    def __call__(self) -> Processor[Any, Any]: ...

    @abstractmethod
    def view(self) -> KTableValueGetterSupplier: ...

    @abstractmethod
    def enable_send_old_values(self, force_materialization: bool) -> bool: ...


class _StoreValueGetter(KTableValueGetter):
    def __init__(self, store_name: str) -> None:
        self._store_name = store_name
        self._store: Any = None
        self._versioned = False

    def init(self, context: ProcessorContext) -> None:
        self._store = context.get_state_store(self._store_name)
        self._versioned = is_versioned_store(self._store)

    def is_versioned(self) -> bool:
        return self._versioned

    def get_as_of(self, key: Any, as_of_timestamp: int) -> ValueAndTimestamp[Any] | None:
        if not self._versioned:
            return super().get_as_of(key, as_of_timestamp)
        record = self._store.get(key, as_of_timestamp)
        return None if record is None else ValueAndTimestamp.make(record.value, record.timestamp)

    def get(self, key: Any) -> ValueAndTimestamp[Any] | None:
        result = self._store.get(key)
        if self._versioned:
            return None if result is None else ValueAndTimestamp.make(result.value, result.timestamp)
        return (
            result
            if result is None or isinstance(result, ValueAndTimestamp)
            else ValueAndTimestamp(result, -1)
        )


class KTableMaterializedValueGetterSupplier(KTableValueGetterSupplier):
    """Reads a materialized (timestamped key-value) store directly."""

    def __init__(self, store_name: str) -> None:
        self.store_name = store_name

    def get(self) -> KTableValueGetter:
        return _StoreValueGetter(self.store_name)

    def store_names(self) -> list[str]:
        return [self.store_name]


KTableSourceValueGetterSupplier = KTableMaterializedValueGetterSupplier
"""Kafka has both names; reading a table source's store is the same thing."""
