"""Runner conformance: one set of scenarios, run on the TopologyTestDriver and on Spark.

A scenario is a topology (built from real topic names), an input in pipe
order and the output topics to read. The reference result comes from the
``TopologyTestDriver``. Kafka Streams runs one task per input partition, so
for a multi-partition scenario the reference runs one driver per partition
(records split by Kafka's default partitioner, in pipe order), which is
exactly what a Kafka Streams application over those partitions computes.
The Spark runner produces the same input to real topics (each record to the
partition Kafka's partitioner gives its key), runs ``process_available`` and
reads the outputs back. Results are compared per output topic and key, as
the sequence of (value, timestamp): order across keys is not defined.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kspark.dev.kafka import LocalKafka
from kspark.dev.partitioning import default_partition
from kspark.processor.topology import Topology
from kspark.testing import TopologyTestDriver

__all__ = [
    "Scenario",
    "Input",
    "PerKey",
    "reference_outputs",
    "spark_outputs",
    "last_values",
    "difference",
    "cached_difference",
]


@dataclass(frozen=True)
class Input:
    """One piped record: logical topic, key, value, timestamp (and an optional wall-clock advance)."""

    topic: str
    key: Any
    value: Any
    timestamp: int


@dataclass(frozen=True)
class Scenario:
    name: str
    build: Callable[[Mapping[str, str]], Topology]  # logical topic -> real topic name
    inputs: Sequence[Input]
    input_serdes: Mapping[str, tuple[Any, Any]]  # logical input topic -> (key serde, value serde)
    output_serdes: Mapping[str, tuple[Any, Any]]  # logical output topic -> (key serde, value serde)
    partitions: int = 1
    config: Mapping[str, Any] = field(default_factory=dict)
    global_topics: frozenset[str] = frozenset()  # read whole by every task (GlobalKTable)


PerKey = dict[str, dict[str, list[tuple[Any, int]]]]
"""output topic -> repr(key) -> [(value, timestamp), ...] in emission order."""


def _add(out: PerKey, topic: str, key: Any, value: Any, ts: int) -> None:
    out.setdefault(topic, {}).setdefault(repr(key), []).append((value, ts))


def _partition_of(scenario: Scenario, rec: Input) -> int:
    if rec.key is None:
        return 0
    key_bytes = scenario.input_serdes[rec.topic][0].serializer().serialize(rec.topic, rec.key)
    return default_partition(key_bytes, scenario.partitions)


def reference_outputs(scenario: Scenario, config: Mapping[str, Any]) -> PerKey:
    """Outputs of the reference interpreter: one driver per task (input partition)."""
    topics = {t: t for t in [*scenario.input_serdes, *scenario.output_serdes]}
    out: PerKey = {}
    for partition in range(scenario.partitions):
        records = [
            r
            for r in scenario.inputs
            if r.topic in scenario.global_topics or _partition_of(scenario, r) == partition
        ]
        with TopologyTestDriver(scenario.build(topics), dict(config)) as driver:
            inputs = {t: driver.create_input_topic(t, k, v) for t, (k, v) in scenario.input_serdes.items()}
            for r in records:
                inputs[r.topic].pipe_input(r.key, r.value, timestamp=r.timestamp)
            for t, (k, v) in scenario.output_serdes.items():
                for rec in driver.create_output_topic(t, k, v).read_records_to_list():
                    _add(out, t, rec.key, rec.value, rec.timestamp)
    return out


def spark_outputs(
    scenario: Scenario,
    config: Mapping[str, Any],
    kafka: LocalKafka,
    spark: Any,
    topic_factory: Callable[..., str],
    *,
    runs: int = 1,
) -> PerKey:
    """Outputs of the Spark runner over real topics; ``runs`` > 1 restarts the app between input slices."""
    from kspark import KafkaStreams

    topics = {t: topic_factory(t, partitions=scenario.partitions) for t in scenario.input_serdes}
    topics.update({t: topic_factory(t, partitions=scenario.partitions) for t in scenario.output_serdes})
    # Contiguous slices keep each partition's order; the app restarts between them.
    n = len(scenario.inputs)
    slices = [scenario.inputs[i * n // runs : (i + 1) * n // runs] for i in range(runs)]
    for part in slices:
        for logical in scenario.input_serdes:
            key_serde, value_serde = scenario.input_serdes[logical]
            batch = [
                (
                    key_serde.serializer().serialize(topics[logical], r.key),
                    value_serde.serializer().serialize(topics[logical], r.value),
                    r.timestamp,
                    _partition_of(scenario, r),
                )
                for r in part
                if r.topic == logical
            ]
            if batch:
                kafka.produce(topics[logical], batch)
        app = KafkaStreams(scenario.build(topics), dict(config), spark=spark)
        try:
            app.process_available()
        finally:
            app.close()
    out: PerKey = {}
    for logical, (key_serde, value_serde) in scenario.output_serdes.items():
        real = topics[logical]
        for rec in kafka.consume_all(real):
            key = key_serde.deserializer().deserialize(real, rec.key)
            value = value_serde.deserializer().deserialize(real, rec.value)
            _add(out, logical, key, value, rec.timestamp)
    return out


def last_values(outputs: PerKey) -> dict[str, dict[str, Any]]:
    """The final value per key, as a compacted topic keeps it: a key whose last record is a
    tombstone is absent. (With caching, a key created and deleted within one commit is never
    forwarded at all, in Kafka Streams too, so "absent" and "tombstone" must compare equal.)"""
    return {
        t: {k: seq[-1][0] for k, seq in per_key.items() if seq[-1][0] is not None}
        for t, per_key in outputs.items()
    }


def difference(got: PerKey, expected: PerKey) -> str:
    """A readable account of where ``got`` and ``expected`` differ, per topic and key."""
    lines = []
    for topic in sorted(set(got) | set(expected)):
        g, e = got.get(topic, {}), expected.get(topic, {})
        for key in sorted(set(g) | set(e)):
            if g.get(key) != e.get(key):
                lines.append(f"{topic} {key}:\n  got      {g.get(key)}\n  expected {e.get(key)}")
    return "\n".join(lines) or "no difference"


def cached_difference(got: PerKey, expected: PerKey) -> str:
    """Where ``got`` (record cache on) breaks what caching allows against the cache-off
    ``expected``: the same final value per key, and only values the reference emitted.
    Empty when it keeps both."""
    lines = []
    if last_values(got) != last_values(expected):
        lines.append(
            f"final values differ:\n  got      {last_values(got)}\n  expected {last_values(expected)}"
        )
    for topic, per_key in got.items():
        for key, seq in per_key.items():
            extra = sorted(set(seq) - set(expected.get(topic, {}).get(key, [])), key=repr)
            if extra:
                lines.append(f"{topic} {key}: values the reference never emitted: {extra}")
    return "\n".join(lines)
