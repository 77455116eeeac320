"""``KTable.suppress``: the suppression processor.

Mirrors Kafka's ``KTableSuppressProcessorSupplier``. Each update is buffered
per key at a buffer time (the record's timestamp, or its window's end for
``until_window_closes``) in a change-logged
:class:`~kspark.kstream.internals.time_ordered_key_value_buffer.InMemoryTimeOrderedKeyValueChangeBuffer`
store (changelog ``<application.id>-<buffer name>-changelog``); a key already
buffered keeps its original place ("non-resetting"). After each record,
entries whose buffer time is at or before ``observed stream time - wait`` are
emitted oldest first, with the record context (timestamp, headers, topic,
offset) of the latest update of that key. ``until_window_closes`` waits for
the upstream windowed aggregation's grace period (plus the gap for session
windows) and drops tombstones.

The buffer contents are restored from the changelog. kspark addition: the
processor's observed stream time lives in the task's processor metadata
(``<store name>:observed-stream-time``, see
:class:`~kspark.kstream.internals.window_aggregate.MetadataClock`). Kafka 4.0
keeps it in memory and restarts it at -1, so a restarted task holds back
records its predecessor would have emitted; kspark keeps it so a restored task
(on the Spark runner: any micro-batch) continues exactly as if it had not been
restarted.
"""

from __future__ import annotations

from typing import Any

from kspark.errors import StreamsException, TopologyException
from kspark.kstream.internals.time_ordered_key_value_buffer import (
    Eviction,
    InMemoryTimeOrderedKeyValueChangeBuffer,
    InMemoryTimeOrderedKeyValueChangeBufferBuilder,
    WindowedKeySpec,
)
from kspark.kstream.internals.value_getters import (
    KTableProcessorSupplier,
    KTableValueGetter,
    KTableValueGetterSupplier,
)
from kspark.kstream.internals.window_aggregate import MetadataClock
from kspark.kstream.suppressed import BufferFullStrategy, Suppressed, TimeDefinition
from kspark.processor.api import Processor, ProcessorContext, Record
from kspark.processor.internals.records import ProcessorRecordContext
from kspark.state.api import StoreBuilder, ValueAndTimestamp

__all__ = [
    "KTableSuppressProcessorSupplier",
    "find_and_verify_window_grace",
    "build_suppress",
]

_Buffer = InMemoryTimeOrderedKeyValueChangeBuffer


class _SuppressedValueGetter(KTableValueGetter):
    """Reads the suppressed view: the prior value of a buffered key, else the parent's value."""

    def __init__(self, parent: KTableValueGetter, store_name: str) -> None:
        self._parent = parent
        self._store_name = store_name
        self._buffer: _Buffer = None  # type: ignore[assignment]

    def init(self, context: ProcessorContext) -> None:
        self._parent.init(context)
        self._buffer = context.get_state_store(self._store_name)  # type: ignore[assignment]

    def get(self, key: Any) -> ValueAndTimestamp[Any] | None:
        buffered, prior = self._buffer.prior_value_for_buffered(key)
        return prior if buffered else self._parent.get(key)

    def close(self) -> None:
        self._parent.close()


class _SuppressedValueGetterSupplier(KTableValueGetterSupplier):
    def __init__(self, parent: KTableValueGetterSupplier, store_name: str) -> None:
        self._parent = parent
        self._store_name = store_name

    def get(self) -> KTableValueGetter:
        return _SuppressedValueGetter(self._parent.get(), self._store_name)

    def store_names(self) -> list[str]:
        return [self._store_name, *self._parent.store_names()]


class KTableSuppressProcessorSupplier(KTableProcessorSupplier):
    """Supplier of the suppression processor; ``wait_ms`` is resolved when the node is built."""

    def __init__(self, suppressed: Suppressed, store_name: str, wait_ms: int) -> None:
        self.suppressed = suppressed
        self.store_name = store_name
        self.wait_ms = wait_ms
        self.parent_value_getter_supplier: Any = None

    def enable_send_old_values(self, force_materialization: bool = False) -> bool:
        return True

    def view(self) -> KTableValueGetterSupplier:
        if self.parent_value_getter_supplier is None:
            raise TopologyException(f"the table upstream of {self.store_name} cannot be read")
        return _SuppressedValueGetterSupplier(self.parent_value_getter_supplier(), self.store_name)

    def __call__(self) -> Processor[Any, Any]:
        return _KTableSuppressProcessor(self)


