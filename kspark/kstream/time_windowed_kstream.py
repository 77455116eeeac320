"""``TimeWindowedKStream``: a grouped stream windowed by ``TimeWindows`` or ``SlidingWindows``.

``count``, ``reduce`` and ``aggregate`` return a ``KTable`` keyed by
``Windowed(key, window)`` whose values are the running aggregate of each
window (Kafka's ``TimeWindowedKStreamImpl`` and ``SlidingWindowedKStreamImpl``).
Naming follows Kafka: stores ``KSTREAM-AGGREGATE-STATE-STORE-<n>``, processors
``KSTREAM-AGGREGATE-<n>`` / ``KSTREAM-REDUCE-<n>``; ``count(materialized)``
without a store name burns one number first, as Kafka still does for
topology compatibility.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark.kstream.config_objects import Materialized, Named
from kspark.kstream.internals.functions import require_callable
from kspark.kstream.internals.materialize import (
    MaterializedInternal,
    materialized_internal,
    stream_count_materialized,
)
from kspark.kstream.internals.sliding_window_aggregate import KStreamSlidingWindowAggregate
from kspark.kstream.internals.window_aggregate import KStreamWindowAggregate
from kspark.kstream.internals.window_store_materializer import (
    SlidingWindowStoreMaterializer,
    WindowStoreMaterializer,
)
from kspark.kstream.windows import EmitStrategy, SlidingWindows, TimeWindows

__all__ = ["TimeWindowedKStream", "AGGREGATE_NAME", "REDUCE_NAME", "grouped_parts", "is_count"]

AGGREGATE_NAME = "KSTREAM-AGGREGATE-"
REDUCE_NAME = "KSTREAM-REDUCE-"


def grouped_parts(grouped: Any) -> tuple[Any, Any, Any, Any]:
    """``(internal builder, aggregate builder, key serde, value serde)`` of a ``KGroupedStream``."""
    agg_builder = grouped._aggregate_builder
    builder = getattr(grouped, "_builder", None) or agg_builder.builder
    key_serde = getattr(grouped, "_key_serde", agg_builder.key_serde)
    value_serde = getattr(grouped, "_value_serde", agg_builder.value_serde)
    return builder, agg_builder, key_serde, value_serde


def _count_initializer() -> int:
    return 0


def _count_aggregator(key: Any, value: Any, aggregate: int) -> int:
    return aggregate + 1


def is_count(initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any]) -> bool:
    """Whether an aggregation's functions are those of ``count()`` (a runner may compute it natively)."""
    return initializer is _count_initializer and aggregator is _count_aggregator


def _reduce_initializer() -> Any:
    return None


def aggregator_for_reducer(reducer: Callable[[Any, Any], Any]) -> Callable[[Any, Any, Any], Any]:
    return lambda key, value, aggregate: value if aggregate is None else reducer(aggregate, value)


def _name_of(named: Named | str | None) -> str | None:
    if named is None or isinstance(named, str):
        return named
    return named.name


class TimeWindowedKStream:
    """Windowed aggregations of a ``KGroupedStream`` (see module docstring)."""

    def __init__(self, grouped: Any, windows: TimeWindows | SlidingWindows) -> None:
        if not isinstance(windows, TimeWindows | SlidingWindows):
            raise TypeError(f"windows must be TimeWindows or SlidingWindows, got {windows!r}")
        self._grouped = grouped
        self._windows = windows
        self._builder, self._aggregate_builder, self._key_serde, self._value_serde = grouped_parts(grouped)
        self._emit_strategy = EmitStrategy.on_window_update()

    def emit_strategy(self, emit_strategy: EmitStrategy) -> TimeWindowedKStream:
        """Emit on every update (default) or only the final result once a window closed."""
        if not isinstance(emit_strategy, EmitStrategy):
            raise TypeError(f"emit_strategy must be an EmitStrategy, got {emit_strategy!r}")
        self._emit_strategy = emit_strategy
        return self

    def count(self, materialized: Materialized | None = None, named: Named | str | None = None) -> Any:
        """Count records per key and window; values are ints (Long serde unless given)."""
        m = stream_count_materialized(materialized, self._builder, AGGREGATE_NAME, self._key_serde)
        return self._build(AGGREGATE_NAME, named, m, _count_initializer, _count_aggregator)

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        materialized: Materialized | None = None,
        named: Named | str | None = None,
    ) -> Any:
        """Fold records into a per-window aggregate: ``aggregator(key, value, aggregate)``."""
        require_callable(initializer, "initializer", "TimeWindowedKStream.aggregate")
        require_callable(aggregator, "aggregator", "TimeWindowedKStream.aggregate")
        m = materialized_internal(materialized, self._builder, AGGREGATE_NAME)
        if m.key_serde is None:
            m.with_key_serde(self._key_serde)
        return self._build(AGGREGATE_NAME, named, m, initializer, aggregator)

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        materialized: Materialized | None = None,
        named: Named | str | None = None,
    ) -> Any:
        """Combine the values of a window: ``reducer(aggregate, value)``."""
        require_callable(reducer, "reducer", "TimeWindowedKStream.reduce")
        m = materialized_internal(materialized, self._builder, REDUCE_NAME)
        if m.key_serde is None:
            m.with_key_serde(self._key_serde)
        if m.value_serde is None:
            m.with_value_serde(self._value_serde)
        return self._build(REDUCE_NAME, named, m, _reduce_initializer, aggregator_for_reducer(reducer))

    def _build(
        self,
        prefix: str,
        named: Named | str | None,
        m: MaterializedInternal,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
    ) -> Any:
        from kspark.serde import Serdes

        name = self._builder.or_else_generate(_name_of(named), prefix)
        w = self._windows
        supplier: KStreamWindowAggregate | KStreamSlidingWindowAggregate
        factory: WindowStoreMaterializer | SlidingWindowStoreMaterializer
        if isinstance(w, SlidingWindows):
            factory = SlidingWindowStoreMaterializer(m, w, self._emit_strategy)
            supplier = KStreamSlidingWindowAggregate(
                w, m.store_name, self._emit_strategy, initializer, aggregator
            )
            size = w.time_difference_ms()
        else:
            factory = WindowStoreMaterializer(m, w, self._emit_strategy)
            supplier = KStreamWindowAggregate(w, m.store_name, self._emit_strategy, initializer, aggregator)
            size = w.size()
        key_serde = Serdes.time_windowed(m.key_serde, size) if m.key_serde is not None else None
        return self._aggregate_builder.build(
            name, factory, supplier, m.queryable_store_name, key_serde, m.value_serde
        )
