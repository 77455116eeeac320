"""``KTable``: a changelog stream read as a table (latest value per key).

Updates travel as ``Change(new, old)``. Old values are only computed when a
downstream operator asks for them (``_enable_send_old_values``), and a table
that is read by a join or a non-materialized filter gets a value getter
(``_value_getter_supplier``), materializing the source if needed — both
exactly as Kafka Streams' ``KTableImpl``.

Attributes other DSL modules use (contract 5): ``_builder``, ``_name``,
``_key_serde``, ``_value_serde``, ``_sub_topology_source_nodes``,
``_queryable_store_name``, ``_processor_supplier`` (a
``KTableProcessorSupplier``), ``_graph_node``; methods
``_value_getter_supplier()`` and ``_enable_send_old_values(force)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, overload

from kspark.kstream.config_objects import Grouped, Materialized, Named
from kspark.kstream.internals.functions import require_callable, with_key
from kspark.kstream.internals.graph import (
    GraphNode,
    KTableKTableJoinNode,
    ProcessorGraphNode,
    ProcessorParameters,
    TableProcessorNode,
)
from kspark.kstream.internals.join_arguments import JoinArguments, split_join_arguments
from kspark.kstream.internals.kstream_processors import KStreamMapValues, new_value_of
from kspark.kstream.internals.ktable_join import (
    KTableKTableAbstractJoin,
    KTableKTableInnerJoin,
    KTableKTableJoinMerger,
    KTableKTableLeftJoin,
    KTableKTableOuterJoin,
    KTableKTableRightJoin,
)
from kspark.kstream.internals.ktable_processors import KTableFilter, KTableMapValues, KTableRepartitionMap
from kspark.kstream.internals.ktable_transform_values import KTableTransformValues
from kspark.kstream.internals.materialize import (
    KeyValueStoreMaterializer,
    MaterializedInternal,
    materialized_internal,
    split_named_materialized,
)
from kspark.kstream.internals.value_getters import KTableProcessorSupplier, KTableValueGetterSupplier
from kspark.kstream.table_joined import TableJoined

if TYPE_CHECKING:
    from kspark.kstream.internals.internal_builder import InternalStreamsBuilder
    from kspark.kstream.kgrouped_table import KGroupedTable
    from kspark.kstream.kstream import KStream

__all__ = ["KTable"]

FILTER_NAME = "KTABLE-FILTER-"
MAPVALUES_NAME = "KTABLE-MAPVALUES-"
TRANSFORMVALUES_NAME = "KTABLE-TRANSFORMVALUES-"
TOSTREAM_NAME = "KTABLE-TOSTREAM-"
SELECT_NAME = "KTABLE-SELECT-"
MERGE_NAME = "KTABLE-MERGE-"
JOINTHIS_NAME = "KTABLE-JOINTHIS-"
JOINOTHER_NAME = "KTABLE-JOINOTHER-"


class KTable:
    """A table: the latest value per key of a changelog (Kafka Streams' ``KTable``)."""

    def __init__(
        self,
        name: str,
        key_serde: Any,
        value_serde: Any,
        sub_topology_source_nodes: set[str],
        queryable_store_name: str | None,
        processor_supplier: KTableProcessorSupplier,
        graph_node: GraphNode,
        builder: InternalStreamsBuilder,
    ) -> None:
        self._name = name
        self._key_serde = key_serde
        self._value_serde = value_serde
        self._sub_topology_source_nodes = set(sub_topology_source_nodes)
        self._queryable_store_name = queryable_store_name
        self._processor_supplier = processor_supplier
        self._graph_node = graph_node
        self._builder = builder
        self._send_old_values = False

    def __repr__(self) -> str:
        return f"KTable({self._name})"

    def queryable_store_name(self) -> str | None:
        """The store name interactive queries use, or None if the table is not queryable."""
        return self._queryable_store_name

    # -- contract-5 helpers --------------------------------------------------

    def _value_getter_supplier(self) -> KTableValueGetterSupplier:
        return self._processor_supplier.view()

    def _enable_send_old_values(self, force_materialization: bool) -> bool:
        if not self._send_old_values:
            if not self._processor_supplier.enable_send_old_values(force_materialization):
                return False
            self._send_old_values = True
        return True

    # -- stateless -----------------------------------------------------------

    def _materialized_for(
        self, materialized: Materialized | None, prefix: str
    ) -> MaterializedInternal | None:
        if materialized is None:
            return None
        return materialized_internal(materialized, self._builder, prefix)

    def _table_op(
        self,
        prefix: str,
        name: str | None,
        m: MaterializedInternal | None,
        make_supplier: Callable[[str | None], KTableProcessorSupplier],
        value_serde: Any,
        store_names: Sequence[str] = (),
        user_code: bool = False,
    ) -> KTable:
        key_serde, queryable, factory = self._key_serde, None, None
        if m is not None:
            # the result inherits the parent's serdes, but the store keeps only the Materialized's own
            # (None: the config's defaults), as Kafka's KTableImpl.doFilter / doMapValues
            key_serde = m.key_serde if m.key_serde is not None else self._key_serde
            value_serde = m.value_serde if m.value_serde is not None else value_serde
            queryable = m.queryable_store_name
            factory = KeyValueStoreMaterializer(m) if queryable is not None else None
        name = self._builder.or_else_generate(name, prefix)
        supplier = make_supplier(queryable)
        node = TableProcessorNode(
            name,
            ProcessorParameters(supplier, name, user_code=user_code),
            store_factories=[factory] if factory else [],
            store_names=store_names,
        )
        self._builder.add_graph_node(self._graph_node, node)
        return KTable(
            name,
            key_serde,
            value_serde,
            self._sub_topology_source_nodes,
            queryable,
            supplier,
            node,
            self._builder,
        )

    def filter(
        self,
        predicate: Callable[[Any, Any], bool],
        named: Named | str | Materialized | None = None,
        materialized: Materialized | None = None,
    ) -> KTable:
        require_callable(predicate, "predicate", "KTable.filter")
        name, materialized = split_named_materialized(named, materialized)
        m = self._materialized_for(materialized, FILTER_NAME)
        return self._table_op(
            FILTER_NAME, name, m, lambda q: KTableFilter(self, predicate, False, q), self._value_serde
        )

    def filter_not(
        self,
        predicate: Callable[[Any, Any], bool],
        named: Named | str | Materialized | None = None,
        materialized: Materialized | None = None,
    ) -> KTable:
        require_callable(predicate, "predicate", "KTable.filter_not")
        name, materialized = split_named_materialized(named, materialized)
        m = self._materialized_for(materialized, FILTER_NAME)
        return self._table_op(
            FILTER_NAME, name, m, lambda q: KTableFilter(self, predicate, True, q), self._value_serde
        )

    def map_values(
        self,
        mapper: Callable[..., Any],
        named: Named | str | Materialized | None = None,
        materialized: Materialized | None = None,
    ) -> KTable:
        require_callable(mapper, "mapper", "KTable.map_values")
        name, materialized = split_named_materialized(named, materialized)
        m = self._materialized_for(materialized, MAPVALUES_NAME)
        fn = with_key(mapper, 1)
        return self._table_op(MAPVALUES_NAME, name, m, lambda q: KTableMapValues(self, fn, q), None)

    def transform_values(
        self,
        supplier: Callable[[], Any],
        *store_names: str,
        materialized: Materialized | None = None,
        named: Named | str | None = None,
    ) -> KTable:
        """A table of ``transformer.transform(key, value)`` per update (Kafka's ``transformValues``).

        ``supplier`` returns a new :class:`~kspark.kstream.value_transformer.ValueTransformerWithKey`
        per task; ``store_names`` are the stores (added with ``builder.add_state_store``) it may
        use. The result is materialized only under a ``Materialized`` with a store name.
        """
        require_callable(supplier, "transformer supplier", "KTable.transform_values")
        for store in store_names:
            if not isinstance(store, str):
                raise TypeError(f"KTable.transform_values: state store names must be str, got {store!r}")
        if materialized is not None and not isinstance(materialized, Materialized):
            raise TypeError(
                f"KTable.transform_values: materialized must be a Materialized, got {materialized!r}"
            )
        name, _ = split_named_materialized(named, None)
        # a Materialized without a name neither materializes nor uses up a store name (as Kafka)
        m = MaterializedInternal(materialized) if materialized is not None else None
        return self._table_op(
            TRANSFORMVALUES_NAME,
            name,
            m,
            lambda q: KTableTransformValues(self, supplier, q),
            None,
            store_names,
            user_code=True,
        )

    def to_stream(
        self, mapper: Callable[[Any, Any], Any] | Named | str | None = None, named: Named | str | None = None
    ) -> KStream:
        """The table's changelog as a stream of new values (tombstones included).

        ``mapper``, if given, selects a new key.
        """
        from kspark.kstream.kstream import KStream

        if isinstance(mapper, Named | str):
            mapper, named = None, mapper
        name = self._builder.or_else_generate(
            named.name if isinstance(named, Named) else Named(named).name if named else None, TOSTREAM_NAME
        )
        supplier = KStreamMapValues(new_value_of)
        node = ProcessorGraphNode(name, ProcessorParameters(supplier, name))
        self._builder.add_graph_node(self._graph_node, node)
        stream = KStream(
            name,
            self._key_serde,
            self._value_serde,
            self._sub_topology_source_nodes,
            False,
            node,
            self._builder,
        )
        if mapper is not None:
            require_callable(mapper, "mapper", "KTable.to_stream")
            return stream.select_key(mapper)
        return stream

    def suppress(self, suppressed: Any, named: Named | str | None = None) -> KTable:
        from kspark.kstream.internals.suppress import build_suppress

        if suppressed is None:
            raise ValueError("suppressed can't be None (KTable.suppress)")
        n = named.name if isinstance(named, Named) else named
        return build_suppress(self, suppressed, n)  # type: ignore[no-any-return]

    # -- grouping ------------------------------------------------------------

    def group_by(self, selector: Callable[[Any, Any], Any], grouped: Grouped | None = None) -> KGroupedTable:
        from kspark.kstream.kgrouped_table import KGroupedTable

        require_callable(selector, "selector", "KTable.group_by")
        g = grouped or Grouped()
        select_name = self._builder.or_else_generate(g.name, SELECT_NAME)
        supplier = KTableRepartitionMap(self, selector)
        node = TableProcessorNode(select_name, ProcessorParameters(supplier, select_name))
        self._builder.add_graph_node(self._graph_node, node)
        self._enable_send_old_values(True)
        return KGroupedTable(self._builder, select_name, self._sub_topology_source_nodes, g, node)

    # -- joins ---------------------------------------------------------------

    @overload
    def join(
        self,
        other: KTable,
        joiner: Callable[..., Any],
        named: Named | str | Materialized | None = None,
        materialized: Materialized | None = None,
    ) -> KTable: ...

    @overload
    def join(
        self,
        other: KTable,
        foreign_key_extractor: Callable[..., Any],
        joiner: Callable[..., Any],
        table_joined: TableJoined | Materialized | None = None,
        materialized: Materialized | None = None,
    ) -> KTable: ...

    def join(self, other: KTable, *args: Any, **kwargs: Any) -> KTable:
        """Inner table-table join: on the key, or on a foreign key (KIP-213).

        ``join(other, joiner[, named][, materialized])`` joins rows with equal
        keys. ``join(other, foreign_key_extractor, joiner[, table_joined][,
        materialized])`` joins each row of this table with the row of ``other``
        whose key ``foreign_key_extractor(value)`` (or ``(key, value)``: two
        positional parameters) returns, ``joiner(value, other_value)`` (or
        ``(key, value, other_value)``) making the result; see
        :mod:`kspark.kstream.internals.foreign_key_join`.
        """
        return self._dispatch_join("inner", other, args, kwargs)

    @overload
    def left_join(
        self,
        other: KTable,
        joiner: Callable[..., Any],
        named: Named | str | Materialized | None = None,
        materialized: Materialized | None = None,
    ) -> KTable: ...

    @overload
    def left_join(
        self,
        other: KTable,
        foreign_key_extractor: Callable[..., Any],
        joiner: Callable[..., Any],
        table_joined: TableJoined | Materialized | None = None,
        materialized: Materialized | None = None,
    ) -> KTable: ...

    def left_join(self, other: KTable, *args: Any, **kwargs: Any) -> KTable:
        """Left table-table join, on the key or on a foreign key (as :meth:`join`); a row of this
        table with no match (or a null foreign key) is joined with ``None``."""
        return self._dispatch_join("left", other, args, kwargs)

    def outer_join(
        self,
        other: KTable,
        joiner: Callable[[Any, Any], Any],
        named: Named | str | Materialized | None = None,
        materialized: Materialized | None = None,
    ) -> KTable:
        if callable(named):
            raise TypeError(
                "KTable.outer_join takes no foreign-key extractor: Kafka Streams has foreign-key "
                "join and left_join only"
            )
        return self._do_join("outer", other, joiner, named, materialized)

    def _dispatch_join(
        self, kind: str, other: KTable, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> KTable:
        """Java's overloads: a second function before the joiner makes it a foreign-key join."""
        op = {"inner": "join", "left": "left_join"}[kind]
        call = split_join_arguments(op, args, kwargs)
        if call.foreign_key_extractor is None:
            return self._do_join(kind, other, call.joiner, call.named, call.materialized)
        return self._do_foreign_key_join(op, other, call, kind == "left")

    def _do_foreign_key_join(self, op: str, other: KTable, call: JoinArguments, left_join: bool) -> KTable:
        from kspark.kstream.internals.foreign_key_join import do_join_on_foreign_key

        if not isinstance(other, KTable):
            raise TypeError(f"KTable.{op} (foreign-key join) needs a KTable, got {other!r}")
        require_callable(call.foreign_key_extractor, "foreign_key_extractor", f"KTable.{op}")
        require_callable(call.joiner, "joiner", f"KTable.{op}")
        assert call.foreign_key_extractor is not None
        return do_join_on_foreign_key(
            self,
            other,
            with_key(call.foreign_key_extractor, 1),
            with_key(call.joiner, 2),
            call.table_joined,
            call.materialized,
            left_join,
        )

    def _do_join(
        self,
        kind: str,
        other: KTable,
        joiner: Callable[[Any, Any], Any],
        named: Named | str | Materialized | None,
        materialized: Materialized | None,
    ) -> KTable:
        op = {"inner": "join", "left": "left_join", "outer": "outer_join"}[kind]
        if not isinstance(other, KTable):
            raise TypeError(f"KTable.{op} needs a KTable, got {other!r}")
        require_callable(joiner, "joiner", f"KTable.{op}")
        name, materialized = split_named_materialized(named, materialized)
        m = self._materialized_for(materialized, MERGE_NAME)
        merge_name = self._builder.or_else_generate(name, MERGE_NAME)
        all_sources = self._sub_topology_source_nodes | other._sub_topology_source_nodes
        self._builder.copartition(sorted(all_sources))
        if kind in ("left", "outer"):
            self._enable_send_old_values(True)
        if kind == "outer":
            other._enable_send_old_values(True)

        def reverse(a: Any, b: Any) -> Any:
            return joiner(b, a)

        join_this: KTableKTableAbstractJoin
        join_other: KTableKTableAbstractJoin
        if kind == "inner":
            join_this, join_other = (
                KTableKTableInnerJoin(self, other, joiner),
                KTableKTableInnerJoin(other, self, reverse),
            )
        elif kind == "left":
            join_this, join_other = (
                KTableKTableLeftJoin(self, other, joiner),
                KTableKTableRightJoin(other, self, reverse),
            )
        else:
            join_this, join_other = (
                KTableKTableOuterJoin(self, other, joiner),
                KTableKTableOuterJoin(other, self, reverse),
            )
        this_name = self._builder.suffix_or_else_generate(name, "-join-this", JOINTHIS_NAME)
        other_name = self._builder.suffix_or_else_generate(name, "-join-other", JOINOTHER_NAME)
        key_serde, value_serde, queryable, factory = self._key_serde, None, None, None
        if m is not None:
            if m.key_serde is None:
                m.key_serde = self._key_serde
            key_serde, value_serde = m.key_serde, m.value_serde
            queryable = m.store_name
            factory = KeyValueStoreMaterializer(m)
        merger = KTableKTableJoinMerger(join_this, join_other, queryable)
        this_getter, other_getter = self._value_getter_supplier(), other._value_getter_supplier()
        node = KTableKTableJoinNode(
            merge_name,
            ProcessorParameters(join_this, this_name),
            ProcessorParameters(join_other, other_name),
            self._name,
            other._name,
            this_getter.store_names,
            other_getter.store_names,
            ProcessorParameters(merger, merge_name),
            factory,
        )
        self._builder.add_graph_node(self._graph_node, node)
        self._builder.add_graph_node(other._graph_node, node)
        return KTable(merge_name, key_serde, value_serde, all_sources, queryable, merger, node, self._builder)
