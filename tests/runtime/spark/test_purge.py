"""Repartition topics keep only what their readers have not committed (kspark/runtime/spark/purge.py).

The purger on its own, against a fake admin client whose answers the test gives; then an
application on Spark whose repartition topic is purged after each committed batch
(``repartition.purge.interval.ms=0``) and whose counts stay exact across a restart.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from kspark import Consumed, Grouped, KafkaStreams, Produced, StreamsBuilder, Topology
from kspark.dev.kafka import LocalKafka
from kspark.runtime.spark.kafka_io import OffsetLister
from kspark.runtime.spark.purge import RepartitionPurger
from kspark.serde import Serdes

REPARTITION = "app-regroup-repartition"


class FakeAdmin:
    """``delete_records`` as confluent-kafka's: one future per partition, answered by the test."""

    def __init__(self) -> None:
        self.asked: list[dict[tuple[str, int], int]] = []
        self.futures: list[dict[tuple[str, int], Future[Any]]] = []

    def delete_records(self, requests: list[Any], request_timeout: float) -> dict[Any, Future[Any]]:
        self.asked.append({(r.topic, r.partition): r.offset for r in requests})
        futures: dict[Any, Future[Any]] = {r: Future() for r in requests}
        self.futures.append({(r.topic, r.partition): f for r, f in futures.items()})
        return futures

    def answer(self, error: Exception | None = None) -> None:
        for future in self.futures[-1].values():
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _purger(interval_s: float = 30.0) -> tuple[RepartitionPurger, FakeAdmin, Clock]:
    admin, clock = FakeAdmin(), Clock()
    return RepartitionPurger([REPARTITION], interval_s, lambda: admin, clock=clock), admin, clock


def test_a_purge_asks_for_the_committed_ends_of_repartition_topics_once_an_interval_has_passed() -> None:
    purger, admin, clock = _purger(interval_s=30.0)
    purger.committed({(REPARTITION, 0): 10, ("input", 0): 99})
    clock.now = 20.0
    purger.committed({(REPARTITION, 0): 15, (REPARTITION, 1): 4})
    assert admin.asked == []  # within the first interval after the start
    clock.now = 31.0
    purger.committed({(REPARTITION, 1): 7})
    # the furthest end of each partition, and nothing of the input topic
    assert admin.asked == [{(REPARTITION, 0): 15, (REPARTITION, 1): 7}]
    admin.answer()
    assert purger.deleted() == {(REPARTITION, 0): 15, (REPARTITION, 1): 7}


def test_no_second_purge_while_one_is_unanswered_and_only_what_moved_is_asked_again() -> None:
    purger, admin, _ = _purger(interval_s=0.0)
    purger.committed({(REPARTITION, 0): 5, (REPARTITION, 1): 5})
    purger.committed({(REPARTITION, 0): 8})
    assert len(admin.asked) == 1  # the first is out
    admin.answer()
    purger.committed({(REPARTITION, 0): 9})
    assert admin.asked[1] == {(REPARTITION, 0): 9}  # partition 1 is deleted up to its end already
    admin.answer()
    purger.committed({(REPARTITION, 0): 9, (REPARTITION, 1): 5})
    assert len(admin.asked) == 2  # nothing moved: nothing asked


def test_a_failed_purge_is_logged_and_asked_again(caplog: pytest.LogCaptureFixture) -> None:
    purger, admin, _ = _purger(interval_s=0.0)
    purger.committed({(REPARTITION, 0): 5})
    admin.answer(RuntimeError("TOPIC_AUTHORIZATION_FAILED"))
    with caplog.at_level(logging.WARNING, logger="kspark.runtime.spark.purge"):
        purger.committed({(REPARTITION, 0): 6})
    assert f"{REPARTITION}-0 below 5: TOPIC_AUTHORIZATION_FAILED" in caplog.text
    assert admin.asked == [{(REPARTITION, 0): 5}, {(REPARTITION, 0): 6}]
    assert purger.deleted() == {}


# ---------------------------------------------------------------------------- on Spark

pyspark_cloudpickle = pytest.importorskip("pyspark.cloudpickle")
pyspark_cloudpickle.register_pickle_by_value(sys.modules[__name__])

S, L = Serdes.String(), Serdes.Long()


def _first_letter(key: str, value: str) -> str:
    return value[0]


def _regroup(src: str, dst: str) -> Topology:
    b = StreamsBuilder()
    (
        b.stream(src, Consumed.with_(S, S))
        .group_by(_first_letter, Grouped.with_(S, S).with_name("regroup"))
        .count()
        .to_stream()
        .to(dst, Produced.with_(S, L))
    )
    return b.build()


@pytest.mark.integration
@pytest.mark.slow
def test_a_repartition_topic_is_purged_to_what_its_reader_committed_and_the_counts_stay_exact(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource  # type: ignore[attr-defined]

    src, dst = topic_factory("in", partitions=2), topic_factory("out", partitions=2)
    app_id = f"purge-{time.monotonic_ns()}"
    repartition = f"{app_id}-regroup-repartition"
    config = {
        "application.id": app_id,
        "bootstrap.servers": kafka.bootstrap_servers,
        "state.dir": str(tmp_path / "state"),
        "statestore.cache.max.bytes": 0,
        "repartition.purge.interval.ms": 0,  # after every committed batch
    }
    lister = OffsetLister(kafka.bootstrap_servers)
    partitions = [(repartition, 0), (repartition, 1)]
    sent = 0
    for run in range(2):  # the second run is a restart, over the purged topic
        kafka.produce(
            src, [(f"u{i}".encode(), f"{'ab'[i % 2]}{i}".encode(), 1000 + i) for i in range(sent, sent + 10)]
        )
        sent += 10
        app = KafkaStreams(_regroup(src, dst), config, spark=spark)
        try:
            app.process_available()
            ends = lister.offsets(partitions, latest=True)
            assert sum(ends.values()) == sent  # every record went through the repartition topic
            deadline = time.monotonic() + 30
            while lister.offsets(partitions, latest=False) != ends and time.monotonic() < deadline:
                time.sleep(0.2)
            assert lister.offsets(partitions, latest=False) == ends, f"run {run}: not purged to {ends}"
        finally:
            app.close()
    counts: dict[str, list[int]] = {}
    for r in kafka.consume_all(dst, min_records=sent):
        counts.setdefault(r.key.decode(), []).append(L.deserializer().deserialize(dst, r.value))
    assert counts == {"a": list(range(1, 11)), "b": list(range(1, 11))}

    # Kafka Streams' segment size for repartition topics, so that the broker frees purged segments.
    resource = ConfigResource("TOPIC", repartition)
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    described = admin.describe_configs([resource])[resource].result(timeout=30)
    assert described["segment.bytes"].value == str(50 * 1024 * 1024)
    assert described["cleanup.policy"].value == "delete"
