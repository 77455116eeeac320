"""KTable operators and stream aggregations, one supplier class per Kafka Streams operator.

All of them produce a KTable, so they forward ``Change(new, old)`` values
and implement ``KTableProcessorSupplier`` (``view()``,
``enable_send_old_values()``). Results stored in a materialized store are
``ValueAndTimestamp``. Updates go out through a ``TimestampedTupleForwarder``
over that store: immediately when the store does not cache, else when the
task's record cache flushes the entry (KIP-63); the old value travels only
when a downstream operator asked for old values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark.errors import StreamsException
from kspark.key_value import KeyValue
from kspark.kstream.internals.change import Change
from kspark.kstream.internals.forwarding import TimestampedTupleForwarder
from kspark.kstream.internals.kstream_processors import ContextualProcessor, to_key_value
from kspark.kstream.internals.store_wrapper import (
    PUT_RETURN_CODE_IS_LATEST,
    PUT_RETURN_CODE_NOT_PUT,
    KeyValueStoreWrapper,
)
from kspark.kstream.internals.stream_table_join import record_dropped
from kspark.kstream.internals.value_getters import (
    KTableMaterializedValueGetterSupplier,
    KTableProcessorSupplier,
    KTableValueGetter,
    KTableValueGetterSupplier,
)
from kspark.processor.api import Processor, ProcessorContext, Record
from kspark.state.api import ValueAndTimestamp

if TYPE_CHECKING:
    from kspark.kstream.ktable import KTable

__all__ = [
    "KTableSource",
    "KStreamAggregate",
    "KStreamCount",
    "KStreamReduce",
    "KTableFilter",
    "KTableMapValues",
    "KTableRepartitionMap",
    "KTableAggregate",
    "KTableReduce",
    "TimestampedTupleForwarder",
]


def _put_and_forward(
    store: KeyValueStoreWrapper,
    forwarder: TimestampedTupleForwarder | None,
    record: Record[Any, Any],
    new_value: Any,
    old_value: Any,
) -> None:
    """Write the table's new value at the record's timestamp, then forward the update unless a
    versioned store refused it (``is_latest`` False for an out-of-order version, KIP-914)."""
    code = store.put(record.key, new_value, record.timestamp)
    if code != PUT_RETURN_CODE_NOT_PUT:
        assert forwarder is not None
        forwarder.maybe_forward(
            record.with_value(Change(new_value, old_value, code == PUT_RETURN_CODE_IS_LATEST))
        )


# -- sources -------------------------------------------------------------------


class _KTableSourceProcessor(ContextualProcessor):
    def __init__(self, supplier: KTableSource) -> None:
        self._supplier = supplier
        self._store: KeyValueStoreWrapper | None = None
        self._forwarder: TimestampedTupleForwarder | None = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        if self._supplier.queryable_name is not None:
            self._store = KeyValueStoreWrapper(context, self._supplier.queryable_name)
            self._forwarder = TimestampedTupleForwarder(
                context, self._supplier.send_old_values, self._store.store
            )

    def process(self, record: Record[Any, Any]) -> None:
        if record.key is None:
            record_dropped(self._context, "Skipping record due to null key.")
            return
        if self._store is None:
            self._context.forward(record.with_value(Change(record.value, None)))
            return
        old = self._store.get(record.key)
        old_value = None if old is None else old.value
        _put_and_forward(self._store, self._forwarder, record, record.value, old_value)


class KTableSource(KTableProcessorSupplier):
    """The processor under a table's source topic; keeps the table in its store when materialized."""

    def __init__(self, store_name: str, queryable_name: str | None) -> None:
        self.store_name = store_name
        self.queryable_name = queryable_name
        self.send_old_values = False

    def __call__(self) -> Processor[Any, Any]:
        return _KTableSourceProcessor(self)

    def materialize(self) -> None:
        self.queryable_name = self.store_name

    def materialized(self) -> bool:
        return self.queryable_name is not None

    def view(self) -> KTableValueGetterSupplier:
        # a downstream reader needs the table's content: materialize it
        self.materialize()
        return KTableMaterializedValueGetterSupplier(self.store_name)

    def enable_send_old_values(self, force_materialization: bool) -> bool:
        if force_materialization:
            self.materialize()
        elif not self.materialized():
            return False
        self.send_old_values = True
        return True


