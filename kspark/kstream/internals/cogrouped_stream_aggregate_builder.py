"""``CogroupedStreamAggregateBuilder`` and ``KTablePassThrough``: the graph of a cogrouped aggregation.

Kafka's ``CogroupedStreamAggregateBuilder`` (KIP-150). One aggregation of a
cogrouped stream becomes:

* per grouped stream that changed its key upstream, a repartition topic of
  its own (``<Grouped name or store name>-repartition``). The repartition
  node is made once per grouped stream and cogrouped stream and reused by
  later aggregations of the same cogrouped stream, but each build still
  draws the repartition's three names from the counter, as Kafka does;
* per grouped stream, one aggregate processor (``COGROUPKSTREAM-AGGREGATE-``
  or ``<named>-cogroup-agg-<i>``) running that stream's aggregator. All of
  them read and write ONE store: a record of any stream folds into the same
  aggregate. They are the grouped-stream aggregate processors
  (``KStreamAggregate``, ``KStreamWindowAggregate``,
  ``KStreamSlidingWindowAggregate``, ``KStreamSessionWindowAggregate``), so
  each keeps its own observed stream time, as in Kafka;
* one merge processor (``COGROUPKSTREAM-MERGE-`` or ``<named>-cogroup-merge``)
  under all of them, a ``KTablePassThrough``, which is the resulting KTable.

The grouped streams are co-partitioned (Kafka's ``ensureCopartitionWith``
over their sub-topology source nodes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark.kstream.config_objects import Named
from kspark.kstream.internals.graph import (
    GraphNode,
    OptimizableRepartitionNode,
    ProcessorGraphNode,
    ProcessorParameters,
    StatefulProcessorNode,
    StoreFactory,
)
from kspark.kstream.internals.kstream_processors import ContextualProcessor
from kspark.kstream.internals.repartition import create_repartitioned_source
from kspark.kstream.internals.value_getters import KTableProcessorSupplier, KTableValueGetterSupplier
from kspark.processor.api import Processor, Record

if TYPE_CHECKING:
    from kspark.kstream.internals.internal_builder import InternalStreamsBuilder
    from kspark.kstream.kgrouped_stream import KGroupedStream
    from kspark.kstream.ktable import KTable
    from kspark.state.api import StoreBuilder

__all__ = [
    "AGGREGATE_NAME",
    "MERGE_NAME",
    "Aggregator",
    "CogroupedStreamAggregateBuilder",
    "KTablePassThrough",
]

AGGREGATE_NAME = "COGROUPKSTREAM-AGGREGATE-"
MERGE_NAME = "COGROUPKSTREAM-MERGE-"

Aggregator = Callable[[Any, Any, Any], Any]
"""``aggregator(key, value, aggregate) -> aggregate``: one per cogrouped stream."""


class _KTablePassThroughProcessor(ContextualProcessor):
    def process(self, record: Record[Any, Any]) -> None:
        self._context.forward(record)


class KTablePassThrough(KTableProcessorSupplier):
    """The merge node of a cogrouped aggregation: forwards each aggregate processor's ``Change``.

    Old values come from the aggregate processors, so asking for them asks
    all of them (an aggregation is always materialized). The table is read
    through the shared store: for a key-value store that is Kafka's
    ``KTablePassThroughValueGetter``; a windowed or session result is read
    as its aggregate processors' own view reads it.
    """

    def __init__(self, parents: list[KTableProcessorSupplier], store_name: str) -> None:
        self.parents = list(parents)
        self.store_name = store_name

    def __call__(self) -> Processor[Any, Any]:
        return _KTablePassThroughProcessor()

    def enable_send_old_values(self, force_materialization: bool = True) -> bool:
        for parent in self.parents:
            parent.enable_send_old_values(True)
        return True

    def view(self) -> KTableValueGetterSupplier:
        return self.parents[0].view()


class _SharedStoreFactory:
    """One store builder for all aggregate processors of one aggregation.

    Kafka hands the same ``StoreFactory`` to every processor, and the
    topology adds the store once and connects it to each; the builder is
    made once here so that adding it again from another processor is the
    same store, whichever processor is written to the topology first.
    """

    def __init__(self, factory: StoreFactory) -> None:
        self._factory = factory
        self._builder: StoreBuilder[Any, Any] | None = None

    @property
    def name(self) -> str:
        return self._factory.name

    def builder(self) -> StoreBuilder[Any, Any]:
        if self._builder is None:
            self._builder = self._factory.builder()
        return self._builder


def _suffixed(named: str | None, suffix: str, builder: InternalStreamsBuilder, prefix: str) -> str:
    """Kafka's ``suffixWithOrElseGet``, with the suffixed name validated again (it may be too long)."""
    name = builder.suffix_or_else_generate(named, suffix, prefix)
    if named:
        Named(name)
    return name


