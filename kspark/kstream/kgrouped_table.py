"""``KGroupedTable``: a re-grouped table, aggregated with an adder *and* a subtractor.

Each upstream update arrives as separate retract/add records (the old
value under its old group, the new value under its new group) through a
repartition topic; the aggregation subtracts the old value before adding
the new one, as Kafka Streams' ``KTableAggregate`` / ``KTableReduce``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark.kstream.config_objects import Grouped, Materialized, Named
from kspark.kstream.internals.functions import require_callable
from kspark.kstream.internals.graph import (
    GraphNode,
    GroupedTableOperationRepartitionNode,
    ProcessorParameters,
    StatefulProcessorNode,
)
from kspark.kstream.internals.ktable_processors import KTableAggregate, KTableReduce
from kspark.kstream.internals.materialize import (
    KeyValueStoreMaterializer,
    MaterializedInternal,
    materialized_internal,
    split_named_materialized,
)
from kspark.kstream.internals.repartition import REPARTITION_TOPIC_SUFFIX
from kspark.serde import Serdes

if TYPE_CHECKING:
    from kspark.kstream.internals.internal_builder import InternalStreamsBuilder
    from kspark.kstream.internals.value_getters import KTableProcessorSupplier
    from kspark.kstream.ktable import KTable

__all__ = ["KGroupedTable"]

AGGREGATE_NAME = "KTABLE-AGGREGATE-"
REDUCE_NAME = "KTABLE-REDUCE-"


class KGroupedTable:
    """A table grouped by a new key (Kafka Streams' ``KGroupedTable``)."""

    def __init__(
        self,
        builder: InternalStreamsBuilder,
        name: str,
        sub_topology_source_nodes: set[str],
        grouped: Grouped,
        graph_node: GraphNode,
    ) -> None:
        self._builder = builder
        self._name = name
        self._sub_topology_source_nodes = set(sub_topology_source_nodes)
        self._key_serde = grouped.key_serde
        self._value_serde = grouped.value_serde
        self._user_repartition_name = grouped.name
        self._graph_node = graph_node
        self._repartition_node: GroupedTableOperationRepartitionNode | None = None

    def __repr__(self) -> str:
        return f"KGroupedTable({self._name})"

    def count(
        self, named: Named | str | Materialized | None = None, materialized: Materialized | None = None
    ) -> KTable:
        name, materialized = split_named_materialized(named, materialized)
        m = materialized_internal(materialized, self._builder, AGGREGATE_NAME)
        if m.key_serde is None:
            m.key_serde = self._key_serde
        if m.value_serde is None:
            m.value_serde = Serdes.Long()
        supplier = KTableAggregate(
            m.store_name, lambda: 0, lambda _k, _v, agg: agg + 1, lambda _k, _v, agg: agg - 1
        )
        return self._do_aggregate(supplier, name, AGGREGATE_NAME, m)

    def reduce(
        self,
        adder: Callable[[Any, Any], Any],
        subtractor: Callable[[Any, Any], Any],
        named: Named | str | Materialized | None = None,
        materialized: Materialized | None = None,
    ) -> KTable:
        require_callable(adder, "adder", "KGroupedTable.reduce")
        require_callable(subtractor, "subtractor", "KGroupedTable.reduce")
        name, materialized = split_named_materialized(named, materialized)
        # Kafka names an unnamed reduce store with the aggregate prefix (KGroupedTableImpl.reduce)
        m = materialized_internal(materialized, self._builder, AGGREGATE_NAME)
        if m.key_serde is None:
            m.key_serde = self._key_serde
        if m.value_serde is None:
            m.value_serde = self._value_serde
        return self._do_aggregate(KTableReduce(m.store_name, adder, subtractor), name, REDUCE_NAME, m)

    def aggregate(
        self,
        initializer: Callable[[], Any],
        adder: Callable[[Any, Any, Any], Any],
        subtractor: Callable[[Any, Any, Any], Any],
        named: Named | str | Materialized | None = None,
        materialized: Materialized | None = None,
    ) -> KTable:
        require_callable(initializer, "initializer", "KGroupedTable.aggregate")
        require_callable(adder, "adder", "KGroupedTable.aggregate")
        require_callable(subtractor, "subtractor", "KGroupedTable.aggregate")
        name, materialized = split_named_materialized(named, materialized)
        m = materialized_internal(materialized, self._builder, AGGREGATE_NAME)
        if m.key_serde is None:
            m.key_serde = self._key_serde
        return self._do_aggregate(
            KTableAggregate(m.store_name, initializer, adder, subtractor), name, AGGREGATE_NAME, m
        )

    def _do_aggregate(
        self, supplier: KTableProcessorSupplier, name: str | None, prefix: str, m: MaterializedInternal
    ) -> KTable:
        from kspark.kstream.ktable import KTable

        sink_name = self._builder.suffix_or_else_generate(name, "-sink", "KSTREAM-SINK-")
        source_name = self._builder.suffix_or_else_generate(name, "-source", "KSTREAM-SOURCE-")
        func_name = self._builder.or_else_generate(name, prefix)
        topic = (self._user_repartition_name or m.store_name) + REPARTITION_TOPIC_SUFFIX
        if self._repartition_node is None or self._user_repartition_name is None:
            self._repartition_node = GroupedTableOperationRepartitionNode(
                source_name, sink_name, topic, self._key_serde, self._value_serde
            )
        self._builder.add_graph_node(self._graph_node, self._repartition_node)
        node = StatefulProcessorNode(
            func_name,
            ProcessorParameters(supplier, func_name),
            store_factories=[KeyValueStoreMaterializer(m)],
        )
        self._builder.add_graph_node(self._repartition_node, node)
        return KTable(
            func_name,
            m.key_serde,
            m.value_serde,
            {source_name},
            m.queryable_store_name,
            supplier,
            node,
            self._builder,
        )
