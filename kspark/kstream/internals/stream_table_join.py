"""Stream-table joins: ``KStreamKTableJoin`` and ``KStreamGlobalKTableJoin``.

Each stream record looks up the table's current value through a value
getter (the table is not a trigger: a table update arriving later does not
emit anything). A record whose join key or value is ``None`` is dropped and
counted in ``dropped-records-total``, except that a left join still emits
for a ``None`` *join key* with a value (KIP-962; for a GlobalKTable the join
key is the key selector's result), joined with ``None``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark.kstream.internals.kstream_processors import ContextualProcessor
from kspark.kstream.internals.value_getters import KTableValueGetter, KTableValueGetterSupplier
from kspark.processor.api import Processor, ProcessorContext, Record

__all__ = ["KStreamKTableJoin", "KStreamGlobalKTableJoin", "record_dropped"]


def record_dropped(context: ProcessorContext, reason: str) -> None:
    """Count a dropped record in the task's ``dropped-records-total`` (contract 4)."""
    hook = getattr(context, "record_dropped", None)
    if hook is not None:
        hook(reason)


class _JoinProcessor(ContextualProcessor):
    def __init__(
        self,
        getter: KTableValueGetter,
        key_mapper: Callable[[Any, Any], Any],
        joiner: Callable[[Any, Any, Any], Any],
        left: bool,
    ) -> None:
        self._getter = getter
        self._key_mapper = key_mapper
        self._joiner = joiner
        self._left = left

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._getter.init(context)

    def process(self, record: Record[Any, Any]) -> None:
        mapped_key = self._key_mapper(record.key, record.value)
        # Kafka 4.1: a left join keeps a record whose *join key* is null (the record key for a KTable,
        # the key selector's result for a GlobalKTable) and joins it with null
        relaxed = self._left and mapped_key is None and record.value is not None
        if not relaxed and (mapped_key is None or record.value is None):
            record_dropped(self._context, "Skipping record due to null join key or value.")
            return
        table_value = None
        if mapped_key is not None:
            vt = self._getter.get(mapped_key)
            table_value = None if vt is None else vt.value
        if self._left or table_value is not None:
            self._context.forward(record.with_value(self._joiner(record.key, record.value, table_value)))

    def close(self) -> None:
        self._getter.close()


class KStreamKTableJoin:
    """``KStream.join/left_join(KTable)``: ``joiner(key, stream_value, table_value)``."""

    def __init__(
        self,
        value_getter_supplier: KTableValueGetterSupplier,
        joiner: Callable[[Any, Any, Any], Any],
        left: bool,
    ) -> None:
        self.value_getter_supplier = value_getter_supplier
        self.joiner = joiner
        self.left = left

    def __call__(self) -> Processor[Any, Any]:
        return _JoinProcessor(self.value_getter_supplier.get(), lambda k, v: k, self.joiner, self.left)


class KStreamGlobalKTableJoin:
    """``KStream.join/left_join(GlobalKTable, key_selector, joiner)``."""

    def __init__(
        self,
        value_getter_supplier: KTableValueGetterSupplier,
        key_selector: Callable[[Any, Any], Any],
        joiner: Callable[[Any, Any, Any], Any],
        left: bool,
    ) -> None:
        self.value_getter_supplier = value_getter_supplier
        self.key_selector = key_selector
        self.joiner = joiner
        self.left = left

    def __call__(self) -> Processor[Any, Any]:
        return _JoinProcessor(self.value_getter_supplier.get(), self.key_selector, self.joiner, self.left)