# -- stream aggregations ---------------------------------------------------------


class _AggregateSupplierBase(KTableProcessorSupplier):
    def __init__(self, store_name: str) -> None:
        self.store_name = store_name
        self.send_old_values = False

    def view(self) -> KTableValueGetterSupplier:
        return KTableMaterializedValueGetterSupplier(self.store_name)

    def enable_send_old_values(self, force_materialization: bool = True) -> bool:
        self.send_old_values = True
        return True


class _StreamAggProcessor(ContextualProcessor):
    def __init__(self, supplier: _AggregateSupplierBase) -> None:
        self._supplier = supplier
        self._store: Any = None
        self._forwarder: TimestampedTupleForwarder | None = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._store = KeyValueStoreWrapper(context, self._supplier.store_name)
        self._forwarder = TimestampedTupleForwarder(
            context, self._supplier.send_old_values, self._store.store
        )

    def _emit(self, record: Record[Any, Any], new_agg: Any, old_agg: Any, timestamp: int) -> None:
        _put_and_forward(self._store, self._forwarder, record.with_timestamp(timestamp), new_agg, old_agg)

    def process(self, record: Record[Any, Any]) -> None:
        raise NotImplementedError


class _KStreamAggregateProcessor(_StreamAggProcessor):
    _supplier: KStreamAggregate

    def process(self, record: Record[Any, Any]) -> None:
        if record.key is None or record.value is None:
            record_dropped(self._context, "Skipping record due to null key or value.")
            return
        old = self._store.get(record.key)
        if old is None or old.value is None:
            old_agg = self._supplier.initializer()
            timestamp = record.timestamp
        else:
            old_agg = old.value
            timestamp = max(record.timestamp, old.timestamp)
        new_agg = self._supplier.aggregator(record.key, record.value, old_agg)
        self._emit(record, new_agg, old_agg, timestamp)


class KStreamAggregate(_AggregateSupplierBase):
    """``aggregate`` / ``count`` of a grouped stream; result timestamp = max of the inputs'."""

    def __init__(
        self, store_name: str, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any]
    ) -> None:
        super().__init__(store_name)
        self.initializer = initializer
        self.aggregator = aggregator

    def __call__(self) -> Processor[Any, Any]:
        return _KStreamAggregateProcessor(self)


class KStreamCount(KStreamAggregate):
    """``KGroupedStream.count``: an aggregate from 0 adding 1 per record.

    Its own class so that a runner can recognise a count and compute it
    natively (the Spark runner does, see kspark/runtime/spark/lowering.py).
    """

    def __init__(self, store_name: str) -> None:
        super().__init__(store_name, _zero, _plus_one)


def _zero() -> int:
    return 0


def _plus_one(_key: Any, _value: Any, count: int) -> int:
    return count + 1


class _KStreamReduceProcessor(_StreamAggProcessor):
    _supplier: KStreamReduce

    def process(self, record: Record[Any, Any]) -> None:
        if record.key is None or record.value is None:
            record_dropped(self._context, "Skipping record due to null key or value.")
            return
        old = self._store.get(record.key)
        old_agg = None if old is None else old.value
        if old_agg is None:
            new_agg = record.value
            timestamp = record.timestamp
        else:
            new_agg = self._supplier.reducer(old_agg, record.value)
            timestamp = max(record.timestamp, old.timestamp)
        self._emit(record, new_agg, old_agg, timestamp)


class KStreamReduce(_AggregateSupplierBase):
    """``reduce`` of a grouped stream: ``reducer(aggregate, value)``."""

    def __init__(self, store_name: str, reducer: Callable[[Any, Any], Any]) -> None:
        super().__init__(store_name)
        self.reducer = reducer

    def __call__(self) -> Processor[Any, Any]:
        return _KStreamReduceProcessor(self)


