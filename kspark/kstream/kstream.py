"""``KStream``: an unbounded stream of records, and ``BranchedKStream`` (``split()``).

Every operation adds a node to the logical graph and returns a new
``KStream``/``KTable``/``KGroupedStream``; nothing runs until the topology
is built and executed. Key-changing operations (``map``, ``flat_map``,
``select_key``, ``process``) mark the result as needing a repartition;
grouping or joining such a stream inserts a repartition topic, as Kafka
Streams does.

Attributes other DSL modules use (documented contract 5):
``_builder`` (InternalStreamsBuilder), ``_name`` (node name children attach
to), ``_key_serde`` / ``_value_serde`` (None: unknown / config default),
``_sub_topology_source_nodes`` (source node names feeding this stream),
``_repartition_required``, ``_graph_node``; helpers
``_repartition_for_join(name, key_serde, value_serde)`` and
``_ensure_copartition_with(others)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from kspark.kstream.config_objects import (
    Branched,
    Grouped,
    Joined,
    Materialized,
    Named,
    Printed,
    Produced,
    Repartitioned,
    StreamJoined,
)
from kspark.kstream.internals.functions import require_callable, with_key
from kspark.kstream.internals.graph import (
    GraphNode,
    OptimizableRepartitionNode,
    ProcessorGraphNode,
    ProcessorParameters,
    StatefulProcessorNode,
    StreamSinkNode,
    StreamTableJoinNode,
    StreamToTableNode,
    UnoptimizableRepartitionNode,
)
from kspark.kstream.internals.kstream_processors import (
    FixedKeyProcessorWrapper,
    ForeachProcessor,
    KStreamBranch,
    KStreamFilter,
    KStreamFlatMap,
    KStreamFlatMapValues,
    KStreamMap,
    KStreamMapValues,
    KStreamPeek,
    KStreamPrint,
    PassThrough,
)
from kspark.kstream.internals.materialize import (
    KeyValueStoreMaterializer,
    materialized_internal,
    split_named_materialized,
)
from kspark.kstream.internals.repartition import create_repartitioned_source
from kspark.kstream.internals.stream_table_join import (
    KStreamGlobalKTableJoin,
    KStreamKTableJoin,
    graced_stream_table_join,
)

if TYPE_CHECKING:
    from kspark.kstream.internals.internal_builder import InternalStreamsBuilder
    from kspark.kstream.kgrouped_stream import KGroupedStream
    from kspark.kstream.ktable import KTable

__all__ = ["KStream", "BranchedKStream"]

FILTER_NAME = "KSTREAM-FILTER-"
MAP_NAME = "KSTREAM-MAP-"
MAPVALUES_NAME = "KSTREAM-MAPVALUES-"
FLATMAP_NAME = "KSTREAM-FLATMAP-"
FLATMAPVALUES_NAME = "KSTREAM-FLATMAPVALUES-"
KEY_SELECT_NAME = "KSTREAM-KEY-SELECT-"
PEEK_NAME = "KSTREAM-PEEK-"
FOREACH_NAME = "KSTREAM-FOREACH-"
PRINTING_NAME = "KSTREAM-PRINTER-"
MERGE_NAME = "KSTREAM-MERGE-"
SINK_NAME = "KSTREAM-SINK-"
PROCESSOR_NAME = "KSTREAM-PROCESSOR-"
PROCESSVALUES_NAME = "KSTREAM-PROCESSVALUES-"
REPARTITION_NAME = "KSTREAM-REPARTITION-"
TO_KTABLE_NAME = "KSTREAM-TOTABLE-"
JOIN_NAME = "KSTREAM-JOIN-"
LEFTJOIN_NAME = "KSTREAM-LEFTJOIN-"
BRANCH_NAME = "KSTREAM-BRANCH-"
NULL_KEY_RELAXED_JOIN = "NULL_KEY_RELAXED_JOIN"


def _named(named: Named | str | None) -> str | None:
    if named is None:
        return None
    if isinstance(named, str):
        return Named(named).name
    if not isinstance(named, Named):
        raise TypeError(f"named must be a Named or a str, got {named!r}")
    return named.name


class KStream:
    """A stream of key-value records (Kafka Streams' ``KStream``)."""

    def __init__(
        self,
        name: str,
        key_serde: Any,
        value_serde: Any,
        sub_topology_source_nodes: set[str],
        repartition_required: bool,
        graph_node: GraphNode,
        builder: InternalStreamsBuilder,
    ) -> None:
        self._name = name
        self._key_serde = key_serde
        self._value_serde = value_serde
        self._sub_topology_source_nodes = set(sub_topology_source_nodes)
        self._repartition_required = repartition_required
        self._graph_node = graph_node
        self._builder = builder
        self._repartition_node: GraphNode | None = None

    def __repr__(self) -> str:
        return f"KStream({self._name})"

    # -- helpers -------------------------------------------------------------

    def _name_or(self, named: Named | str | None, prefix: str) -> str:
        return self._builder.or_else_generate(_named(named), prefix)

    def _add_processor(
        self, name: str, supplier: Any, *, key_changing: bool = False, value_changing: bool = False
    ) -> ProcessorGraphNode:
        node = ProcessorGraphNode(name, ProcessorParameters(supplier, name))
        node.key_changing_operation = key_changing
        node.value_changing_operation = value_changing
        self._builder.add_graph_node(self._graph_node, node)
        return node

    def _derive(
        self, node: GraphNode, key_serde: Any, value_serde: Any, repartition_required: bool
    ) -> KStream:
        return KStream(
            node.node_name,
            key_serde,
            value_serde,
            self._sub_topology_source_nodes,
            repartition_required,
            node,
            self._builder,
        )

    # -- stateless -----------------------------------------------------------

    def filter(self, predicate: Callable[[Any, Any], bool], named: Named | str | None = None) -> KStream:
        require_callable(predicate, "predicate", "KStream.filter")
        node = self._add_processor(self._name_or(named, FILTER_NAME), KStreamFilter(predicate, False))
        return self._derive(node, self._key_serde, self._value_serde, self._repartition_required)

    def filter_not(self, predicate: Callable[[Any, Any], bool], named: Named | str | None = None) -> KStream:
        require_callable(predicate, "predicate", "KStream.filter_not")
        node = self._add_processor(self._name_or(named, FILTER_NAME), KStreamFilter(predicate, True))
        return self._derive(node, self._key_serde, self._value_serde, self._repartition_required)

    def select_key(self, mapper: Callable[[Any, Any], Any], named: Named | str | None = None) -> KStream:
        require_callable(mapper, "mapper", "KStream.select_key")
        node = self._internal_select_key(mapper, _named(named))
        self._builder.add_graph_node(self._graph_node, node)
        return self._derive(node, None, self._value_serde, True)

    def _internal_select_key(self, mapper: Callable[[Any, Any], Any], name: str | None) -> ProcessorGraphNode:
        # Kafka 4.1 names it exactly as given (e.g. the Grouped name of group_by)
        node_name = self._builder.or_else_generate(name, KEY_SELECT_NAME)
        supplier = KStreamMap(lambda k, v: (mapper(k, v), v))
        node = ProcessorGraphNode(node_name, ProcessorParameters(supplier, node_name))
        node.key_changing_operation = True
        return node

    def map(self, mapper: Callable[[Any, Any], Any], named: Named | str | None = None) -> KStream:
        require_callable(mapper, "mapper", "KStream.map")
        node = self._add_processor(self._name_or(named, MAP_NAME), KStreamMap(mapper), key_changing=True)
        return self._derive(node, None, None, True)

    def map_values(self, mapper: Callable[..., Any], named: Named | str | None = None) -> KStream:
        require_callable(mapper, "mapper", "KStream.map_values")
        supplier = KStreamMapValues(with_key(mapper, 1))
        node = self._add_processor(self._name_or(named, MAPVALUES_NAME), supplier, value_changing=True)
        return self._derive(node, self._key_serde, None, self._repartition_required)

    def flat_map(
        self, mapper: Callable[[Any, Any], Iterable[Any]], named: Named | str | None = None
    ) -> KStream:
        require_callable(mapper, "mapper", "KStream.flat_map")
        node = self._add_processor(
            self._name_or(named, FLATMAP_NAME), KStreamFlatMap(mapper), key_changing=True
        )
        return self._derive(node, None, None, True)

    def flat_map_values(
        self, mapper: Callable[..., Iterable[Any]], named: Named | str | None = None
    ) -> KStream:
        require_callable(mapper, "mapper", "KStream.flat_map_values")
        supplier = KStreamFlatMapValues(with_key(mapper, 1))
        node = self._add_processor(self._name_or(named, FLATMAPVALUES_NAME), supplier, value_changing=True)
        return self._derive(node, self._key_serde, None, self._repartition_required)

    def peek(self, action: Callable[[Any, Any], None], named: Named | str | None = None) -> KStream:
        require_callable(action, "action", "KStream.peek")
        node = self._add_processor(self._name_or(named, PEEK_NAME), KStreamPeek(action))
        return self._derive(node, self._key_serde, self._value_serde, self._repartition_required)

    def foreach(self, action: Callable[[Any, Any], None], named: Named | str | None = None) -> None:
        require_callable(action, "action", "KStream.foreach")
        self._add_processor(self._name_or(named, FOREACH_NAME), ForeachProcessor(action))

    def print(self, printed: Printed | None = None) -> None:
        printed = printed or Printed.to_sys_out()
        name = self._builder.or_else_generate(printed.name, PRINTING_NAME)
        self._add_processor(name, KStreamPrint(printed.to, printed.label or self._name, printed.mapper))

    def merge(self, other: KStream, named: Named | str | None = None) -> KStream:
        if not isinstance(other, KStream):
            raise TypeError(f"KStream.merge needs a KStream, got {other!r}")
        name = self._name_or(named, MERGE_NAME)
        node = ProcessorGraphNode(name, ProcessorParameters(PassThrough(), name))
        node.merge_node = True
        self._builder.add_graph_node([self._graph_node, other._graph_node], node)
        return KStream(
            name,
            None,
            None,
            self._sub_topology_source_nodes | other._sub_topology_source_nodes,
            self._repartition_required or other._repartition_required,
            node,
            self._builder,
        )

    def split(self, named: Named | str | None = None) -> BranchedKStream:
        return BranchedKStream(self, self._repartition_required, self._name_or(named, BRANCH_NAME))

    # -- repartition / sinks / processors -----------------------------------

    def repartition(self, repartitioned: Repartitioned | None = None) -> KStream:
        r = repartitioned or Repartitioned()
        name = r.name or self._builder.new_processor_name(REPARTITION_NAME)
        key_serde = r.key_serde if r.key_serde is not None else self._key_serde
        value_serde = r.value_serde if r.value_serde is not None else self._value_serde
        node = create_repartitioned_source(
            self._builder,
            key_serde,
            value_serde,
            name,
            UnoptimizableRepartitionNode,
            r.partitioner,
            r.partitions,
        )
        self._builder.add_graph_node(self._graph_node, node)
        return KStream(node.node_name, key_serde, value_serde, {node.node_name}, False, node, self._builder)

    def to(self, topic: str | Callable[..., str], produced: Produced | None = None) -> None:
        if topic is None:
            raise ValueError("topic can't be None (KStream.to)")
        if not isinstance(topic, str) and not callable(topic):
            raise TypeError(f"KStream.to needs a topic name or a TopicNameExtractor callable, got {topic!r}")
        p = produced or Produced()
        name = self._builder.or_else_generate(p.name, SINK_NAME)
        if p.key_serde is None:
            p = p.with_key_serde(self._key_serde)
        if p.value_serde is None:
            p = p.with_value_serde(self._value_serde)
        self._builder.add_graph_node(self._graph_node, StreamSinkNode(name, topic, p))

    def _check_stores(self, store_names: tuple[str, ...], operation: str) -> list[str]:
        for s in store_names:
            if not isinstance(s, str):
                raise TypeError(f"{operation}: state store names must be str, got {s!r}")
        return list(store_names)

    def process(
        self, supplier: Callable[[], Any], *store_names: str, named: Named | str | None = None
    ) -> KStream:
        require_callable(supplier, "processor supplier", "KStream.process")
        stores = self._check_stores(store_names, "KStream.process")
        name = self._name_or(named, PROCESSOR_NAME)
        node = StatefulProcessorNode(
            name,
            ProcessorParameters(supplier, name, user_code=True),
            store_factories=_supplier_stores(supplier),
            store_names=stores,
        )
        self._builder.add_graph_node(self._graph_node, node)
        return self._derive(node, None, None, True)

    def process_values(
        self, supplier: Callable[[], Any], *store_names: str, named: Named | str | None = None
    ) -> KStream:
        require_callable(supplier, "processor supplier", "KStream.process_values")
        stores = self._check_stores(store_names, "KStream.process_values")
        name = self._name_or(named, PROCESSVALUES_NAME)
        node = StatefulProcessorNode(
            name,
            ProcessorParameters(FixedKeyProcessorWrapper(supplier, name), name, user_code=True),
            store_factories=_supplier_stores(supplier),
            store_names=stores,
        )
        node.value_changing_operation = True
        self._builder.add_graph_node(self._graph_node, node)
        return self._derive(node, self._key_serde, None, self._repartition_required)

    # -- grouping ------------------------------------------------------------

    def group_by_key(self, grouped: Grouped | None = None) -> KGroupedStream:
        from kspark.kstream.kgrouped_stream import KGroupedStream

        g = grouped or Grouped()
        g = Grouped(
            g.name,
            g.key_serde if g.key_serde is not None else self._key_serde,
            g.value_serde if g.value_serde is not None else self._value_serde,
        )
        return KGroupedStream(
            self._name,
            self._sub_topology_source_nodes,
            g,
            self._repartition_required,
            self._graph_node,
            self._builder,
        )

    def group_by(
        self, key_selector: Callable[[Any, Any], Any], grouped: Grouped | None = None
    ) -> KGroupedStream:
        from kspark.kstream.kgrouped_stream import KGroupedStream

        require_callable(key_selector, "key_selector", "KStream.group_by")
        g = grouped or Grouped()
        node = self._internal_select_key(key_selector, g.name)
        self._builder.add_graph_node(self._graph_node, node)
        g = Grouped(g.name, g.key_serde, g.value_serde if g.value_serde is not None else self._value_serde)
        return KGroupedStream(node.node_name, self._sub_topology_source_nodes, g, True, node, self._builder)

    # -- tables --------------------------------------------------------------

    def to_table(
        self, named: Named | str | Materialized | None = None, materialized: Materialized | None = None
    ) -> KTable:
        from kspark.kstream.internals.ktable_processors import KTableSource
        from kspark.kstream.ktable import KTable

        name_or_none, materialized = split_named_materialized(named, materialized)
        name = self._builder.or_else_generate(name_or_none, TO_KTABLE_NAME)
        m = materialized_internal(materialized, self._builder, TO_KTABLE_NAME)
        key_serde = m.key_serde if m.key_serde is not None else self._key_serde
        value_serde = m.value_serde if m.value_serde is not None else self._value_serde
        m.key_serde, m.value_serde = key_serde, value_serde
        parent = self._graph_node
        sources = self._sub_topology_source_nodes
        if self._repartition_required:
            rnode = create_repartitioned_source(
                self._builder, key_serde, value_serde, name, OptimizableRepartitionNode
            )
            self._builder.add_graph_node(parent, rnode)
            parent = rnode
            sources = {rnode.node_name}
        supplier = KTableSource(m.store_name, m.queryable_store_name)
        node = StreamToTableNode(name, ProcessorParameters(supplier, name), KeyValueStoreMaterializer(m))
        self._builder.add_graph_node(parent, node)
        return KTable(
            name, key_serde, value_serde, sources, m.queryable_store_name, supplier, node, self._builder
        )

    # -- joins ---------------------------------------------------------------

    def join(self, other: Any, *args: Any, **kwargs: Any) -> KStream:
        """Join with a KStream (``joiner, join_windows, stream_joined``), a KTable (``joiner, joined``)
        or a GlobalKTable (``key_selector, joiner``)."""
        return self._join_dispatch("inner", other, args, kwargs)

    def left_join(self, other: Any, *args: Any, **kwargs: Any) -> KStream:
        """Left join; the joiner receives ``None`` for a missing right side."""
        return self._join_dispatch("left", other, args, kwargs)

    def outer_join(self, other: Any, *args: Any, **kwargs: Any) -> KStream:
        """Outer join of two KStreams over ``JoinWindows``."""
        if not isinstance(other, KStream):
            raise TypeError(f"KStream.outer_join needs a KStream, got {other!r}")
        return self._join_dispatch("outer", other, args, kwargs)

    def _join_dispatch(
        self, join_type: str, other: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> KStream:
        from kspark.kstream.global_ktable import GlobalKTable
        from kspark.kstream.ktable import KTable

        op = {"inner": "join", "left": "left_join", "outer": "outer_join"}[join_type]
        if isinstance(other, KStream):
            return self._join_stream(join_type, other, *args, **kwargs)
        if isinstance(other, KTable):
            return self._join_table(other, *args, left=join_type == "left", **kwargs)
        if isinstance(other, GlobalKTable):
            return self._join_global(other, *args, left=join_type == "left", **kwargs)
        raise TypeError(f"KStream.{op} needs a KStream, KTable or GlobalKTable, got {other!r}")

    def _join_stream(
        self,
        join_type: str,
        other: KStream,
        joiner: Callable[..., Any],
        windows: Any = None,
        stream_joined: StreamJoined | None = None,
        named: Named | str | None = None,
    ) -> KStream:
        from kspark.kstream.internals.stream_stream_join import build_stream_stream_join

        require_callable(joiner, "joiner", f"KStream {join_type} join")
        if windows is None:
            raise ValueError("windows can't be None (a KStream-KStream join needs JoinWindows)")
        return build_stream_stream_join(self, other, joiner, windows, stream_joined, join_type, _named(named))  # type: ignore[no-any-return]

    def _repartition_for_join(self, repartition_name: str, key_serde: Any, value_serde: Any) -> KStream:
        key_serde = key_serde if key_serde is not None else self._key_serde
        value_serde = value_serde if value_serde is not None else self._value_serde
        # the names are drawn each time to keep numbering identical to Kafka
        node = create_repartitioned_source(
            self._builder, key_serde, value_serde, repartition_name, OptimizableRepartitionNode
        )
        if self._repartition_node is None or self._name != repartition_name:
            self._repartition_node = node
            self._builder.add_graph_node(self._graph_node, node)
        return KStream(
            node.node_name,
            key_serde,
            value_serde,
            {node.node_name},
            False,
            self._repartition_node,
            self._builder,
        )

    def _ensure_copartition_with(self, others: Iterable[Any]) -> set[str]:
        sources = set(self._sub_topology_source_nodes)
        for other in others:
            sources |= other._sub_topology_source_nodes
        self._builder.copartition(sorted(sources))
        return sources

    def _join_table(
        self,
        table: KTable,
        joiner: Callable[..., Any],
        joined: Joined | None = None,
        *,
        left: bool,
        named: Named | str | None = None,
    ) -> KStream:
        op = "KStream.left_join" if left else "KStream.join"
        require_callable(joiner, "joiner", op)
        j = joined or Joined()
        if named is not None:
            j = j.with_name(_named(named) or "")
        stream: KStream = self
        if self._repartition_required:
            stream = self._repartition_for_join(j.name or self._name, j.key_serde, j.value_serde)
        return stream._do_stream_table_join(table, with_key(joiner, 2), j, left)

    def _do_stream_table_join(
        self, table: KTable, joiner: Callable[..., Any], joined: Joined, left: bool
    ) -> KStream:
        all_sources = self._ensure_copartition_with([table])
        name = self._builder.or_else_generate(joined.name, LEFTJOIN_NAME if left else JOIN_NAME)
        getter = table._value_getter_supplier()
        node: StreamTableJoinNode
        if joined.grace_period is None:
            supplier = KStreamKTableJoin(getter, joiner, left)
            node = StreamTableJoinNode(
                name, ProcessorParameters(supplier, name), getter.store_names(), self._name
            )
        else:
            node = graced_stream_table_join(
                self._builder, name, table, getter, joiner, joined, left, self._name
            )
        self._builder.add_graph_node(self._graph_node, node)
        if left:
            node.labels.append(NULL_KEY_RELAXED_JOIN)
        key_serde = joined.key_serde if joined.key_serde is not None else self._key_serde
        return KStream(name, key_serde, None, all_sources, False, node, self._builder)

    def _join_global(
        self,
        global_table: Any,
        key_selector: Callable[[Any, Any], Any],
        joiner: Callable[..., Any],
        named: Named | str | None = None,
        *,
        left: bool,
    ) -> KStream:
        op = "KStream.left_join" if left else "KStream.join"
        require_callable(key_selector, "key_selector", op)
        require_callable(joiner, "joiner", op)
        # Kafka names inner and left global-table joins alike (KSTREAM-LEFTJOIN-...)
        name = self._name_or(named, LEFTJOIN_NAME)
        supplier = KStreamGlobalKTableJoin(
            global_table._value_getter_supplier, key_selector, with_key(joiner, 2), left
        )
        node = StreamTableJoinNode(name, ProcessorParameters(supplier, name), [], None)
        if left:
            node.labels.append(NULL_KEY_RELAXED_JOIN)
        self._builder.add_graph_node(self._graph_node, node)
        return self._derive(node, self._key_serde, None, self._repartition_required)


def _supplier_stores(supplier: Any) -> list[Any]:
    """Stores a supplier declares itself (Kafka's ``ConnectedStoreProvider.stores()``)."""
    stores = getattr(supplier, "stores", None)
    if stores is None or not callable(stores):
        return []
    return [_BuilderFactory(b) for b in (stores() or [])]


class _BuilderFactory:
    """A ready ``StoreBuilder`` as a graph ``StoreFactory``."""

    def __init__(self, store_builder: Any) -> None:
        self._builder = store_builder

    @property
    def name(self) -> str:
        return str(self._builder.name)

    def builder(self) -> Any:
        return self._builder


class BranchedKStream:
    """The result of ``KStream.split()``.

    Add branches, then ``default_branch()`` or ``no_default_branch()``.
    """

    def __init__(self, source: KStream, repartition_required: bool, splitter_name: str) -> None:
        self._source = source
        self._repartition_required = repartition_required
        self._splitter_name = splitter_name
        self._predicates: list[Callable[[Any, Any], bool]] = []
        self._child_names: list[str] = []
        self._outputs: dict[str, KStream] = {}
        self._done = False
        self._splitter_node = ProcessorGraphNode(
            splitter_name,
            ProcessorParameters(KStreamBranch(self._predicates, self._child_names), splitter_name),
        )
        source._builder.add_graph_node(source._graph_node, self._splitter_node)

    def branch(
        self, predicate: Callable[[Any, Any], bool], branched: Branched | None = None
    ) -> BranchedKStream:
        require_callable(predicate, "predicate", "BranchedKStream.branch")
        if self._done:
            raise ValueError("the split is closed: default_branch()/no_default_branch() was already called")
        self._predicates.append(predicate)
        self._create_branch(branched or Branched(), len(self._predicates))
        return self

    def default_branch(self, branched: Branched | None = None) -> dict[str, KStream]:
        if self._done:
            raise ValueError("the split is closed: default_branch()/no_default_branch() was already called")
        self._create_branch(branched or Branched(), 0)
        self._done = True
        return dict(self._outputs)

    def no_default_branch(self) -> dict[str, KStream]:
        self._done = True
        return dict(self._outputs)

    def _create_branch(self, branched: Branched, index: int) -> None:
        src = self._source
        child_name = self._splitter_name + (branched.name if branched.name is not None else str(index))
        Named(child_name)  # validates the composed name
        self._child_names.append(child_name)
        src._builder.new_processor_name(child_name)  # Kafka burns a number here
        node = ProcessorGraphNode(child_name, ProcessorParameters(PassThrough(), child_name))
        src._builder.add_graph_node(self._splitter_node, node)
        branch = KStream(
            child_name,
            src._key_serde,
            src._value_serde,
            src._sub_topology_source_nodes,
            self._repartition_required,
            node,
            src._builder,
        )
        if branched.chain_function is not None:
            result = branched.chain_function(branch)
            if result is not None:
                self._outputs[child_name] = result
        elif branched.chain_consumer is not None:
            branched.chain_consumer(branch)
        else:
            self._outputs[child_name] = branch
