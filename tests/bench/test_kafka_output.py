"""bench.kafka_output reads when output became visible from a broker's log segments.

Segments are written here in Kafka's record batch v2 layout (headers, and a
control record for markers), as the broker lays them out: data batches of
two transactional producers interleaved with their commit and abort markers,
and a non-transactional batch.
"""

from __future__ import annotations

import json
import struct
import uuid
from pathlib import Path

import numpy as np
import pytest

from bench.kafka_output import OutputWatcher, VisibleTimes, batches
from bench.workloads import Checker, expected
from kspark.dev.kafka import LocalKafka

_HEADER = struct.Struct(">qiibIhiqqqhii")


def _zigzag(value: int) -> bytes:
    raw = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        b = raw & 0x7F
        raw >>= 7
        if raw:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _batch(
    base: int, count: int, max_ts: int, producer: int, *, txn: bool, marker: int | None = None
) -> bytes:
    """A batch: ``count`` records (bodies elided), or a control batch whose marker is abort 0 / commit 1."""
    attrs = 0x08 | (0x10 if txn else 0) | (0x20 if marker is not None else 0)  # LogAppendTime
    if marker is not None:
        key = struct.pack(">hh", 0, marker)
        body = b"\x00" + _zigzag(0) + _zigzag(0) + _zigzag(len(key)) + key + _zigzag(6) + b"\x00" * 6
        records = _zigzag(len(body)) + body
    else:
        records = b"\x00" * (10 * count)
    length = _HEADER.size - 12 + len(records)
    head = _HEADER.pack(base, length, 0, 2, 0, attrs, count - 1, max_ts, max_ts, producer, 0, 0, count)
    return head + records


def _log(tmp_path: Path, *segments: list[bytes]) -> Path:
    part = tmp_path / "out-0"
    part.mkdir()
    base = 0
    for segment in segments:
        (part / f"{base:020d}.log").write_bytes(b"".join(segment))
        base += 1000  # names only order the segments here
    return part


def test_each_batch_is_read_with_its_offsets_kind_and_marker(tmp_path: Path) -> None:
    part = _log(
        tmp_path,
        [_batch(0, 3, 100, 7, txn=True), _batch(3, 1, 150, 7, txn=True, marker=1)],
        [
            _batch(4, 2, 200, -1, txn=False),
            _batch(6, 1, 250, 8, txn=True),
            _batch(7, 1, 260, 8, txn=True, marker=0),
        ],
    )
    found = list(batches(part))
    assert [(b.base, b.last, b.control, b.commit) for b in found] == [
        (0, 2, False, False),
        (3, 3, True, True),
        (4, 5, False, False),
        (6, 6, False, False),
        (7, 7, True, False),
    ]
    assert [b.producer for b in found] == [7, 7, -1, 8, 8]


def test_transactional_records_are_visible_at_their_producers_next_commit(tmp_path: Path) -> None:
    part = _log(
        tmp_path,
        [
            _batch(0, 2, 100, 1, txn=True),  # producer 1, committed at 300
            _batch(2, 2, 110, 2, txn=True),  # producer 2, committed at 250
            _batch(4, 1, 120, -1, txn=False),  # outside transactions: its own append time
            _batch(5, 1, 250, 2, txn=True, marker=1),
            _batch(6, 1, 260, 2, txn=True),  # producer 2 again, aborted at 280
            _batch(7, 1, 280, 2, txn=True, marker=0),
            _batch(8, 1, 300, 1, txn=True, marker=1),
            _batch(9, 3, 310, 1, txn=True),  # still open
        ],
    )
    times = VisibleTimes(batches(part))
    got = times.at(np.array([0, 1, 2, 3, 4, 5, 6, 9, 11, 12]))
    # 5 is a marker's offset, 6 aborted, 9 and 11 open, 12 past the end: never visible.
    assert got.tolist() == [300, 300, 250, 250, 120, -1, -1, -1, -1, -1]


def test_an_empty_partition_has_no_visible_record(tmp_path: Path) -> None:
    part = tmp_path / "out-1"
    part.mkdir()
    assert VisibleTimes(batches(part)).at(np.array([0])).tolist() == [-1]


@pytest.mark.integration
def test_a_drain_folds_nothing_past_its_target(kafka: LocalKafka) -> None:
    """Records appended after the ends a drain was given wait for a later drain: the soak sizes its
    checker between taking the ends and draining, and an output of an input produced after that
    was otherwise "unexpected" and never counted (4,214 of W4's in soak-60m-d794bfd)."""
    topic = f"drain-target-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(topic, 1)
    want = expected("W4", 10)
    out = [(b"k", json.dumps(want[i]).encode(), None) for i in range(10)]
    checker = Checker("W4", 4)
    watcher = OutputWatcher(kafka.bootstrap_servers, topic, 1, checker)
    try:
        kafka.produce(topic, out[:4])
        target = watcher.ends()
        kafka.produce(topic, out[4:])  # appended after the ends were taken, before the drain reads
        watcher.drain(target)
        assert (checker.records, checker.distinct) == (4, 4)
        checker.resize(10)
        watcher.drain()
        assert (checker.records, checker.distinct, checker.duplicates) == (10, 10, 0)
        assert checker.verdict() is None, checker.verdict()
    finally:
        watcher.close()


@pytest.mark.integration
def test_a_drain_to_a_transactions_end_stops_at_its_marker(kafka: LocalKafka) -> None:
    """A commit marker takes the offset before the end a read_committed reader can reach: a drain
    whose next record waits past its target still ends (it spun on the marker's offset)."""
    from confluent_kafka import Producer

    topic = f"drain-marker-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(topic, 1)
    want = expected("W4", 6)
    producer = Producer(
        {"bootstrap.servers": kafka.bootstrap_servers, "transactional.id": f"t-{topic}", "linger.ms": 0}
    )
    producer.init_transactions(30)

    def commit(ids: range) -> None:
        producer.begin_transaction()
        for i in ids:
            producer.produce(topic, json.dumps(want[i]).encode(), b"k")
        producer.commit_transaction(30)

    checker = Checker("W4", 3)
    watcher = OutputWatcher(kafka.bootstrap_servers, topic, 1, checker)
    try:
        commit(range(3))
        target = watcher.ends()
        assert target == {0: 4}  # three records and their commit marker
        commit(range(3, 6))
        watcher.drain(target)
        assert (checker.records, checker.distinct, watcher.position[0]) == (3, 3, 4)
        checker.resize(6)
        watcher.drain()
        assert (checker.records, checker.distinct, checker.duplicates) == (6, 6, 0)
    finally:
        watcher.close()
