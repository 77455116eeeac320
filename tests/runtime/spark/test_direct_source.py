"""Stateless sub-topologies read by the Python workers (direct_source.py), against Spark's Kafka source."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer, TopicPartition

from kspark import Consumed, KafkaStreams, Produced, StreamsBuilder, Topology
from kspark.dev.kafka import LocalKafka
from kspark.errors import ConfigException, StreamsException
from kspark.processor.internals.partitioning import default_partition
from kspark.runtime.spark.direct_source import rate_limit
from kspark.runtime.spark.plan import Stage
from kspark.runtime.spark.runner import SparkRunner
from kspark.serde import Serdes

pyspark_cloudpickle = pytest.importorskip("pyspark.cloudpickle")
pyspark_cloudpickle.register_pickle_by_value(sys.modules[__name__])

S = Serdes.String()


def test_rate_limit_splits_the_cap_by_lag_as_sparks_kafka_source() -> None:
    start = {"a": {"0": 0, "1": 100}, "b": {"0": 5}}
    latest = {"a": {"0": 600, "1": 400}, "b": {"0": 6}}  # lags 600, 300, 1
    assert rate_limit(start, latest, 10_000) == latest  # under the cap: everything
    # 90 * 600/901 = 59.9 -> 59; 90 * 300/901 = 29.97 -> 29; 90 * 1/901 < 1 -> rounds up to 1
    assert rate_limit(start, latest, 90) == {"a": {"0": 59, "1": 129}, "b": {"0": 6}}
    caught_up = {"a": {"0": 600, "1": 400}, "b": {"0": 6}}
    assert rate_limit(caught_up, latest, 5) == latest


def _config(kafka: LocalKafka, tmp_path: Path, app: str, **extra: Any) -> dict[str, Any]:
    return {
        "application.id": app,
        "bootstrap.servers": kafka.bootstrap_servers,
        "state.dir": str(tmp_path / "state"),
        **extra,
    }


def _upper(src: str, dst: str) -> Topology:
    b = StreamsBuilder()
    b.stream(src, Consumed.with_(S, S)).filter(lambda k, v: not v.startswith("drop")).map_values(
        lambda v: v.upper()
    ).to(dst, Produced.with_(S, S))
    return b.build()


def _output(kafka: LocalKafka, topic: str) -> list[tuple[int, bytes | None, bytes | None, int, Any]]:
    """The records of ``topic``; a null-keyed record's partition is the producer's random pick: -1."""
    records = kafka.consume_all(topic, read_committed=True)
    return sorted(
        ((r.partition if r.key is not None else -1, r.key, r.value, r.timestamp, r.headers) for r in records),
        key=repr,
    )


def _reads_directly(app: KafkaStreams) -> bool:
    runner: SparkRunner = app._ensure_runner()  # type: ignore[attr-defined]
    (query,) = runner.prepare_topics().queries
    return query.stage is Stage.DIRECT_READ


@pytest.mark.integration
@pytest.mark.slow
def test_direct_read_gives_what_sparks_kafka_source_gives_in_capped_batches_across_a_restart(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src = topic_factory("in", partitions=3)
    rows = [
        (f"k{i % 7}".encode() if i % 11 else None, b"drop" if i % 4 == 0 else b"v%d" % i, 1_000 + i)
        for i in range(300)
    ]
    headers = [("h", b"1"), ("empty", None)]
    kafka.produce(src, [(k, v, ts, i % 3, headers if i % 2 else None) for i, (k, v, ts) in enumerate(rows)])
    outputs = {}
    for name, extra in (
        ("spark", {"spark.kspark.directRead": "false"}),
        ("direct", {"spark.kspark.maxOffsetsPerTrigger": 40}),
    ):
        dst = topic_factory(f"out-{name}", partitions=3)
        config = _config(kafka, tmp_path, f"direct-{name}", **extra)
        app = KafkaStreams(_upper(src, dst), config, spark=spark)
        try:
            assert _reads_directly(app) is (name == "direct")
            assert app.process_available() == 300
        finally:
            app.close()
        # More input, and a restart: only the new records are read.
        if name == "direct":
            kafka.produce(src, [(b"k1", b"late", 5_000, 1)])
            again = KafkaStreams(_upper(src, dst), config, spark=spark)
            try:
                assert again.process_available() == 1
            finally:
                again.close()
        outputs[name] = _output(kafka, dst)
    assert len(outputs["spark"]) == 225  # every fourth record dropped
    assert [r for r in outputs["direct"] if r[2] != b"LATE"] == outputs["spark"]
    assert (default_partition(b"k1", 3), b"k1", b"LATE", 5_000, ()) in outputs["direct"]


@pytest.mark.integration
@pytest.mark.slow
def test_direct_read_reads_only_committed_transactions(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("txn-in", partitions=1), topic_factory("txn-out", partitions=1)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "transactional.id": f"tx-{src}"})
    producer.init_transactions()
    for values, commit in (([b"a", b"b"], True), ([b"x", b"y"], False), ([b"c"], True)):
        producer.begin_transaction()
        for v in values:
            producer.produce(src, v, b"k", 0, timestamp=1_000)
        producer.flush()
        (producer.commit_transaction if commit else producer.abort_transaction)()
    time.sleep(1)  # the last commit marker is written after commit_transaction returns
    app = KafkaStreams(_upper(src, dst), _config(kafka, tmp_path, "direct-txn"), spark=spark)
    try:
        assert _reads_directly(app)
        started = time.monotonic()
        assert app.process_available() == 3
        assert time.monotonic() - started < 60  # a range ending in a commit marker ends at once
    finally:
        app.close()
    assert [r[2] for r in _output(kafka, dst)] == [b"A", b"B", b"C"]


@pytest.mark.integration
@pytest.mark.slow
def test_records_deleted_before_they_were_read_stop_the_query(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("gone-in", partitions=1), topic_factory("gone-out", partitions=1)
    kafka.produce(src, [(b"k", b"v%d" % i, 1_000 + i, 0) for i in range(10)])
    config = _config(kafka, tmp_path, "direct-gone")
    app = KafkaStreams(_upper(src, dst), config, spark=spark)
    try:
        assert app.process_available() == 10
    finally:
        app.close()
    kafka.produce(src, [(b"k", b"w%d" % i, 2_000 + i, 0) for i in range(10)])
    admin = kafka.admin()  # referenced until the result arrives
    for future in admin.delete_records([TopicPartition(src, 0, 15)]).values():
        future.result(timeout=30)
    again = KafkaStreams(_upper(src, dst), config, spark=spark)
    try:
        with pytest.raises(StreamsException, match=r"offsets 10 to 20 are no longer in Kafka"):
            again.process_available()
    finally:
        again.close()


@pytest.mark.integration
def test_consumer_settings_librdkafka_does_not_know_leave_the_read_to_spark_and_bad_switch_fails(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src = topic_factory("settings-in")
    java_only = _config(kafka, tmp_path, "direct-java-only", **{"consumer.fetch.max.wait.ms": 100})
    both = _config(kafka, tmp_path, "direct-both", **{"consumer.fetch.max.bytes": 1_000_000})
    for config, direct in ((java_only, False), (both, True)):
        app = KafkaStreams(_upper(src, "unused"), config, spark=spark)
        try:
            assert _reads_directly(app) is direct
        finally:
            app.close()
    bad_switch = _config(kafka, tmp_path, "bad", **{"spark.kspark.directRead": "yes"})
    # Refused before anything starts (settings.py), naming the setting and the value.
    with pytest.raises(ConfigException, match=r"spark\.kspark\.directRead must be true or false, got 'yes'"):
        KafkaStreams(_upper(src, "unused"), bad_switch, spark=spark)


def _merge(a: str, b: str, dst: str) -> Topology:
    builder = StreamsBuilder()
    left = builder.stream(a, Consumed.with_(S, S))
    left.merge(builder.stream(b, Consumed.with_(S, S))).to(dst, Produced.with_(S, S))
    return builder.build()


@pytest.mark.integration
@pytest.mark.slow
def test_a_merge_takes_records_across_its_topics_by_timestamp(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    """A Kafka Streams task of a merge takes the next record from the input topic whose head has
    the smallest timestamp: with the records already in Kafka, each key's output is in timestamp
    order, alternating between the topics here. Each Spark task reading one topic-partition
    wrote one topic's records, then the other's."""
    a, b = topic_factory("merge-a", partitions=2), topic_factory("merge-b", partitions=2)
    keys = [f"k{i}".encode() for i in range(6)]
    for topic, first in ((a, 0), (b, 1)):
        rows = [(k, b"%s@%d" % (k, ts), ts) for ts in range(first, 40, 2) for k in keys]
        kafka.produce(topic, [(k, v, 1_000 + ts, default_partition(k, 2)) for k, v, ts in rows])
    configs: dict[str, dict[str, Any]] = {
        "direct": {},
        "direct-eos": {"processing.guarantee": "exactly_once_v2"},
        "spark-source": {"spark.kspark.directRead": "false"},
    }
    for name, extra in configs.items():
        dst = topic_factory(f"merged-{name}", partitions=2)
        app = KafkaStreams(_merge(a, b, dst), _config(kafka, tmp_path, f"merge-{name}", **extra), spark=spark)
        try:
            assert _reads_directly(app) is name.startswith("direct")
            assert app.process_available() == 2 * 20 * len(keys)
        finally:
            app.close()
        output = kafka.consume_all(dst, read_committed=True)
        for key in keys:
            got = [r.value for r in output if r.key == key]
            assert got == [b"%s@%d" % (key, ts) for ts in range(40)], (name, key, got[:6])


_PLANNER = """
import subprocess
import sys
from kspark.runtime.spark.direct_source import KafkaDirectSource

