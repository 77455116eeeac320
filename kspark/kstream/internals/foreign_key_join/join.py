"""Building a foreign-key table-table join into the logical graph (Kafka's ``KTableImpl.doJoinOnForeignKey``).

The join spans three sub-topologies linked by two internal topics::

    left table -> SUBSCRIPTION-REGISTRATION processor -> sink --(<prefix>-subscription-registration-topic)
        -> source -> SUBSCRIPTION-PROCESSOR (receive; subscription store) -> SUBSCRIPTION-PROCESSOR (join)
    right table -> SUBSCRIPTION-PROCESSOR (foreign-join; subscription store)
        both -> sink --(<prefix>-subscription-response-topic)
        -> source -> SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR -> FK-JOIN-OUTPUT (the result table)

The registration topic is keyed by the foreign key and co-partitioned with
the right table; the response topic is keyed by the left key and
co-partitioned with the left table. Both are ``repartition`` internal
topics, so a runner creates them and feeds them back in. Names are drawn
from the shared counter in Kafka's order, so ``describe()``, store names and
topic names agree with Kafka Streams.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from kspark.kstream.config_objects import Consumed, Materialized, Produced
from kspark.kstream.internals.foreign_key_join.processors import (
    ForeignTableJoinProcessorSupplier,
    ResponseJoinProcessorSupplier,
    SubscriptionJoinProcessorSupplier,
    SubscriptionReceiveProcessorSupplier,
    SubscriptionSendProcessorSupplier,
)
from kspark.kstream.internals.foreign_key_join.wrappers import (
    CombinedKeySchema,
    PseudoTopic,
    SubscriptionResponseWrapper,
    SubscriptionResponseWrapperSerde,
    SubscriptionWrapperSerde,
)
from kspark.kstream.internals.graph import (
    ProcessorGraphNode,
    ProcessorParameters,
    StatefulProcessorNode,
    StreamSinkNode,
    StreamSourceNode,
    StreamToTableNode,
)
from kspark.kstream.internals.ktable_processors import KTableSource
from kspark.kstream.internals.materialize import KeyValueStoreMaterializer, materialized_internal
from kspark.serde import Serdes

if TYPE_CHECKING:
    from kspark.kstream.ktable import KTable
    from kspark.kstream.table_joined import TableJoined
    from kspark.state.api import StoreBuilder

__all__ = ["do_join_on_foreign_key"]

SUBSCRIPTION_REGISTRATION = "KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-"
SUBSCRIPTION_RESPONSE = "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-"
SUBSCRIPTION_PROCESSOR = "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-"
SUBSCRIPTION_RESPONSE_RESOLVER_PROCESSOR = "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-"
FK_JOIN_STATE_STORE_NAME = "KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-"
FK_JOIN_OUTPUT_NAME = "KTABLE-FK-JOIN-OUTPUT-"
SINK_NAME = "KTABLE-SINK-"
SOURCE_NAME = "KTABLE-SOURCE-"
TOPIC_SUFFIX = "-topic"


class _InternalTopicSinkNode(StreamSinkNode):
    """A sink into one of the join's internal topics, which it declares (``repartition`` kind)."""

    def write_to_topology(self, builder: Any) -> None:
        assert isinstance(self.topic, str)
        builder.add_internal_topic(self.topic, "repartition")
        super().write_to_topology(builder)


class _SubscriptionStoreFactory:
    """Kafka's ``SubscriptionStoreFactory``: a timestamped store of ``CombinedKey`` bytes ->
    ``SubscriptionWrapper``, change-logged, never cached. One builder, shared by the two
    processors that use the store."""

    def __init__(self, name: str, serde: SubscriptionWrapperSerde) -> None:
        self._name = name
        self._serde = serde
        self._builder: StoreBuilder[Any, Any] | None = None

    @property
    def name(self) -> str:
        return self._name

    def builder(self) -> StoreBuilder[Any, Any]:
        from kspark.state import Stores

        if self._builder is None:
            supplier = Stores.persistent_timestamped_key_value_store(self._name)
            b = Stores.timestamped_key_value_store_builder(supplier, Serdes.ByteArray(), self._serde)
            self._builder = b.with_logging_enabled({}).with_caching_disabled()
        return self._builder


def _single_partition(partitioner: Callable[..., Any]) -> Callable[[str, Any, Any, int], Any]:
    """A ``TableJoined`` partitioner as the sink calls it: with ``value=None``, one partition only."""

    def partition(topic: str, key: Any, value: Any, num_partitions: int) -> Any:
        chosen = partitioner(topic, key, None, num_partitions)
        if chosen is None or isinstance(chosen, int):
            return chosen
        chosen = list(chosen) if isinstance(chosen, Iterable) else chosen
        if not isinstance(chosen, list) or len(chosen) != 1:
            raise ValueError(
                "The partitions returned by StreamPartitioner#partitions method when used for FK join "
                f"should be a singleton set, got {chosen!r}"
            )
        return chosen

    return partition


def _to_primary_partition(
    topic: str, key: Any, value: SubscriptionResponseWrapper, num_partitions: int
) -> int | None:
    """The default response partitioner: back to the partition the left record came from."""
    return value.primary_partition


