"""KIP-914 at build time: which tables are versioned, and the operators that then change behaviour.

As Kafka's ``InternalStreamsBuilder.enableVersionedSemantics``. A graph node's
output is versioned when the node materializes a table into a versioned store
(``builder.table``, ``to_table``, a materialized ``filter`` / ``map_values``, an
aggregation or a table-table join with ``Materialized.as_(versioned supplier)``),
not versioned when it materializes into a plain store (a table-table join
without a store, and ``suppress``, count as not versioned), and otherwise
inherits: versioned when all its parents are. Then:

* a ``KTable.filter`` reading a versioned table forwards every update, the
  tombstone of a filtered-out key included, even when nothing was there;
* a table-table join side and ``KTable.group_by`` (``KTableRepartitionMap``)
  reading a versioned table skip its out-of-order updates (``is_latest`` False),
  and so do a foreign-key join's subscription-send processor (left table) and
  foreign-table-join processor (right table), counting them as dropped;
* ``suppress`` of a versioned table is refused (``TopologyException``).

The node kinds are recognised by their processor suppliers, so the DSL
modules need not say anything besides what they already store on the nodes.
"""

from __future__ import annotations

from typing import Any

from kspark.errors import TopologyException
from kspark.kstream.internals.foreign_key_join.processors import (
    ForeignTableJoinProcessorSupplier,
    SubscriptionSendProcessorSupplier,
)
from kspark.kstream.internals.graph import (
    GraphNode,
    KTableKTableJoinNode,
    RootNode,
    StatefulProcessorNode,
    StreamToTableNode,
    TableSourceNode,
)
from kspark.kstream.internals.ktable_processors import KTableFilter, KTableRepartitionMap
from kspark.kstream.internals.materialize import KeyValueStoreMaterializer

__all__ = ["enable_versioned_semantics", "output_versioned", "is_versioned_upstream"]


# processors with Kafka's setUseVersionedSemantics, switched on by a versioned input table
_SKIPPING_OUT_OF_ORDER = (
    KTableFilter,
    KTableRepartitionMap,
    SubscriptionSendProcessorSupplier,
    ForeignTableJoinProcessorSupplier,
)


def _all_nodes(root: GraphNode) -> list[GraphNode]:
    seen: dict[GraphNode, None] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen[node] = None
        stack.extend(reversed(node.children))
    return list(seen)


def _supplier(node: GraphNode) -> Any:
    params = getattr(node, "processor_parameters", None)
    return None if params is None else params.processor_supplier


def _is_suppress(node: GraphNode) -> bool:
    return type(_supplier(node)).__name__ == "KTableSuppressProcessorSupplier"


def output_versioned(node: GraphNode) -> bool | None:
    """Whether ``node``'s output table is versioned: True/False when the node decides it, None when
    it inherits from its parents (Kafka's ``GraphNode.isOutputVersioned``)."""
    explicit = getattr(node, "output_versioned", None)
    if explicit is not None:
        return bool(explicit)
    if isinstance(node, TableSourceNode | StreamToTableNode | KTableKTableJoinNode):
        store_factory: Any = node.store_factory
        return isinstance(store_factory, KeyValueStoreMaterializer) and store_factory.is_versioned()
    if _is_suppress(node):
        return False
    if isinstance(node, StatefulProcessorNode):
        for factory in node.store_factories:
            if isinstance(factory, KeyValueStoreMaterializer):
                return factory.is_versioned()
    return None


def _versioned_or_versioned_upstream(node: GraphNode) -> bool:
    decided = output_versioned(node)
    if decided is not None:
        return decided
    return is_versioned_upstream(node)


def is_versioned_upstream(node: GraphNode) -> bool:
    """Whether the input of ``node`` is versioned: all of its parents' outputs are."""
    if isinstance(node, RootNode) or not node.parents:
        return False
    return all(_versioned_or_versioned_upstream(parent) for parent in node.parents)


def enable_versioned_semantics(root: GraphNode) -> None:
    """Switch the KIP-914 behaviour on where a versioned table feeds an operator; refuse
    ``suppress`` of a versioned table."""
    for node in _all_nodes(root):
        supplier = _supplier(node)
        if isinstance(supplier, _SKIPPING_OUT_OF_ORDER):
            if any(_versioned_or_versioned_upstream(p) for p in node.parents):
                supplier.use_versioned_semantics = True
        elif isinstance(node, KTableKTableJoinNode):
            for parent in node.parents:
                if not _versioned_or_versioned_upstream(parent):
                    continue
                for params in (node.this_processor, node.other_processor):
                    join = params.processor_supplier
                    # the side updated by this parent's table (Kafka's joinThisParentNodeName)
                    if getattr(getattr(join, "table1", None), "_graph_node", None) is parent:
                        join.use_versioned_semantics = True  # type: ignore[attr-defined]
        elif _is_suppress(node) and is_versioned_upstream(node):
            raise TopologyException(
                "suppress() is only supported for non-versioned KTables "
                "(note that version semantics might be inherited from upstream)"
            )