reader = KafkaDirectSource({"plan": sys.stdin.read()}).streamReader(None)
tasks = reader.partitions({"in": {"0": 0, "1": 5}}, {"in": {"0": 3, "1": 5}})
print([[(r.topic, r.partition, r.start, r.end) for r in t.ranges] for t in tasks])
engine = ("kspark.runtime.spark.tasks", "kspark.processor.internals.task")
print(sorted(m for m in engine if m in sys.modules))
print(sorted(reader.plan.topology_specs()), "kspark.runtime.spark.tasks" in sys.modules)
"""


def test_the_drivers_planning_processes_leave_the_engine_and_the_topology_unloaded() -> None:
    """Spark plans a direct read in new Python processes on the driver: they get the tasks' offset
    ranges without importing the engine or unpickling the application's topology; a worker's read
    unpickles it."""
    from kspark.runtime.spark.direct_source import DirectPlan
    from kspark.runtime.spark.tasks import TopologySpec

    builder = StreamsBuilder()
    builder.stream("in", Consumed.with_(S, S)).map_values(lambda v: v.upper()).to("out", Produced.with_(S, S))
    spec = TopologySpec(builder.build(), {"application.id": "planner"}, 0, {}, "instance", {})
    plan = DirectPlan.of("unused:9092", {"in": 2}, "earliest", None, {}, {"in": spec}, {}, {})
    child = subprocess.run(
        [sys.executable, "-c", _PLANNER],
        input=plan.options()["plan"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    ranges, engine_modules, after_read = child.stdout.splitlines()
    assert ranges == "[[('in', 0, 0, 3)]]"  # partition 1 has nothing in the batch
    assert engine_modules == "[]"
    assert after_read == "['in'] True"
