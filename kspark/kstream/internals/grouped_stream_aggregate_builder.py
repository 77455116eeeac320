"""``GroupedStreamAggregateBuilder``: the shared tail of every grouped-stream aggregation.

``count``/``reduce``/``aggregate`` and their windowed and session variants
all end the same way: repartition first if an upstream operation changed
the key (the topic is named after the ``Grouped`` name, else after the
store), then add the aggregate processor with its store, and return the
result as a KTable. A user-named repartition topic is created once and
shared by all aggregations of the same grouped stream, as in Kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kspark.kstream.internals.graph import (
    GraphNode,
    OptimizableRepartitionNode,
    ProcessorParameters,
    StatefulProcessorNode,
    StoreFactory,
)
from kspark.kstream.internals.repartition import create_repartitioned_source

if TYPE_CHECKING:
    from kspark.kstream.config_objects import Grouped
    from kspark.kstream.internals.internal_builder import InternalStreamsBuilder
    from kspark.kstream.internals.value_getters import KTableProcessorSupplier
    from kspark.kstream.ktable import KTable

__all__ = ["GroupedStreamAggregateBuilder"]


class GroupedStreamAggregateBuilder:
    """Builds aggregations of one grouped stream (see module docstring)."""

    def __init__(
        self,
        builder: InternalStreamsBuilder,
        grouped: Grouped,
        repartition_required: bool,
        sub_topology_source_nodes: set[str],
        name: str,
        graph_node: GraphNode,
    ) -> None:
        self.builder = builder
        self.key_serde = grouped.key_serde
        self.value_serde = grouped.value_serde
        self.repartition_required = repartition_required
        self.user_provided_repartition_topic_name = grouped.name
        self.sub_topology_source_nodes = set(sub_topology_source_nodes)
        self.name = name
        self.graph_node = graph_node
        self.repartition_node: OptimizableRepartitionNode | None = None

    def build(
        self,
        function_name: str,
        store_factory: StoreFactory,
        aggregate_supplier: KTableProcessorSupplier,
        queryable_store_name: str | None,
        key_serde: Any,
        value_serde: Any,
    ) -> KTable:
        """Add [repartition ->] aggregate processor (+ store); return the resulting KTable."""
        from kspark.kstream.ktable import KTable

        source_name = self.name
        parent = self.graph_node
        if self.repartition_required:
            prefix = self.user_provided_repartition_topic_name or store_factory.name
            node = create_repartitioned_source(
                self.builder, self.key_serde, self.value_serde, prefix, OptimizableRepartitionNode
            )
            source_name = node.node_name
            if self.repartition_node is None or self.user_provided_repartition_topic_name is None:
                assert isinstance(node, OptimizableRepartitionNode)
                self.repartition_node = node
            self.builder.add_graph_node(parent, self.repartition_node)
            parent = self.repartition_node
        aggregate_node = StatefulProcessorNode(
            function_name,
            ProcessorParameters(aggregate_supplier, function_name),
            store_factories=[store_factory],
        )
        self.builder.add_graph_node(parent, aggregate_node)
        sources = self.sub_topology_source_nodes if source_name == self.name else {source_name}
        return KTable(
            function_name,
            key_serde,
            value_serde,
            sources,
            queryable_store_name,
            aggregate_supplier,
            aggregate_node,
            self.builder,
        )
