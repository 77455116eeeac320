"""``KGroupedStream``: a stream grouped by key, ready to aggregate (``count``, ``reduce``, ``aggregate``).

Records with a ``None`` key or value are dropped by the aggregation and
counted in ``dropped-records-total``. ``windowed_by`` hands the grouped
stream to the windowed variants (``TimeWindowedKStream``,
``SessionWindowedKStream``), which reuse ``_aggregate_builder``.
``cogroup`` starts a ``CogroupedKStream`` (KIP-150) with this stream.

Attributes for the windowed variants (contract 5): ``_builder``, ``_name``,
``_key_serde``, ``_value_serde``, ``_sub_topology_source_nodes``,
``_repartition_required``, ``_graph_node``, ``_grouped``,
``_aggregate_builder`` (a ``GroupedStreamAggregateBuilder``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark.kstream.config_objects import Grouped, Materialized, Named
from kspark.kstream.internals.functions import require_callable
from kspark.kstream.internals.graph import GraphNode
from kspark.kstream.internals.grouped_stream_aggregate_builder import GroupedStreamAggregateBuilder
from kspark.kstream.internals.ktable_processors import KStreamAggregate, KStreamCount, KStreamReduce
from kspark.kstream.internals.materialize import (
    KeyValueStoreMaterializer,
    MaterializedInternal,
    materialized_internal,
    split_named_materialized,
    stream_count_materialized,
)

if TYPE_CHECKING:
    from kspark.kstream.cogrouped_kstream import CogroupedKStream
    from kspark.kstream.internals.internal_builder import InternalStreamsBuilder
    from kspark.kstream.internals.value_getters import KTableProcessorSupplier
    from kspark.kstream.ktable import KTable

__all__ = ["KGroupedStream"]

REDUCE_NAME = "KSTREAM-REDUCE-"
AGGREGATE_NAME = "KSTREAM-AGGREGATE-"


class KGroupedStream:
    """A grouped stream (Kafka Streams' ``KGroupedStream``)."""

    def __init__(
        self,
        name: str,
        sub_topology_source_nodes: set[str],
        grouped: Grouped,
        repartition_required: bool,
        graph_node: GraphNode,
        builder: InternalStreamsBuilder,
    ) -> None:
        self._name = name
        self._key_serde = grouped.key_serde
        self._value_serde = grouped.value_serde
        self._sub_topology_source_nodes = set(sub_topology_source_nodes)
        self._grouped = grouped
        self._repartition_required = repartition_required
        self._graph_node = graph_node
        self._builder = builder
        self._aggregate_builder = GroupedStreamAggregateBuilder(
            builder, grouped, repartition_required, self._sub_topology_source_nodes, name, graph_node
        )

    def __repr__(self) -> str:
        return f"KGroupedStream({self._name})"

    def count(
        self, named: Named | str | Materialized | None = None, materialized: Materialized | None = None
    ) -> KTable:
        name, materialized = split_named_materialized(named, materialized)
        m = stream_count_materialized(materialized, self._builder, AGGREGATE_NAME, self._key_serde)
        supplier = KStreamCount(m.store_name)
        return self._do_aggregate(supplier, self._builder.or_else_generate(name, AGGREGATE_NAME), m)

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        named: Named | str | Materialized | None = None,
        materialized: Materialized | None = None,
    ) -> KTable:
        require_callable(reducer, "reducer", "KGroupedStream.reduce")
        name, materialized = split_named_materialized(named, materialized)
        m = materialized_internal(materialized, self._builder, REDUCE_NAME)
        if m.key_serde is None:
            m.key_serde = self._key_serde
        if m.value_serde is None:
            m.value_serde = self._value_serde
        supplier = KStreamReduce(m.store_name, reducer)
        return self._do_aggregate(supplier, self._builder.or_else_generate(name, REDUCE_NAME), m)

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        named: Named | str | Materialized | None = None,
        materialized: Materialized | None = None,
    ) -> KTable:
        require_callable(initializer, "initializer", "KGroupedStream.aggregate")
        require_callable(aggregator, "aggregator", "KGroupedStream.aggregate")
        name, materialized = split_named_materialized(named, materialized)
        m = materialized_internal(materialized, self._builder, AGGREGATE_NAME)
        if m.key_serde is None:
            m.key_serde = self._key_serde
        supplier = KStreamAggregate(m.store_name, initializer, aggregator)
        return self._do_aggregate(supplier, self._builder.or_else_generate(name, AGGREGATE_NAME), m)

    def _do_aggregate(self, supplier: KTableProcessorSupplier, name: str, m: MaterializedInternal) -> KTable:
        return self._aggregate_builder.build(
            name, KeyValueStoreMaterializer(m), supplier, m.queryable_store_name, m.key_serde, m.value_serde
        )

    def cogroup(self, aggregator: Callable[[Any, Any, Any], Any]) -> CogroupedKStream:
        """Start a cogrouped aggregation with this stream: ``aggregator(key, value, aggregate)``.

        Add more grouped streams with ``.cogroup(grouped, aggregator)``, then
        ``aggregate(initializer)`` (KIP-150; :mod:`kspark.kstream.cogrouped_kstream`).
        """
        require_callable(aggregator, "aggregator", "KGroupedStream.cogroup")
        from kspark.kstream.cogrouped_kstream import CogroupedKStream

        cogrouped = CogroupedKStream(
            self._name, self._sub_topology_source_nodes, self._graph_node, self._builder
        )
        return cogrouped.cogroup(self, aggregator)

    def windowed_by(self, windows: Any) -> Any:
        """Window the grouped stream: TimeWindows/SlidingWindows or SessionWindows."""
        if windows is None:
            raise ValueError("windows can't be None (KGroupedStream.windowed_by)")
        from kspark.kstream.windows import SessionWindows

        if isinstance(windows, SessionWindows):
            from kspark.kstream.session_windowed_kstream import SessionWindowedKStream

            return SessionWindowedKStream(self, windows)
        from kspark.kstream.time_windowed_kstream import TimeWindowedKStream

        return TimeWindowedKStream(self, windows)
