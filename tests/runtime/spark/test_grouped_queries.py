"""Sub-topologies sharing a Spark query give each task exactly what a query of its own gives it.

A query may run several independent sub-topologies of one stage (plan.py):
their tasks are numbered across the query, each is still one Spark task, and
the results must be the per-task TopologyTestDriver's, across a restart.
A changed plan is refused rather than started beside the old checkpoints.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kspark import Consumed, Grouped, KafkaStreams, Materialized, Produced, StreamsBuilder, Topology
from kspark.dev.kafka import LocalKafka
from kspark.processor.internals.partitioning import default_partition
from kspark.runtime.spark.plan import Stage
from kspark.runtime.spark.runner import PlanChangedException
from kspark.serde import Serdes
from kspark.testing import TopologyTestDriver

pytestmark = [pytest.mark.integration, pytest.mark.slow]

pyspark_cloudpickle = pytest.importorskip("pyspark.cloudpickle")
pyspark_cloudpickle.register_pickle_by_value(sys.modules[__name__])

S, L, J = Serdes.String(), Serdes.Long(), Serdes.JSON()


def _topology(t: dict[str, str]) -> Topology:
    """Two JSON aggregations (engine, one query), two stateless chains (one direct-read query) and a
    re-keyed count behind a repartition topic (level 1)."""
    b = StreamsBuilder()
    b.stream(t["x"], Consumed.with_(S, J)).group_by_key().aggregate(
        lambda: 0, lambda k, v, agg: agg + v["n"], Materialized.with_(S, L)
    ).to_stream().to(t["x-out"], Produced.with_(S, L))
    b.stream(t["y"], Consumed.with_(S, J)).group_by_key().count().to_stream().to(
        t["y-out"], Produced.with_(S, L)
    )
    b.stream(t["z"], Consumed.with_(S, S)).map_values(str.upper).to(t["z-out"], Produced.with_(S, S))
    b.stream(t["w"], Consumed.with_(S, S)).filter(lambda k, v: v != "w3").group_by(
        lambda k, v: v[:2], Grouped.with_(S, S)
    ).count().to_stream().to(t["w-out"], Produced.with_(S, L))
    return b.build()


_SERDES = {"x": (S, J), "y": (S, J), "z": (S, S), "w": (S, S)}
_OUT = {"x-out": L, "y-out": L, "z-out": S, "w-out": L}


def _records(n: int, offset: int = 0) -> dict[str, list[tuple[str, Any, int]]]:
    return {
        "x": [(f"k{i % 5}", {"n": i}, 1000 + i) for i in range(offset, offset + n)],
        "y": [(f"k{i % 7}", {"n": i}, 1000 + i) for i in range(offset, offset + n)],
        "z": [(f"k{i % 3}", f"z{i}", 1000 + i) for i in range(offset, offset + n)],
        "w": [(f"k{i % 4}", f"w{i % 9}", 1000 + i) for i in range(offset, offset + n)],
    }


def _reference(records: dict[str, list[tuple[str, Any, int]]], partitions: dict[str, int]) -> dict[str, Any]:
    """Per output topic and key, the (value, timestamp) sequence: one driver per task, as the
    runner's tasks (w's re-keyed count has one upstream partition, so its order is defined)."""
    out: dict[str, dict[str, list[tuple[Any, int]]]] = {}
    topics = {name: name for name in [*_SERDES, *_OUT]}
    for logical, rows in records.items():
        n = partitions[logical]
        for p in range(n):
            mine = [r for r in rows if default_partition(S.serializer().serialize("", r[0]), n) == p]
            config = {"application.id": "ref", "bootstrap.servers": "x:1", "statestore.cache.max.bytes": 0}
            with TopologyTestDriver(_topology(topics), config) as driver:
                key_serde, value_serde = _SERDES[logical]
                pipe = driver.create_input_topic(logical, key_serde, value_serde)
                for key, value, ts in mine:
                    pipe.pipe_input(key, value, timestamp=ts)
                for name, value_serde_out in _OUT.items():
                    for r in driver.create_output_topic(name, S, value_serde_out).read_records_to_list():
                        out.setdefault(name, {}).setdefault(r.key, []).append((r.value, r.timestamp))
    return out


def test_grouped_queries_match_the_per_task_driver_across_a_restart(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    partitions = {"x": 2, "y": 3, "z": 2, "w": 1}
    t = {name: topic_factory(name, partitions=partitions[name]) for name in _SERDES}
    t.update({name: topic_factory(name, partitions=2) for name in _OUT})
    config = {
        "application.id": "grouped",
        "bootstrap.servers": kafka.bootstrap_servers,
        "state.dir": str(tmp_path / "state"),
        "statestore.cache.max.bytes": 0,
    }
    first, second = _records(40), _records(30, offset=40)
    for batch in (first, second):
        for logical, rows in batch.items():
            key_serde, value_serde = _SERDES[logical]
            kafka.produce(
                t[logical],
                [
                    (
                        key_serde.serializer().serialize("", k),
                        value_serde.serializer().serialize("", v),
                        ts,
                        default_partition(key_serde.serializer().serialize("", k), partitions[logical]),
                    )
                    for k, v, ts in rows
                ],
            )
        app = KafkaStreams(_topology(t), config, spark=spark)
        try:
            app.process_available()
            plan = app._ensure_runner().plan()  # type: ignore[attr-defined]
        finally:
            app.close()
    groups = [([s.subtopology for s in q.subtopologies], q.stage, q.tasks) for q in plan.queries]
    assert groups == [
        ([0, 1], Stage.ENGINE, 5),
        ([2, 3], Stage.DIRECT_READ, 3),
        ([4], Stage.ENGINE, 3),  # behind the repartition topic (as wide as the widest source)
    ]
    got: dict[str, dict[str, list[tuple[Any, int]]]] = {}
    for name, value_serde in _OUT.items():
        for r in sorted(kafka.consume_all(t[name]), key=lambda r: (r.partition, r.offset)):
            key = S.deserializer().deserialize("", r.key)
            got.setdefault(name, {}).setdefault(key, []).append(
                (value_serde.deserializer().deserialize("", r.value), r.timestamp)
            )
    merged = {k: first[k] + second[k] for k in first}
    assert got == _reference(merged, partitions)

    # The same application with another plan (direct read off) is refused, not half-restarted.
    other = {**config, "spark.kspark.directRead": "false"}
    app = KafkaStreams(_topology(t), other, spark=spark)
    try:
        with pytest.raises(
            PlanChangedException, match=r"another physical plan \(checkpoints \['subtopologies-2-3'\]"
        ):
            app.process_available()
    finally:
        app.close()
