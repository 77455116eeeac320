"""Metric names as Kafka's ``MetricName``: a name, a group and tags.

``KafkaStreams.metrics()`` and ``TopologyTestDriver.metrics()`` return
``{MetricName: value}``, with Kafka Streams' names, groups and tags where
kspark has the metric (docs/operations.md lists them).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MetricName"]


@dataclass(frozen=True)
class MetricName:
    """A metric's name, group and tags (as Kafka's ``MetricName``)."""

    name: str
    group: str
    tags_items: tuple[tuple[str, str], ...]

    @property
    def tags(self) -> dict[str, str]:
        return dict(self.tags_items)

    @staticmethod
    def of(name: str, group: str, **tags: str) -> MetricName:
        """A metric name with tags given as keywords (``thread_id`` is the tag ``thread-id``)."""
        return MetricName(name, group, tuple((k.replace("_", "-"), v) for k, v in tags.items()))
