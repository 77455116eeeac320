"""``InternalTopologyBuilder``: the physical topology as Kafka Streams builds it.

It records node factories (sources, processors, sinks) in insertion order,
state stores and the processors connected to them, global stores, internal
(repartition/changelog) topics and co-partition groups; it groups nodes into
sub-topologies with a union-find exactly like Kafka's ``makeNodeGroups`` (so
sub-topology ids match), prints ``describe()`` in Kafka's layout, and builds
the runnable ``ProcessorTopology`` a task executes. The public ``Topology``
and the DSL both write into it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kspark.errors import TopologyException
from kspark.processor.api import Processor
from kspark.processor.internals.describe import (
    GlobalStoreDescription,
    NodeDescription,
    ProcessorDescription,
    SinkDescription,
    SourceDescription,
    TopologyDescription,
    describe_subtopology,
)
from kspark.processor.internals.java_compat import java_hash_order
from kspark.processor.internals.nodes import ProcessorNode, ProcessorTopology, SinkNode, SourceNode
from kspark.processor.internals.timestamp_extractors import resolve_timestamp_extractor

__all__ = ["InternalTopologyBuilder", "InternalTopicProperties"]


@dataclass
class _SourceFactory:
    name: str
    topics: list[str]
    key_deserializer: Any
    value_deserializer: Any
    timestamp_extractor: Any
    offset_reset: str | None
    predecessors: list[str] = field(default_factory=list)


@dataclass
class _ProcessorFactory:
    name: str
    predecessors: list[str]
    supplier: Callable[[], Processor[Any, Any]]
    store_names: list[str] = field(default_factory=list)  # a set kept in insertion order


@dataclass
class _SinkFactory:
    name: str
    predecessors: list[str]
    topic: str | None
    topic_extractor: Callable[..., str] | None
    key_serializer: Any
    value_serializer: Any
    partitioner: Any


_Factory = _SourceFactory | _ProcessorFactory | _SinkFactory


@dataclass
class _StoreFactory:
    builder: Any
    users: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.builder.name)


@dataclass(frozen=True)
class InternalTopicProperties:
    """An internal topic: its kind and, when fixed, its partition count."""

    kind: Literal["repartition", "changelog"]
    partitions: int | None = None


class _UnionFind:
    def __init__(self) -> None:
        self._parent: dict[str, str] = {}

    def add(self, x: str) -> None:
        self._parent.setdefault(x, x)

    def root(self, x: str) -> str:
        while self._parent[x] != x:
            self._parent[x] = self._parent[self._parent[x]]
            x = self._parent[x]
        return x

    def unite(self, x: str, *others: str) -> None:
        for o in others:
            rx, ro = self.root(x), self.root(o)
            if rx != ro:
                self._parent[ro] = rx


def _check_supplier(name: str, supplier: Any) -> None:
    if isinstance(supplier, Processor):
        raise TopologyException(
            f"Processor {name}: the supplier is a Processor instance; pass a zero-argument callable "
            "(or the Processor class) that returns a NEW processor on every call"
        )
    if not callable(supplier):
        raise TopologyException(f"Processor {name}: supplier {supplier!r} is not callable")


class InternalTopologyBuilder:
    """Collects the topology; see the module docstring. Names follow contract 3 of the design."""

    def __init__(self) -> None:
        self._factories: dict[str, _Factory] = {}
        self._state_factories: dict[str, _StoreFactory] = {}
        self._global_state_builders: dict[str, Any] = {}
        self._global_topics: list[str] = []
        self._raw_source_topics: set[str] = set()
        self._node_to_source_topics: dict[str, list[str]] = {}
        self._node_to_sink_topic: dict[str, str] = {}
        self._internal_topics: dict[str, InternalTopicProperties] = {}
        self._copartition_groups: list[list[str]] = []
        self._store_to_changelog_topic: dict[str, str] = {}
        # KIP-813 read-only stores: fed by their source topic, which is also their changelog
        self._read_only_stores: set[str] = set()
        # Processors running the application's own Processor API code (user_code_processors)
        self._user_code: set[str] = set()
        self._grouper = _UnionFind()
        self._application_id: str | None = None

    # ------------------------------------------------------------------ building
    def add_source(
        self,
        name: str,
        topics: Sequence[str],
        *,
        key_deserializer: Any = None,
        value_deserializer: Any = None,
        timestamp_extractor: Any = None,
        offset_reset: str | None = None,
    ) -> None:
        if isinstance(topics, str):
            topics = [topics]
        topics = list(topics)
        if not topics:
            raise TopologyException(f"Source {name}: you must provide at least one topic")
        self._check_new_name(name)
        for topic in topics:
            if not isinstance(topic, str) or not topic:
                raise TopologyException(
                    f"Source {name}: topic names must be non-empty strings, got {topic!r}"
                )
            self._validate_topic_not_registered(topic)
        if offset_reset not in (None, "earliest", "latest"):
            raise TopologyException(f"Source {name}: unrecognized offset reset {offset_reset!r}")
        extractor = None if timestamp_extractor is None else resolve_timestamp_extractor(timestamp_extractor)
        self._raw_source_topics.update(topics)
        self._factories[name] = _SourceFactory(
            name, topics, key_deserializer, value_deserializer, extractor, offset_reset
        )
        self._node_to_source_topics[name] = topics
        self._grouper.add(name)

    def add_processor(
        self,
        name: str,
        supplier: Callable[[], Processor[Any, Any]],
        *parent_names: str,
        user_code: bool = False,
    ) -> None:
        """``user_code``: the processor runs the application's Processor API code (it is handed a
        ``ProcessorContext``), not only a DSL operator's (:meth:`user_code_processors`)."""
        self._check_new_name(name)
        _check_supplier(name, supplier)
        if not parent_names:
            raise TopologyException(f"Processor {name} must have at least one parent")
        self._check_parents(name, parent_names)
        self._factories[name] = _ProcessorFactory(name, list(parent_names), supplier)
        if user_code:
            self._user_code.add(name)
        self._grouper.add(name)
        self._grouper.unite(name, *parent_names)

    def add_sink(
        self,
        name: str,
        topic: str | Callable[..., str],
        *parent_names: str,
        key_serializer: Any = None,
        value_serializer: Any = None,
        partitioner: Any = None,
    ) -> None:
        if topic is None or (isinstance(topic, str) and not topic):
            raise TopologyException(f"Sink {name}: topic must not be empty")
        if not isinstance(topic, str) and not callable(topic):
            raise TopologyException(
                f"Sink {name}: topic must be a name or a callable (key, value, context) -> str"
            )
        self._check_new_name(name)
        if not parent_names:
            raise TopologyException(f"Sink {name} must have at least one parent")
        self._check_parents(name, parent_names)
        for parent in parent_names:
            if isinstance(self._factories[parent], _SinkFactory):
                raise TopologyException(f"Sink {parent} cannot be used as a parent (of {name})")
        static = topic if isinstance(topic, str) else None
        extractor = None if isinstance(topic, str) else topic
        self._factories[name] = _SinkFactory(
            name, list(parent_names), static, extractor, key_serializer, value_serializer, partitioner
        )
        if static is not None:
            self._node_to_sink_topic[name] = static
        self._grouper.add(name)
        self._grouper.unite(name, *parent_names)

    def add_state_store(self, store_builder: Any, *processor_names: str) -> None:
        name = getattr(store_builder, "name", None)
        if not isinstance(name, str) or not name:
            raise TopologyException(
                f"add_state_store needs a StoreBuilder with a name, got {store_builder!r}"
            )
        existing = self._state_factories.get(name)
        if existing is not None and existing.builder is not store_builder:
            raise TopologyException(f"A different StateStore has already been added with the name {name}")
        if name in self._global_state_builders:
            raise TopologyException(
                f"A different GlobalStateStore has already been added with the name {name}"
            )
        if existing is None:
            self._state_factories[name] = _StoreFactory(store_builder)
        for processor_name in processor_names:
            self._connect(processor_name, name)

    def connect_processor_and_state_stores(self, processor_name: str, *store_names: str) -> None:
        if not store_names:
            raise TopologyException(f"Processor {processor_name}: must provide at least one state store name")
        for store_name in store_names:
            self._connect(processor_name, store_name)

    def add_global_store(
        self,
        store_builder: Any,
        source_name: str,
        topic: str,
        processor_name: str,
        state_update_supplier: Callable[[], Processor[Any, Any]],
        *,
        key_deserializer: Any = None,
        value_deserializer: Any = None,
        timestamp_extractor: Any = None,
    ) -> None:
        store_name = getattr(store_builder, "name", None)
        if not isinstance(store_name, str) or not store_name:
            raise TopologyException(
                f"add_global_store needs a StoreBuilder with a name, got {store_builder!r}"
            )
        self._check_new_name(source_name)
        self._check_new_name(processor_name)
        _check_supplier(processor_name, state_update_supplier)
        if store_name in self._state_factories:
            raise TopologyException(
                f"A different StateStore has already been added with the name {store_name}"
            )
        if store_name in self._global_state_builders:
            raise TopologyException(
                f"A different GlobalStateStore has already been added with the name {store_name}"
            )
        logging = getattr(store_builder, "logging_enabled", None)
        if callable(logging) and logging():
            raise TopologyException(
                f"StateStore {store_name} for global table must not have logging enabled."
            )
        if source_name == processor_name:
            raise TopologyException(f"sourceName and processorName must be different ({source_name}).")
        self._validate_topic_not_registered(topic)
        extractor = None if timestamp_extractor is None else resolve_timestamp_extractor(timestamp_extractor)
        self._global_topics.append(topic)
        self._factories[source_name] = _SourceFactory(
            source_name, [topic], key_deserializer, value_deserializer, extractor, None
        )
        self._node_to_source_topics[source_name] = [topic]
        self._grouper.add(source_name)
        factory = _ProcessorFactory(processor_name, [source_name], state_update_supplier, [store_name])
        self._factories[processor_name] = factory
        self._grouper.add(processor_name)
        self._grouper.unite(processor_name, source_name)
        self._global_state_builders[store_name] = store_builder
        self._connect_source_store_and_topic(store_name, topic)

    def add_read_only_state_store(
        self,
        store_builder: Any,
        source_name: str,
        timestamp_extractor: Any,
        key_deserializer: Any,
        value_deserializer: Any,
        topic: str,
        processor_name: str,
        state_update_supplier: Callable[[], Processor[Any, Any]],
    ) -> None:
        """Kafka's ``Topology.addReadOnlyStateStore`` (KIP-813), call for call: the store's logging
        off (its source topic is its changelog), a source reading ``topic`` from the earliest
        offset, the update processor, the store connected to it, the topic registered as the
        store's changelog."""
        store_name = getattr(store_builder, "name", None)
        disable = getattr(store_builder, "with_logging_disabled", None)
        if not isinstance(store_name, str) or not store_name or not callable(disable):
            raise TopologyException(
                f"add_read_only_state_store needs a StoreBuilder with a name, got {store_builder!r}"
            )
        if not isinstance(topic, str) or not topic:
            raise TopologyException(
                f"Read-only store {store_name}: topic must be a non-empty string, got {topic!r}"
            )
        self.add_source(
            source_name,
            [topic],
            key_deserializer=key_deserializer,
            value_deserializer=value_deserializer,
            timestamp_extractor=timestamp_extractor,
            offset_reset="earliest",
        )
        self.add_processor(processor_name, state_update_supplier, source_name, user_code=True)
        self.add_state_store(store_builder, processor_name)
        disable()
        self._connect_source_store_and_topic(store_name, topic)
        self._read_only_stores.add(store_name)

    def add_internal_topic(
        self, name: str, kind: Literal["repartition", "changelog"], partitions: int | None = None
    ) -> None:
        if kind not in ("repartition", "changelog"):
            raise TopologyException(
                f"Internal topic {name}: kind must be 'repartition' or 'changelog', got {kind!r}"
            )
        if partitions is not None and partitions < 1:
            raise TopologyException(f"Internal topic {name}: partitions must be >= 1, got {partitions}")
        self._internal_topics[name] = InternalTopicProperties(kind, partitions)

    def copartition_sources(self, source_names: Sequence[str]) -> None:
        self._copartition_groups.append(list(dict.fromkeys(source_names)))

    def connect_source_store_and_topic(self, store_name: str, topic: str) -> None:
        """Declare that ``topic`` itself is the changelog of ``store_name`` (source-table reuse)."""
        self._connect_source_store_and_topic(store_name, topic)

    def set_application_id(self, application_id: str) -> InternalTopologyBuilder:
        if not application_id:
            raise TopologyException("application id must not be empty")
        self._application_id = application_id
        return self

    def decorate_topic(self, name: str) -> str:
        if self._application_id is None:
            raise TopologyException(f"there is no application id to decorate internal topic {name} with yet")
        return f"{self._application_id}-{name}"

    # ------------------------------------------------------------------ queries
    @property
    def application_id(self) -> str | None:
        return self._application_id

    def node_names(self) -> list[str]:
        return list(self._factories)

    def user_code_processors(self) -> frozenset[str]:
        """The processors (of stream tasks) that run the application's own Processor API code:
        ``Topology.add_processor``, ``add_read_only_state_store``'s, ``KStream.process`` /
        ``process_values``, ``KTable.transform_values``. Only they can schedule a
        ``WALL_CLOCK_TIME`` punctuation: no DSL operator does, in Kafka Streams or here. A runner
        that pays for wall-clock time passing (the Spark runner's processing-time timers) pays only
        for the sub-topologies holding one."""
        return frozenset(self._user_code)

    def has_node(self, name: str) -> bool:
        return name in self._factories

    def has_store(self, name: str) -> bool:
        return name in self._state_factories or name in self._global_state_builders

    def internal_topics(self) -> dict[str, InternalTopicProperties]:
        return dict(self._internal_topics)

    def copartition_groups(self) -> list[list[str]]:
        return [list(g) for g in self._copartition_groups]

    def global_topics(self) -> list[str]:
        return list(self._global_topics)

    def state_store_names(self) -> list[str]:
        return list(self._state_factories)

    def global_store_names(self) -> list[str]:
        return list(self._global_state_builders)

    def store_builder(self, name: str) -> Any:
        if name in self._state_factories:
            return self._state_factories[name].builder
        return self._global_state_builders.get(name)

    def read_only_store_names(self) -> list[str]:
        """The KIP-813 read-only stores (``add_read_only_state_store``): their changelog is their
        source topic, and nothing writes to it for them."""
        return sorted(self._read_only_stores)

    def source_changelog_topics(self) -> dict[str, str]:
        """Stores whose changelog is a source topic (a source KTable reusing its topic)."""
        return dict(self._store_to_changelog_topic)

    def store_users(self, name: str) -> list[str]:
        f = self._state_factories.get(name)
        return list(f.users) if f else []

    def node_stores(self, name: str) -> list[str]:
        f = self._factories.get(name)
        return list(f.store_names) if isinstance(f, _ProcessorFactory) else []

    def predecessors(self, name: str) -> list[str]:
        return list(self._factories[name].predecessors)

    def successors(self, name: str) -> list[str]:
        return [n for n, f in self._factories.items() if name in f.predecessors]

    def processor_supplier(self, name: str) -> Any | None:
        """The supplier of processor node ``name``; None for a source or a sink."""
        f = self._factories.get(name)
        return f.supplier if isinstance(f, _ProcessorFactory) else None

    def source_deserializers(self, name: str) -> tuple[Any, Any, Any] | None:
        """(key deserializer, value deserializer, timestamp extractor) of source ``name`` as given
        (None where the config's default applies); None when ``name`` is not a source."""
        f = self._factories.get(name)
        if not isinstance(f, _SourceFactory):
            return None
        return f.key_deserializer, f.value_deserializer, f.timestamp_extractor

    def source_topics_of(self, name: str) -> list[str]:
        return list(self._node_to_source_topics.get(name, []))

    def sink_topic_of(self, name: str) -> str | None:
        return self._node_to_sink_topic.get(name)

    def chooses_topic_per_record(self, name: str) -> bool:
        """Whether ``name`` is a sink with a topic extractor (its topics are not known ahead)."""
        factory = self._factories.get(name)
        return isinstance(factory, _SinkFactory) and factory.topic_extractor is not None

    def source_topic_names(self, decorated: bool = False) -> list[str]:
        """Topics read by non-global sources, in insertion order."""
        out: list[str] = []
        for name, topics in self._node_to_source_topics.items():
            if self._is_global_source(name):
                continue
            for t in topics:
                out.append(self._maybe_decorate(t) if decorated else t)
        return out

    def is_internal_topic(self, topic: str) -> bool:
        return topic in self._internal_topics

    def node_groups(self) -> dict[int, list[str]]:
        """Sub-topology id -> node names (insertion order); ids as Kafka's ``makeNodeGroups``."""
        groups: dict[int, list[str]] = {}
        by_root: dict[str, list[str]] = {}
        for name in self._factories:
            root = self._grouper.root(name)
            group = by_root.get(root)
            if group is None:
                group = []
                by_root[root] = group
                groups[len(groups)] = group
            group.append(name)
        return groups

    def global_node_groups(self) -> set[str]:
        out: set[str] = set()
        for nodes in self.node_groups().values():
            if any(self._is_global_source(n) for n in nodes):
                out.update(nodes)
        return out

    def subtopology_ids(self) -> list[int]:
        """Ids of the sub-topologies that generate tasks (global store groups excluded)."""
        return [
            i for i, nodes in self.node_groups().items() if not any(self._is_global_source(n) for n in nodes)
        ]

    # ------------------------------------------------------------------ describe
    def describe(self) -> TopologyDescription:
        description = TopologyDescription()
        for group_id, nodes in self.node_groups().items():
            if any(self._is_global_source(n) for n in nodes):
                source_name = next(n for n in nodes if self._is_global_source(n))
                processor_name = next(n for n in java_hash_order(nodes) if n != source_name)
                pf = self._factories[processor_name]
                assert isinstance(pf, _ProcessorFactory)
                source = SourceDescription(source_name, topics=[self._node_to_source_topics[source_name][0]])
                processor = ProcessorDescription(processor_name, stores=[pf.store_names[0]])
                # Kafka's GlobalStore description links its source and processor both ways
                source.add_successor(processor)
                processor.add_predecessor(source)
                description.global_stores.append(GlobalStoreDescription(group_id, source, processor))
            else:
                description.subtopologies.append(
                    describe_subtopology(group_id, nodes, self._describe_node, self.predecessors)
                )
        return description

    def _describe_node(self, name: str) -> NodeDescription:
        f = self._factories[name]
        if isinstance(f, _SourceFactory):
            return SourceDescription(name, topics=list(f.topics))
        if isinstance(f, _ProcessorFactory):
            return ProcessorDescription(name, stores=list(f.store_names))
        return SinkDescription(name, topic=f.topic, topic_name_extractor=f.topic_extractor)

    # ------------------------------------------------------------------ build
    def validate(self) -> None:
        """Checks that need the whole topology: copartition partition counts, store users exist."""
        for group in self._copartition_groups:
            counts: dict[str, int] = {}
            topics: set[str] = set()
            for source in group:
                for t in self._node_to_source_topics.get(source, []):
                    topics.add(t)
                    props = self._internal_topics.get(t)
                    if props is not None and props.partitions is not None:
                        counts[t] = props.partitions
            if counts and set(counts) == topics and len(set(counts.values())) > 1:
                detail = ", ".join(f"{t}={n}" for t, n in sorted(counts.items()))
                raise TopologyException(
                    f"Following topics do not have the same number of partitions: [{detail}]"
                )

    def build_topology(self, node_names: Iterable[str] | None = None) -> ProcessorTopology:
        """A runnable topology of ``node_names`` (default: every non-global node), fresh processors.

        Internal topic names are decorated, so ``set_application_id`` must
        have been called when the topology has internal topics.
        """
        self.validate()
        if node_names is None:
            wanted = set(self._factories) - self.global_node_groups()
        else:
            wanted = set(node_names)
            unknown = wanted - set(self._factories)
            if unknown:
                raise TopologyException(f"Unknown node(s) {sorted(unknown)}")
        return self._build(wanted, global_=False)

    def build_global_state_topology(self) -> ProcessorTopology | None:
        global_nodes = self.global_node_groups()
        if not global_nodes:
            return None
        return self._build(global_nodes, global_=True)

    def _build(self, wanted: set[str], global_: bool) -> ProcessorTopology:
        nodes: dict[str, ProcessorNode] = {}
        processors: list[ProcessorNode] = []
        sources: dict[str, SourceNode] = {}
        sinks: dict[str, SinkNode] = {}
        stores: dict[str, Any] = {}
        repartition: set[str] = set()
        for name, f in self._factories.items():
            if name not in wanted:
                continue
            node: ProcessorNode
            if isinstance(f, _SourceFactory):
                node = SourceNode(name, [], f.key_deserializer, f.value_deserializer, f.timestamp_extractor)
                for topic in f.topics:
                    actual = self._maybe_decorate(topic)
                    node.topics.append(actual)
                    sources[actual] = node
                    props = self._internal_topics.get(topic)
                    if props is not None and props.kind == "repartition":
                        repartition.add(actual)
            elif isinstance(f, _ProcessorFactory):
                processor = f.supplier()
                if not isinstance(processor, Processor):
                    raise TopologyException(
                        f"Processor {name}: the supplier returned {processor!r}, which is not a Processor"
                    )
                node = ProcessorNode(name, processor, f.store_names)
                for store_name in f.store_names:
                    if store_name in self._state_factories and store_name not in stores:
                        stores[store_name] = self._state_factories[store_name].builder
            else:
                sink_topic = None if f.topic is None else self._maybe_decorate(f.topic)
                node = SinkNode(
                    name, sink_topic, f.topic_extractor, f.key_serializer, f.value_serializer, f.partitioner
                )
                sinks[name] = node
            for pred in f.predecessors:
                if pred not in nodes:
                    raise TopologyException(
                        f"Node {name}: predecessor {pred} is not part of the topology being built"
                    )
                nodes[pred].add_child(node)
            nodes[name] = node
            processors.append(node)
        changelogs: dict[str, str] = {}
        for store_name in stores:
            if store_name in self._store_to_changelog_topic:
                changelogs[store_name] = self._store_to_changelog_topic[store_name]
            elif self._application_id is not None:
                changelogs[store_name] = f"{self._application_id}-{store_name}-changelog"
        global_stores = [s for s in self._global_state_builders] if global_ else []
        if global_:
            stores = dict(self._global_state_builders)
        return ProcessorTopology(
            processors=processors,
            sources_by_topic=sources,
            sinks_by_name=sinks,
            state_store_builders=stores,
            store_to_changelog_topic=changelogs,
            global_store_names=global_stores,
            repartition_topics=repartition,
        )

    # ------------------------------------------------------------------ helpers
    def _maybe_decorate(self, topic: str) -> str:
        if topic in self._internal_topics:
            return self.decorate_topic(topic)
        return topic

    def _is_global_source(self, name: str) -> bool:
        f = self._factories.get(name)
        return isinstance(f, _SourceFactory) and len(f.topics) == 1 and f.topics[0] in self._global_topics

    def _check_new_name(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise TopologyException(f"node names must be non-empty strings, got {name!r}")
        if name in self._factories:
            raise TopologyException(f"Processor {name} is already added.")

    def _check_parents(self, name: str, parents: Sequence[str]) -> None:
        for parent in parents:
            if parent == name:
                raise TopologyException(f"Processor {name} cannot be a predecessor of itself.")
            if parent not in self._factories:
                raise TopologyException(f"Predecessor processor {parent} is not added yet for {name}")

    def _validate_topic_not_registered(self, topic: str) -> None:
        if topic in self._raw_source_topics or topic in self._global_topics:
            raise TopologyException(f"Topic {topic} has already been registered by another source.")

    def _connect(self, processor_name: str, store_name: str) -> None:
        if store_name in self._global_state_builders:
            raise TopologyException(
                f"Global StateStore {store_name} can be used by a Processor without being specified; "
                "it should not be explicitly passed."
            )
        if store_name not in self._state_factories:
            raise TopologyException(
                f"StateStore {store_name} is not added yet (connecting it to {processor_name})."
            )
        if processor_name not in self._factories:
            raise TopologyException(
                f"Processor {processor_name} is not added yet (connecting store {store_name})."
            )
        factory = self._state_factories[store_name]
        node = self._factories[processor_name]
        if not isinstance(node, _ProcessorFactory):
            raise TopologyException(
                f"cannot connect a state store {store_name} to a source node or a sink node "
                f"({processor_name})."
            )
        if factory.users:
            self._grouper.unite(factory.users[0], processor_name)
        if processor_name not in factory.users:
            factory.users.append(processor_name)
        if store_name not in node.store_names:
            node.store_names.append(store_name)

    def _connect_source_store_and_topic(self, store_name: str, topic: str) -> None:
        if store_name in self._store_to_changelog_topic:
            raise TopologyException(f"Source store {store_name} is already added.")
        self._store_to_changelog_topic[store_name] = topic
