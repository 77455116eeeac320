"""Reading offset ranges of a real topic-partition with a warm librdkafka consumer."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Producer, TopicPartition

from kspark.dev.kafka import LocalKafka
from kspark.errors import StreamsException
from kspark.runtime.spark import partition_reader
from kspark.runtime.spark.partition_reader import Chunk, PartitionReader, consumer_config, read_range

pytestmark = [pytest.mark.integration]


def _conf(kafka: LocalKafka, group: str) -> dict[str, object]:
    return consumer_config(kafka.bootstrap_servers, group, {})


def _records(chunks: list[Chunk]) -> list[tuple[int, bytes | None, bytes | None, int, object]]:
    return [
        (o, k, v, t, h)
        for c in chunks
        for o, k, v, t, h in zip(c.offsets, c.keys, c.values, c.timestamps, c.headers, strict=True)
    ]


def test_ranges_read_every_record_once_in_order_and_seek_back(
    kafka: LocalKafka, topic_factory: Callable[..., str]
) -> None:
    topic = topic_factory("ranges")
    kafka.produce(
        topic,
        [
            (b"k%d" % i if i % 7 else None, b"v%d" % i if i % 5 else None, 1000 + i, 0, [("h", b"%d" % i)])
            for i in range(300)
        ],
    )
    reader = PartitionReader(_conf(kafka, "ranges"), topic, 0)
    try:
        first = _records(list(reader.read(0, 100)))
        # The consumer fetched past 100; the next range continues from what it holds.
        second = _records(list(reader.read(100, 250)))
        again = _records(list(reader.read(10, 20)))  # a retried batch: back to its start
        rest = _records(list(reader.read(20, 300)))
    finally:
        reader.close()
    want = [
        (i, b"k%d" % i if i % 7 else None, b"v%d" % i if i % 5 else None, 1000 + i, [("h", b"%d" % i)])
        for i in range(300)
    ]
    assert first == want[:100]
    assert second == want[100:250]
    assert again == want[10:20]
    assert rest == want[20:]


class _CountingConsumer:
    """A consumer that records how many messages each consume() call asked for."""

    def __init__(self, consumer: Any) -> None:
        self.consumer, self.asked = consumer, []

    def consume(self, num_messages: int, timeout: float) -> Any:
        self.asked.append(num_messages)
        return self.consumer.consume(num_messages, timeout)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.consumer, name)


def test_a_range_asks_for_no_more_records_than_it_holds(
    kafka: LocalKafka, topic_factory: Callable[..., str]
) -> None:
    # consume() returns when it has as many messages as asked for or at its timeout: asking for a
    # full batch at the end of a caught-up log waited out the timeout in every micro-batch.
    topic = topic_factory("asked")
    kafka.produce(topic, [(b"k", b"v%d" % i, 1000 + i, 0) for i in range(30)])
    reader = PartitionReader(_conf(kafka, "asked"), topic, 0)
    counting = _CountingConsumer(reader.consumer)
    reader.consumer = counting
    try:
        assert len(_records(list(reader.read(0, 7)))) == 7
        assert len(_records(list(reader.read(7, 30)))) == 23
    finally:
        reader.close()
    assert counting.asked and all(n <= 23 for n in counting.asked)
    assert counting.asked[0] == 7


def test_a_range_ending_in_transaction_markers_ends_without_waiting(
    kafka: LocalKafka, topic_factory: Callable[..., str]
) -> None:
    topic = topic_factory("txn")
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "transactional.id": f"tx-{topic}"})
    producer.init_transactions()
    for values, commit in (([b"a", b"b"], True), ([b"x", b"y", b"z"], False), ([b"c"], True)):
        producer.begin_transaction()
        for v in values:
            producer.produce(topic, v, b"k", 0)
        producer.flush()
        (producer.commit_transaction if commit else producer.abort_transaction)()
    admin = kafka.admin()
    from confluent_kafka import IsolationLevel
    from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

    deadline = time.monotonic() + 30
    end = 0
    while time.monotonic() < deadline:  # the last commit marker is written after commit returns
        futures = admin.list_offsets(
            {TopicPartition(topic, 0): OffsetSpec.latest()},  # type: ignore[no-untyped-call]
            isolation_level=IsolationLevel.READ_COMMITTED,
        )
        end = next(iter(futures.values())).result().offset
        if end == 9:  # a, b, marker, x, y, z, marker, c, marker
            break
        time.sleep(0.1)
    assert end == 9
    started = time.monotonic()
    got = _records(list(read_range(_conf(kafka, "txn"), topic, 0, 0, end)))
    assert time.monotonic() - started < 10
    assert [(o, v) for o, _k, v, _t, _h in got] == [(0, b"a"), (1, b"b"), (7, b"c")]


def test_records_gone_from_kafka_fail_the_read(kafka: LocalKafka, topic_factory: Callable[..., str]) -> None:
    topic = topic_factory("gone")
    kafka.produce(topic, [(b"k", b"v%d" % i, 1000 + i, 0) for i in range(20)])
    admin = kafka.admin()  # referenced until the result arrives (a collected client drops its futures)
    for future in admin.delete_records([TopicPartition(topic, 0, 15)]).values():
        future.result(timeout=30)
    with pytest.raises(StreamsException, match=r"gone.*offsets 5 to 20 are no longer in Kafka"):
        list(read_range(_conf(kafka, "gone"), topic, 0, 5, 20))


def test_a_reader_is_kept_for_the_next_range_unless_its_read_failed(
    kafka: LocalKafka, topic_factory: Callable[..., str]
) -> None:
    topic = topic_factory("warm")
    kafka.produce(topic, [(b"k", b"v%d" % i, 1000 + i, 0) for i in range(10)])
    conf = _conf(kafka, "warm")
    assert len(_records(list(read_range(conf, topic, 0, 0, 5)))) == 5
    key = next(k for k in partition_reader.CONSUMERS._idle if topic in k)
    kept = partition_reader.CONSUMERS._idle[key][0]
    chunks = read_range(conf, topic, 0, 5, 10)
    next(chunks)
    assert key not in partition_reader.CONSUMERS  # in use
    with pytest.raises(RuntimeError):
        chunks.throw(RuntimeError("the task failed"))
    assert key not in partition_reader.CONSUMERS  # closed, not given back
    assert len(_records(list(read_range(conf, topic, 0, 5, 10)))) == 5
    assert partition_reader.CONSUMERS._idle[key][0] is not kept
