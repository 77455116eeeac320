"""Low-latency sub-topologies (low_latency.py, low_latency_tasks.py): long-running tasks, offsets in
the group, stores restored from their changelog topics."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from kspark import Consumed, KafkaStreams, Produced, StreamsBuilder, TimeWindows, Topology
from kspark.dev.kafka import LocalKafka
from kspark.processor.api import Processor, ProcessorContext, PunctuationType, Record
from kspark.runtime.spark.low_latency import KafkaTask, LowLatencyPlan, slots_for
from kspark.runtime.spark.plan import PhysicalPlan, Stage, physical_plan
from kspark.serde import Serdes
from tests.runtime.spark.test_direct_source import _upper  # the direct read tests' filter-and-map

pyspark_cloudpickle = pytest.importorskip("pyspark.cloudpickle")
pyspark_cloudpickle.register_pickle_by_value(sys.modules[__name__])

S = Serdes.String()
LOW_KEY = "spark.kspark.lowLatency"
LOW = {LOW_KEY: "true"}


def _with_count(src: str, dst: str, counts: str) -> Topology:
    b = StreamsBuilder()
    stream = b.stream(src, Consumed.with_(S, S))
    stream.map_values(lambda v: v.upper()).to(dst, Produced.with_(S, S))
    b.stream(dst, Consumed.with_(S, S)).group_by_key().count().to_stream().to(counts)
    return b.build()


def _with_windowed_count(src: str, dst: str, counts: str) -> Topology:
    b = StreamsBuilder()
    stream = b.stream(src, Consumed.with_(S, S))
    stream.map_values(lambda v: v.upper()).to(dst, Produced.with_(S, S))
    windowed = b.stream(dst, Consumed.with_(S, S)).group_by_key().windowed_by(TimeWindows(size=1_000))
    windowed.count().to_stream().map(lambda k, v: (k.key, v)).to(counts)
    return b.build()


def _plan(topology: Topology, **extra: Any) -> PhysicalPlan:
    return physical_plan(topology, {"application.id": "ll", "bootstrap.servers": "unused:9092", **extra})


def test_the_plan_runs_stateless_sub_topologies_in_one_low_latency_query_and_says_where_not() -> None:
    plan = _plan(_upper("in", "out"), **LOW)
    (query,) = plan.queries
    assert query.stage is Stage.LOW_LATENCY
    assert query.name == "ll-subtopology-0-low-latency"  # a checkpoint of its own kind
    assert "low latency: yes" in str(plan)
    assert "micro-batch cap: none: its long-running tasks take records as they arrive" in str(plan)
    assert _plan(_upper("in", "out")).queries[0].stage is Stage.DIRECT_READ  # off by default
    # exactly_once_v2: the micro-batch direct read, and the plan says why
    eos = _plan(_upper("in", "out"), **LOW, **{"processing.guarantee": "exactly_once_v2"})
    assert eos.queries[0].stage is Stage.DIRECT_READ
    assert "low latency: no (not under exactly_once_v2" in str(eos)
    off = _plan(_upper("in", "out"), **LOW, **{"spark.kspark.directRead": "false"})
    assert off.queries[0].stage is Stage.SPARK_SOURCE
    assert "low latency: no (it needs the direct read)" in str(off)
    # Sub-topologies of two levels share the one low-latency query, a count among them: its
    # store restores from its changelog topic, as in Kafka Streams.
    both = _plan(_with_count("in", "mid", "counts"), **LOW)
    ((stage, subs),) = {q.stage: [s.subtopology for s in q.subtopologies] for q in both.queries}.items()
    assert (stage, subs) == (Stage.LOW_LATENCY, [0, 1])
    assert both.subtopologies[1].stateful
    # A window store's changelog also deletes by time: that count stays a micro-batch, and says why.
    mixed = _plan(_with_windowed_count("in", "mid", "counts"), **LOW)
    stages = {q.stage: [s.subtopology for s in q.subtopologies] for q in mixed.queries}
    assert stages[Stage.LOW_LATENCY] == [0]
    assert Stage.NATIVE_WINDOWED_COUNT in stages
    assert (
        "low latency: no (store KSTREAM-AGGREGATE-STATE-STORE-0000000004: it is a window or session store"
        in str(mixed)
    )


def test_a_plan_spreads_its_kafka_streams_tasks_over_at_most_its_slots() -> None:
    from kspark.runtime.spark.direct_source import DirectPlan
    from kspark.runtime.spark.low_latency import _Reader
    from kspark.runtime.spark.tasks import TopologySpec

    spec = TopologySpec(_upper("a", "out"), {"application.id": "ll"}, 0, {}, "instance", {})
    direct = DirectPlan.of(
        "unused:9092", {"a": 3, "b": 2}, "earliest", None, {}, {"a": spec, "b": spec}, {}, {}
    )
    plan = LowLatencyPlan(direct, "ll", 2, 5_000, 100, {}, "ll-kspark-control", 0)
    assert plan.kafka_tasks() == [
        KafkaTask(0, 0, ("a", "b")),
        KafkaTask(0, 1, ("a", "b")),
        KafkaTask(0, 2, ("a",)),
    ]
    start = {"epoch": 0, "from": {"a": {"0": 0, "1": 0, "2": 0}, "b": {"0": 0, "1": 0}}, "until": None}
    inputs = _Reader(plan).partitions(start, {**start, "epoch": 1})
    assert [[(t.subtopology, t.partition) for t in i.tasks] for i in inputs] == [[(0, 0), (0, 2)], [(0, 1)]]
    assert all(i.until is None and i.deadline > time.time() + 4 for i in inputs)
    # Under availableNow each Kafka Streams task reads its ranges in a Spark task of its own.
    until = {"a": {"0": 5, "1": 5, "2": 5}, "b": {"0": 5, "1": 5}}
    catch_up = _Reader(plan).partitions(start, {**start, "epoch": 1, "until": until})
    assert [[t.partition for t in i.tasks] for i in catch_up] == [[0], [1], [2]]
    assert all(i.until == until for i in catch_up)


class _FakeContext:
    def __init__(self, parallelism: int) -> None:
        self.defaultParallelism = parallelism


class _FakeSpark:
    def __init__(self, parallelism: int) -> None:
        self.sparkContext = _FakeContext(parallelism)


def test_the_query_takes_every_slot_alone_and_half_beside_other_queries() -> None:
    alone = _plan(_upper("in", "out"), **LOW)
    mixed = _plan(_with_windowed_count("in", "mid", "counts"), **LOW)
    assert slots_for(_FakeSpark(2), alone) == 2  # type: ignore[arg-type]
    assert slots_for(_FakeSpark(4), mixed) == 2  # type: ignore[arg-type]
    assert slots_for(_FakeSpark(1), alone) == 1  # type: ignore[arg-type]
    with pytest.raises(Exception, match=r"holds its task slots for its whole run.*has 1"):
        slots_for(_FakeSpark(1), mixed)  # type: ignore[arg-type]


def _config(kafka: LocalKafka, tmp_path: Path, app: str, **extra: Any) -> dict[str, Any]:
    return {
        "application.id": app,
        "bootstrap.servers": kafka.bootstrap_servers,
        "state.dir": str(tmp_path / "state"),
        "commit.interval.ms": 200,
        **LOW,
        **extra,
    }


def _committed(kafka: LocalKafka, group: str, topic: str, partitions: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": group})
    try:
        got = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
        return [tp.offset for tp in got]
    finally:
        consumer.close()


def _values(kafka: LocalKafka, topic: str) -> list[str]:
    return sorted(r.value.decode() for r in kafka.consume_all(topic) if r.value is not None)


def _wait_for(check: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


@pytest.mark.integration
@pytest.mark.slow
def test_records_are_processed_while_a_batch_runs_and_a_restart_goes_on_from_the_group(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("ll-in", partitions=3), topic_factory("ll-out", partitions=3)
    # Batches of ten minutes: what arrives is answered long before the batch ends.
    config = _config(kafka, tmp_path, "ll-run", **{"spark.kspark.lowLatencyBatchMs": 600_000})
    app = KafkaStreams(_upper(src, dst), config, spark=spark)
    app.start()
    try:
        for wave in range(3):
            rows = [(b"k%d" % i, b"w%d-%d" % (wave, i), 1_000 + i, i % 3) for i in range(30)]
            kafka.produce(src, rows)
            want = sorted(f"W{w}-{i}" for w in range(wave + 1) for i in range(30))
            assert _wait_for(lambda want=want: _values(kafka, dst) == want, 20), (wave, _values(kafka, dst))
        # Every commit.interval.ms the tasks commit their offsets to the application's group.
        assert _wait_for(lambda: _committed(kafka, "ll-run", src, 3) == [30, 30, 30], 10)
        # The lag metrics read the group: caught up, while the first (ten-minute) batch still runs.
        lags = {m.tags["partition"]: v for m, v in app.metrics().items() if m.name == "records-lag"}
        assert lags == {"0": 0.0, "1": 0.0, "2": 0.0}
    finally:
        closing = time.monotonic()
        assert app.close() is True  # the running batch ended and committed
    # close() ended the ten-minute batch through the control topic rather than waiting it out.
    assert time.monotonic() - closing < 120
    assert _committed(kafka, "ll-run", src, 3) == [30, 30, 30]
    # A restart goes on from the group's offsets: nothing again, only the new records.
    kafka.produce(src, [(b"k1", b"late", 9_000, 1), (b"k2", b"drop-me", 9_001, 2)])
    again = KafkaStreams(_upper(src, dst), config, spark=spark)
    try:
        assert again.process_available() == 2
    finally:
        again.close()
    assert _values(kafka, dst) == sorted([*(f"W{w}-{i}" for w in range(3) for i in range(30)), "LATE"])
    assert _committed(kafka, "ll-run", src, 3) == [30, 31, 31]


class _Ticker(Processor[str, str]):
    """Forwards every record, and a tick every 200 ms of wall-clock time."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        context.schedule(200, PunctuationType.WALL_CLOCK_TIME, self._tick)

    def _tick(self, timestamp: int) -> None:
        self.context.forward(Record("tick", str(timestamp), timestamp))

    def process(self, record: Record[str, str]) -> None:
        self.context.forward(record)


