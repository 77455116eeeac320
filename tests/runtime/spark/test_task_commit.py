"""A task's micro-batch commit on a real broker: transactions, markers, replays, fencing (task_commit.py).

No Spark here: the batch identity Spark would hand the task is patched in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from kspark.dev.kafka import LocalKafka
from kspark.errors import StreamsException
from kspark.processor.api import Headers
from kspark.processor.internals.records import OutputRecord
from kspark.runtime.spark import kafka_io, task_commit
from kspark.runtime.spark.kafka_io import producer_config
from kspark.runtime.spark.task_commit import BatchIdentity, TaskCommit, marker, parse_marker

pytestmark = pytest.mark.integration

QUERY = "0b1c2d3e-0000-4000-8000-000000000001"


@pytest.fixture
def batch(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[int], None]]:
    """Set the micro-batch the next TaskCommit runs in."""
    current: list[BatchIdentity] = [BatchIdentity(QUERY, 0)]
    monkeypatch.setattr(task_commit, "current_batch", lambda: current[0])

    def set_batch(n: int) -> None:
        current[0] = BatchIdentity(QUERY, n)

    yield set_batch


def _commit(kafka: LocalKafka, app: str, source: str, guarantee: str = "exactly_once_v2") -> TaskCommit:
    config = {
        "application.id": app,
        "bootstrap.servers": kafka.bootstrap_servers,
        "processing.guarantee": guarantee,
    }
    return TaskCommit(config, producer_config(kafka.bootstrap_servers), f"{app}-0_0", [(source, 0)])


def _records(topic: str, values: list[str]) -> list[OutputRecord]:
    return [OutputRecord(topic, 0, b"k", v.encode(), 1000 + i, Headers()) for i, v in enumerate(values)]


def _committed(kafka: LocalKafka, app: str, source: str) -> tuple[int, str | None]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": kafka.bootstrap_servers, "group.id": app, "isolation.level": "read_committed"}
    )
    try:
        (tp,) = consumer.committed([TopicPartition(source, 0)], timeout=30)
    finally:
        consumer.close()
    return tp.offset, tp.metadata


def _values(kafka: LocalKafka, topic: str) -> list[bytes | None]:
    return [r.value for r in kafka.consume_all(topic, read_committed=True)]


def test_markers_round_trip() -> None:
    assert parse_marker(marker(BatchIdentity(QUERY, 12))) == BatchIdentity(QUERY, 12)
    assert parse_marker(None) is None
    assert parse_marker("something a user committed") is None


def test_output_and_offsets_commit_together_and_a_replayed_batch_writes_nothing(
    kafka: LocalKafka, topic_factory: Callable[..., str], batch: Callable[[int], None]
) -> None:
    source, out = topic_factory("src"), topic_factory("out")
    commit = _commit(kafka, "tc-app1", source)
    assert commit.begin({(source, 0): 3})
    commit.send(_records(out, ["a", "b", "c"]))
    assert commit.commit() == 3
    assert _values(kafka, out) == [b"a", b"b", b"c"]
    assert _committed(kafka, "tc-app1", source) == (3, marker(BatchIdentity(QUERY, 0)))

    # Spark runs batch 0 again (its commit log never got the batch): Kafka has it, so nothing more.
    again = _commit(kafka, "tc-app1", source)
    assert not again.begin({(source, 0): 3})
    assert again.replay
    again.send(_records(out, ["a", "b", "c"]))
    assert again.commit() == 0
    assert _values(kafka, out) == [b"a", b"b", b"c"]

    batch(1)  # the next batch writes, and may know its offsets only at the end
    following = _commit(kafka, "tc-app1", source)
    assert following.begin()
    following.send(_records(out, ["d"]))
    assert following.commit({(source, 0): 4}) == 1
    assert _values(kafka, out) == [b"a", b"b", b"c", b"d"]
    assert _committed(kafka, "tc-app1", source) == (4, marker(BatchIdentity(QUERY, 1)))


def test_an_aborted_attempt_leaves_nothing_and_the_retry_writes_once(
    kafka: LocalKafka, topic_factory: Callable[..., str], batch: Callable[[int], None]
) -> None:
    source, out = topic_factory("src"), topic_factory("out")
    failed = _commit(kafka, "tc-app2", source)
    assert failed.begin({(source, 0): 2})
    failed.send(_records(out, ["x", "y"]))
    failed.abort()
    retry = _commit(kafka, "tc-app2", source)
    assert retry.begin({(source, 0): 2})
    retry.send(_records(out, ["x", "y"]))
    assert retry.commit() == 2
    assert _values(kafka, out) == [b"x", b"y"]


def test_a_zombie_attempt_is_fenced_by_the_next_one(
    kafka: LocalKafka, topic_factory: Callable[..., str], batch: Callable[[int], None]
) -> None:
    source, out = topic_factory("src"), topic_factory("out")
    zombie = _commit(kafka, "tc-app3", source)
    assert zombie.begin({(source, 0): 1})
    zombie.send(_records(out, ["zombie"]))
    # Another worker takes the task over: its producer claims the transactional.id's epoch.
    successor = _commit(kafka, "tc-app3", source)
    assert successor.begin({(source, 0): 1})
    successor.send(_records(out, ["successor"]))
    assert successor.commit() == 1
    with pytest.raises(Exception, match=r"(?i)fenc"):
        zombie.commit()
    assert _values(kafka, out) == [b"successor"]


def test_at_least_once_writes_without_a_transaction_or_marker(
    kafka: LocalKafka, topic_factory: Callable[..., str]
) -> None:
    source, out = topic_factory("src"), topic_factory("out")
    commit = _commit(kafka, "tc-app4", source, guarantee="at_least_once")
    assert commit.begin({(source, 0): 1})
    commit.send(_records(out, ["plain"]))
    assert commit.commit() == 1
    assert _values(kafka, out) == [b"plain"]
    assert _committed(kafka, "tc-app4", source)[0] < 0


def test_exactly_once_outside_a_spark_task_is_refused(
    kafka: LocalKafka, topic_factory: Callable[..., str]
) -> None:
    commit = _commit(kafka, "tc-app5", topic_factory("src"))
    with pytest.raises(StreamsException, match="needs the Spark micro-batch's identity"):
        commit.begin()


class _FlakyConsumer:
    """Answers ``committed`` with the given errors first, then with offset 7 for every partition."""

    def __init__(self, errors: list[int]) -> None:
        self.errors = list(errors)
        self.calls = 0

    def committed(self, partitions: list[object], timeout: float) -> list[object]:
        from confluent_kafka import KafkaError, KafkaException, TopicPartition

        self.calls += 1
        if self.errors:
            raise KafkaException(KafkaError(self.errors.pop(0)))
        return [TopicPartition(tp.topic, tp.partition, 7) for tp in partitions]  # type: ignore[attr-defined]


def test_reading_the_marker_waits_out_a_loading_coordinator(monkeypatch: pytest.MonkeyPatch) -> None:
    """A broker that just started answers NOT_COORDINATOR until it has loaded the group (CI saw it):
    the task asks again, as Java's consumer does, instead of failing the query."""
    from confluent_kafka import KafkaError

    monkeypatch.setattr(kafka_io.time, "sleep", lambda _s: None)
    reader = task_commit._MarkerReader.__new__(task_commit._MarkerReader)
    reader.consumer = _FlakyConsumer([KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS])
    assert reader.committed([("in", 0), ("in", 1)]) == {("in", 0): (7, None), ("in", 1): (7, None)}
    assert reader.consumer.calls == 3