# -- stateless table operators -------------------------------------------------------


class _DerivedGetter(KTableValueGetter):
    """A value getter computing an operator's result from the parent's getter on the fly."""

    def __init__(
        self, parent: KTableValueGetter, compute: Callable[[Any, ValueAndTimestamp[Any] | None], Any]
    ) -> None:
        self._parent = parent
        self._compute = compute

    def init(self, context: ProcessorContext) -> None:
        self._parent.init(context)

    def get(self, key: Any) -> ValueAndTimestamp[Any] | None:
        return self._compute(key, self._parent.get(key))  # type: ignore[no-any-return]

    def get_as_of(self, key: Any, as_of_timestamp: int) -> ValueAndTimestamp[Any] | None:
        return self._compute(key, self._parent.get_as_of(key, as_of_timestamp))  # type: ignore[no-any-return]

    def is_versioned(self) -> bool:
        return self._parent.is_versioned()

    def close(self) -> None:
        self._parent.close()


class _DerivedGetterSupplier(KTableValueGetterSupplier):
    def __init__(self, parent: KTableValueGetterSupplier, compute: Callable[[Any, Any], Any]) -> None:
        self._parent = parent
        self._compute = compute

    def get(self) -> KTableValueGetter:
        return _DerivedGetter(self._parent.get(), self._compute)

    def store_names(self) -> list[str]:
        return self._parent.store_names()


class _StatelessTableSupplier(KTableProcessorSupplier):
    """Shared logic of KTableFilter and KTableMapValues: compute, optionally materialize, forward."""

    def __init__(self, parent: KTable, queryable_name: str | None) -> None:
        self.parent = parent
        self.queryable_name = queryable_name
        self.send_old_values = False
        # KIP-914: set at build time when the input table is versioned (only the filter uses it)
        self.use_versioned_semantics = False

    def compute(self, key: Any, value: Any) -> Any:
        raise NotImplementedError

    def compute_vt(self, key: Any, vt: ValueAndTimestamp[Any] | None) -> ValueAndTimestamp[Any] | None:
        raise NotImplementedError

    def skip_empty_update(self) -> bool:
        return False

    def view(self) -> KTableValueGetterSupplier:
        if self.queryable_name is not None:
            return KTableMaterializedValueGetterSupplier(self.queryable_name)
        return _DerivedGetterSupplier(self.parent._value_getter_supplier(), self.compute_vt)

    def enable_send_old_values(self, force_materialization: bool) -> bool:
        if self.queryable_name is not None:
            self.send_old_values = True
            return True
        if self.parent._enable_send_old_values(force_materialization):
            self.send_old_values = True
        return self.send_old_values

    def __call__(self) -> Processor[Any, Any]:
        return _StatelessTableProcessor(self)


class _StatelessTableProcessor(ContextualProcessor):
    def __init__(self, supplier: _StatelessTableSupplier) -> None:
        self._s = supplier
        self._store: Any = None
        self._forwarder: TimestampedTupleForwarder | None = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        if self._s.queryable_name is not None:
            self._store = KeyValueStoreWrapper(context, self._s.queryable_name)
            self._forwarder = TimestampedTupleForwarder(context, self._s.send_old_values, self._store.store)

    def process(self, record: Record[Any, Change[Any]]) -> None:
        key, change = record.key, record.value
        new_value = self._s.compute(key, change.new_value)
        old_value = None
        if self._s.send_old_values:
            if self._store is not None:
                old = self._store.get(key)
                old_value = None if old is None else old.value
            else:
                old_value = self._s.compute(key, change.old_value)
        if (
            self._s.skip_empty_update()
            and not self._s.use_versioned_semantics
            and self._s.send_old_values
            and old_value is None
            and new_value is None
        ):
            return  # nothing was there and nothing is: no tombstone needed
        if self._store is not None:
            _put_and_forward(self._store, self._forwarder, record, new_value, old_value)
        else:
            self._context.forward(record.with_value(Change(new_value, old_value, change.is_latest)))


