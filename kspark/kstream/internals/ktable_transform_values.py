"""``KTable.transform_values``: Kafka Streams' ``KTableTransformValues``.

The user's ``ValueTransformerWithKey`` maps each update's new value (and, when
a downstream operator needs old values and the result is not materialized,
the old value too). Materialized (a ``Materialized`` with a store name), the
result is put in its own store and forwarded through the record cache like
``map_values``; otherwise a downstream value getter (a join reading this
table) runs a transformer of its own on the parent's value, with the record
context's timestamp set to that value's, as Kafka's getter does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark.errors import StreamsException
from kspark.kstream.internals.change import Change
from kspark.kstream.internals.forwarding import TimestampedTupleForwarder
from kspark.kstream.internals.kstream_processors import ContextualProcessor, DelegatingContext
from kspark.kstream.internals.value_getters import (
    KTableMaterializedValueGetterSupplier,
    KTableProcessorSupplier,
    KTableValueGetter,
    KTableValueGetterSupplier,
)
from kspark.kstream.value_transformer import ValueTransformerWithKey
from kspark.processor.api import Processor, ProcessorContext, Record
from kspark.state.api import ValueAndTimestamp

if TYPE_CHECKING:
    from kspark.kstream.ktable import KTable

__all__ = ["KTableTransformValues"]

_NO_TIMESTAMP = -1  # Kafka's ConsumerRecord.NO_TIMESTAMP: a getter's missing value has no time


class _ForwardingDisabledContext(DelegatingContext):
    """The transformer's context (Kafka's ``ForwardingDisabledProcessorContext``): everything but
    ``forward``, which would let a transformer change the key. ``timestamp`` may be pinned to the
    value a getter transforms."""

    def __init__(self, inner: ProcessorContext) -> None:
        super().__init__(inner)
        self.pinned_timestamp: int | None = None

    def forward(self, record: Record[Any, Any], child_name: str | None = None) -> None:
        raise StreamsException(
            "ProcessorContext.forward() is not supported from a ValueTransformerWithKey's context: "
            "the framework forwards what transform() returns, so that the key cannot change"
        )

    def timestamp(self) -> int:
        if self.pinned_timestamp is not None:
            return self.pinned_timestamp
        return self._inner.timestamp()


def _new_transformer(supplier: Callable[[], Any], where: str) -> ValueTransformerWithKey[Any, Any, Any]:
    transformer = supplier()
    if not callable(getattr(transformer, "transform", None)):
        raise StreamsException(
            f"{where}: the supplier must return a ValueTransformerWithKey (an object with "
            f"transform(read_only_key, value)), got {transformer!r}"
        )
    return transformer  # type: ignore[no-any-return]


class _TransformValuesProcessor(ContextualProcessor):
    def __init__(self, supplier: KTableTransformValues) -> None:
        self._s = supplier
        self._transformer = _new_transformer(supplier.transformer_supplier, "KTable.transform_values")
        self._store: Any = None
        self._forwarder: TimestampedTupleForwarder | None = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._transformer.init(_ForwardingDisabledContext(context))
        if self._s.queryable_name is not None:
            self._store = context.get_state_store(self._s.queryable_name)
            self._forwarder = TimestampedTupleForwarder(context, self._s.send_old_values, self._store)

    def process(self, record: Record[Any, Change[Any]]) -> None:
        key, change = record.key, record.value
        new_value = self._transformer.transform(key, change.new_value)
        if self._store is not None:
            old_value = None
            if self._s.send_old_values:
                old = self._store.get(key)
                old_value = None if old is None else old.value
            self._store.put(key, ValueAndTimestamp.make(new_value, record.timestamp))
            assert self._forwarder is not None
            self._forwarder.maybe_forward(record.with_value(Change(new_value, old_value)))
        else:
            old_value = (
                self._transformer.transform(key, change.old_value) if self._s.send_old_values else None
            )
            self._context.forward(record.with_value(Change(new_value, old_value, change.is_latest)))

    def close(self) -> None:
        self._transformer.close()


class _TransformValuesGetter(KTableValueGetter):
    def __init__(self, parent: KTableValueGetter, supplier: Callable[[], Any]) -> None:
        self._parent = parent
        self._transformer = _new_transformer(supplier, "KTable.transform_values (value getter)")
        self._context: _ForwardingDisabledContext | None = None

    def init(self, context: ProcessorContext) -> None:
        self._parent.init(context)
        self._context = _ForwardingDisabledContext(context)
        self._transformer.init(self._context)

    def get(self, key: Any) -> ValueAndTimestamp[Any] | None:
        assert self._context is not None
        vt = self._parent.get(key)
        timestamp = _NO_TIMESTAMP if vt is None else vt.timestamp
        self._context.pinned_timestamp = timestamp
        try:
            value = self._transformer.transform(key, None if vt is None else vt.value)
        finally:
            self._context.pinned_timestamp = None
        return ValueAndTimestamp.make(value, timestamp)

    def close(self) -> None:
        self._parent.close()
        self._transformer.close()


class _TransformValuesGetterSupplier(KTableValueGetterSupplier):
    def __init__(self, parent: KTableValueGetterSupplier, supplier: Callable[[], Any]) -> None:
        self._parent = parent
        self._supplier = supplier

    def get(self) -> KTableValueGetter:
        return _TransformValuesGetter(self._parent.get(), self._supplier)

    def store_names(self) -> list[str]:
        return self._parent.store_names()


class KTableTransformValues(KTableProcessorSupplier):
    """The supplier of ``KTable.transform_values``' processor and value getter."""

    def __init__(
        self, parent: KTable, transformer_supplier: Callable[[], Any], queryable_name: str | None
    ) -> None:
        self.parent = parent
        self.transformer_supplier = transformer_supplier
        self.queryable_name = queryable_name
        self.send_old_values = False

    def __call__(self) -> Processor[Any, Any]:
        return _TransformValuesProcessor(self)

    def view(self) -> KTableValueGetterSupplier:
        if self.queryable_name is not None:
            return KTableMaterializedValueGetterSupplier(self.queryable_name)
        return _TransformValuesGetterSupplier(self.parent._value_getter_supplier(), self.transformer_supplier)

    def enable_send_old_values(self, force_materialization: bool) -> bool:
        if self.queryable_name is not None:
            self.send_old_values = True
            return True
        if self.parent._enable_send_old_values(force_materialization):
            self.send_old_values = True
        return self.send_old_values
