"""The Spark runner end to end: real Kafka in, Spark Structured Streaming, real Kafka out.

Each test produces records to the shared local broker, runs a topology with
``KafkaStreams.process_available()`` on the shared SparkSession, consumes
the output topic and asserts the exact records. Stateful topologies are
also run on the ``TopologyTestDriver`` and must give the same per-key
sequences (the runner is checked against the reference interpreter).
"""

from __future__ import annotations

import operator
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kspark import Consumed, Grouped, KafkaStreams, KeyValue, Materialized, Produced, StreamsBuilder, Topology
from kspark.dev.kafka import KafkaRecord, LocalKafka
from kspark.errors import (
    ConfigException,
    InvalidStateStoreException,
    StreamsException,
    StreamsNotStartedException,
)
from kspark.kafka_streams import StreamsUncaughtExceptionHandler
from kspark.processor import Processor, ProcessorContext, PunctuationType, Record
from kspark.processor.internals.partitioning import default_partition
from kspark.runtime.spark import runner as runner_mod
from kspark.runtime.spark import session as session_mod
from kspark.runtime.spark.plan import Stage
from kspark.runtime.spark.time_mode import NO_TIME, PROCESSING_TIME, checkpoint_time_mode
from kspark.runtime.spark.worker_start import start_python_workers
from kspark.serde import Serdes
from kspark.state import Stores
from kspark.testing import TopologyTestDriver

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# Spark's Python workers cannot import this test module, so processors defined
# here travel by value (an application module installed on the cluster would not need this).
pyspark_cloudpickle = pytest.importorskip("pyspark.cloudpickle")
pyspark_cloudpickle.register_pickle_by_value(sys.modules[__name__])

S = Serdes.String()
L = Serdes.Long()
J = Serdes.JSON().serializer()


def _config(kafka: LocalKafka, tmp_path: Path, app: str, **extra: Any) -> dict[str, Any]:
    return {
        "application.id": app,
        "bootstrap.servers": kafka.bootstrap_servers,
        "state.dir": str(tmp_path / "state"),
        **extra,
    }


def _run(topology: Topology, config: dict[str, Any], spark: Any) -> int:
    app = KafkaStreams(topology, config, spark=spark)
    try:
        return app.process_available()
    finally:
        app.close()
        assert app.state() is KafkaStreams.State.NOT_RUNNING


def _by_key(records: list[KafkaRecord], value_deser: Any) -> dict[str, list[tuple[Any, int]]]:
    out: dict[str, list[tuple[Any, int]]] = {}
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        key = S.deserializer().deserialize("", r.key)
        out.setdefault(key, []).append((value_deser.deserialize("", r.value), r.timestamp))
    return out