class KTableFilter(_StatelessTableSupplier):
    """``KTable.filter`` / ``filter_not``: a filtered-out key becomes a tombstone."""

    def __init__(
        self,
        parent: KTable,
        predicate: Callable[[Any, Any], bool],
        filter_not: bool,
        queryable_name: str | None,
    ) -> None:
        super().__init__(parent, queryable_name)
        self.predicate = predicate
        self.filter_not = filter_not
        # if upstream already has old values, use them to avoid needless tombstones (as Kafka)
        self.send_old_values = parent._enable_send_old_values(False)

    def compute(self, key: Any, value: Any) -> Any:
        if value is not None and (self.filter_not ^ bool(self.predicate(key, value))):
            return value
        return None

    def compute_vt(self, key: Any, vt: ValueAndTimestamp[Any] | None) -> ValueAndTimestamp[Any] | None:
        if vt is not None and (self.filter_not ^ bool(self.predicate(key, vt.value))):
            return vt
        return None

    def skip_empty_update(self) -> bool:
        return True


class KTableMapValues(_StatelessTableSupplier):
    """``KTable.map_values``: ``mapper(key, value)``; a tombstone stays a tombstone."""

    def __init__(self, parent: KTable, mapper: Callable[[Any, Any], Any], queryable_name: str | None) -> None:
        super().__init__(parent, queryable_name)
        self.mapper = mapper

    def compute(self, key: Any, value: Any) -> Any:
        return None if value is None else self.mapper(key, value)

    def compute_vt(self, key: Any, vt: ValueAndTimestamp[Any] | None) -> ValueAndTimestamp[Any] | None:
        if vt is None:
            return None
        return ValueAndTimestamp.make(self.mapper(key, vt.value), vt.timestamp)


# -- re-grouping and table aggregations ---------------------------------------------------


class _RepartitionMapProcessor(ContextualProcessor):
    def __init__(self, mapper: Callable[[Any, Any], Any], supplier: KTableRepartitionMap) -> None:
        self._mapper = mapper
        self._s = supplier

    def _regroup(self, key: Any, value: Any) -> KeyValue[Any, Any] | None:
        """The (group key, value) ``value`` maps to; None when it has no group (null key or value)."""
        if value is None:
            return None
        result = self._mapper(key, value)
        # a selector that returns no KeyValue at all puts the record in no group (Kafka skips it)
        if result is None:
            return None
        pair = to_key_value(result, "group_by")
        return None if pair.key is None or pair.value is None else pair

    def process(self, record: Record[Any, Change[Any]]) -> None:
        if record.key is None:
            raise StreamsException("Record key for the grouping KTable should not be null.")
        change = record.value
        if self._s.use_versioned_semantics and not change.is_latest:
            # an out-of-order version of a versioned table does not change the aggregate (KIP-914)
            return
        new_pair = self._regroup(record.key, change.new_value)
        old_pair = self._regroup(record.key, change.old_value)
        if old_pair is not None and new_pair is not None and old_pair.key == new_pair.key:
            self._context.forward(
                record.with_key(old_pair.key).with_value(
                    Change(new_pair.value, old_pair.value, change.is_latest)
                )
            )
            return
        # the old value is subtracted before the new one is added, as Kafka orders them
        if old_pair is not None:
            self._context.forward(
                record.with_key(old_pair.key).with_value(Change(None, old_pair.value, change.is_latest))
            )
        if new_pair is not None:
            self._context.forward(
                record.with_key(new_pair.key).with_value(Change(new_pair.value, None, change.is_latest))
            )


