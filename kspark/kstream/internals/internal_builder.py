"""``InternalStreamsBuilder``: the DSL's name provider and logical-graph owner.

Names follow Kafka Streams exactly, because they show up in ``describe()``,
in store names users query and in internal topic names: one counter is
shared by processor and store names (``KSTREAM-FILTER-0000000001``,
``KSTREAM-AGGREGATE-STATE-STORE-0000000003``), and some operations burn a
number without using it, as Kafka does, to keep the numbering identical.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kspark.errors import TopologyException
from kspark.kstream.config_objects import Consumed
from kspark.kstream.internals.graph import (
    GlobalStoreNode,
    GraphNode,
    ProcessorParameters,
    RepartitionNode,
    RootNode,
    StateStoreNode,
    StreamSourceNode,
    TableSourceNode,
)
from kspark.kstream.internals.materialize import KeyValueStoreMaterializer, MaterializedInternal

if TYPE_CHECKING:
    from kspark.kstream.global_ktable import GlobalKTable
    from kspark.kstream.kstream import KStream
    from kspark.kstream.ktable import KTable
    from kspark.processor.api import Processor
    from kspark.state.api import StoreBuilder

__all__ = ["InternalStreamsBuilder", "STATE_STORE_NAME", "TABLE_SOURCE_SUFFIX"]

STATE_STORE_NAME = "STATE-STORE-"
TABLE_SOURCE_SUFFIX = "-source"
KSTREAM_SOURCE_NAME = "KSTREAM-SOURCE-"
KTABLE_SOURCE_NAME = "KTABLE-SOURCE-"
_OPTIMIZATIONS = {
    "none",
    "all",
    "reuse.ktable.source.topics",
    "merge.repartition.topics",
    "single.store.self.join",
}


class InternalStreamsBuilder:
    """Owns the graph root, hands out names and writes the graph into a topology builder."""

    def __init__(self) -> None:
        self._index = 0
        self._build_priority = 0
        self.root: GraphNode = RootNode()
        self.root.build_priority = -1
        # co-partitioned groups of source *node* names (joins), emitted at build time
        self.copartition_groups: list[list[str]] = []
        self.built = False

    # -- naming (Kafka's InternalNameProvider) -------------------------------

    def new_processor_name(self, prefix: str) -> str:
        name = f"{prefix}{self._index:010d}"
        self._index += 1
        return name

    def or_else_generate(self, name: str | None, prefix: str) -> str:
        """Kafka's ``NamedInternal.orElseGenerateWithPrefix``: the given name, else a generated one.

        A number is drawn from the counter even when a name is given (Kafka
        burns it for topology compatibility), so later generated names agree.
        """
        generated = self.new_processor_name(prefix)
        return name if name else generated

    def suffix_or_else_generate(self, name: str | None, suffix: str, prefix: str) -> str:
        """Kafka's ``suffixWithOrElseGet(suffix, provider, prefix)``: ``name + suffix``; burns a number."""
        generated = self.new_processor_name(prefix)
        return name + suffix if name else generated

    def new_store_name(self, prefix: str) -> str:
        name = f"{prefix}{STATE_STORE_NAME}{self._index:010d}"
        self._index += 1
        return name

    # -- graph ---------------------------------------------------------------

    def add_graph_node(self, parents: GraphNode | Sequence[GraphNode], child: GraphNode) -> None:
        if self.built:
            raise TopologyException("the topology was already built; add DSL operations before build()")
        if isinstance(parents, GraphNode):
            parents = [parents]
        if not parents:
            raise TopologyException("Parent node collection can't be empty")
        for parent in parents:
            parent.add_child(child)
            child.build_priority = self._build_priority
            self._build_priority += 1

    def copartition(self, source_node_names: Sequence[str]) -> None:
        self.copartition_groups.append(sorted(set(source_node_names)))

    # -- sources -------------------------------------------------------------

    def stream(self, topics: Sequence[str], consumed: Consumed) -> KStream:
        from kspark.kstream.kstream import KStream

        name = self.or_else_generate(consumed.name, KSTREAM_SOURCE_NAME)
        node = StreamSourceNode(name, topics, consumed)
        self.add_graph_node(self.root, node)
        return KStream(name, consumed.key_serde, consumed.value_serde, {name}, False, node, self)

    def table(self, topic: str, consumed: Consumed, materialized: MaterializedInternal) -> KTable:
        from kspark.kstream.internals.ktable_processors import KTableSource
        from kspark.kstream.ktable import KTable

        source_name = self.suffix_or_else_generate(consumed.name, TABLE_SOURCE_SUFFIX, KSTREAM_SOURCE_NAME)
        table_source_name = self.or_else_generate(consumed.name, KTABLE_SOURCE_NAME)
        supplier = KTableSource(materialized.store_name, materialized.queryable_store_name)
        node = TableSourceNode(
            table_source_name,
            source_name,
            topic,
            consumed,
            KeyValueStoreMaterializer(materialized),
            ProcessorParameters(supplier, table_source_name),
        )
        self.add_graph_node(self.root, node)
        return KTable(
            table_source_name,
            consumed.key_serde,
            consumed.value_serde,
            {source_name},
            materialized.queryable_store_name,
            supplier,
            node,
            self,
        )

    def global_table(
        self, topic: str, consumed: Consumed, materialized: MaterializedInternal
    ) -> GlobalKTable:
        from kspark.kstream.global_ktable import GlobalKTable
        from kspark.kstream.internals.ktable_processors import KTableSource
        from kspark.kstream.internals.value_getters import KTableMaterializedValueGetterSupplier
        from kspark.state.internals.versioned import VersionedBytesStoreSupplier

        if isinstance(materialized.store_supplier, VersionedBytesStoreSupplier):
            # Kafka's check: a global table is read whole by every task, never as of a time
            raise TopologyException(
                f"GlobalTables cannot be versioned. (global table of topic {topic!r}: its "
                f"Materialized uses the versioned store supplier {materialized.store_supplier.name!r})"
            )
        materialized.logging = False  # global stores restore from their source topic
        source_name = self.suffix_or_else_generate(consumed.name, TABLE_SOURCE_SUFFIX, KSTREAM_SOURCE_NAME)
        processor_name = self.or_else_generate(consumed.name, KTABLE_SOURCE_NAME)
        store_name = materialized.store_name
        supplier = KTableSource(store_name, store_name)
        node = TableSourceNode(
            processor_name,
            source_name,
            topic,
            consumed,
            KeyValueStoreMaterializer(materialized),
            ProcessorParameters(supplier, processor_name),
            is_global=True,
        )
        self.add_graph_node(self.root, node)
        return GlobalKTable(
            KTableMaterializedValueGetterSupplier(store_name), materialized.queryable_store_name
        )

    def add_state_store(self, store_builder: StoreBuilder[Any, Any]) -> None:
        self.add_graph_node(self.root, StateStoreNode(store_builder))

    def add_global_store(
        self,
        store_builder: StoreBuilder[Any, Any],
        topic: str,
        consumed: Consumed,
        state_update_supplier: Callable[[], Processor[Any, Any]],
    ) -> None:
        store_builder.with_logging_disabled()
        source_name = self.suffix_or_else_generate(consumed.name, TABLE_SOURCE_SUFFIX, KSTREAM_SOURCE_NAME)
        processor_name = self.or_else_generate(consumed.name, KTABLE_SOURCE_NAME)
        node = GlobalStoreNode(
            store_builder, source_name, topic, consumed, processor_name, state_update_supplier
        )
        self.add_graph_node(self.root, node)

    # -- build ---------------------------------------------------------------

    def nodes(self) -> list[GraphNode]:
        """Every node once, in build-priority order (the order the DSL added them)."""
        seen: dict[GraphNode, None] = {}
        stack = [self.root]
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen[node] = None
            stack.extend(node.children)
        return sorted(seen, key=lambda n: n.build_priority)

    def build_and_optimize_topology(self, topology_builder: Any, props: dict[str, Any] | None = None) -> None:
        optimization = (props or {}).get("topology.optimization", "none")
        for part in str(optimization).split(","):
            if part.strip() not in _OPTIMIZATIONS:
                raise TopologyException(
                    f"Unrecognized config value for topology.optimization: {optimization!r}"
                )
        # Optimisations (reusing source topics, merging repartition topics) are not applied:
        # the graph is written as built, which is Kafka's behaviour for "none".
        self._relax_null_key_filters()
        from kspark.kstream.internals.versioned_semantics import enable_versioned_semantics

        enable_versioned_semantics(self.root)
        queue: list[tuple[int, int, GraphNode]] = [(self.root.build_priority, 0, self.root)]
        tie = 1
        while queue:
            _, _, node = heapq.heappop(queue)
            if node.all_parents_written_to_topology() and not node.has_written_to_topology:
                node.write_to_topology(topology_builder)
                node.has_written_to_topology = True
            for child in node.children:
                heapq.heappush(queue, (child.build_priority, tie, child))
                tie += 1
        self.built = True
        for group in self.copartition_groups:
            topology_builder.copartition_sources(group)
        self._validate_copartition()

    def _relax_null_key_filters(self) -> None:
        """Kafka's ``rewriteRepartitionNodes``: repartitions drop null keys unless a relaxed join needs them.

        A repartition's filter passes every record as built; Kafka then gives
        every repartition node with no null-key-relaxed join (stream-table or
        stream-stream left/outer join) anywhere downstream a ``key != null``
        filter, so null keys vanish silently before the repartition topic
        (no dropped-records metric) instead of reaching an aggregation.
        """
        from kspark.kstream.internals.kstream_processors import KStreamFilter

        for node in self._repartitions_without_relaxed_join_downstream():
            if node.processor_parameters is not None:
                node.processor_parameters = ProcessorParameters(
                    KStreamFilter(lambda k, v: k is not None, False), node.processor_parameters.processor_name
                )

    def _repartitions_without_relaxed_join_downstream(self) -> list[RepartitionNode]:
        """Kafka's ``NodesWithRelaxedNullKeyJoinDownstream``: a node is kept as is when any descendant is a
        relaxed join (the mark propagates up through every ancestor, repartitions included)."""
        visited: set[int] = set()
        keeps_null_keys: set[int] = set()
        order: list[GraphNode] = []
        # Iterative post-order walk: a node is judged after all of its children.
        stack: list[tuple[GraphNode, bool]] = [(self.root, False)]
        while stack:
            node, children_done = stack.pop()
            if children_done:
                if any(
                    "NULL_KEY_RELAXED_JOIN" in child.labels or id(child) in keeps_null_keys
                    for child in node.children
                ):
                    keeps_null_keys.add(id(node))
                order.append(node)
                continue
            if id(node) in visited:
                continue
            visited.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node.children))
        return [n for n in order if isinstance(n, RepartitionNode) and id(n) not in keeps_null_keys]

    def _validate_copartition(self) -> None:
        """Kafka's ``validateCopartition``: co-partitioned repartition topics with fixed counts must agree."""
        by_source = {n.node_name: n for n in self.nodes() if isinstance(n, RepartitionNode)}
        for group in self.copartition_groups:
            repartitions = [by_source[name] for name in group if name in by_source]
            if len(repartitions) != len(group):
                continue  # a user topic is involved: its partition count is only known at runtime
            counts = {r.repartition_topic: r.partitions for r in repartitions if r.partitions is not None}
            if len(counts) == len(repartitions) and len(set(counts.values())) > 1:
                listing = ", ".join(f"{t}={c}" for t, c in sorted(counts.items()))
                raise TopologyException(
                    f"Following topics do not have the same number of partitions: [{{{listing}}}]"
                )