def do_join_on_foreign_key(
    this: KTable,
    other: KTable,
    foreign_key_extractor: Callable[[Any, Any], Any],
    joiner: Callable[[Any, Any, Any], Any],
    table_joined: TableJoined,
    materialized: Materialized | None,
    left_join: bool,
) -> KTable:
    """Add the join's nodes under ``this`` (left) and ``other`` (right); the result table."""
    from kspark.kstream.ktable import KTable

    builder = this._builder
    # the right table's old values let a right update be compared; the left table's are needed to
    # unsubscribe the old foreign key when it changes
    other._enable_send_old_values(True)
    this._enable_send_old_values(True)
    name = table_joined.name

    def named(suffix: str, prefix: str) -> str:
        return builder.suffix_or_else_generate(name, suffix, prefix)

    subscription_topic = named("-subscription-registration", SUBSCRIPTION_REGISTRATION) + TOPIC_SUFFIX
    pk_topic = PseudoTopic(subscription_topic + "-pk")
    fk_topic = PseudoTopic(subscription_topic + "-fk")
    value_hash_topic = PseudoTopic(subscription_topic + "-vh")
    foreign_key_serde = other._key_serde
    subscription_serde = SubscriptionWrapperSerde(pk_topic, this._key_serde)
    response_serde = SubscriptionResponseWrapperSerde(other._value_serde)
    key_schema = CombinedKeySchema(fk_topic, foreign_key_serde, pk_topic, this._key_serde)

    send_name = named("-subscription-registration-processor", SUBSCRIPTION_REGISTRATION)
    send = ProcessorGraphNode(
        send_name,
        ProcessorParameters(
            SubscriptionSendProcessorSupplier(
                foreign_key_extractor,
                fk_topic,
                value_hash_topic,
                foreign_key_serde,
                this._value_serde,
                left_join,
            ),
            send_name,
        ),
    )
    builder.add_graph_node(this._graph_node, send)

    other_partitioner = table_joined.other_partitioner
    subscription_sink = _InternalTopicSinkNode(
        named("-subscription-registration-sink", SINK_NAME),
        subscription_topic,
        Produced(
            foreign_key_serde,
            subscription_serde,
            None if other_partitioner is None else _single_partition(other_partitioner),
        ),
    )
    builder.add_graph_node(send, subscription_sink)
    subscription_source = StreamSourceNode(
        named("-subscription-registration-source", SOURCE_NAME),
        [subscription_topic],
        Consumed(foreign_key_serde, subscription_serde),
    )
    builder.add_graph_node(subscription_sink, subscription_source)
    # the subscriptions are keyed by foreign key: co-partitioned with the right table
    builder.copartition(sorted(other._sub_topology_source_nodes | {subscription_source.node_name}))

    store = _SubscriptionStoreFactory(
        named("-subscription-store", FK_JOIN_STATE_STORE_NAME), subscription_serde
    )
    receive_name = named("-subscription-receive", SUBSCRIPTION_PROCESSOR)
    receive = StatefulProcessorNode(
        receive_name,
        ProcessorParameters(
            SubscriptionReceiveProcessorSupplier(store.name, key_schema, subscription_serde), receive_name
        ),
        store_factories=[store],
    )
    builder.add_graph_node(subscription_source, receive)

    foreign_getter = other._value_getter_supplier()
    join_foreign_name = named("-subscription-join-foreign", SUBSCRIPTION_PROCESSOR)
    join_foreign = StatefulProcessorNode(
        join_foreign_name,
        ProcessorParameters(SubscriptionJoinProcessorSupplier(foreign_getter), join_foreign_name),
        store_names=foreign_getter.store_names,
    )
    builder.add_graph_node(receive, join_foreign)

    foreign_join_name = named("-foreign-join-subscription", SUBSCRIPTION_PROCESSOR)
    foreign_join = StatefulProcessorNode(
        foreign_join_name,
        ProcessorParameters(
            ForeignTableJoinProcessorSupplier(store.name, key_schema, subscription_serde), foreign_join_name
        ),
        store_factories=[store],
    )
    builder.add_graph_node(other._graph_node, foreign_join)

    response_topic = named("-subscription-response", SUBSCRIPTION_RESPONSE) + TOPIC_SUFFIX
    partitioner = table_joined.partitioner
    response_sink = _InternalTopicSinkNode(
        named("-subscription-response-sink", SINK_NAME),
        response_topic,
        Produced(
            this._key_serde,
            response_serde,
            _to_primary_partition if partitioner is None else _single_partition(partitioner),
        ),
    )
    builder.add_graph_node(join_foreign, response_sink)
    builder.add_graph_node(foreign_join, response_sink)
    response_source = StreamSourceNode(
        named("-subscription-response-source", SOURCE_NAME),
        [response_topic],
        Consumed(this._key_serde, response_serde),
    )
    builder.add_graph_node(response_sink, response_source)
    # the responses are keyed by the left key: co-partitioned with the left table
    result_sources = this._sub_topology_source_nodes | {response_source.node_name}
    builder.copartition(sorted(result_sources))

    primary_getter = this._value_getter_supplier()
    resolver_name = named("-subscription-response-resolver", SUBSCRIPTION_RESPONSE_RESOLVER_PROCESSOR)
    resolver = StatefulProcessorNode(
        resolver_name,
        ProcessorParameters(
            ResponseJoinProcessorSupplier(
                primary_getter, this._value_serde, value_hash_topic, joiner, left_join
            ),
            resolver_name,
        ),
        store_names=primary_getter.store_names,
    )
    builder.add_graph_node(response_source, resolver)

    result_name = named("-result", FK_JOIN_OUTPUT_NAME)
    m = materialized_internal(materialized, builder, FK_JOIN_OUTPUT_NAME)
    if m.key_serde is None:
        m.key_serde = this._key_serde
    result_supplier = KTableSource(m.store_name, m.queryable_store_name)
    result = StreamToTableNode(
        result_name, ProcessorParameters(result_supplier, result_name), KeyValueStoreMaterializer(m)
    )
    builder.add_graph_node(resolver, result)
    return KTable(
        result_name,
        this._key_serde,
        m.value_serde,
        result_sources,
        m.store_name,
        result_supplier,
        result,
        builder,
    )
