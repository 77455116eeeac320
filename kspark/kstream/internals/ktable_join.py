"""Table-table joins: ``KTableKTableInnerJoin``, ``...LeftJoin``, ``...RightJoin``,
``...OuterJoin`` and the merger.

An update of either table looks up the other table through its value getter
and emits the joined ``Change``; the result's timestamp is the larger of the
two records' timestamps. The "other" side of a join uses the mirrored
operator (a left join's other side is a right join) with the joiner's
arguments swapped, and both sides feed ``KTableKTableJoinMerger``, which
materializes the result if asked to.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark.kstream.internals.change import Change
from kspark.kstream.internals.forwarding import TimestampedTupleForwarder
from kspark.kstream.internals.kstream_processors import ContextualProcessor
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
    "KTableKTableAbstractJoin",
    "KTableKTableInnerJoin",
    "KTableKTableLeftJoin",
    "KTableKTableRightJoin",
    "KTableKTableOuterJoin",
    "KTableKTableJoinMerger",
]

_UNKNOWN = -1


class _JoinValueGetter(KTableValueGetter):
    def __init__(
        self, join: KTableKTableAbstractJoin, getter1: KTableValueGetter, getter2: KTableValueGetter
    ) -> None:
        self._join = join
        self._g1 = getter1
        self._g2 = getter2

    def init(self, context: ProcessorContext) -> None:
        self._g1.init(context)
        self._g2.init(context)

    def get(self, key: Any) -> ValueAndTimestamp[Any] | None:
        return self._join.join_lookup(self._g1.get(key), self._g2.get(key))

    def close(self) -> None:
        self._g1.close()
        self._g2.close()


class _JoinValueGetterSupplier(KTableValueGetterSupplier):
    def __init__(self, join: KTableKTableAbstractJoin) -> None:
        self._join = join
        self._s1 = join.table1._value_getter_supplier()
        self._s2 = join.table2._value_getter_supplier()

    def get(self) -> KTableValueGetter:
        return _JoinValueGetter(self._join, self._s1.get(), self._s2.get())

    def store_names(self) -> list[str]:
        return list(dict.fromkeys(self._s1.store_names() + self._s2.store_names()))


class _JoinProcessor(ContextualProcessor):
    def __init__(self, join: KTableKTableAbstractJoin, getter: KTableValueGetter) -> None:
        self._join = join
        self._getter = getter

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._getter.init(context)

    def process(self, record: Record[Any, Change[Any]]) -> None:
        if record.key is None:
            record_dropped(self._context, "Skipping record due to null key.")
            return
        if self._join.use_versioned_semantics and not record.value.is_latest:
            # an out-of-order version of a versioned table does not change the join (KIP-914)
            record_dropped(
                self._context,
                "Skipping out-of-order record from versioned table while performing table-table join.",
            )
            return
        result = self._join.on_update(record.value, record.timestamp, self._getter.get(record.key))
        if result is not None:
            change, timestamp = result
            self._context.forward(record.with_value(change).with_timestamp(timestamp))

    def close(self) -> None:
        self._getter.close()


class KTableKTableAbstractJoin(KTableProcessorSupplier):
    """One side of a table-table join: ``table1`` is updated, ``table2`` is looked up."""

    def __init__(self, table1: KTable, table2: KTable, joiner: Callable[[Any, Any], Any]) -> None:
        self.table1 = table1
        self.table2 = table2
        self.joiner = joiner
        self.send_old_values = False
        # KIP-914: set at build time when table1 (the side this processor is updated by) is versioned
        self.use_versioned_semantics = False
        self._other_getter_supplier = table2._value_getter_supplier()

    def __call__(self) -> Processor[Any, Any]:
        return _JoinProcessor(self, self._other_getter_supplier.get())

    def view(self) -> KTableValueGetterSupplier:
        return _JoinValueGetterSupplier(self)

    def enable_send_old_values(self, force_materialization: bool) -> bool:
        # table-table joins need both inputs' old values, hence materialized inputs
        self.table1._enable_send_old_values(True)
        self.table2._enable_send_old_values(True)
        self.send_old_values = True
        return True

    def on_update(
        self, change: Change[Any], timestamp: int, other: ValueAndTimestamp[Any] | None
    ) -> tuple[Change[Any], int] | None:
        raise NotImplementedError

    def join_lookup(
        self, vt1: ValueAndTimestamp[Any] | None, vt2: ValueAndTimestamp[Any] | None
    ) -> ValueAndTimestamp[Any] | None:
        raise NotImplementedError


class KTableKTableInnerJoin(KTableKTableAbstractJoin):
    """Emits only when both sides have a value."""

    def on_update(self, change: Change[Any], timestamp: int, other: ValueAndTimestamp[Any] | None) -> Any:
        if other is None or other.value is None:
            return None
        new = None if change.new_value is None else self.joiner(change.new_value, other.value)
        old = (
            self.joiner(change.old_value, other.value)
            if self.send_old_values and change.old_value is not None
            else None
        )
        return Change(new, old, change.is_latest), max(timestamp, other.timestamp)

    def join_lookup(self, vt1: Any, vt2: Any) -> ValueAndTimestamp[Any] | None:
        if vt1 is None or vt1.value is None or vt2 is None or vt2.value is None:
            return None
        return ValueAndTimestamp.make(self.joiner(vt1.value, vt2.value), max(vt1.timestamp, vt2.timestamp))


class KTableKTableLeftJoin(KTableKTableAbstractJoin):
    """Every left value joins, with ``None`` for a missing right value."""

    def on_update(self, change: Change[Any], timestamp: int, other: ValueAndTimestamp[Any] | None) -> Any:
        value2 = None if other is None else other.value
        if other is None:
            if change.new_value is None and change.old_value is None:
                return None
            ts = timestamp
        else:
            ts = max(timestamp, other.timestamp)
        new = None if change.new_value is None else self.joiner(change.new_value, value2)
        old = (
            self.joiner(change.old_value, value2)
            if self.send_old_values and change.old_value is not None
            else None
        )
        return Change(new, old, change.is_latest), ts

    def join_lookup(self, vt1: Any, vt2: Any) -> ValueAndTimestamp[Any] | None:
        if vt1 is None or vt1.value is None:
            return None
        value2 = None if vt2 is None else vt2.value
        ts = vt1.timestamp if vt2 is None else max(vt1.timestamp, vt2.timestamp)
        return ValueAndTimestamp.make(self.joiner(vt1.value, value2), ts)


class KTableKTableRightJoin(KTableKTableAbstractJoin):
    """The right table's side of a left join: emits only when the left side has a value."""

    def on_update(self, change: Change[Any], timestamp: int, other: ValueAndTimestamp[Any] | None) -> Any:
        if other is None or other.value is None:
            return None
        new = self.joiner(change.new_value, other.value)
        old = self.joiner(change.old_value, other.value) if self.send_old_values else None
        return Change(new, old, change.is_latest), max(timestamp, other.timestamp)

    def join_lookup(self, vt1: Any, vt2: Any) -> ValueAndTimestamp[Any] | None:
        if vt2 is None or vt2.value is None:
            return None
        value1 = None if vt1 is None else vt1.value
        ts = vt2.timestamp if vt1 is None else max(vt1.timestamp, vt2.timestamp)
        return ValueAndTimestamp.make(self.joiner(value1, vt2.value), ts)


