"""The DSL's logical graph: one ``GraphNode`` per DSL operation, written to a topology at build time.

As in Kafka Streams, building is two-phase. DSL calls add nodes to this
graph (``InternalStreamsBuilder.add_graph_node``); ``build()`` visits the
nodes in build-priority order (the order they were added) and each node
writes its sources, processors, sinks, stores and internal topics into the
``InternalTopologyBuilder`` (``write_to_topology``). The Spark compiler reads
the same graph, so nodes keep what they were made from (serdes, processor
suppliers, store factories) as plain attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kspark.kstream.internals.changed_serde import ChangedDeserializer, ChangedSerializer

if TYPE_CHECKING:
    from kspark.kstream.config_objects import Consumed, Produced
    from kspark.processor.api import Processor
    from kspark.state.api import StoreBuilder

__all__ = [
    "StoreFactory",
    "ProcessorParameters",
    "GraphNode",
    "RootNode",
    "StreamSourceNode",
    "TableSourceNode",
    "GlobalStoreNode",
    "StateStoreNode",
    "ProcessorGraphNode",
    "StatefulProcessorNode",
    "TableProcessorNode",
    "StreamToTableNode",
    "StreamTableJoinNode",
    "KTableKTableJoinNode",
    "StreamSinkNode",
    "RepartitionNode",
    "OptimizableRepartitionNode",
    "UnoptimizableRepartitionNode",
    "GroupedTableOperationRepartitionNode",
    "serializer_of",
    "deserializer_of",
]


class StoreFactory(Protocol):
    """Makes the ``StoreBuilder`` of one store, late (at write time), so serdes can still be filled in."""

    @property
    def name(self) -> str: ...

    def builder(self) -> StoreBuilder[Any, Any]: ...


def serializer_of(serde: Any) -> Any:
    return None if serde is None else serde.serializer()


def deserializer_of(serde: Any) -> Any:
    return None if serde is None else serde.deserializer()


@dataclass
class ProcessorParameters:
    """A processor supplier and the name of the processor node it makes; ``user_code``: the
    processor runs the application's Processor API code (InternalTopologyBuilder.add_processor)."""

    processor_supplier: Callable[[], Processor[Any, Any]]
    processor_name: str
    user_code: bool = False

    def add_processor_to(self, builder: Any, parent_names: Sequence[str]) -> None:
        builder.add_processor(
            self.processor_name, self.processor_supplier, *parent_names, user_code=self.user_code
        )


