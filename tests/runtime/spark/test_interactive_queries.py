"""Interactive queries on Spark: stores read from the driver's replicas, checked against the driver.

Each test runs a stateful topology on Spark, reads its stores through
``KafkaStreams.store`` (replica.py: fed from the changelog topics, one
committed micro-batch at a time) and compares every answer with the
TopologyTestDriver's store after the same input prefix, which the read's
position names.
"""

from __future__ import annotations

import operator
import sys
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from kspark import (
    Consumed,
    Grouped,
    KafkaStreams,
    KeyValue,
    Materialized,
    Produced,
    SessionWindows,
    StreamsBuilder,
    TimeWindows,
    Topology,
)
from kspark.dev.kafka import LocalKafka, free_port
from kspark.errors import InvalidStateStoreException, UnknownStateStoreException
from kspark.processor.internals.partitioning import default_partition
from kspark.query import HostInfo, Position, PositionBound, StoreQueryParameters
from kspark.serde import Serdes
from kspark.state import QueryableStoreTypes
from kspark.testing import TopologyTestDriver

pytestmark = [pytest.mark.integration, pytest.mark.slow]

pyspark_cloudpickle = pytest.importorskip("pyspark.cloudpickle")
pyspark_cloudpickle.register_pickle_by_value(sys.modules[__name__])

S = Serdes.String()
L = Serdes.Long()
ENGINE = {"spark.kspark.nativeLowering": "false"}


# The records' timestamps are from 1970: a window or session changelog's retention (the store's
# plus this, from now) would let the broker delete them at its next retention check, and the
# replicas would then rightly lack windows the reference still has.
CENTURY_MS = 100 * 365 * 24 * 3600 * 1000


def _config(kafka: LocalKafka, tmp_path: Path, app: str, **extra: Any) -> dict[str, Any]:
    return {
        "application.id": app,
        "bootstrap.servers": kafka.bootstrap_servers,
        "state.dir": str(tmp_path / "state"),
        "windowstore.changelog.additional.retention.ms": CENTURY_MS,
        **ENGINE,
        **extra,
    }


def _stores_topology(src: str, dst: str) -> Topology:
    """A count, a windowed count and a session count of one stream: one store of each kind."""
    b = StreamsBuilder()
    stream = b.stream(src, Consumed.with_(S, S))
    grouped = stream.group_by_key()
    grouped.count(Materialized.as_("counts")).to_stream().to(dst, Produced.with_(S, L))
    grouped.windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(0))).count(
        Materialized.as_("windowed")
    )
    grouped.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(timedelta(seconds=5))).count(
        Materialized.as_("sessions")
    )
    return b.build()


def _records(n: int, keys: int, start: int = 0) -> list[tuple[bytes, bytes, int]]:
    # Timestamps from 1 s: librdkafka writes a record with timestamp 0 with the time of sending.
    return [(f"k{i % keys}".encode(), f"v{i}".encode(), 1000 * (i + 1)) for i in range(start, start + n)]


def _produce(kafka: LocalKafka, topic: str, records: list[tuple[bytes, bytes, int]], partitions: int) -> None:
    """Where the Java producer (Kafka's default partitioner) would put them."""
    kafka.produce(topic, [(k, v, ts, default_partition(k, partitions)) for k, v, ts in records])


class _Reference:
    """Kafka Streams' state after some input: one TopologyTestDriver per partition (each task has
    its own stores and stream time), read as a composite view reads tasks: in partition order.

    The record cache is off: a replica holds what the changelog holds, as a standby does. (An
    active Kafka Streams task's reads also see clean entries still in its cache, e.g. windows
    its store has expired; docs/interactive-queries.md.)"""

    def __init__(
        self, topology: Callable[[], Topology], src: str, records: list[Any], partitions: int
    ) -> None:
        self.partitions = partitions
        self.drivers = []
        for p in range(partitions):
            driver = TopologyTestDriver(
                topology(), {"application.id": "ref", "statestore.cache.max.bytes": 0}
            )
            topic = driver.create_input_topic(src, Serdes.ByteArray(), Serdes.ByteArray())
            for k, v, ts in records:
                if default_partition(k, partitions) == p:
                    topic.pipe_input(k, v, timestamp=ts)
            self.drivers.append(driver)

    def kv(self, store: str) -> dict[Any, Any]:
        return {k: v for d in self.drivers for k, v in _kv(d.get_key_value_store(store)).items()}

    def of_key(self, key: str) -> TopologyTestDriver:
        return self.drivers[default_partition(key.encode(), self.partitions)]

    def windows(self, store: str) -> list[tuple[Any, int, Any]]:
        return [
            (kv.key.key, kv.key.window.start, kv.value)
            for d in self.drivers
            for kv in d.get_window_store(store).all()
        ]

    def close(self) -> None:
        for d in self.drivers:
            d.close()


