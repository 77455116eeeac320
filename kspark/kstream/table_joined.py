"""``TableJoined``: the partitioners and the name of a foreign-key table-table join (Kafka's ``TableJoined``).

``partitioner(topic, key, value, num_partitions)`` is how the *left* table's
topic is partitioned: the join's responses are sent back with it (by
default a response goes to the partition its left record came from).
``other_partitioner`` is the *right* table's: subscriptions, keyed by the
foreign key, are sent with it (by default the producer's murmur2 of the
serialized foreign key, as the right table's topic). As in Kafka, both are
called with ``value=None`` and must name exactly one partition.
``name`` prefixes every processor, store and internal topic of the join.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from kspark.kstream.config_objects import Named

__all__ = ["TableJoined"]

Partitioner = Callable[[str, Any, Any, int], Any]


@dataclass(frozen=True)
class TableJoined:
    """How a foreign-key join partitions its internal topics, and its name."""

    partitioner: Partitioner | None = None
    other_partitioner: Partitioner | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        for what in ("partitioner", "other_partitioner"):
            fn = getattr(self, what)
            if fn is not None and not callable(fn):
                raise TypeError(
                    f"TableJoined {what} must be callable (topic, key, value, num_partitions), got {fn!r}"
                )
        Named(self.name)  # the same name rules as every DSL name

    @staticmethod
    def with_(partitioner: Partitioner | None, other_partitioner: Partitioner | None) -> TableJoined:
        return TableJoined(partitioner, other_partitioner)

    @staticmethod
    def as_(name: str) -> TableJoined:
        return TableJoined(name=name)

    def with_partitioner(self, partitioner: Partitioner | None) -> TableJoined:
        return replace(self, partitioner=partitioner)

    def with_other_partitioner(self, other_partitioner: Partitioner | None) -> TableJoined:
        return replace(self, other_partitioner=other_partitioner)

    def with_name(self, name: str) -> TableJoined:
        return replace(self, name=name)
