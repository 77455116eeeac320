"""``TopologyDescription``: the text ``Topology.describe()`` prints, in Kafka Streams' layout.

The classes mirror ``InternalTopologyBuilder``'s nested description classes.
Node order inside a sub-topology and in ``-->``/``<--`` lists follows Kafka's
``NodeComparator`` (larger sub-tree first, then name), with sub-tree sizes
computed the way Kafka computes them (including its walk order over a Java
``HashMap``), so the printed text is byte-for-byte what Kafka prints.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kspark.processor.internals.java_compat import java_hash_order, java_hash_set_copy_order

__all__ = [
    "NodeDescription",
    "SourceDescription",
    "ProcessorDescription",
    "SinkDescription",
    "SubtopologyDescription",
    "GlobalStoreDescription",
    "TopologyDescription",
    "describe_subtopology",
]


_ROUTINES = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, types.LambdaType)


def _node_before(a: NodeDescription, b: NodeDescription) -> bool:
    if a.size != b.size:
        return a.size > b.size
    return a.name < b.name


def _insert_sorted(nodes: list[NodeDescription], node: NodeDescription) -> None:
    # A Java TreeSet orders at insertion time; sizes change later without a
    # re-sort, so we insert by the comparison as it is now, never re-sort.
    if any(n.name == node.name for n in nodes):
        return
    for i, existing in enumerate(nodes):
        if _node_before(node, existing):
            nodes.insert(i, node)
            return
    nodes.append(node)


def _names(nodes: list[NodeDescription]) -> str:
    return ", ".join(n.name for n in nodes) if nodes else "none"


@dataclass(eq=False)
class NodeDescription:
    """A node of a sub-topology with its neighbours, as ``TopologyDescription.Node``."""

    name: str
    size: int = 1
    predecessors: list[NodeDescription] = field(default_factory=list)
    successors: list[NodeDescription] = field(default_factory=list)

    def add_predecessor(self, node: NodeDescription) -> None:
        _insert_sorted(self.predecessors, node)

    def add_successor(self, node: NodeDescription) -> None:
        _insert_sorted(self.successors, node)


@dataclass(eq=False)
class SourceDescription(NodeDescription):
    topics: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        topics = ", ".join(java_hash_set_copy_order(self.topics))
        return f"Source: {self.name} (topics: [{topics}])\n      --> {_names(self.successors)}"


@dataclass(eq=False)
class ProcessorDescription(NodeDescription):
    stores: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        stores = ", ".join(java_hash_set_copy_order(self.stores))
        return (
            f"Processor: {self.name} (stores: [{stores}])\n      --> {_names(self.successors)}"
            f"\n      <-- {_names(self.predecessors)}"
        )


@dataclass(eq=False)
class SinkDescription(NodeDescription):
    topic: str | None = None
    topic_name_extractor: Callable[..., str] | None = None

    def __str__(self) -> str:
        if self.topic is not None:
            return f"Sink: {self.name} (topic: {self.topic})\n      <-- {_names(self.predecessors)}"
        ex: Any = self.topic_name_extractor
        # Kafka prints the extractor's toString(): use a user-defined __str__, else the name
        cls: Any = type(ex)
        label: str
        if not isinstance(ex, _ROUTINES) and (
            cls.__str__ is not object.__str__ or cls.__repr__ is not object.__repr__
        ):
            label = str(ex)
        else:
            label = str(getattr(ex, "__qualname__", None) or cls.__qualname__)
        return f"Sink: {self.name} (extractor class: {label})\n      <-- {_names(self.predecessors)}"


@dataclass(eq=False)
class SubtopologyDescription:
    id: int
    nodes: list[NodeDescription]

    def __str__(self) -> str:
        body = "".join(f"    {n}\n" for n in self.nodes)
        return f"Sub-topology: {self.id}\n{body}\n"


@dataclass(eq=False)
class GlobalStoreDescription:
    id: int
    source: SourceDescription
    processor: ProcessorDescription

    @property
    def store_name(self) -> str:
        return self.processor.stores[0]

    def __str__(self) -> str:
        return (
            f"Sub-topology: {self.id} for global store (will not generate tasks)\n"
            f"    {self.source}\n    {self.processor}\n"
        )


@dataclass(eq=False)
class TopologyDescription:
    """Sub-topologies and global stores; ``str()`` gives Kafka's ``TopologyDescription.toString``."""

    subtopologies: list[SubtopologyDescription] = field(default_factory=list)
    global_stores: list[GlobalStoreDescription] = field(default_factory=list)

    def __str__(self) -> str:
        parts = ["Topologies:\n "]
        subs = sorted(self.subtopologies, key=lambda s: s.id)
        globs = sorted(self.global_stores, key=lambda g: g.id)
        si = gi = 0
        expected = 0
        while si < len(subs) and gi < len(globs):
            parts.append("  ")
            if subs[si].id == expected:
                parts.append(str(subs[si]))
                si += 1
            else:
                parts.append(str(globs[gi]))
                gi += 1
            expected += 1
        for s in subs[si:]:
            parts.append("  " + str(s))
        for g in globs[gi:]:
            parts.append("  " + str(g))
        return "".join(parts)

    def __repr__(self) -> str:
        return str(self)


def describe_subtopology(
    subtopology_id: int,
    node_names: list[str],
    make_node: Callable[[str], NodeDescription],
    predecessors_of: Callable[[str], list[str]],
) -> SubtopologyDescription:
    """Connect the nodes of one group and size them exactly as Kafka's ``describeSubtopology``."""
    by_name = {name: make_node(name) for name in node_names}

    def update_size(node: NodeDescription, delta: int) -> None:
        node.size += delta
        for p in node.predecessors:
            update_size(p, delta)

    for name in java_hash_order(node_names):
        node = by_name[name]
        for pred_name in predecessors_of(name):
            pred = by_name[pred_name]
            node.add_predecessor(pred)
            pred.add_successor(node)
            update_size(pred, node.size)
    nodes: list[NodeDescription] = []
    for node in by_name.values():
        _insert_sorted(nodes, node)
    nodes.sort(key=lambda n: (-n.size, n.name))
    return SubtopologyDescription(subtopology_id, nodes)