class CogroupedStreamAggregateBuilder:
    """Builds the aggregations of one cogrouped stream (see module docstring)."""

    def __init__(self, builder: InternalStreamsBuilder) -> None:
        self.builder = builder
        # per grouped stream: the node its aggregate processor hangs under (its repartition, if any)
        self._parent_nodes: dict[KGroupedStream, GraphNode] = {}

    def build(
        self,
        group_patterns: dict[KGroupedStream, Aggregator],
        named: str | None,
        store_factory: StoreFactory,
        key_serde: Any,
        value_serde: Any,
        queryable_name: str | None,
        make_supplier: Callable[[Aggregator], KTableProcessorSupplier],
    ) -> KTable:
        """One aggregate processor per grouped stream over one store, merged into a KTable.

        ``make_supplier(aggregator)`` is the aggregate processor of one stream
        (key-value, time-windowed, sliding or session), over ``store_factory``'s store.
        """
        self._process_repartitions(group_patterns, store_factory.name)
        shared = _SharedStoreFactory(store_factory)
        processors: list[GraphNode] = []
        suppliers: list[KTableProcessorSupplier] = []
        for counter, (grouped, aggregator) in enumerate(group_patterns.items()):
            supplier = make_supplier(aggregator)
            suppliers.append(supplier)
            name = _suffixed(named, f"-cogroup-agg-{counter}", self.builder, AGGREGATE_NAME)
            node = StatefulProcessorNode(name, ProcessorParameters(supplier, name), store_factories=[shared])
            processors.append(node)
            self.builder.add_graph_node(self._parent_nodes[grouped], node)
        return self._create_table(
            processors, suppliers, named, key_serde, value_serde, queryable_name, shared.name
        )

    def _process_repartitions(
        self, group_patterns: dict[KGroupedStream, Aggregator], store_name: str
    ) -> None:
        for grouped in group_patterns:
            if grouped._repartition_required:
                prefix = grouped._grouped.name or store_name
                # drawn on every build (three names from the counter), used only the first time
                node = create_repartitioned_source(
                    self.builder, grouped._key_serde, grouped._value_serde, prefix, OptimizableRepartitionNode
                )
                if grouped not in self._parent_nodes:
                    self.builder.add_graph_node(grouped._graph_node, node)
                    self._parent_nodes[grouped] = node
            else:
                self._parent_nodes[grouped] = grouped._graph_node
        sources: set[str] = set()
        for grouped in self._parent_nodes:
            sources |= grouped._sub_topology_source_nodes
        self.builder.copartition(sorted(sources))

    def _create_table(
        self,
        processors: list[GraphNode],
        suppliers: list[KTableProcessorSupplier],
        named: str | None,
        key_serde: Any,
        value_serde: Any,
        queryable_name: str | None,
        store_name: str,
    ) -> KTable:
        from kspark.kstream.ktable import KTable

        merge_name = _suffixed(named, "-cogroup-merge", self.builder, MERGE_NAME)
        pass_through = KTablePassThrough(suppliers, store_name)
        merge_node = ProcessorGraphNode(merge_name, ProcessorParameters(pass_through, merge_name))
        self.builder.add_graph_node(processors, merge_node)
        # as Kafka: the table's sub-topology source node is the merge node itself
        return KTable(
            merge_name,
            key_serde,
            value_serde,
            {merge_name},
            queryable_name,
            pass_through,
            merge_node,
            self.builder,
        )