class KTableRepartitionMap(KTableProcessorSupplier):
    """``KTable.group_by``: maps each update to its new group, retracting it from the old group."""

    def __init__(self, parent: KTable, mapper: Callable[[Any, Any], Any]) -> None:
        self.parent = parent
        self.mapper = mapper
        self.use_versioned_semantics = False

    def __call__(self) -> Processor[Any, Any]:
        return _RepartitionMapProcessor(self.mapper, self)

    def view(self) -> KTableValueGetterSupplier:
        raise StreamsException(
            "KTableRepartitionMap is not a readable table (its output is a grouped stream)"
        )

    def enable_send_old_values(self, force_materialization: bool) -> bool:
        # only ever called by the grouped table's aggregation; the output always carries old values
        raise StreamsException("KTableRepartitionMap should always require sending old values.")


class _TableAggregateProcessor(ContextualProcessor):
    def __init__(self, supplier: KTableAggregate | KTableReduce) -> None:
        self._s = supplier
        self._store: Any = None
        self._forwarder: TimestampedTupleForwarder | None = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._store = KeyValueStoreWrapper(context, self._s.store_name)
        self._forwarder = TimestampedTupleForwarder(context, self._s.send_old_values, self._store.store)

    def process(self, record: Record[Any, Change[Any]]) -> None:
        if record.key is None:
            raise StreamsException(
                f"Record key for KTable aggregate operator with state {self._s.store_name} "
                "should not be null."
            )
        new_agg, timestamp, old_agg = self._s.apply(record, self._store.get(record.key))
        _put_and_forward(self._store, self._forwarder, record.with_timestamp(timestamp), new_agg, old_agg)


class KTableAggregate(_AggregateSupplierBase):
    """Aggregate of a grouped table: subtract the old value, then add the new one."""

    def __init__(
        self,
        store_name: str,
        initializer: Callable[[], Any],
        adder: Callable[[Any, Any, Any], Any],
        subtractor: Callable[[Any, Any, Any], Any],
    ) -> None:
        super().__init__(store_name)
        self.initializer = initializer
        self.adder = adder
        self.subtractor = subtractor

    def __call__(self) -> Processor[Any, Any]:
        return _TableAggregateProcessor(self)

    def apply(
        self, record: Record[Any, Change[Any]], old: ValueAndTimestamp[Any] | None
    ) -> tuple[Any, int, Any]:
        key, change = record.key, record.value
        old_agg = None if old is None else old.value
        timestamp = record.timestamp
        if change.old_value is not None and old_agg is not None:
            intermediate = self.subtractor(key, change.old_value, old_agg)
            timestamp = max(record.timestamp, old.timestamp)  # type: ignore[union-attr]
        else:
            intermediate = old_agg
        if change.new_value is not None:
            base = self.initializer() if intermediate is None else intermediate
            new_agg = self.adder(key, change.new_value, base)
            if old is not None:
                timestamp = max(record.timestamp, old.timestamp)
        else:
            new_agg = intermediate
        return new_agg, timestamp, old_agg


class KTableReduce(_AggregateSupplierBase):
    """Reduce of a grouped table: ``subtractor(agg, old)`` then ``adder(agg, new)``."""

    def __init__(
        self, store_name: str, adder: Callable[[Any, Any], Any], subtractor: Callable[[Any, Any], Any]
    ) -> None:
        super().__init__(store_name)
        self.adder = adder
        self.subtractor = subtractor

    def __call__(self) -> Processor[Any, Any]:
        return _TableAggregateProcessor(self)

    def apply(
        self, record: Record[Any, Change[Any]], old: ValueAndTimestamp[Any] | None
    ) -> tuple[Any, int, Any]:
        change = record.value
        old_agg = None if old is None else old.value
        if change.old_value is not None and old_agg is not None:
            intermediate = self.subtractor(old_agg, change.old_value)
            timestamp = max(record.timestamp, old.timestamp)  # type: ignore[union-attr]
        else:
            intermediate = old_agg
            timestamp = record.timestamp
        if change.new_value is not None:
            if intermediate is None:
                new_agg = change.new_value
            else:
                new_agg = self.adder(intermediate, change.new_value)
                timestamp = max(record.timestamp, old.timestamp)  # type: ignore[union-attr]
        else:
            new_agg = intermediate
        return new_agg, timestamp, old_agg