def _kv(view: Any) -> dict[Any, Any]:
    return {kv.key: kv.value for kv in view.all()}


def test_every_store_kind_reads_as_the_driver_after_the_same_input(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("in", partitions=2), topic_factory("out", partitions=2)
    records = _records(60, keys=7)
    _produce(kafka, src, records, 2)
    port = free_port()
    config = _config(kafka, tmp_path, "iq-kinds", **{"application.server": f"localhost:{port}"})
    app = KafkaStreams(_stores_topology(src, dst), config, spark=spark)
    try:
        with pytest.raises(InvalidStateStoreException, match="CREATED"):
            app.store("counts", QueryableStoreTypes.key_value_store())
        app.process_available()
        ref = _Reference(lambda: _stores_topology(src, dst), src, records, 2)

        counts = app.store("counts", QueryableStoreTypes.key_value_store())
        assert _kv(counts) == ref.kv("counts")
        assert counts.get("k3") == ref.of_key("k3").get_key_value_store("counts").get("k3")
        assert counts.get("nope") is None
        assert counts.approximate_num_entries() == 7
        assert sorted(kv.key for kv in counts.range("k1", "k3")) == ["k1", "k2", "k3"]
        ts = app.store("counts", QueryableStoreTypes.timestamped_key_value_store())
        assert ts.get("k0") == ref.of_key("k0").get_timestamped_key_value_store("counts").get("k0")

        windowed = app.store("windowed", QueryableStoreTypes.window_store())
        got = [(kv.key.key, kv.key.window.start, kv.value) for kv in windowed.all()]
        assert got == ref.windows("windowed") and got
        assert [(kv.key, kv.value) for kv in windowed.fetch("k1", 0, 100_000)] == [
            (kv.key, kv.value) for kv in ref.of_key("k1").get_window_store("windowed").fetch("k1", 0, 100_000)
        ]

        sessions = app.store("sessions", QueryableStoreTypes.session_store())
        ref_sessions = ref.of_key("k2").get_session_store("sessions")
        assert [(kv.key.window.start, kv.key.window.end, kv.value) for kv in sessions.fetch("k2")] == [
            (kv.key.window.start, kv.key.window.end, kv.value) for kv in ref_sessions.fetch("k2")
        ]

        # The position names the input the state reflects: every record of both partitions.
        ends = {p: sum(1 for k, _, _ in records if default_partition(k, 2) == p) - 1 for p in range(2)}
        assert counts.position() == Position.from_map({src: ends})

        with pytest.raises(UnknownStateStoreException, match="nope"):
            app.store("nope", QueryableStoreTypes.key_value_store())
        with pytest.raises(InvalidStateStoreException, match="does not accept"):
            app.store("counts", QueryableStoreTypes.window_store())

        # Discovery: this instance holds every store; a key's partition is Kafka's.
        (meta,) = app.metadata_for_all_streams_clients()
        assert meta.host_info == HostInfo("localhost", port)
        assert {"counts", "windowed", "sessions"} <= meta.state_store_names
        key_meta = app.query_metadata_for_key("counts", "k3", S.serializer())
        assert key_meta.partition == default_partition(b"k3", 2)
        assert key_meta.active_host == HostInfo("localhost", port)
        assert app.streams_metadata_for_store("nope") == []
        # As Kafka Streams: a serde does as its serializer; a partitioner (the StreamPartitioner
        # overload) is asked with the source topic and its partition count; a store the
        # topology does not have has no metadata (null); the key is serialized for the source
        # topic with the most partitions, not for the changelog.
        assert app.query_metadata_for_key("counts", "k3", S) == key_meta
        asked: list[tuple[Any, ...]] = []
        pick_one = lambda *a: asked.append(a) or 1  # noqa: E731
        assert app.query_metadata_for_key("counts", "k3", pick_one).partition == 1
        assert asked == [(src, "k3", None, 2)]
        with pytest.raises(ValueError, match="single partition"):
            app.query_metadata_for_key("counts", "k3", lambda *a: {0, 1})
        assert app.query_metadata_for_key("nope", "k3", S.serializer()) is None
        with pytest.raises(ValueError, match="key can't be null"):
            app.query_metadata_for_key("counts", None, S.serializer())
        topics: list[str] = []

        class _Spy:
            def serialize(self, topic: str, key: str) -> bytes:
                topics.append(topic)
                return key.encode()

        app.query_metadata_for_key("counts", "k3", _Spy())
        assert topics == [src]
        ref.close()
    finally:
        app.close()
    with pytest.raises(InvalidStateStoreException, match="NOT_RUNNING"):
        app.store("counts", QueryableStoreTypes.key_value_store())
    with pytest.raises(InvalidStateStoreException, match="is not running"):
        app.metadata_for_all_streams_clients()


def test_reads_during_processing_see_whole_batches_and_a_position_bound_waits(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("in", partitions=1), topic_factory("out", partitions=1)
    first = _records(40, keys=5)
    _produce(kafka, src, first, 1)
    config = _config(kafka, tmp_path, "iq-live", **{"commit.interval.ms": 200})
    app = KafkaStreams(_stores_topology(src, dst), config, spark=spark)
    app.start()
    try:
        # Running, but its first micro-batch has not committed yet: refused at once, as in Kafka
        # Streams, saying why (a bound would wait for it instead).
        with pytest.raises(InvalidStateStoreException, match="has committed yet"):
            app.store("counts", QueryableStoreTypes.key_value_store())
        bound = PositionBound.at(Position.from_map({src: {0: len(first) - 1}}))
        params = StoreQueryParameters.from_name_and_type(
            "counts", QueryableStoreTypes.key_value_store()
        ).with_position_bound(bound, timeout=timedelta(seconds=120))
        counts = app.store(params)
        assert sum(kv.value for kv in counts.all()) == len(first)

        # A bound not reached in time fails, naming the position the store has.
        too_far = StoreQueryParameters.from_name_and_type(
            "counts", QueryableStoreTypes.key_value_store()
        ).with_position_bound(PositionBound.at(Position.from_map({src: {0: 10_000}})), timeout=1.0)
        with pytest.raises(InvalidStateStoreException, match="not the bound"):
            app.store(too_far)

        # Reads while batches commit: every answer is the driver's state after the prefix its
        # position names (never part of a batch).
        seen: list[tuple[Position, dict[Any, Any]]] = []
        stop = threading.Event()

        def reader() -> None:
            view = app.store("counts", QueryableStoreTypes.key_value_store())
            while not stop.is_set():
                with view._replicas.whole():  # one answer and the position it reflects
                    seen.append((view.position(), _kv(view)))
                time.sleep(0.02)

        thread = threading.Thread(target=reader)
        thread.start()
        more = _records(120, keys=5, start=len(first))
        for i in range(0, len(more), 20):
            _produce(kafka, src, more[i : i + 20], 1)
            time.sleep(0.3)
        done = Position.from_map({src: {0: len(first) + len(more) - 1}})
        app.store(params.with_position_bound(PositionBound.at(done), timeout=120))
        stop.set()
        thread.join()
        everything = first + more
        checked = {}
        for position, state in seen:
            last = position.get_partition_positions(src)[0]
            expected = checked.get(last)
            if expected is None:
                ref = _Reference(lambda: _stores_topology(src, dst), src, everything[: last + 1], 1)
                expected = checked[last] = ref.kv("counts")
                ref.close()
            assert state == expected, f"at offset {last}"
        assert len(checked) > 2, "the reads saw several committed batches"
    finally:
        app.close()


def _native_topology(src: str, dst: str) -> Topology:
    """A count, a sum and a windowed count, each a sub-topology of its own that Spark runs
    natively (lowering.py): its state is in Spark's state store or the stage's, not an engine's."""
    b = StreamsBuilder()
    stream = b.stream(src, Consumed.with_(S, S))
    (
        stream.group_by(lambda k, v: k, Grouped.with_(S, S))
        .count(Materialized.as_("n-counts"))
        .to_stream()
        .to(dst, Produced.with_(S, L))
    )
    (
        stream.map_values(lambda v: int(v[1:]))
        .group_by(lambda k, v: k, Grouped.with_(S, L))
        .reduce(operator.add, Materialized.as_("n-sums"))
        .to_stream()
        .to(dst, Produced.with_(S, L))
    )
    (
        stream.group_by(lambda k, v: k, Grouped.with_(S, S))
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=100)))
        .count(Materialized.as_("n-windowed"))
        .to_stream()
        .map(lambda k, v: KeyValue(k.key, v))
        .to(dst, Produced.with_(S, L))
    )
    return b.build()


