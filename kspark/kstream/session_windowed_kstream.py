"""``SessionWindowedKStream``: a grouped stream windowed by ``SessionWindows``.

``count``, ``reduce`` and ``aggregate(initializer, aggregator, merger)``
return a ``KTable`` keyed by ``Windowed(key, SessionWindow(start, end))``.
When a record bridges sessions, the merged sessions are retracted with
tombstones before the merged result (Kafka's ``SessionWindowedKStreamImpl``).
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
from kspark.kstream.internals.session_window_aggregate import KStreamSessionWindowAggregate
from kspark.kstream.internals.window_store_materializer import SessionStoreMaterializer
from kspark.kstream.time_windowed_kstream import (
    AGGREGATE_NAME,
    REDUCE_NAME,
    _count_aggregator,
    _count_initializer,
    _name_of,
    _reduce_initializer,
    aggregator_for_reducer,
    grouped_parts,
)
from kspark.kstream.windows import EmitStrategy, SessionWindows

__all__ = ["SessionWindowedKStream"]


def _count_merger(key: Any, agg_one: int, agg_two: int) -> int:
    return agg_one + agg_two


class SessionWindowedKStream:
    """Session-windowed aggregations of a ``KGroupedStream``."""

    def __init__(self, grouped: Any, windows: SessionWindows) -> None:
        if not isinstance(windows, SessionWindows):
            raise TypeError(f"windows must be SessionWindows, got {windows!r}")
        self._grouped = grouped
        self._windows = windows
        self._builder, self._aggregate_builder, self._key_serde, self._value_serde = grouped_parts(grouped)
        self._emit_strategy = EmitStrategy.on_window_update()

    def emit_strategy(self, emit_strategy: EmitStrategy) -> SessionWindowedKStream:
        """Emit on every update (default) or each session once, after it closed (end + gap + grace)."""
        if not isinstance(emit_strategy, EmitStrategy):
            raise TypeError(f"emit_strategy must be an EmitStrategy, got {emit_strategy!r}")
        self._emit_strategy = emit_strategy
        return self

    def count(self, materialized: Materialized | None = None, named: Named | str | None = None) -> Any:
        m = stream_count_materialized(materialized, self._builder, AGGREGATE_NAME, self._key_serde)
        return self._build(AGGREGATE_NAME, named, m, _count_initializer, _count_aggregator, _count_merger)

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        merger: Callable[[Any, Any, Any], Any],
        materialized: Materialized | None = None,
        named: Named | str | None = None,
    ) -> Any:
        """``aggregator(key, value, agg)``; ``merger(key, agg_one, agg_two)`` combines merged sessions."""
        require_callable(initializer, "initializer", "SessionWindowedKStream.aggregate")
        require_callable(aggregator, "aggregator", "SessionWindowedKStream.aggregate")
        require_callable(merger, "merger", "SessionWindowedKStream.aggregate")
        m = materialized_internal(materialized, self._builder, AGGREGATE_NAME)
        if m.key_serde is None:
            m.with_key_serde(self._key_serde)
        return self._build(AGGREGATE_NAME, named, m, initializer, aggregator, merger)

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        materialized: Materialized | None = None,
        named: Named | str | None = None,
    ) -> Any:
        require_callable(reducer, "reducer", "SessionWindowedKStream.reduce")
        m = materialized_internal(materialized, self._builder, REDUCE_NAME)
        if m.key_serde is None:
            m.with_key_serde(self._key_serde)
        if m.value_serde is None:
            m.with_value_serde(self._value_serde)
        agg = aggregator_for_reducer(reducer)

        def merger(key: Any, agg_one: Any, agg_two: Any) -> Any:
            return agg(key, agg_two, agg_one)

        return self._build(REDUCE_NAME, named, m, _reduce_initializer, agg, merger)

    def _build(
        self,
        prefix: str,
        named: Named | str | None,
        m: MaterializedInternal,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        merger: Callable[[Any, Any, Any], Any],
    ) -> Any:
        from kspark.serde import Serdes

        name = self._builder.or_else_generate(_name_of(named), prefix)
        factory = SessionStoreMaterializer(m, self._windows, self._emit_strategy)
        supplier = KStreamSessionWindowAggregate(
            self._windows, m.store_name, self._emit_strategy, initializer, aggregator, merger
        )
        key_serde = Serdes.session_windowed(m.key_serde) if m.key_serde is not None else None
        return self._aggregate_builder.build(
            name, factory, supplier, m.queryable_store_name, key_serde, m.value_serde
        )