class _KTableSuppressProcessor(Processor[Any, Any]):
    def __init__(self, s: KTableSuppressProcessorSupplier) -> None:
        cfg = s.suppressed.buffer_config
        self.max_records = cfg.max_records_value
        self.max_bytes = cfg.max_bytes_value
        self.full_strategy = cfg.buffer_full_strategy
        self.wait_ms = s.wait_ms
        self.window_end_time = s.suppressed.time_definition() is TimeDefinition.WINDOW_END_TIME
        self.safe_to_drop_tombstones = s.suppressed.safe_to_drop_tombstones()
        self.store_name = s.store_name
        self._observed_stream_time = MetadataClock(f"{s.store_name}:observed-stream-time")
        self.context: ProcessorContext = None  # type: ignore[assignment]
        self.buffer: _Buffer = None  # type: ignore[assignment]
        self.node_name = s.suppressed.name or s.store_name

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.buffer = context.get_state_store(self.store_name)  # type: ignore[assignment]
        self._observed_stream_time.init(context)

    def process(self, record: Record[Any, Any]) -> None:
        self._observed_stream_time.advance(record.timestamp)
        buffer_time = record.key.window.end if self.window_end_time else record.timestamp
        self.buffer.put(buffer_time, record, _record_context(self.context, record))
        self._enforce_constraints()

    def _over_capacity(self) -> bool:
        return self.buffer.num_records() > self.max_records or self.buffer.buffer_size() > self.max_bytes

    def _enforce_constraints(self) -> None:
        expiry = self._observed_stream_time.value - self.wait_ms
        self.buffer.evict_while(lambda: self.buffer.min_timestamp() <= expiry, self._emit)
        if self._over_capacity():
            if self.full_strategy is BufferFullStrategy.EMIT:
                self.buffer.evict_while(self._over_capacity, self._emit)
                return
            raise StreamsException(
                f"{self.node_name} buffer exceeded its max capacity. Currently "
                f"[{self.buffer.num_records()}/{self.max_records}] records and "
                f"[{self.buffer.buffer_size()}/{self.max_bytes}] bytes."
            )

    def _emit(self, eviction: Eviction) -> None:
        change = eviction.value
        if change.new_value is None and self.safe_to_drop_tombstones:
            return
        rc = eviction.record_context
        # downstream sees the buffered record's context (topic, offset...), as Kafka restores it
        has_rc = hasattr(self.context, "record_context")
        previous = getattr(self.context, "record_context", None)
        if has_rc:
            self.context.record_context = rc  # type: ignore[attr-defined]
        try:
            self.context.forward(Record(eviction.key, change, rc.timestamp, rc.headers))
        finally:
            if has_rc:
                self.context.record_context = previous  # type: ignore[attr-defined]


def _record_context(context: ProcessorContext, record: Record[Any, Any]) -> ProcessorRecordContext:
    """The context of the record being buffered (built from the public api for foreign contexts)."""
    rc = getattr(context, "record_context", None)
    if isinstance(rc, ProcessorRecordContext):
        return rc
    md = context.record_metadata()
    if md is None:
        return ProcessorRecordContext(record.timestamp, -1, -1, None, record.headers)
    return ProcessorRecordContext(record.timestamp, md.offset, md.partition, md.topic, record.headers)


def _windowed_key_of(node: Any) -> WindowedKeySpec | None:
    """How keys are windowed by the nearest windowed aggregation upstream of ``node`` (None: not)."""
    from kspark.kstream.internals.session_window_aggregate import KStreamSessionWindowAggregate
    from kspark.kstream.internals.sliding_window_aggregate import KStreamSlidingWindowAggregate
    from kspark.kstream.internals.window_aggregate import KStreamWindowAggregate

    pending, seen = [node], set()
    while pending:
        current = pending.pop(0)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        supplier = getattr(getattr(current, "processor_parameters", None), "processor_supplier", None)
        if isinstance(supplier, KStreamWindowAggregate):
            return WindowedKeySpec("time", supplier.windows.size())
        if isinstance(supplier, KStreamSlidingWindowAggregate):
            return WindowedKeySpec("time", supplier.windows.time_difference_ms())
        if isinstance(supplier, KStreamSessionWindowAggregate):
            return WindowedKeySpec("session")
        pending.extend(getattr(current, "parents", []))
    return None