class KTableKTableOuterJoin(KTableKTableAbstractJoin):
    """Emits whenever either side has a value."""

    def on_update(self, change: Change[Any], timestamp: int, other: ValueAndTimestamp[Any] | None) -> Any:
        value2 = None if other is None else other.value
        if value2 is None:
            if change.new_value is None and change.old_value is None:
                return None
            ts = timestamp
        else:
            ts = max(timestamp, other.timestamp)  # type: ignore[union-attr]
        new = (
            self.joiner(change.new_value, value2)
            if (value2 is not None or change.new_value is not None)
            else None
        )
        old = None
        if self.send_old_values and (value2 is not None or change.old_value is not None):
            old = self.joiner(change.old_value, value2)
        return Change(new, old, change.is_latest), ts

    def join_lookup(self, vt1: Any, vt2: Any) -> ValueAndTimestamp[Any] | None:
        value1 = None if vt1 is None else vt1.value
        value2 = None if vt2 is None else vt2.value
        if value1 is None and value2 is None:
            return None
        ts1 = _UNKNOWN if vt1 is None else vt1.timestamp
        ts2 = _UNKNOWN if vt2 is None else vt2.timestamp
        return ValueAndTimestamp.make(self.joiner(value1, value2), max(ts1, ts2))


class _MergerProcessor(ContextualProcessor):
    def __init__(self, merger: KTableKTableJoinMerger) -> None:
        self._m = merger
        self._store: KeyValueStoreWrapper | None = None
        self._forwarder: TimestampedTupleForwarder | None = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        if self._m.queryable_name is not None:
            self._store = KeyValueStoreWrapper(context, self._m.queryable_name)
            self._forwarder = TimestampedTupleForwarder(context, self._m.send_old_values, self._store.store)

    def process(self, record: Record[Any, Change[Any]]) -> None:
        if self._store is not None:
            change = record.value
            code = self._store.put(record.key, change.new_value, record.timestamp)
            if code != PUT_RETURN_CODE_NOT_PUT:
                assert self._forwarder is not None
                latest = Change(change.new_value, change.old_value, code == PUT_RETURN_CODE_IS_LATEST)
                self._forwarder.maybe_forward(record.with_value(latest))
        elif self._m.send_old_values:
            self._context.forward(record)
        else:
            self._context.forward(record.with_value(Change(record.value.new_value, None)))


class KTableKTableJoinMerger(KTableProcessorSupplier):
    """Merges both join sides' outputs into the join result table (and its store, if materialized)."""

    def __init__(
        self,
        this_join: KTableKTableAbstractJoin,
        other_join: KTableKTableAbstractJoin,
        queryable_name: str | None,
    ) -> None:
        self.this_join = this_join
        self.other_join = other_join
        self.queryable_name = queryable_name
        self.send_old_values = False

    def __call__(self) -> Processor[Any, Any]:
        return _MergerProcessor(self)

    def view(self) -> KTableValueGetterSupplier:
        if self.queryable_name is not None:
            return KTableMaterializedValueGetterSupplier(self.queryable_name)
        return self.this_join.view()

    def enable_send_old_values(self, force_materialization: bool) -> bool:
        self.this_join.enable_send_old_values(True)
        self.other_join.enable_send_old_values(True)
        self.send_old_values = True
        return True
