"""``KeyValueStoreWrapper``: the DSL's view of a table store, timestamped or versioned.

Kafka's ``KeyValueStoreWrapper``. A KTable's store is a timestamped key-value
store, or a versioned one when its ``Materialized`` names a versioned supplier
(KIP-914). DSL processors read and write through this wrapper so that both
behave alike: ``get`` gives the latest ``ValueAndTimestamp``; ``put`` returns
Kafka's put code: ``PUT_RETURN_CODE_IS_LATEST`` (-1) when the write is the
key's latest version (always, for a timestamped store),
``PUT_RETURN_CODE_NOT_PUT`` when a versioned store refused it (older than its
history retention; the processor then forwards nothing), anything else for an
out-of-order write to a versioned store (forwarded with ``is_latest=False``).
"""

from __future__ import annotations

from typing import Any

from kspark.errors import InvalidStateStoreException
from kspark.processor.api import ProcessorContext
from kspark.state.api import KeyValueStore, ValueAndTimestamp
from kspark.state.internals.versioned import is_versioned_store
from kspark.state.versioned import PUT_RETURN_CODE_NOT_PUT, PUT_RETURN_CODE_VALID_TO_UNDEFINED

__all__ = ["KeyValueStoreWrapper", "PUT_RETURN_CODE_IS_LATEST", "PUT_RETURN_CODE_NOT_PUT"]

PUT_RETURN_CODE_IS_LATEST = PUT_RETURN_CODE_VALID_TO_UNDEFINED


class KeyValueStoreWrapper:
    """Reads and writes a DSL table store, whichever of the two kinds it is."""

    def __init__(self, context: ProcessorContext, store_name: str) -> None:
        store: Any = context.get_state_store(store_name)
        self.versioned = is_versioned_store(store)
        if not self.versioned and not isinstance(store, KeyValueStore):
            raise InvalidStateStoreException(
                f"KTable source state store {store_name} must be a timestamped or a versioned key-value "
                f"store. Got: {type(store).__name__}"
            )
        self.store = store

    @property
    def name(self) -> str:
        name: str = self.store.name
        return name

    def get(self, key: Any) -> ValueAndTimestamp[Any] | None:
        if self.versioned:
            record = self.store.get(key)
            return None if record is None else ValueAndTimestamp.make(record.value, record.timestamp)
        result: ValueAndTimestamp[Any] | None = self.store.get(key)
        return result

    def get_as_of(self, key: Any, as_of_timestamp: int) -> ValueAndTimestamp[Any] | None:
        if not self.versioned:
            raise TypeError("get(key, timestamp) is only supported for versioned stores")
        record = self.store.get(key, as_of_timestamp)
        return None if record is None else ValueAndTimestamp.make(record.value, record.timestamp)

    def put(self, key: Any, value: Any, timestamp: int) -> int:
        if self.versioned:
            code: int = self.store.put(key, value, timestamp)
            return code
        self.store.put(key, ValueAndTimestamp.make(value, timestamp))
        return PUT_RETURN_CODE_IS_LATEST
