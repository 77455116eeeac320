"""kspark's Kafka sink on a real broker: every record delivered, a warm producer per worker, errors raised."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from kspark.dev.kafka import LocalKafka
from kspark.errors import StreamsException
from kspark.processor.internals.records import OutputRecord
from kspark.runtime.spark import kafka_io
from kspark.runtime.spark.kafka_io import RecordSender, producer_config

pytestmark = [pytest.mark.integration]


def _records(topic: str, start: int, n: int) -> list[OutputRecord]:
    return [OutputRecord(topic, 0, b"k%d" % i, b"v%d" % i, 1000 + i) for i in range(start, start + n)]


def test_consecutive_tasks_reuse_one_producer_and_every_record_arrives_in_order(
    kafka: LocalKafka, topic_factory: Callable[..., str]
) -> None:
    topic = topic_factory("sink", partitions=1)
    conf = producer_config(kafka.bootstrap_servers, {"client.id": f"reuse-{topic}"})
    first = RecordSender(conf)
    first.send(_records(topic, 0, 100))
    producer = first._warm.producer if first._warm else None
    assert first.close() == 100

    second = RecordSender(conf)
    second.send(_records(topic, 100, 50))
    assert second._warm is not None and second._warm.producer is producer
    assert second.close() == 50
    got = kafka.consume_all(topic, min_records=150)
    assert [(r.key, r.value, r.timestamp) for r in got] == [
        (b"k%d" % i, b"v%d" % i, 1000 + i) for i in range(150)
    ]


def test_a_delivery_failure_raises_and_its_producer_is_not_reused(
    kafka: LocalKafka, topic_factory: Callable[..., str]
) -> None:
    # The broker does not create topics on demand: delivery to a missing one times out.
    conf = producer_config(kafka.bootstrap_servers, {"message.timeout.ms": 1500, "client.id": "failing"})
    sender = RecordSender(conf)
    sender.send(_records("no-such-topic", 0, 3))
    failed = sender._warm
    with pytest.raises(StreamsException, match="no-such-topic"):
        sender.close()
    retry = RecordSender(conf)
    retry.send([])
    assert retry._warm is not failed
    assert retry.close() == 0


def test_an_idle_producer_is_closed(
    kafka: LocalKafka, topic_factory: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kafka_io.PRODUCERS, "idle_seconds", 0.2)
    topic = topic_factory("idle", partitions=1)
    conf = producer_config(kafka.bootstrap_servers, {"client.id": f"idle-{topic}"})
    sender = RecordSender(conf)
    sender.send(_records(topic, 0, 1))
    assert sender.close() == 1
    key = sender._key
    assert key in kafka_io.PRODUCERS
    deadline = time.monotonic() + 10
    while key in kafka_io.PRODUCERS and time.monotonic() < deadline:
        time.sleep(0.05)
    assert key not in kafka_io.PRODUCERS


@pytest.mark.parametrize("seek_gap", [0, 3, 10_000])
def test_header_reader_reads_the_headers_at_given_offsets(
    kafka: LocalKafka, topic_factory: Callable[..., str], seek_gap: int
) -> None:
    topic = topic_factory("headers", partitions=2)
    kafka.produce(
        topic,
        [
            (b"k", b"v%d" % i, 1000 + i, 1, [("i", b"%d" % i), ("null", None)] if i % 2 else None)
            for i in range(40)
        ],
    )
    reader = kafka_io.HeaderReader(kafka.bootstrap_servers, f"reader-{topic}", seek_gap=seek_gap)
    try:
        got = reader.read(topic, 1, [39, 0, 1, 7, 8, 21, 21])
        again = reader.read(topic, 1, [3])  # a later call re-assigns: it reads back too
    finally:
        reader.close()
    assert {o: h.to_list() for o, h in got.items()} == {
        0: [],
        1: [("i", b"1"), ("null", None)],
        7: [("i", b"7"), ("null", None)],
        8: [],
        21: [("i", b"21"), ("null", None)],
        39: [("i", b"39"), ("null", None)],
    }
    assert again[3].to_list() == [("i", b"3"), ("null", None)]


def test_header_reader_logs_and_leaves_out_records_kafka_no_longer_holds(
    kafka: LocalKafka, topic_factory: Callable[..., str], caplog: pytest.LogCaptureFixture
) -> None:
    from confluent_kafka import TopicPartition

    topic = topic_factory("deleted", partitions=1)
    kafka.produce(topic, [(b"k", b"v", 1000 + i, 0, [("i", b"%d" % i)]) for i in range(10)])
    admin = kafka.admin()  # held: the futures resolve on its thread
    futures = admin.delete_records([TopicPartition(topic, 0, 5)])  # retention, as it were
    for future in futures.values():
        future.result(timeout=30)
    reader = kafka_io.HeaderReader(kafka.bootstrap_servers, f"reader-{topic}")
    try:
        got = reader.read(topic, 0, [2, 7])
    finally:
        reader.close()
    assert {o: h.to_list() for o, h in got.items()} == {7: [("i", b"7")]}
    assert f"{topic}[0] no longer holds offset 2" in caplog.text


class _FlushRaises:
    """A producer whose flush fails as confluent-kafka's does when ``on_delivery`` runs with a
    fatal error already raised: a SystemError caused by that error."""

    def __init__(self, cause: Exception | None) -> None:
        self.cause = cause

    def flush(self, timeout: float) -> int:
        error = SystemError("<method 'topic' of 'Message' objects> returned a result with an exception set")
        raise error from self.cause


def test_flush_raises_the_producers_own_error_not_the_callbacks_system_error() -> None:
    fenced = RuntimeError("This instance has been fenced by a newer instance")
    with pytest.raises(RuntimeError, match="fenced"):
        kafka_io.flush(_FlushRaises(fenced), 1)
    with pytest.raises(SystemError):  # no cause: nothing better to say
        kafka_io.flush(_FlushRaises(None), 1)