def test_stores_of_native_counts_reduces_and_windowed_counts_are_queryable(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("in", partitions=2), topic_factory("out", partitions=2)
    records = _records(50, keys=6)
    _produce(kafka, src, records, 2)
    config = _config(kafka, tmp_path, "iq-native", **{"spark.kspark.nativeLowering": "true"})
    app = KafkaStreams(_native_topology(src, dst), config, spark=spark)
    try:
        stages = {s.stores[0]: s.stage.value for s in app.physical_plan().subtopologies if s.stores}
        assert stages == {
            "n-counts": "native count",
            "n-sums": "native reduce",
            "n-windowed": "native windowed count",
        }
        app.process_available()
        # The repartition topics partition by the same key as the input: task p holds partition p's keys.
        ref = _Reference(lambda: _native_topology(src, dst), src, records, 2)
        counts = app.store("n-counts", QueryableStoreTypes.key_value_store())
        assert _kv(counts) == ref.kv("n-counts") and len(_kv(counts)) == 6
        sums = app.store("n-sums", QueryableStoreTypes.timestamped_key_value_store())
        assert {kv.key: kv.value for kv in sums.all()} == {
            k: v for d in ref.drivers for k, v in _kv(d.get_timestamped_key_value_store("n-sums")).items()
        }
        windowed = app.store("n-windowed", QueryableStoreTypes.window_store())
        got = sorted((kv.key.key, kv.key.window.start, kv.value) for kv in windowed.all())
        assert got == sorted(ref.windows("n-windowed")) and got
    finally:
        app.close()


def test_a_restarted_application_answers_from_its_last_committed_batch(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("in", partitions=2), topic_factory("out", partitions=2)
    first, second = _records(30, keys=5), _records(30, keys=5, start=30)
    config = _config(kafka, tmp_path, "iq-restart")
    _produce(kafka, src, first, 2)
    app = KafkaStreams(_stores_topology(src, dst), config, spark=spark)
    app.process_available()
    app.close()

    # A new instance, nothing new to process: it answers from the batch the last run committed,
    # read back from the changelog topics.
    app = KafkaStreams(_stores_topology(src, dst), config, spark=spark)
    try:
        app.process_available()
        counts = app.store("counts", QueryableStoreTypes.key_value_store())
        ref = _Reference(lambda: _stores_topology(src, dst), src, first, 2)
        assert _kv(counts) == ref.kv("counts")
        before = {key: counts.get(key) for key in ref.kv("counts")}  # point reads, then updates
        ref.close()
        _produce(kafka, src, second, 2)
        app.process_available()
        ref = _Reference(lambda: _stores_topology(src, dst), src, first + second, 2)
        assert _kv(counts) == ref.kv("counts")
        assert {key: counts.get(key) for key in before} == ref.kv("counts") != before
        assert sorted(
            kv.key.window.start for kv in app.store("windowed", QueryableStoreTypes.window_store()).all()
        ) == sorted(start for _, start, _ in ref.windows("windowed"))
        ref.close()
    finally:
        app.close()


def test_changelog_records_the_broker_deleted_do_not_stall_the_replica(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    """A window changelog's records older than its retention are deleted by the broker (records
    of history being reprocessed carry old timestamps): the replica starts at the log's start
    and answers with what is left, as Kafka Streams' restore does, instead of waiting for
    records that will never come."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    src, dst = topic_factory("in", partitions=2), topic_factory("out", partitions=2)
    records = _records(40, keys=5)
    _produce(kafka, src, records, 2)
    config = _config(kafka, tmp_path, "iq-deleted")
    app = KafkaStreams(_stores_topology(src, dst), config, spark=spark)
    try:
        app.process_available()
        # What the retention check would do to the window store's changelog: delete it all.
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
        changelog = "iq-deleted-windowed-changelog"
        wanted = [TopicPartition(changelog, p, -1) for p in range(2)]  # -1: up to the high watermark
        for future in admin.delete_records(wanted).values():
            assert future.result(30).low_watermark > 0
        # The replicas start on this first read, with nothing left to read of that changelog.
        windowed = app.store(
            StoreQueryParameters.from_name_and_type("windowed", QueryableStoreTypes.window_store())
        )
        assert list(windowed.all()) == []
        counts = app.store("counts", QueryableStoreTypes.key_value_store())
        ref = _Reference(lambda: _stores_topology(src, dst), src, records, 2)
        assert _kv(counts) == ref.kv("counts")  # the other changelogs were all read
        ref.close()
    finally:
        app.close()
