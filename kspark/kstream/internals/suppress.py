"""``KTable.suppress``: the suppression processor and its time-ordered buffer.

Mirrors Kafka's ``KTableSuppressProcessorSupplier`` and
``InMemoryTimeOrderedKeyValueChangeBuffer``. Each update is buffered per key
at a buffer time (the record's timestamp, or its window's end for
``until_window_closes``); a key already buffered keeps its original place
("non-resetting"). After each record, entries whose buffer time is at or
before ``stream time - wait`` are emitted oldest first, with the timestamp and
headers of the latest update of that key. ``until_window_closes`` waits for
the upstream windowed aggregation's grace period (plus the gap for session
windows) and drops tombstones.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sortedcontainers import SortedDict

from kspark.errors import StreamsException, TopologyException
from kspark.kstream.internals.change import Change
from kspark.kstream.internals.value_getters import (
    KTableProcessorSupplier,
    KTableValueGetter,
    KTableValueGetterSupplier,
)
from kspark.kstream.suppressed import BufferFullStrategy, Suppressed, TimeDefinition
from kspark.kstream.windowed import SessionWindow, Windowed
from kspark.processor.api import Headers, Processor, ProcessorContext, Record
from kspark.state.api import StateStore, StoreBuilder, ValueAndTimestamp

__all__ = [
    "TimeOrderedKeyValueBuffer",
    "TimeOrderedKeyValueBufferBuilder",
    "KTableSuppressProcessorSupplier",
    "find_and_verify_window_grace",
    "build_suppress",
]

_MAX_LONG = sys.maxsize


@dataclass
class _BufferValue:
    prior_value: Any
    old_value: Any
    new_value: Any
    timestamp: int
    headers: Headers
    size: int


class TimeOrderedKeyValueBuffer(StateStore):
    """In-memory buffer of ``Change`` values, ordered by ``(buffer time, serialized key)``."""

    def __init__(self, name: str, key_serde: Any, value_serde: Any) -> None:
        self._name = name
        self._key_serde = key_serde
        self._value_serde = value_serde
        self._sorted: SortedDict = SortedDict()  # (time, key bytes) -> (key, _BufferValue)
        self._index: dict[bytes, tuple[int, bytes]] = {}
        self._size = 0
        self._open = False
        self._key_ser: Any = None
        self._value_ser: Any = None

    @property
    def name(self) -> str:
        return self._name

    def init(self, context: ProcessorContext, root: StateStore) -> None:
        key_serde = self._key_serde if self._key_serde is not None else context.key_serde()
        value_serde = self._value_serde if self._value_serde is not None else context.value_serde()
        self._key_ser = key_serde.serializer() if key_serde is not None else None
        self._value_ser = value_serde.serializer() if value_serde is not None else None
        self._open = True
        register = getattr(context, "register", None)
        if register is not None:
            register(root, None)

    def _key_bytes(self, key: Any) -> bytes:
        if isinstance(key, Windowed):
            # Kafka's windowed serdes: key bytes, then start (time windows) or end+start (sessions)
            inner = self._serialize(self._key_ser, key.key)
            times = (
                (key.window.end, key.window.start)
                if isinstance(key.window, SessionWindow)
                else (key.window.start,)
            )
            return inner + b"".join(t.to_bytes(8, "big", signed=True) for t in times)
        return self._serialize(self._key_ser, key)

    @staticmethod
    def _serialize(serializer: Any, obj: Any) -> bytes:
        if obj is None:
            return b""
        if serializer is not None:
            try:
                return serializer.serialize(None, obj) or b""
            except Exception:
                pass
        return repr(obj).encode()

    def _value_size(self, value: Any) -> int:
        return 0 if value is None else len(self._serialize(self._value_ser, value))

    def put(self, time: int, record: Record[Any, Change[Any]]) -> None:
        change = record.value
        kb = self._key_bytes(record.key)
        previous = self._index.get(kb)
        prior = change.old_value if previous is None else self._sorted[previous][1].prior_value
        size = 8 + len(kb) + self._value_size(change.new_value) + 8 + 8 + 4
        size += self._value_size(prior)
        if change.old_value is not prior:
            size += self._value_size(change.old_value)
        size += sum(len(h.key) + (len(h.value) if h.value is not None else 0) for h in record.headers)
        value = _BufferValue(
            prior, change.old_value, change.new_value, record.timestamp, record.headers, size
        )
        if previous is None:
            sort_key = (time, kb)
            self._index[kb] = sort_key
            self._sorted[sort_key] = (record.key, value)
            self._size += size
        else:
            # non-resetting: the key keeps its place in time order
            self._size += size - self._sorted[previous][1].size
            self._sorted[previous] = (record.key, value)

    def min_timestamp(self) -> int:
        return self._sorted.peekitem(0)[0][0] if self._sorted else _MAX_LONG

    def num_records(self) -> int:
        return len(self._index)

    def buffer_size(self) -> int:
        return self._size

    def evict_while(
        self, predicate: Callable[[], bool], callback: Callable[[Any, _BufferValue], None]
    ) -> None:
        while self._sorted and predicate():
            sort_key, (key, value) = self._sorted.popitem(0)
            del self._index[sort_key[1]]
            self._size -= value.size
            callback(key, value)

    def prior_value_for_buffered(self, key: Any) -> tuple[bool, ValueAndTimestamp[Any] | None]:
        """``(True, prior)`` if ``key`` is buffered (the value before its first buffered update)."""
        sort_key = self._index.get(self._key_bytes(key))
        if sort_key is None:
            return (False, None)
        return (True, ValueAndTimestamp.make(self._sorted[sort_key][1].prior_value, -1))

    def close(self) -> None:
        self._open = False

    def persistent(self) -> bool:
        return False

    def is_open(self) -> bool:
        return self._open


class TimeOrderedKeyValueBufferBuilder(StoreBuilder[Any, Any]):
    """Builds the suppression buffer (in memory; change-logging of the buffer is not implemented)."""

    def __init__(
        self, name: str, key_serde: Any, value_serde: Any, logging: bool, log_config: dict[str, str]
    ):
        self._name = name
        self._key_serde = key_serde
        self._value_serde = value_serde
        self._logging = logging
        self._log_config = dict(log_config)

    @property
    def name(self) -> str:
        return self._name

    def build(self) -> StateStore:
        return TimeOrderedKeyValueBuffer(self._name, self._key_serde, self._value_serde)

    def with_caching_enabled(self) -> TimeOrderedKeyValueBufferBuilder:
        return self

    def with_caching_disabled(self) -> TimeOrderedKeyValueBufferBuilder:
        return self

    def with_logging_enabled(self, config: dict[str, str] | None = None) -> TimeOrderedKeyValueBufferBuilder:
        self._logging = True
        self._log_config = dict(config or {})
        return self

    def with_logging_disabled(self) -> TimeOrderedKeyValueBufferBuilder:
        self._logging = False
        return self

    def logging_enabled(self) -> bool:
        return self._logging

    def log_config(self) -> dict[str, str]:
        return dict(self._log_config)


class _SuppressedValueGetter(KTableValueGetter):
    """Reads the suppressed view: the prior value of a buffered key, else the parent's value."""

    def __init__(self, parent: KTableValueGetter, store_name: str) -> None:
        self._parent = parent
        self._store_name = store_name
        self._buffer: TimeOrderedKeyValueBuffer = None  # type: ignore[assignment]

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
        self.observed_stream_time = -1
        self.context: ProcessorContext = None  # type: ignore[assignment]
        self.buffer: TimeOrderedKeyValueBuffer = None  # type: ignore[assignment]
        self.node_name = s.suppressed.name or s.store_name

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.buffer = context.get_state_store(self.store_name)  # type: ignore[assignment]

    def process(self, record: Record[Any, Any]) -> None:
        self.observed_stream_time = max(self.observed_stream_time, record.timestamp)
        buffer_time = record.key.window.end if self.window_end_time else record.timestamp
        self.buffer.put(buffer_time, record)
        self._enforce_constraints()

    def _over_capacity(self) -> bool:
        return self.buffer.num_records() > self.max_records or self.buffer.buffer_size() > self.max_bytes

    def _enforce_constraints(self) -> None:
        expiry = self.observed_stream_time - self.wait_ms
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

    def _emit(self, key: Any, value: _BufferValue) -> None:
        if value.new_value is None and self.safe_to_drop_tombstones:
            return
        self.context.forward(
            Record(key, Change(value.new_value, value.old_value), value.timestamp, value.headers)
        )


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
    store = TimeOrderedKeyValueBufferBuilder(
        store_name, table._key_serde, table._value_serde, cfg.is_logging_enabled(), cfg.log_config or {}
    )
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