class GraphNode:
    """A node of the logical graph; ``node_name`` is what children connect to."""

    def __init__(self, node_name: str) -> None:
        self.node_name = node_name
        # dicts keep insertion order and give set semantics, like Kafka's LinkedHashSet
        self._children: dict[GraphNode, None] = {}
        self._parents: dict[GraphNode, None] = {}
        self.key_changing_operation = False
        self.value_changing_operation = False
        self.merge_node = False
        self.build_priority: int = 0
        self.has_written_to_topology = False
        self.labels: list[str] = []

    @property
    def children(self) -> list[GraphNode]:
        return list(self._children)

    @property
    def parents(self) -> list[GraphNode]:
        return list(self._parents)

    def parent_node_names(self) -> list[str]:
        return [p.node_name for p in self._parents]

    def all_parents_written_to_topology(self) -> bool:
        return all(p.has_written_to_topology for p in self._parents)

    def add_child(self, child: GraphNode) -> None:
        self._children[child] = None
        child._parents[self] = None

    def remove_child(self, child: GraphNode) -> bool:
        if child not in self._children:
            return False
        del self._children[child]
        child._parents.pop(self, None)
        return True

    def clear_children(self) -> None:
        for child in self._children:
            child._parents.pop(self, None)
        self._children.clear()

    def write_to_topology(self, builder: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not write to a topology")

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(node_name={self.node_name!r}, build_priority={self.build_priority}, "
            f"key_changing={self.key_changing_operation}, parents={self.parent_node_names()})"
        )


class RootNode(GraphNode):
    """The invisible parent of every source."""

    def __init__(self) -> None:
        super().__init__("root")

    def write_to_topology(self, builder: Any) -> None:
        pass


class StreamSourceNode(GraphNode):
    """``builder.stream(topics)``: one source node reading the topics."""

    def __init__(self, node_name: str, topics: Sequence[str], consumed: Consumed) -> None:
        super().__init__(node_name)
        self.topics = list(topics)
        self.consumed = consumed

    def write_to_topology(self, builder: Any) -> None:
        builder.add_source(
            self.node_name,
            self.topics,
            key_deserializer=deserializer_of(self.consumed.key_serde),
            value_deserializer=deserializer_of(self.consumed.value_serde),
            timestamp_extractor=self.consumed.timestamp_extractor,
            offset_reset=self.consumed.offset_reset,
        )


class TableSourceNode(GraphNode):
    """``builder.table`` / ``global_table``: a source plus the ``KTableSource`` processor (and its store).

    ``node_name`` is the table-source processor (``KTABLE-SOURCE-...``);
    ``source_name`` the source node reading the topic. The store is added only
    if the table source ended up materialized (a name was given, or a
    downstream join or filter needed a value getter): that is decided after
    all DSL calls, so it is read here at write time.
    """

    def __init__(
        self,
        node_name: str,
        source_name: str,
        topic: str,
        consumed: Consumed,
        store_factory: StoreFactory,
        processor_parameters: ProcessorParameters,
        is_global: bool = False,
    ) -> None:
        super().__init__(node_name)
        self.source_name = source_name
        self.topic = topic
        self.consumed = consumed
        self.store_factory = store_factory
        self.processor_parameters = processor_parameters
        self.is_global = is_global

    def write_to_topology(self, builder: Any) -> None:
        kd = deserializer_of(self.consumed.key_serde)
        vd = deserializer_of(self.consumed.value_serde)
        if self.is_global:
            builder.add_global_store(
                self.store_factory.builder(),
                self.source_name,
                self.topic,
                self.processor_parameters.processor_name,
                self.processor_parameters.processor_supplier,
                key_deserializer=kd,
                value_deserializer=vd,
                timestamp_extractor=self.consumed.timestamp_extractor,
            )
            return
        builder.add_source(
            self.source_name,
            [self.topic],
            key_deserializer=kd,
            value_deserializer=vd,
            timestamp_extractor=self.consumed.timestamp_extractor,
            offset_reset=self.consumed.offset_reset,
        )
        builder.add_processor(self.node_name, self.processor_parameters.processor_supplier, self.source_name)
        if getattr(self.processor_parameters.processor_supplier, "materialized", lambda: False)():
            builder.add_state_store(self.store_factory.builder(), self.node_name)


class GlobalStoreNode(GraphNode):
    """``builder.add_global_store``: a global store kept up to date by a user processor."""

    def __init__(
        self,
        store_builder: StoreBuilder[Any, Any],
        source_name: str,
        topic: str,
        consumed: Consumed,
        processor_name: str,
        state_update_supplier: Callable[[], Processor[Any, Any]],
    ) -> None:
        super().__init__(processor_name)
        self.store_builder = store_builder
        self.source_name = source_name
        self.topic = topic
        self.consumed = consumed
        self.state_update_supplier = state_update_supplier

    def write_to_topology(self, builder: Any) -> None:
        builder.add_global_store(
            self.store_builder,
            self.source_name,
            self.topic,
            self.node_name,
            self.state_update_supplier,
            key_deserializer=deserializer_of(self.consumed.key_serde),
            value_deserializer=deserializer_of(self.consumed.value_serde),
            timestamp_extractor=self.consumed.timestamp_extractor,
        )


class StateStoreNode(GraphNode):
    """``builder.add_state_store``: a store not yet connected to any processor."""

    def __init__(self, store_builder: StoreBuilder[Any, Any]) -> None:
        super().__init__(store_builder.name)
        self.store_builder = store_builder

    def write_to_topology(self, builder: Any) -> None:
        builder.add_state_store(self.store_builder)


class ProcessorGraphNode(GraphNode):
    """A stateless DSL operation: one processor under its graph parents."""

    def __init__(self, node_name: str, processor_parameters: ProcessorParameters) -> None:
        super().__init__(node_name)
        self.processor_parameters = processor_parameters

    def write_to_topology(self, builder: Any) -> None:
        self.processor_parameters.add_processor_to(builder, self.parent_node_names())


class StatefulProcessorNode(ProcessorGraphNode):
    """A processor with stores: ``store_factories`` are created here, ``store_names`` exist elsewhere."""

    def __init__(
        self,
        node_name: str,
        processor_parameters: ProcessorParameters,
        store_factories: Sequence[StoreFactory] = (),
        store_names: Sequence[str] | Callable[[], Sequence[str]] = (),
    ) -> None:
        super().__init__(node_name, processor_parameters)
        self.store_factories = list(store_factories)
        self._store_names = store_names

    @property
    def store_names(self) -> list[str]:
        names = self._store_names() if callable(self._store_names) else self._store_names
        return list(names)

    def write_to_topology(self, builder: Any) -> None:
        name = self.processor_parameters.processor_name
        self.processor_parameters.add_processor_to(builder, self.parent_node_names())
        for factory in self.store_factories:
            builder.add_state_store(factory.builder(), name)
        names = self.store_names
        if names:
            builder.connect_processor_and_state_stores(name, *names)


class TableProcessorNode(StatefulProcessorNode):
    """A KTable operation (filter, map_values, join, to_stream, ...); may materialize its result."""


class StreamToTableNode(GraphNode):
    """``KStream.to_table``: a ``KTableSource`` processor under the stream, with its store if materialized."""

    def __init__(
        self, node_name: str, processor_parameters: ProcessorParameters, store_factory: StoreFactory
    ) -> None:
        super().__init__(node_name)
        self.processor_parameters = processor_parameters
        self.store_factory = store_factory

    def write_to_topology(self, builder: Any) -> None:
        self.processor_parameters.add_processor_to(builder, self.parent_node_names())
        if getattr(self.processor_parameters.processor_supplier, "materialized", lambda: False)():
            builder.add_state_store(self.store_factory.builder(), self.node_name)


class StreamTableJoinNode(StatefulProcessorNode):
    """A stream-table (or stream-globaltable) join.

    The processor reads the table through its value getter's stores.
    """

    def __init__(
        self,
        node_name: str,
        processor_parameters: ProcessorParameters,
        store_names: Sequence[str] | Callable[[], Sequence[str]],
        other_join_side_node_name: str | None,
    ) -> None:
        super().__init__(node_name, processor_parameters, store_names=store_names)
        self.other_join_side_node_name = other_join_side_node_name


class KTableKTableJoinNode(GraphNode):
    """A table-table join: this-side and other-side join processors feeding a merge processor.

    ``node_name`` is the merger's name, which children connect to; the two
    join processors hang under the left and right tables respectively.
    """

    def __init__(
        self,
        node_name: str,
        this_processor: ProcessorParameters,
        other_processor: ProcessorParameters,
        this_join_side_node_name: str,
        other_join_side_node_name: str,
        this_store_names: Callable[[], Sequence[str]],
        other_store_names: Callable[[], Sequence[str]],
        merge_processor: ProcessorParameters,
        store_factory: StoreFactory | None,
    ) -> None:
        super().__init__(node_name)
        self.this_processor = this_processor
        self.other_processor = other_processor
        self.this_join_side_node_name = this_join_side_node_name
        self.other_join_side_node_name = other_join_side_node_name
        self.this_store_names = this_store_names
        self.other_store_names = other_store_names
        self.merge_processor = merge_processor
        self.store_factory = store_factory

    def write_to_topology(self, builder: Any) -> None:
        this_name = self.this_processor.processor_name
        other_name = self.other_processor.processor_name
        merge_name = self.merge_processor.processor_name
        builder.add_processor(
            this_name, self.this_processor.processor_supplier, self.this_join_side_node_name
        )
        builder.add_processor(
            other_name, self.other_processor.processor_supplier, self.other_join_side_node_name
        )
        builder.add_processor(merge_name, self.merge_processor.processor_supplier, this_name, other_name)
        # each side looks up the *other* table
        other_stores = list(self.other_store_names())
        if other_stores:
            builder.connect_processor_and_state_stores(this_name, *other_stores)
        this_stores = list(self.this_store_names())
        if this_stores:
            builder.connect_processor_and_state_stores(other_name, *this_stores)
        if self.store_factory is not None:
            builder.add_state_store(self.store_factory.builder(), merge_name)


class StreamSinkNode(GraphNode):
    """``to(topic)``: a sink node.

    ``topic`` is a name or a ``(key, value, record_context) -> str`` extractor.
    """

    def __init__(self, node_name: str, topic: str | Callable[..., str], produced: Produced) -> None:
        super().__init__(node_name)
        self.topic = topic
        self.produced = produced

    def write_to_topology(self, builder: Any) -> None:
        builder.add_sink(
            self.node_name,
            self.topic,
            *self.parent_node_names(),
            key_serializer=serializer_of(self.produced.key_serde),
            value_serializer=serializer_of(self.produced.value_serde),
            partitioner=self.produced.partitioner,
        )


class RepartitionNode(GraphNode):
    """A repartition through an internal topic: [filter ->] sink -> topic -> source.

    ``node_name`` is the source reading the repartition topic back (children
    connect to it). ``repartition_topic`` is undecorated (``<name>-repartition``);
    the runtime prefixes the application id.
    """

    def __init__(
        self,
        node_name: str,
        sink_name: str,
        repartition_topic: str,
        key_serde: Any,
        value_serde: Any,
        processor_parameters: ProcessorParameters | None,
        partitioner: Callable[..., Any] | None = None,
        partitions: int | None = None,
    ) -> None:
        super().__init__(node_name)
        self.source_name = node_name
        self.sink_name = sink_name
        self.repartition_topic = repartition_topic
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.processor_parameters = processor_parameters
        self.partitioner = partitioner
        self.partitions = partitions

    def _value_serializer(self) -> Any:
        return serializer_of(self.value_serde)

    def _value_deserializer(self) -> Any:
        return deserializer_of(self.value_serde)

    def write_to_topology(self, builder: Any) -> None:
        builder.add_internal_topic(self.repartition_topic, "repartition", self.partitions)
        if self.processor_parameters is not None:
            self.processor_parameters.add_processor_to(builder, self.parent_node_names())
            sink_parents = [self.processor_parameters.processor_name]
        else:
            sink_parents = self.parent_node_names()
        builder.add_sink(
            self.sink_name,
            self.repartition_topic,
            *sink_parents,
            key_serializer=serializer_of(self.key_serde),
            value_serializer=self._value_serializer(),
            partitioner=self.partitioner,
        )
        builder.add_source(
            self.source_name,
            [self.repartition_topic],
            key_deserializer=deserializer_of(self.key_serde),
            value_deserializer=self._value_deserializer(),
        )


class OptimizableRepartitionNode(RepartitionNode):
    """The repartition a key change implies before grouping or joining (mergeable by the optimiser)."""


class UnoptimizableRepartitionNode(RepartitionNode):
    """The repartition the user asked for with ``KStream.repartition``."""


class GroupedTableOperationRepartitionNode(RepartitionNode):
    """The repartition of ``KTable.group_by``: values travel as ``Change`` pairs, no filter processor."""

    def __init__(
        self, node_name: str, sink_name: str, repartition_topic: str, key_serde: Any, value_serde: Any
    ) -> None:
        super().__init__(node_name, sink_name, repartition_topic, key_serde, value_serde, None)

    def _value_serializer(self) -> Any:
        return ChangedSerializer(serializer_of(self.value_serde))

    def _value_deserializer(self) -> Any:
        return ChangedDeserializer(deserializer_of(self.value_serde))
