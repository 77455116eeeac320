"""Discovery of a running application: which instance holds a store, and which a key.

``KafkaStreams.metadata_for_all_streams_clients()``, ``streams_metadata_for_store()`` and
``query_metadata_for_key()`` answer from a :class:`Discovery`, made once the application's
plan is known and fixed for the run: a Spark application is one client whose driver answers
for every task, so its stores, input partitions and host do not move while it runs. It is
plain data, so the serving process of the HTTP endpoint (kspark/runtime/spark/serving.py)
answers the same questions from a copy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kspark.errors import InvalidStateStoreException
from kspark.processor.internals.partitioning import default_partition
from kspark.query import HostInfo, KeyQueryMetadata, StreamsMetadata, TopicPartition

if TYPE_CHECKING:
    from kspark.runtime.spark.plan import PhysicalPlan

__all__ = ["Discovery", "DiscoveryCalls", "key_partition"]


@dataclass(frozen=True)
class Discovery:
    """``host``: ``application.server``; ``queryable``: the stores a replica answers for;
    ``partitions``: the input partitions; ``sources``: per store of the plan, its
    sub-topology's source topics; ``counts``: partitions per topic; ``global_stores``."""

    host: HostInfo
    queryable: frozenset[str]
    partitions: frozenset[TopicPartition]
    sources: Mapping[str, tuple[str, ...]]
    counts: Mapping[str, int]
    global_stores: frozenset[str]

    @staticmethod
    def of(
        host: HostInfo, plan: PhysicalPlan, queryable: Iterable[str], global_stores: Iterable[str]
    ) -> Discovery:
        counts = dict(plan.partitions or {})
        sources: dict[str, tuple[str, ...]] = {}
        for query in plan.queries:
            for sub in query.subtopologies:
                for store in sub.stores:
                    sources.setdefault(store, tuple(sub.source_topics))
        partitions = frozenset(
            TopicPartition(t, p)
            for q in plan.queries
            for t in q.source_topics
            for p in range(counts.get(t, 0))
        )
        return Discovery(host, frozenset(queryable), partitions, sources, counts, frozenset(global_stores))

    def all(self) -> list[StreamsMetadata]:
        return [StreamsMetadata.of(self.host, self.queryable, self.partitions)]

    def for_store(self, store_name: str) -> list[StreamsMetadata]:
        return [m for m in self.all() if store_name in m.state_store_names]

    def for_key(self, store_name: str, key: Any, key_serializer: Any) -> KeyQueryMetadata | None:
        """As ``KafkaStreams.query_metadata_for_key`` documents it (after its checks)."""
        if store_name in self.global_stores:
            return KeyQueryMetadata(self.host, frozenset(), -1)
        sources = self.sources.get(store_name)
        if sources is None:
            return None
        # Kafka's SourceTopicsInfo: the first source topic with the most partitions
        topic = max(sources, key=lambda t: self.counts.get(t, 0))
        partition = key_partition(topic, key, key_serializer, self.counts.get(topic, 0))
        host = self.host if store_name in self.queryable else HostInfo.unavailable()
        return KeyQueryMetadata(host, frozenset(), partition)


class DiscoveryCalls:
    """Kafka Streams' discovery calls, answered from :meth:`_discovery`: ``KafkaStreams``'s, and
    those of the serving process's stand-in for it (kspark/runtime/spark/serving.py)."""

    def _validate_is_running_or_rebalancing(self, what: str = "") -> None:
        raise NotImplementedError

    def _discovery(self) -> Discovery | None:
        """What discovery answers from (None while the application is still starting)."""
        raise NotImplementedError

    def metadata_for_all_streams_clients(self) -> list[StreamsMetadata]:
        """Every instance of the application: here, this one (a Spark application is one
        client; its driver answers for every task), with its queryable stores and input
        partitions. Empty while it is still starting; refused before ``start()`` and after
        ``close()``, as in Kafka Streams."""
        self._validate_is_running_or_rebalancing()
        discovery = self._discovery()
        return [] if discovery is None else discovery.all()

    def streams_metadata_for_store(self, store_name: str) -> list[StreamsMetadata]:
        """The instances that hold ``store_name``: this one, or none for a store it does not have."""
        self._validate_is_running_or_rebalancing()
        discovery = self._discovery()
        return [] if discovery is None else discovery.for_store(store_name)

    def query_metadata_for_key(
        self, store_name: str, key: Any, key_serializer: Any
    ) -> KeyQueryMetadata | None:
        """Where ``key`` of ``store_name`` lives: the instance and the key's partition, as Kafka
        Streams computes it -- over the store's source topic with the most partitions, the key
        serialized for that topic. The third argument is a key serializer (or a serde), or a
        partitioner ``(topic, key, value, num_partitions) -> int`` (Kafka's
        ``StreamPartitioner`` overload). ``KeyQueryMetadata.NOT_AVAILABLE`` while the
        application is still starting; ``None`` for a store the topology does not have; a
        global store's partition is -1 (it is on every instance)."""
        self._validate_is_running_or_rebalancing()
        if key is None:
            raise ValueError("key can't be null")
        if key_serializer is None:
            raise ValueError("keySerializer can't be null")
        discovery = self._discovery()
        if discovery is None:
            return KeyQueryMetadata.NOT_AVAILABLE
        return discovery.for_key(store_name, key, key_serializer)


def key_partition(topic: str, key: Any, how: Any, partitions: int) -> int:
    """The partition ``key`` has among ``partitions`` of ``topic``: Kafka's default partitioner
    over the serialized key, or what a partitioner callable returns (one partition)."""
    if partitions < 1:
        raise InvalidStateStoreException(f"the number of partitions of {topic} is not known yet")
    if hasattr(how, "serializer") and not hasattr(how, "serialize"):
        how = how.serializer()  # a serde
    if hasattr(how, "serialize"):
        data = how.serialize(topic, key)
        if data is None:
            raise ValueError(f"the key serializer turned key {key!r} into null: it has no partition")
        return default_partition(data, partitions)
    if not callable(how):
        raise TypeError(
            "query_metadata_for_key needs a key serializer, a serde or a partitioner "
            f"(topic, key, value, num_partitions) -> int, got {type(how).__name__}"
        )
    chosen = how(topic, key, None, partitions)
    if chosen is not None and not isinstance(chosen, int):
        chosen = list(dict.fromkeys(chosen))
        if len(chosen) != 1:
            raise ValueError(
                "The partitions returned by the partitioner when used for fetching KeyQueryMetadata for "
                f"key should be a single partition, got {chosen}"
            )
        chosen = chosen[0]
    if not isinstance(chosen, int) or not 0 <= chosen < partitions:
        raise ValueError(f"the partitioner returned {chosen!r} for {topic} with {partitions} partitions")
    return chosen