def test_reading_the_marker_fails_at_once_on_an_error_that_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    from confluent_kafka import KafkaError

    monkeypatch.setattr(kafka_io.time, "sleep", lambda _s: None)
    reader = task_commit._MarkerReader.__new__(task_commit._MarkerReader)
    reader.consumer = _FlakyConsumer([KafkaError.GROUP_AUTHORIZATION_FAILED])
    with pytest.raises(StreamsException, match=r"committed offsets of in\[0\].*GROUP_AUTHORIZATION"):
        reader.committed([("in", 0)])
    assert reader.consumer.calls == 1


def test_a_lost_executors_open_transaction_does_not_hold_up_a_warm_producer(
    kafka: LocalKafka, topic_factory: Callable[..., str], batch: Callable[[int], None]
) -> None:
    """An attempt on an executor that was then lost claimed the id's epoch and left a transaction
    open, its offsets unstable; this worker's warm producer of the id takes the task back with a
    new producer at once rather than wait a minute for the offsets (test_standalone_cluster.py)."""
    import time

    from confluent_kafka import Consumer, TopicPartition

    source, out = topic_factory("src"), topic_factory("out")
    first = _commit(kafka, "tc-app9", source)
    assert first.begin({(source, 0): 1})
    first.send(_records(out, ["first"]))
    assert first.commit() == 1  # its producer stays warm in this worker
    lost = task_commit._TransactionalProducer(producer_config(kafka.bootstrap_servers), "tc-app9-0_0")
    group = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "tc-app9"})
    try:
        lost.producer.begin_transaction()
        mark = marker(BatchIdentity(QUERY, 1))
        offsets = [TopicPartition(source, 0, 2, metadata=mark)]
        lost.producer.send_offsets_to_transaction(offsets, group.consumer_group_metadata(), 30)
        lost.producer.produce(out, b"lost", b"k", 0)
        lost.producer.flush(30)  # and then its executor is gone: never committed nor aborted
        batch(1)
        retry = _commit(kafka, "tc-app9", source)
        began = time.monotonic()
        assert retry.begin({(source, 0): 2})
        assert time.monotonic() - began < task_commit.COMMITTED_TIMEOUT_S / 2
        retry.send(_records(out, ["second"]))
        assert retry.commit() == 1
    finally:
        group.close()
    assert _values(kafka, out) == [b"first", b"second"]
    assert _committed(kafka, "tc-app9", source) == (2, mark)
