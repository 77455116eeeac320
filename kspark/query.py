"""Interactive queries' public types: where a store lives, what a read reflects, how fresh it must be.

Kafka Streams' names (``org.apache.kafka.streams.StoreQueryParameters``,
``StreamsMetadata``, ``KeyQueryMetadata``, ``state.HostInfo``,
``query.Position``, ``query.PositionBound``) in Python spelling:

* :class:`StoreQueryParameters` names a store and the queryable type wanted
  (``KafkaStreams.store(params)``); kspark adds a position bound and a wait
  (``with_position_bound``), the IQv2 freshness check, to the IQv1 call.
* :class:`Position` says what a store's state reflects: per input topic and
  partition, the offset of the last record included (KIP-796).
* :class:`PositionBound` is what a read requires: unbounded, or at least a
  position (read-your-writes: the offset a producer got back).
* :class:`HostInfo`, :class:`StreamsMetadata`, :class:`KeyQueryMetadata`:
  discovery (``application.server``).

Nothing here depends on a runner.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, ClassVar

__all__ = [
    "HostInfo",
    "KeyQueryMetadata",
    "Position",
    "PositionBound",
    "StoreQueryParameters",
    "StreamsMetadata",
    "TopicPartition",
]


@dataclass(frozen=True, order=True)
class TopicPartition:
    """A topic and a partition (Kafka's ``TopicPartition``)."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class Position:
    """Per topic and partition, the offset of the last input record a state reflects (KIP-796).

    Immutable here (Kafka's is a mutable builder; kspark's positions are made
    once per committed micro-batch and shared between readers)."""

    __slots__ = ("_offsets",)

    def __init__(self, offsets: Mapping[str, Mapping[int, int]] | None = None) -> None:
        self._offsets: dict[str, dict[int, int]] = {
            t: {int(p): int(o) for p, o in parts.items()} for t, parts in (offsets or {}).items() if parts
        }

    @staticmethod
    def empty_position() -> Position:
        return Position()

    @staticmethod
    def from_map(offsets: Mapping[str, Mapping[int, int]]) -> Position:
        return Position(offsets)

    def with_component(self, topic: str, partition: int, offset: int) -> Position:
        """A copy that reflects ``offset`` of ``topic``-``partition`` too (the larger offset wins)."""
        merged = {t: dict(p) for t, p in self._offsets.items()}
        parts = merged.setdefault(topic, {})
        parts[partition] = max(offset, parts.get(partition, -1))
        return Position(merged)

    def merge(self, other: Position) -> Position:
        """Both positions: per partition the larger offset (Kafka's ``merge``)."""
        merged = {t: dict(p) for t, p in self._offsets.items()}
        for topic, parts in other._offsets.items():
            mine = merged.setdefault(topic, {})
            for partition, offset in parts.items():
                mine[partition] = max(offset, mine.get(partition, -1))
        return Position(merged)

    def get_topics(self) -> set[str]:
        return set(self._offsets)

    def get_partition_positions(self, topic: str) -> dict[int, int]:
        return dict(self._offsets.get(topic, {}))

    def is_empty(self) -> bool:
        return not self._offsets

    def dominates(self, bound: Position) -> bool:
        """Whether this position has reached ``bound`` on every partition ``bound`` names."""
        for topic, parts in bound._offsets.items():
            mine = self._offsets.get(topic, {})
            for partition, offset in parts.items():
                if mine.get(partition, -1) < offset:
                    return False
        return True

    def to_map(self) -> dict[str, dict[int, int]]:
        return {t: dict(p) for t, p in self._offsets.items()}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Position) and other._offsets == self._offsets

    def __hash__(self) -> int:
        return hash(tuple(sorted((t, tuple(sorted(p.items()))) for t, p in self._offsets.items())))

    def __repr__(self) -> str:
        return f"Position{{position={self._offsets}}}"


@dataclass(frozen=True)
class PositionBound:
    """How fresh a read must be: :meth:`unbounded`, or :meth:`at` least a position."""

    position: Position | None = None

    @staticmethod
    def unbounded() -> PositionBound:
        return PositionBound(None)

    @staticmethod
    def at(position: Position) -> PositionBound:
        return PositionBound(position)

    def is_unbounded(self) -> bool:
        return self.position is None

    def satisfied_by(self, position: Position) -> bool:
        return self.position is None or position.dominates(self.position)


@dataclass(frozen=True)
class StoreQueryParameters:
    """Which store to query and how: Kafka's ``StoreQueryParameters`` plus IQv2's position bound.

    ``with_position_bound(bound, timeout)``: ``KafkaStreams.store`` waits up to
    ``timeout`` for the store to reach ``bound``, then raises
    ``InvalidStateStoreException`` naming the position it has."""

    store_name: str
    queryable_store_type: Any
    partition: int | None = None
    stale_stores: bool = False
    position_bound: PositionBound = field(default_factory=PositionBound.unbounded)
    timeout: timedelta = timedelta(seconds=30)

    @staticmethod
    def from_name_and_type(store_name: str, queryable_store_type: Any) -> StoreQueryParameters:
        return StoreQueryParameters(store_name, queryable_store_type)

    def with_partition(self, partition: int | None) -> StoreQueryParameters:
        return _replace(self, partition=partition)

    def enable_stale_stores(self) -> StoreQueryParameters:
        return _replace(self, stale_stores=True)

    def with_position_bound(
        self, bound: PositionBound, timeout: timedelta | float = timedelta(seconds=30)
    ) -> StoreQueryParameters:
        wait = timeout if isinstance(timeout, timedelta) else timedelta(seconds=float(timeout))
        return _replace(self, position_bound=bound, timeout=wait)


def _replace(params: StoreQueryParameters, **changes: Any) -> StoreQueryParameters:
    from dataclasses import replace

    return replace(params, **changes)


@dataclass(frozen=True)
class HostInfo:
    """Where an application instance answers queries: ``application.server`` as host and port."""

    host: str
    port: int

    @staticmethod
    def unavailable() -> HostInfo:
        """Kafka's placeholder when ``application.server`` is not set."""
        return HostInfo("unavailable", -1)

    @staticmethod
    def parse(server: str) -> HostInfo:
        """``host:port`` (an IPv6 host in brackets), as Kafka Streams reads ``application.server``."""
        host, sep, port = server.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"application.server must be host:port, got {server!r}")
        return HostInfo(host.strip("[]"), int(port))

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class StreamsMetadata:
    """One application instance: where it answers and what it holds (Kafka's ``StreamsMetadata``)."""

    host_info: HostInfo
    state_store_names: frozenset[str]
    topic_partitions: frozenset[TopicPartition]
    standby_state_store_names: frozenset[str] = frozenset()
    standby_topic_partitions: frozenset[TopicPartition] = frozenset()

    def host(self) -> str:
        return self.host_info.host

    def port(self) -> int:
        return self.host_info.port

    @staticmethod
    def of(host: HostInfo, stores: Iterable[str], partitions: Iterable[TopicPartition]) -> StreamsMetadata:
        return StreamsMetadata(host, frozenset(stores), frozenset(partitions))


@dataclass(frozen=True)
class KeyQueryMetadata:
    """The instance that holds a key of a store, and the key's partition (Kafka's
    ``KeyQueryMetadata``); ``NOT_AVAILABLE`` when none is known yet."""

    NOT_AVAILABLE: ClassVar[KeyQueryMetadata]

    active_host: HostInfo
    standby_hosts: frozenset[HostInfo]
    partition: int


KeyQueryMetadata.NOT_AVAILABLE = KeyQueryMetadata(HostInfo.unavailable(), frozenset(), -1)