def test_stateless_dsl_keeps_keys_values_timestamps_and_headers(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("in", partitions=2), topic_factory("out", partitions=2)
    b = StreamsBuilder()
    (
        b.stream(src, Consumed.with_(S, Serdes.JSON()))
        .filter(lambda k, v: v["duration"] > 10)
        .map_values(lambda v: {"user": v["user"], "minutes": v["duration"] // 60})
        .flat_map_values(lambda v: [v, {**v, "copy": True}] if v["minutes"] > 1 else [v])
        .to(dst, Produced.with_(S, Serdes.JSON()))
    )
    events = [("u1", 5, 1000), ("u2", 61, 2000), ("u1", 130, 3000), ("u3", 11, 4000)]
    kafka.produce(
        src,
        [
            (
                u.encode(),
                Serdes.JSON().serializer().serialize(src, {"user": u, "duration": d}),
                ts,
                None,
                [("h", b"x")],
            )
            for u, d, ts in events
        ],
    )

    processed = _run(b.build(), _config(kafka, tmp_path, "stateless"), spark)

    assert processed == 4
    got = kafka.consume_all(dst, min_records=4)
    JD = Serdes.JSON().deserializer()
    expected = [
        (b"u1", {"user": "u1", "minutes": 2}, 3000, (("h", b"x"),)),
        (b"u1", {"user": "u1", "minutes": 2, "copy": True}, 3000, (("h", b"x"),)),
        (b"u2", {"user": "u2", "minutes": 1}, 2000, (("h", b"x"),)),
        (b"u3", {"user": "u3", "minutes": 0}, 4000, (("h", b"x"),)),
    ]
    actual = [(r.key, JD.deserialize(dst, r.value), r.timestamp, r.headers) for r in got]
    assert sorted(actual, key=repr) == sorted(expected, key=repr)
    # Keyed output lands where the Java producer's partitioner puts it.
    assert all(r.partition == default_partition(r.key or b"", 2) for r in got)


def _count_topology(src: str, dst: str) -> Topology:
    b = StreamsBuilder()
    (
        b.stream(src, Consumed.with_(S, S))
        .group_by_key()
        .count(Materialized.as_("counts"))
        .to_stream()
        .to(dst, Produced.with_(S, L))
    )
    return b.build()


def _driver_outputs(topology: Topology, src: str, dst: str, records: list[tuple[str, str, int]]) -> Any:
    with TopologyTestDriver(topology, {"application.id": "ref"}) as d:
        inp = d.create_input_topic(src, S, S)
        for k, v, ts in records:
            inp.pipe_input(k, v, timestamp=ts)
        out = d.create_output_topic(dst, S, L)
        by_key: dict[str, list[tuple[Any, int]]] = {}
        for r in out.read_records_to_list():
            by_key.setdefault(r.key, []).append((r.value, r.timestamp))
        return by_key


def test_count_matches_the_driver_and_survives_a_restart(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("in", partitions=3), topic_factory("out", partitions=3)
    records = [(f"k{i % 4}", f"v{i}", 1000 + i) for i in range(24)]
    config = _config(kafka, tmp_path, "count-restart", **{"statestore.cache.max.bytes": 0})

    kafka.produce(src, [(k.encode(), v.encode(), ts) for k, v, ts in records[:10]])
    assert _run(_count_topology(src, dst), config, spark) == 10
    # A new application instance resumes from its checkpoint: no re-processing, state kept.
    kafka.produce(src, [(k.encode(), v.encode(), ts) for k, v, ts in records[10:]])
    assert _run(_count_topology(src, dst), config, spark) == 14

    got = _by_key(kafka.consume_all(dst, min_records=24), L.deserializer())
    assert got == _driver_outputs(_count_topology(src, dst), src, dst, records)
    assert got["k0"][-1] == (6, 1020)


def test_caching_forwards_the_last_value_per_key_per_batch(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("in", partitions=1), topic_factory("out", partitions=1)
    records = [(f"k{i % 2}", f"v{i}", 1000 + i) for i in range(10)]
    kafka.produce(src, [(k.encode(), v.encode(), ts) for k, v, ts in records])

    _run(_count_topology(src, dst), _config(kafka, tmp_path, "cached"), spark)

    got = _by_key(kafka.consume_all(dst, min_records=2), L.deserializer())
    # One micro-batch is one commit: the cache forwards each key's final count once.
    assert got == {"k0": [(5, 1008)], "k1": [(5, 1009)]}


class _Dedupe(Processor[str, str]):
    """Forwards the first record of each key; remembers keys in a store (cross-batch state)."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.seen = context.get_state_store("seen")

    def process(self, record: Record[str, str]) -> None:
        if self.seen.get(record.key) is None:
            self.seen.put(record.key, record.timestamp)
            self.context.forward(record)


def test_processor_api_with_a_store(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("in", partitions=2), topic_factory("out", partitions=2)
    topo = Topology()
    topo.add_source("src", src, key_deserializer=S.deserializer(), value_deserializer=S.deserializer())
    topo.add_processor("dedupe", _Dedupe, "src")
    topo.add_state_store(
        Stores.key_value_store_builder(Stores.in_memory_key_value_store("seen"), S, L), "dedupe"
    )
    topo.add_sink("sink", dst, "dedupe", key_serializer=S.serializer(), value_serializer=S.serializer())
    config = _config(kafka, tmp_path, "dedupe")

    kafka.produce(src, [(b"a", b"1", 10), (b"b", b"2", 20), (b"a", b"3", 30)])
    _run(topo, config, spark)
    kafka.produce(src, [(b"b", b"4", 40), (b"c", b"5", 50)])
    _run(topo, config, spark)

    got = sorted(KeyValue(r.key, (r.value, r.timestamp)) for r in kafka.consume_all(dst, min_records=3))
    assert got == [(b"a", (b"1", 10)), (b"b", (b"2", 20)), (b"c", (b"5", 50))]


def test_group_by_runs_two_subtopologies_joined_by_a_repartition_topic(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("in", partitions=2), topic_factory("out", partitions=2)

    def topology() -> Topology:
        b = StreamsBuilder()
        (
            b.stream(src, Consumed.with_(S, S))
            .group_by(lambda k, v: v[0], Grouped.with_(S, S))
            .count()
            .to_stream()
            .to(dst, Produced.with_(S, L))
        )
        return b.build()

    records = [(f"user{i}", f"{'ab'[i % 2]}{i}", 1000 + i) for i in range(8)]
    kafka.produce(src, [(k.encode(), v.encode(), ts) for k, v, ts in records])
    config = _config(kafka, tmp_path, "regroup", **{"statestore.cache.max.bytes": 0})

    _run(topology(), config, spark)

    assert "regroup-KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition" in kafka.list_topics()
    got = _by_key(kafka.consume_all(dst, min_records=8), L.deserializer())
    assert {k: [c for c, _ in v] for k, v in got.items()} == {"a": [1, 2, 3, 4], "b": [1, 2, 3, 4]}
    assert got["a"][-1] == (4, 1006) and got["b"][-1] == (4, 1007)


def test_bad_config_fails_before_anything_starts(kafka: LocalKafka, tmp_path: Path) -> None:
    with pytest.raises(ConfigException, match=r"no\.such\.key"):
        KafkaStreams(_count_topology("a", "b"), {**_config(kafka, tmp_path, "bad"), "no.such.key": 1})


def test_store_reads_on_an_app_that_is_not_running_fail_clearly(kafka: LocalKafka, tmp_path: Path) -> None:
    # As Kafka Streams' validateIsRunningOrRebalancing: stores and metadata alike are refused
    # before start(), with StreamsNotStartedException (an InvalidStateStoreException).
    app = KafkaStreams(_count_topology("a", "b"), _config(kafka, tmp_path, "not-running"))
    calls: list[Callable[[], object]] = [
        lambda: app.store("counts"),
        app.metadata_for_all_streams_clients,
        lambda: app.streams_metadata_for_store("counts"),
        lambda: app.query_metadata_for_key("counts", "k", Serdes.String().serializer()),
    ]
    for call in calls:
        with pytest.raises(StreamsNotStartedException, match="has not been started"):
            call()
    assert issubclass(StreamsNotStartedException, InvalidStateStoreException)


class _Heartbeat(Processor[str, str]):
    """Counts records; every second of wall-clock time forwards the count (also without input)."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store("count")
        context.schedule(1_000, PunctuationType.WALL_CLOCK_TIME, self.beat)

    def process(self, record: Record[str, str]) -> None:
        self.store.put("n", (self.store.get("n") or 0) + 1)

    def beat(self, timestamp: int) -> None:
        self.context.forward(Record("n", self.store.get("n") or 0, timestamp))


def test_wall_clock_punctuation_fires_without_new_input(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("in", partitions=1), topic_factory("out", partitions=1)
    topo = Topology()
    topo.add_source("src", src, key_deserializer=S.deserializer(), value_deserializer=S.deserializer())
    topo.add_processor("beat", _Heartbeat, "src")
    count = Stores.key_value_store_builder(Stores.in_memory_key_value_store("count"), S, L)
    topo.add_state_store(count, "beat")
    topo.add_sink("sink", dst, "beat", key_serializer=S.serializer(), value_serializer=L.serializer())
    kafka.produce(src, [(b"a", b"1", 10), (b"b", b"2", 20), (b"c", b"3", 30)])

    app = KafkaStreams(
        topo, _config(kafka, tmp_path, "heartbeat", **{"commit.interval.ms": 500}), spark=spark
    )
    app.start()
    try:
        # The input is processed in the first batch; later beats come from Spark timers alone.
        beats = kafka.consume_all(dst, min_records=4, timeout=90)
    finally:
        app.close()
    values = [L.deserializer().deserialize(dst, r.value) for r in beats]
    assert len(values) >= 4 and values[-1] == 3
    stamps = [r.timestamp for r in beats]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    (query,) = app.physical_plan().queries
    assert checkpoint_time_mode(app._runner.checkpoint_dir(query)) == PROCESSING_TIME  # type: ignore[union-attr]


def test_an_idle_query_of_dsl_operators_runs_no_micro_batches(
    kafka: LocalKafka,
    spark: Any,
    topic_factory: Callable[..., str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without Processor API code no task can schedule a wall-clock punctuation, so the query has
    no processing-time timers, and Spark runs a batch only when input arrives (with them it would
    run one every trigger over every task and store)."""
    src, dst = topic_factory("in", partitions=1), topic_factory("out", partitions=1)
    b = StreamsBuilder()
    # JSON values: an engine count (not lowered to Spark's aggregation), a transformWithState query
    b.stream(src, Consumed.with_(S, Serdes.JSON())).group_by_key().count().to_stream().to(
        dst, Produced.with_(S, L)
    )
    kafka.produce(src, [(b"a", b"1", 10), (b"b", b"2", 20), (b"a", b"3", 30)])
    app = KafkaStreams(
        b.build(), _config(kafka, tmp_path, "idle", **{"commit.interval.ms": 200}), spark=spark
    )
    (query,) = app.physical_plan().queries
    assert query.stage.name == "ENGINE" and not query.subtopologies[0].wall_clock
    set_for: list[str] = []

    def use_local_checkpoint_files(session: Any, state_dir: str) -> None:
        set_for.append(state_dir)
        session_mod.use_local_checkpoint_files(session, state_dir)

    monkeypatch.setattr(runner_mod, "use_local_checkpoint_files", use_local_checkpoint_files)
    app.start()
    # a local state.dir: Spark writes this query's checkpoint through Hadoop's FileSystem API
    assert set_for == [str(tmp_path / "state")]
    assert spark.conf.get(session_mod.CHECKPOINT_FILE_MANAGER, None) == session_mod.FILE_SYSTEM_CHECKPOINTS
    try:
        # one batch, one commit: the record cache keeps a's last count only
        assert len(kafka.consume_all(dst, min_records=2, timeout=90)) == 2
        (running,) = app._runner.queries  # type: ignore[union-attr]
        deadline = time.monotonic() + 30
        while running.lastProgress is None and time.monotonic() < deadline:
            time.sleep(0.1)  # the batch that wrote the output may still be committing
        time.sleep(1.0)
        batches = running.lastProgress["batchId"]
        time.sleep(3.0)  # fifteen triggers
        assert running.lastProgress["batchId"] == batches
        kafka.produce(src, [(b"b", b"4", 40)])
        got = kafka.consume_all(dst, min_records=3, timeout=90)
        # the batch's output is written before Spark commits it and reports its progress
        deadline = time.monotonic() + 30
        while running.lastProgress["batchId"] == batches and time.monotonic() < deadline:
            time.sleep(0.1)
        assert running.lastProgress["batchId"] > batches
    finally:
        app.close()
    assert [(r.key, L.deserializer().deserialize(dst, r.value)) for r in got][-1] == (b"b", 2)
    assert checkpoint_time_mode(app._runner.checkpoint_dir(query)) == NO_TIME  # type: ignore[union-attr]


def test_a_failing_processor_stops_the_app_with_a_clear_error_and_the_listeners_see_it(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("in", partitions=1), topic_factory("out", partitions=1)

    def explode(value: str) -> str:
        if value == "bad":
            raise ValueError("cannot handle 'bad'")
        return value

    b = StreamsBuilder()
    b.stream(src, Consumed.with_(S, S)).map_values(explode).to(dst, Produced.with_(S, S))
    kafka.produce(src, [(b"k", b"good", 1), (b"k", b"bad", 2)])
    app = KafkaStreams(b.build(), _config(kafka, tmp_path, "failing"), spark=spark)
    transitions: list[tuple[str, str]] = []
    handled: list[BaseException] = []
    app.set_state_listener(lambda new, old: transitions.append((old.value, new.value)))

    def handler(error: BaseException) -> StreamsUncaughtExceptionHandler:
        handled.append(error)
        return StreamsUncaughtExceptionHandler.SHUTDOWN_CLIENT

    app.set_uncaught_exception_handler(handler)

    with pytest.raises(StreamsException, match="cannot handle 'bad'"):
        app.process_available()

    assert app.state() is KafkaStreams.State.ERROR
    assert transitions == [
        ("CREATED", "REBALANCING"),
        ("REBALANCING", "PENDING_ERROR"),
        ("PENDING_ERROR", "ERROR"),
    ]
    assert len(handled) == 1
    # The batch failed before its output was produced: nothing of it reached the output topic.
    assert kafka.consume_all(dst) == []


def test_a_replaced_task_restarts_from_committed_state_not_from_a_half_processed_batch(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("in", partitions=1), topic_factory("out", partitions=1)
    marker = tmp_path / "failed-once"

    def fail_once_at_four(count: int) -> int:
        # Fails when the task's count store already holds 4: that state is not committed.
        if count == 4 and not marker.exists():
            marker.write_text("x")
            raise RuntimeError("transient failure")
        return count

    b = StreamsBuilder()
    (
        b.stream(src, Consumed.with_(S, S))
        .group_by_key()
        .count(Materialized.with_(S, L).with_caching_disabled())
        .to_stream()
        .map_values(fail_once_at_four)
        .to(dst, Produced.with_(S, L))
    )
    config = _config(kafka, tmp_path, "replace", **{"commit.interval.ms": 500})
    app = KafkaStreams(b.build(), config, spark=spark)
    app.set_uncaught_exception_handler(lambda e: StreamsUncaughtExceptionHandler.REPLACE_THREAD)
    app.start()
    try:
        # First a committed batch, so the task is warm in a Python worker; then the failing one.
        kafka.produce(src, [(b"a", b"1", 10), (b"a", b"2", 20)])
        kafka.consume_all(dst, min_records=2, timeout=120)
        kafka.produce(src, [(b"a", b"3", 30), (b"a", b"4", 40), (b"a", b"5", 50)])
        got = kafka.consume_all(dst, min_records=5, timeout=120)
    finally:
        app.close()
    assert marker.exists()
    # A retry that reused the warm task (its store at 4) would count on from 4.
    assert [(L.deserializer().deserialize(dst, r.value), r.timestamp) for r in got] == [
        (1, 10),
        (2, 20),
        (3, 30),
        (4, 40),
        (5, 50),
    ]


def _reference_per_task(
    topology: Callable[[str, str], Topology], src: str, dst: str, produced: list[KafkaRecord]
) -> list[Any]:
    """What the TopologyTestDriver writes to ``dst`` (Long values) for ``produced``, run as Kafka
    Streams runs it: one task per partition, each partition's records in offset order."""
    out: list[Any] = []
    for partition in sorted({r.partition for r in produced}):
        with TopologyTestDriver(topology(src, dst), {"application.id": "ref"}) as d:
            inp = d.create_input_topic(src, Serdes.ByteArray(), Serdes.ByteArray())
            for r in sorted(produced, key=lambda r: r.offset):
                if r.partition == partition:
                    inp.pipe_input(r.key, r.value, timestamp=r.timestamp, headers=list(r.headers))
            out += d.create_output_topic(dst, Serdes.ByteArray(), L).read_records_to_list()
    return out


def _native_count_topology(src: str, dst: str) -> Topology:
    b = StreamsBuilder()
    (
        b.stream(src, Consumed.with_(S, S))
        .group_by_key()
        .count()
        .to_stream()
        .map_values(lambda n: n * 10)
        .to(dst, Produced.with_(S, L))
    )
    return b.build()


def test_native_count_gives_the_engines_final_counts_timestamps_and_headers_across_restarts(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    from kspark.config import StreamsConfig
    from kspark.runtime.spark.lowering import native_count

    src, dst = topic_factory("in", partitions=3), topic_factory("out", partitions=3)
    # invalid UTF-8: the engine's String key is the decoded-with-replacement text
    bad_utf8 = [b"\xff", b"a\xff", b"b\xe2\x82", b"c\xc3"]
    raw: list[tuple[Any, ...]] = []
    for i in range(60):
        key = bad_utf8[i % 4] if i % 5 == 0 else f"k{i % 7}".encode()
        ts = 5_000 + (i * 37) % 50  # out of order: the count's timestamp is the largest so far
        # some records carry headers (two, one null-valued), the rest none: the tail reads them back
        headers = [("n", str(i).encode()), ("z", None)] if i % 3 == 0 else None
        raw.append((key, f"v{i}".encode(), ts, None, headers))
    raw += [(None, b"no key", 6_000), (b"k1", None, 6_001)]  # skipped, as the engine does
    topo = _native_count_topology(src, dst)
    builder = topo.internal_builder.set_application_id("native-count")
    config = _config(kafka, tmp_path, "native-count")
    assert native_count(builder, builder.node_groups()[0], StreamsConfig(config)) is not None

    kafka.produce(src, raw[:25])
    _run(_native_count_topology(src, dst), config, spark)
    kafka.produce(src, raw[25:])
    _run(_native_count_topology(src, dst), config, spark)

    Out = dict[bytes, list[tuple[int, int, tuple[tuple[str, bytes | None], ...]]]]
    got: Out = {}
    for r in sorted(kafka.consume_all(dst, min_records=1, timeout=60), key=lambda r: (r.partition, r.offset)):
        got.setdefault(r.key, []).append(
            (L.deserializer().deserialize("", r.value), r.timestamp, tuple(r.headers))
        )
    want: Out = {}
    for o in _reference_per_task(
        _native_count_topology, src, dst, kafka.consume_all(src, min_records=len(raw))
    ):
        want.setdefault(o.key, []).append((o.value, o.timestamp, tuple(o.headers.to_list())))
    assert {k: v[-1] for k, v in got.items()} == {k: v[-1] for k, v in want.items()}
    for key, seq in got.items():
        assert set(seq) <= set(want[key]), key
    assert b"a\xef\xbf\xbd" in got and got[b"k1"][-1][0] == 10 * sum(1 for r in raw[:60] if r[0] == b"k1")


def _reduce_topology(reducer: Any, values: Any, scale: int = 10) -> Callable[[str, str], Topology]:
    def topology(src: str, dst: str) -> Topology:
        b = StreamsBuilder()
        (
            b.stream(src, Consumed.with_(S, values))
            .group_by_key()
            .reduce(reducer)
            .to_stream()
            .map_values(lambda v: v * scale)
            .to(dst, Produced.with_(S, L))
        )
        return b.build()

    return topology


@pytest.mark.parametrize(
    ("reducer", "values", "pack"),
    [(operator.add, Serdes.Long(), ">q"), (min, Serdes.Integer(), ">i"), (max, Serdes.Long(), ">q")],
)
def test_native_reduce_gives_the_engines_values_and_timestamps_across_restarts(
    kafka: LocalKafka,
    spark: Any,
    topic_factory: Callable[..., str],
    tmp_path: Path,
    reducer: Any,
    values: Any,
    pack: str,
) -> None:
    from kspark.config import StreamsConfig
    from kspark.runtime.spark.lowering import native_count

    src, dst = topic_factory("in", partitions=3), topic_factory("out", partitions=3)
    topology = _reduce_topology(reducer, values)
    big = 2**55 if pack == ">q" else 2**30  # a sum of them, times 10, stays a Long
    raw: list[tuple[Any, ...]] = []
    for i in range(60):
        # negative and large values: both halves of two's complement must decode
        value = (-1) ** i * ((i * 7919) % 1000) * (big // 1000 if i % 4 == 0 else 1)
        raw.append((f"k{i % 7}".encode(), struct.pack(pack, value), 5_000 + (i * 37) % 50))
    raw += [(None, struct.pack(pack, 1), 6_000), (b"k1", None, 6_001)]  # skipped, as the engine does
    builder = topology(src, dst).internal_builder.set_application_id("native-reduce")
    config = _config(kafka, tmp_path, f"native-reduce-{reducer.__name__}")
    native = native_count(builder, builder.node_groups()[0], StreamsConfig(config))
    assert native is not None and native.reduce is not None

    kafka.produce(src, raw[:25])
    _run(topology(src, dst), config, spark)
    kafka.produce(src, raw[25:])
    _run(topology(src, dst), config, spark)

    got: dict[bytes, list[tuple[int, int]]] = {}
    for r in sorted(kafka.consume_all(dst, min_records=1, timeout=60), key=lambda r: (r.partition, r.offset)):
        got.setdefault(r.key, []).append((L.deserializer().deserialize("", r.value), r.timestamp))
    want: dict[bytes, list[tuple[int, int]]] = {}
    for o in _reference_per_task(topology, src, dst, kafka.consume_all(src, min_records=len(raw))):
        want.setdefault(o.key, []).append((o.value, o.timestamp))
    assert {k: v[-1] for k, v in got.items()} == {k: v[-1] for k, v in want.items()}
    for key, seq in got.items():
        assert set(seq) <= set(want[key]), key
    assert any(v < 0 for seq in want.values() for v, _ in seq)  # negative values decoded too


def test_native_reduce_fails_on_a_value_of_the_wrong_size_as_the_engine_does(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("in", partitions=1), topic_factory("out", partitions=1)
    topology = _reduce_topology(operator.add, Serdes.Long())
    # a null key does not spare it: the engine deserializes the value first
    kafka.produce(src, [(b"k", struct.pack(">q", 5), 1), (None, b"\x01\x02\x03", 2)])
    app = KafkaStreams(topology(src, dst), _config(kafka, tmp_path, "native-reduce-bad"), spark=spark)
    with pytest.raises(
        StreamsException, match=r"Size of data received by LongDeserializer is not 8 \(got 3 bytes\)"
    ):
        app.process_available()
    app.close()
    assert kafka.consume_all(dst) == []


def test_a_native_sum_out_of_the_long_range_fails_as_the_engines_store_does(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("in", partitions=1), topic_factory("out", partitions=1)
    topology = _reduce_topology(operator.add, Serdes.Long(), scale=1)
    big = struct.pack(">q", 2**62)
    with TopologyTestDriver(topology(src, dst), {"application.id": "ref"}) as d:
        inp = d.create_input_topic(src, Serdes.ByteArray(), Serdes.ByteArray())
        inp.pipe_input(b"k", big, timestamp=1)
        with pytest.raises(StreamsException, match="LongSerializer cannot serialize"):
            inp.pipe_input(b"k", big, timestamp=2)
    kafka.produce(src, [(b"k", big, 1), (b"k", big, 2)])
    # With ANSI off Spark's plain sum would wrap around silently; the native reduce must not.
    ansi = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        app = KafkaStreams(topology(src, dst), _config(kafka, tmp_path, "native-sum-overflow"), spark=spark)
        with pytest.raises(StreamsException, match="LongSerializer cannot serialize the sum"):
            app.process_available()
        app.close()
    finally:
        spark.conf.set("spark.sql.ansi.enabled", ansi)
    assert kafka.consume_all(dst) == []


def _windowed_count_topology(src: str, dst: str) -> Topology:
    from kspark import TimeWindows

    b = StreamsBuilder()
    (
        b.stream(src, Consumed.with_(S, S))
        .group_by_key()
        .windowed_by(TimeWindows(size=1_000, grace=500))
        .count()
        .to_stream()
        .map(lambda wk, n: KeyValue(f"{wk.key}@{wk.window.start}", n))
        .to(dst, Produced.with_(S, L))
    )
    return b.build()


def test_native_windowed_count_forwards_each_windows_latest_record_headers(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    """Spark hands the stage a has-headers flag; the headers of forwarded windows are read back."""
    from kspark.config import StreamsConfig
    from kspark.runtime.spark.lowering import native_count

    src, dst = topic_factory("in", partitions=2), topic_factory("out", partitions=2)
    raw: list[tuple[Any, ...]] = []
    for i in range(80):
        headers = [("n", str(i).encode()), ("z", None)] if i % 3 else None
        raw.append((f"k{i % 5}".encode(), f"v{i}".encode(), 10_000 + 97 * i, None, headers))
    topo = _windowed_count_topology(src, dst)
    builder = topo.internal_builder.set_application_id("native-windowed")
    config = _config(kafka, tmp_path, "native-windowed")
    native = native_count(builder, builder.node_groups()[0], StreamsConfig(config))
    assert native is not None and native.windows is not None
    kafka.produce(src, raw)
    _run(_windowed_count_topology(src, dst), config, spark)

    got: dict[bytes, tuple[int, int, tuple[tuple[str, bytes | None], ...]]] = {}
    for r in sorted(kafka.consume_all(dst, min_records=1, timeout=60), key=lambda r: (r.partition, r.offset)):
        got[r.key] = (L.deserializer().deserialize("", r.value), r.timestamp, tuple(r.headers))
    want = {
        o.key: (o.value, o.timestamp, tuple(o.headers.to_list()))
        for o in _reference_per_task(
            _windowed_count_topology, src, dst, kafka.consume_all(src, min_records=len(raw))
        )
    }
    assert got == want
    assert any(h for _, _, h in got.values()) and any(not h for _, _, h in got.values())


def _slow_batch_app(
    kafka: LocalKafka, topic_factory: Callable[..., str], tmp_path: Path, app_id: str
) -> tuple[Topology, dict[str, Any], str, str, Path]:
    """Uppercase records, sleeping 3 s on "slow" after writing the marker file; its input
    holds a, slow, b: (topology, config, input topic, output topic, marker)."""
    src, dst = topic_factory("in", partitions=1), topic_factory("out", partitions=1)
    busy = tmp_path / "busy"

    def slow_on_marker(value: str) -> str:
        if value == "slow":
            busy.write_text("x")
            time.sleep(3)
        return value.upper()

    b = StreamsBuilder()
    b.stream(src, Consumed.with_(S, S)).map_values(slow_on_marker).to(dst, Produced.with_(S, S))
    kafka.produce(src, [(b"k", b"a", 1), (b"k", b"slow", 2), (b"k", b"b", 3)])
    return b.build(), _config(kafka, tmp_path, app_id, **{"commit.interval.ms": 200}), src, dst, busy


def _wait_for(marker: Path) -> None:
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), "the batch never reached the slow record"


def test_close_lets_the_running_micro_batch_finish_and_commit(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    topology, config, src, dst, busy = _slow_batch_app(kafka, topic_factory, tmp_path, "drain")
    app = KafkaStreams(topology, config, spark=spark)
    app.start()
    try:
        _wait_for(busy)
    finally:
        app.close()
    # Kafka Streams finishes the records in hand and commits on close: all three are out...
    assert [r.value for r in kafka.consume_all(dst)] == [b"A", b"SLOW", b"B"]

    # ...and committed: a restart starts after them instead of running the batch again.
    kafka.produce(src, [(b"k", b"c", 4)])
    busy.unlink()
    again = KafkaStreams(topology, config, spark=spark)
    again.start()
    try:
        got = kafka.consume_all(dst, min_records=4, timeout=120)
    finally:
        again.close()
    assert [r.value for r in got] == [b"A", b"SLOW", b"B", b"C"]
    assert not busy.exists()


def test_close_with_a_timeout_cancels_a_longer_batch_which_runs_again_at_the_next_start(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    topology, config, _, dst, busy = _slow_batch_app(kafka, topic_factory, tmp_path, "cut-short")
    app = KafkaStreams(topology, config, spark=spark)
    app.start()
    try:
        _wait_for(busy)
    finally:
        # As Kafka Streams: False when the timeout ran out before everything was done.
        assert app.close(timeout=0.2) is False
    assert app.state() is KafkaStreams.State.NOT_RUNNING
    assert b"B" not in [r.value for r in kafka.consume_all(dst)]

    again = KafkaStreams(topology, config, spark=spark)
    again.start()
    try:
        deadline = time.monotonic() + 120
        got = kafka.consume_all(dst)
        while b"B" not in [r.value for r in got] and time.monotonic() < deadline:
            time.sleep(0.2)
            got = kafka.consume_all(dst)
    finally:
        assert again.close() is True
    # Nothing of the cancelled batch was committed: it ran again whole (at-least-once).
    values = [r.value for r in got]
    assert values[-3:] == [b"A", b"SLOW", b"B"] and set(values) == {b"A", b"SLOW", b"B"}


@pytest.mark.parametrize(
    "key", ["security.protocol", "consumer.security.protocol", "producer.security.protocol"]
)
def test_a_secured_cluster_without_a_usable_mechanism_fails_at_creation(
    kafka: LocalKafka, tmp_path: Path, key: str
) -> None:
    # Kafka's default SASL mechanism is Kerberos, which kspark's clients cannot take: said at
    # creation, naming the setting, not in a Spark task later.
    config = {**_config(kafka, tmp_path, "ssl"), key: "SASL_SSL"}
    with pytest.raises(ConfigException, match=r"sasl.mechanism=GSSAPI \(Kerberos"):
        KafkaStreams(_count_topology("a", "b"), config)
    KafkaStreams(_count_topology("a", "b"), {**_config(kafka, tmp_path, "plain"), key: "PLAINTEXT"})


def _join_topology(stream: str, table: str, dst: str) -> Topology:
    b = StreamsBuilder()
    users = b.table(table, Consumed.with_(S, S))
    b.stream(stream, Consumed.with_(S, S)).join(users, lambda v, u: f"{v}/{u}").to(dst, Produced.with_(S, S))
    return b.build()


def test_a_join_batch_spilled_to_disk_joins_as_one_held_in_memory(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    """Table updates interleave with stream records in time, so the result depends on the order
    the task takes records in: spilling must not change it."""
    stream, table = topic_factory("stream", partitions=2), topic_factory("table", partitions=2)
    table_rows = [(f"u{i % 5}".encode(), f"t{i}".encode(), 1_000 + 20 * i) for i in range(40)]
    stream_rows = [(f"u{i % 5}".encode(), f"e{i}".encode(), 1_010 + 7 * i) for i in range(120)]
    kafka.produce(table, table_rows)
    kafka.produce(stream, stream_rows)
    outputs = []
    for name, extra in (("held", {}), ("spilled", {"spark.kspark.spillRows": 3})):
        dst = topic_factory(f"out-{name}", partitions=2)
        _run(_join_topology(stream, table, dst), {**_config(kafka, tmp_path, f"join-{name}"), **extra}, spark)
        by_key: dict[bytes, list[tuple[bytes, int]]] = {}
        for r in kafka.consume_all(dst):  # a key's records come from one task, in its order
            by_key.setdefault(r.key, []).append((r.value, r.timestamp))
        outputs.append(by_key)
    held, spilled = outputs
    assert spilled == held
    # The stream records before a key's first table row find nothing; the rest see the
    # table as it was at their time.
    assert held[b"u0"][:2] == [(b"e0/t0", 1010), (b"e5/t0", 1045)]
    assert sum(len(v) for v in held.values()) == 115
    bad = {**_config(kafka, tmp_path, "join-bad"), "spark.kspark.spillRows": 0}
    with pytest.raises(ConfigException, match=r"spark\.kspark\.spillRows must be a positive integer, got 0"):
        KafkaStreams(_join_topology(stream, table, topic_factory("out-bad")), bad, spark=spark)


def _python_daemons(spark: Any) -> set[int]:
    """The kspark Python daemons this session's JVM has started (processes it forked itself)."""
    jvm_pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    found = set()
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            parent = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # not a process, or gone meanwhile
        if parent == jvm_pid and b"kspark.runtime.spark.worker_daemon" in cmdline:
            found.add(int(proc.name))
    return found


def _stateless(src: str, dst: str) -> Topology:
    b = StreamsBuilder()
    b.stream(src, Consumed.with_(S, S)).map_values(str.upper).to(dst, Produced.with_(S, S))
    return b.build()


def _engine_count(src: str, dst: str) -> Topology:
    b = StreamsBuilder()
    b.stream(src, Consumed.with_(S, S)).group_by_key().count().to_stream().to(dst, Produced.with_(S, L))
    return b.build()


@pytest.mark.parametrize(
    ("stage", "topology"), [(Stage.DIRECT_READ, _stateless), (Stage.ENGINE, _engine_count)]
)
def test_python_workers_started_ahead_serve_the_first_batch(
    kafka: LocalKafka,
    spark: Any,
    topic_factory: Callable[..., str],
    tmp_path: Path,
    stage: Stage,
    topology: Callable[[str, str], Topology],
) -> None:
    # start() starts an executor's Python daemon per kind of stage beside the first planning
    # (worker_start.py); that only helps if the stage's tasks then fork their workers from that
    # same daemon, i.e. Spark keys both by the same environment (a new daemon would show here).
    start_python_workers(spark, [stage]).join(timeout=300)
    started = _python_daemons(spark)
    assert started, "no kspark Python daemon runs after start_python_workers"
    src, dst = topic_factory("in", partitions=2), topic_factory("out", partitions=2)
    kafka.produce(src, [(b"k", b"v", 1000, None, None)])
    config = _config(kafka, tmp_path, "warm-daemon", **{"spark.kspark.nativeLowering": "false"})
    assert _run(topology(src, dst), config, spark) == 1
    assert _python_daemons(spark) == started


def test_a_closed_application_leaves_nothing_of_its_runner_behind(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    """py4j keeps the foreachBatch functions and the progress listener that the JVM was handed for
    as long as the JVM holds their proxies: they must not hold the runner, whose admin clients
    would stay connected (and print librdkafka's reconnect errors to stderr once the cluster is
    gone) for the life of the process."""
    import gc
    import weakref

    src, dst = topic_factory("in", partitions=1), topic_factory("out", partitions=1)
    kafka.produce(src, [(b"k", b"v", 1_000)])
    b = StreamsBuilder()
    b.stream(src, Consumed.with_(S, S)).group_by_key().count().to_stream().to(dst)
    app = KafkaStreams(b.build(), _config(kafka, tmp_path, "leaves-nothing"), spark=spark)
    assert app.process_available() == 1
    runner = weakref.ref(app._ensure_runner())  # type: ignore[attr-defined]
    app.close()
    del app
    gc.collect()
    assert runner() is None