@pytest.mark.integration
@pytest.mark.slow
def test_wall_clock_punctuation_runs_between_polls_without_input(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("tick-in", partitions=1), topic_factory("tick-out", partitions=1)
    b = StreamsBuilder()
    b.stream(src, Consumed.with_(S, S)).process(_Ticker).to(dst, Produced.with_(S, S))
    config = _config(kafka, tmp_path, "ll-tick", **{"spark.kspark.lowLatencyBatchMs": 600_000})
    app = KafkaStreams(b.build(), config, spark=spark)
    assert "wall-clock punctuation: yes (KSTREAM-PROCESSOR-0000000001 may schedule it: between polls)" in str(
        app.physical_plan()
    )
    app.start()
    try:
        # No input at all: the task punctuates as it polls, within the one long batch.
        ticks = kafka.consume_all(dst, min_records=5, timeout=60)
    finally:
        app.close()
    assert {r.key for r in ticks} == {b"tick"}


def _latest_counts(kafka: LocalKafka, topic: str) -> dict[str, int]:
    latest: dict[str, int] = {}
    for r in kafka.consume_all(topic):
        assert r.key is not None and r.value is not None
        latest[r.key.decode()] = Serdes.Long().deserializer().deserialize(topic, r.value)
    return latest


def _counts_and_tiers(src: str, users: str, mid: str, counts: str, tiers: str) -> Topology:
    """A count behind a repartition-like hop, and a stream-table join: the stateful kinds."""
    b = StreamsBuilder()
    stream = b.stream(src, Consumed.with_(S, S))
    stream.map_values(lambda v: v.upper()).to(mid, Produced.with_(S, S))
    b.stream(mid, Consumed.with_(S, S)).group_by_key().count().to_stream().to(counts)
    table = b.table(users, Consumed.with_(S, S))
    stream.join(table, lambda v, tier: f"{v}:{tier}").to(tiers, Produced.with_(S, S))
    return b.build()


@pytest.mark.integration
@pytest.mark.slow
def test_a_count_and_a_join_answer_as_records_arrive_and_a_restart_restores_their_stores(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, users = topic_factory("ll-src", partitions=2), topic_factory("ll-users", partitions=2)
    mid, counts = topic_factory("ll-mid", partitions=2), topic_factory("ll-counts", partitions=2)
    tiers = topic_factory("ll-tiers", partitions=2)
    topology = lambda: _counts_and_tiers(src, users, mid, counts, tiers)  # noqa: E731
    config = _config(kafka, tmp_path, "ll-stateful", **{"spark.kspark.lowLatencyBatchMs": 600_000})
    app = KafkaStreams(topology(), config, spark=spark)
    plan = app.physical_plan()
    assert [q.stage for q in plan.queries] == [Stage.LOW_LATENCY]
    assert all(s.stage is Stage.LOW_LATENCY for s in plan.subtopologies)
    # The rows the stream joins come after 6,000 others: more than one poll takes.
    filler = [(b"f%d" % i, b"-", 1, i % 2) for i in range(6_000)]
    kafka.produce(users, [*filler, *((b"k%d" % i, b"tier%d" % i, 1, i % 2) for i in range(4))])

    def wave_rows(wave: int) -> list[tuple[bytes, bytes, int, int]]:
        return [
            (b"k%d" % (i % 4), b"w%d-%d" % (wave, i), 1_000 * (wave + 1) + i, i % 4 % 2) for i in range(20)
        ]

    # The first wave is there before the start, beside the table: a task takes the table's
    # (earlier) records first, waiting for its partition to be read to its end (KIP-695), so
    # that no stream record misses its row.
    kafka.produce(src, wave_rows(0))
    app.start()
    try:
        for wave in range(2):
            if wave:
                kafka.produce(src, wave_rows(wave))
            want = {f"k{k}": 5 * (wave + 1) for k in range(4)}
            assert _wait_for(lambda want=want: _latest_counts(kafka, counts) == want, 60), _latest_counts(
                kafka, counts
            )
        assert _wait_for(lambda: len(_values(kafka, tiers)) == 40, 60)
        assert _values(kafka, tiers) == sorted(f"w{w}-{i}:tier{i % 4}" for w in range(2) for i in range(20))
    finally:
        assert app.close() is True
    # The group holds each task's offsets and, as their metadata, its stream time (Kafka Streams
    # commits partition time there).
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "ll-stateful"})
    try:
        got = consumer.committed([TopicPartition(mid, p) for p in range(2)], timeout=30)
    finally:
        consumer.close()
    assert sum(tp.offset for tp in got) == 40  # every record of mid (partitioned by key)
    assert all('"stream_time":2' in (tp.metadata or "") for tp in got), [tp.metadata for tp in got]
    # A restart (its stores in the same state.dir, or wiped: restored from the changelog topics)
    # counts on from where the group committed.
    for wiped in (False, True):
        if wiped:
            import shutil

            shutil.rmtree(tmp_path / "state" / "ll-stateful" / "tasks")
        kafka.produce(src, [(b"k1", b"late", 9_000, 1)])
        again = KafkaStreams(topology(), config, spark=spark)
        try:
            again.process_available()
        finally:
            again.close()
        assert _latest_counts(kafka, counts)["k1"] == 11 + wiped