def _grace_of(node: Any) -> int | None:
    """The grace a windowed aggregation node defines (session: grace + gap), else None."""
    from kspark.kstream.internals.session_window_aggregate import KStreamSessionWindowAggregate
    from kspark.kstream.internals.sliding_window_aggregate import KStreamSlidingWindowAggregate
    from kspark.kstream.internals.window_aggregate import KStreamWindowAggregate

    params = getattr(node, "processor_parameters", None)
    supplier = getattr(params, "processor_supplier", None)
    if isinstance(supplier, KStreamWindowAggregate | KStreamSlidingWindowAggregate):
        return supplier.windows.grace_period_ms()
    if isinstance(supplier, KStreamSessionWindowAggregate):
        return supplier.windows.grace_period_ms() + supplier.windows.inactivity_gap()
    return None


def find_and_verify_window_grace(node: Any, chain: str = "") -> int:
    """Kafka's ``GraphGraceSearchUtil``: the max grace of the windowed aggregations upstream."""
    if node is None:
        raise TopologyException(
            f"Window close time is only defined for windowed computations. Got [{chain}]."
        )
    grace = _grace_of(node)
    if grace is not None:
        return grace
    name = getattr(node, "node_name", "?")
    new_chain = name if not chain else f"{name}->{chain}"
    parents = [p for p in getattr(node, "parents", []) if getattr(p, "node_name", None) != "root"]
    if not parents:
        raise TopologyException(
            f"Window close time is only defined for windowed computations. Got [{new_chain}]."
        )
    return max(find_and_verify_window_grace(p, new_chain) for p in parents)


def _enable_old_values(table: Any) -> None:
    """Suppression needs the upstream's old values (Kafka: ``enableSendingOldValues(true)``)."""
    for attr in ("_enable_send_old_values", "enable_send_old_values"):
        method = getattr(table, attr, None)
        if method is not None:
            method(True)
            return
    supplier = getattr(table, "_processor_supplier", None)
    if supplier is not None:
        supplier.enable_send_old_values(True)


def build_suppress(table: Any, suppressed: Suppressed, named: Any = None) -> Any:
    """Add a ``KTABLE-SUPPRESS`` node and its buffer under ``table``; returns the suppressed KTable."""
    from kspark.kstream.internals.graph import ProcessorParameters, StatefulProcessorNode
    from kspark.kstream.ktable import KTable

    if not isinstance(suppressed, Suppressed):
        raise TypeError(f"suppress needs a Suppressed, got {suppressed!r}")
    builder = table._builder
    given = named if isinstance(named, str) else getattr(named, "name", None)
    given = suppressed.name or given
    name = given or builder.new_processor_name("KTABLE-SUPPRESS-")
    wait_ms = (
        find_and_verify_window_grace(table._graph_node)
        if suppressed.final_results
        else int(suppressed.time_to_wait_ms or 0)
    )
    store_name = f"{given}-store" if given else builder.new_store_name("KTABLE-SUPPRESS-")
    supplier = KTableSuppressProcessorSupplier(suppressed.with_name(name), store_name, wait_ms)
    _enable_old_values(table)
    cfg = suppressed.buffer_config
    # without a key serde on the table, a windowed table's keys use the default serde, windowed
    windowed_key = _windowed_key_of(table._graph_node) if table._key_serde is None else None
    store = InMemoryTimeOrderedKeyValueChangeBufferBuilder(
        store_name, table._key_serde, table._value_serde, windowed_key
    )
    if cfg.is_logging_enabled():
        store.with_logging_enabled(cfg.log_config)
    else:
        store.with_logging_disabled()
    parent_view = getattr(getattr(table, "_processor_supplier", None), "view", None)
    supplier.parent_value_getter_supplier = parent_view

    class _Factory:
        def __init__(self) -> None:
            self.name = store_name

        def builder(self) -> StoreBuilder[Any, Any]:
            return store

    node = StatefulProcessorNode(name, ProcessorParameters(supplier, name), store_factories=[_Factory()])
    builder.add_graph_node(table._graph_node, node)
    return KTable(
        name,
        table._key_serde,
        table._value_serde,
        {table._name},
        None,
        supplier,
        node,
        builder,
    )