def test_the_stores_of_a_low_latency_sub_topology_are_refused_to_queries_saying_why() -> None:
    from kspark.runtime.spark.replica import store_homes

    topology = _with_count("in", "mid", "counts")
    config = {"application.id": "ll", "bootstrap.servers": "unused:9092", **LOW}
    plan = physical_plan(topology, config, {"in": 2, "mid": 2, "counts": 2})
    homes, refused, logged = store_homes(plan, topology.internal_builder, "ll")
    (store,) = plan.subtopologies[1].stores
    assert store not in homes
    assert "runs in low-latency tasks (spark.kspark.lowLatency)" in refused[store]
    assert logged[store].changelog == f"ll-{store}-changelog"  # its changelog topic is still created
    # In micro-batches the same store is queryable.
    assert (
        store
        in store_homes(
            physical_plan(topology, {**config, **{LOW_KEY: "false"}}, plan.partitions),
            topology.internal_builder,
            "ll",
        )[0]
    )


@pytest.mark.integration
@pytest.mark.slow
def test_a_count_goes_on_over_batch_ends_in_its_one_task_directory_whichever_worker_runs_it(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    # Batches of 1.5 s: the waves below cross several batch ends, after each of which Spark may
    # run a partition in the other Python worker.
    src, counts = topic_factory("ll-ends-in", partitions=2), topic_factory("ll-ends-counts", partitions=2)
    b = StreamsBuilder()
    b.stream(src, Consumed.with_(S, S)).group_by_key().count().to_stream().to(counts)
    config = _config(kafka, tmp_path, "ll-ends", **{"spark.kspark.lowLatencyBatchMs": 1_500})
    app = KafkaStreams(b.build(), config, spark=spark)
    app.start()
    try:
        for wave in range(6):
            kafka.produce(src, [(b"k%d" % i, b"v", 1_000 * wave + i, i % 2) for i in range(8)])
            want = {f"k{i}": wave + 1 for i in range(8)}
            assert _wait_for(lambda want=want: _latest_counts(kafka, counts) == want, 60), (
                wave,
                _latest_counts(kafka, counts),
            )
            time.sleep(1.0)
    finally:
        assert app.close() is True
    # A task closes its on-disk stores when a batch ends (StatefulTask.hand_over): the worker
    # that runs the partition next reopens its directory at the checkpoint. Had the task stayed
    # open in its worker, another worker taking the partition would have claimed a second
    # directory ("0_1.1") and restored it from the changelog.
    assert sorted(p.name for p in (tmp_path / "state" / "ll-ends" / "tasks").iterdir()) == ["0_0", "0_1"]
