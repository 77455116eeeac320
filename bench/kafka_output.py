"""Reading a run's output as a downstream consumer would: read_committed, and when records became visible.

Every reader of an output topic in the harness (the throughput run's
:class:`OutputWatcher`, the latency run's reader) is a ``read_committed``
consumer: under exactly-once, records of a transaction still open, or
aborted, never count. Under at-least-once nothing changes: without
transactions a partition's last stable offset is its high watermark.

When a record became visible. Output topics are created with
``message.timestamp.type=LogAppendTime``, so the broker stamps every record
batch with its append time. A record written outside a transaction is
visible from its batch's append time on. A transactional record is visible
from the time its transaction's commit marker was appended: a control batch,
stamped the same way, which no consumer ever receives. :class:`VisibleTimes`
reads the batch headers (record batch format v2) of the local broker's log
segments, so an exactly-once run's throughput and latency end when its
output was committed, measured by the same broker clock as an at-least-once
run's append times. For records outside transactions it gives exactly the
append time the consumer sees.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from confluent_kafka import Consumer, TopicPartition

from bench.workloads import Checker
from kspark.dev.kafka import LocalKafka

__all__ = [
    "READ_COMMITTED",
    "Batch",
    "OutputWatcher",
    "VisibleTimes",
    "batches",
    "broker_data_dir",
    "visible_times",
]

READ_COMMITTED = {"isolation.level": "read_committed"}
"""What every harness consumer of an output topic sets (Kafka's default is read_uncommitted for
librdkafka as for Java)."""

# Record batch v2: baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes,
# lastOffsetDelta, baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, records.
_HEADER = struct.Struct(">qiibIhiqqqhii")
_LOG_OVERHEAD = 12  # baseOffset and batchLength precede the length's span
_TRANSACTIONAL = 0x10
_CONTROL = 0x20
_COMMIT = 1  # control record key: (version int16, type int16); type 0 abort, 1 commit


@dataclass(frozen=True)
class Batch:
    """One record batch's header, as far as visibility needs it."""

    base: int
    last: int
    max_ts: int
    producer: int
    transactional: bool
    control: bool
    commit: bool = False  # a control batch's marker: commit (True) or abort


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint at ``pos``: (value, position after it)."""
    shift = raw = 0
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7


def _marker_is_commit(record: bytes) -> bool:
    """Whether a control batch's one record is a commit marker (else an abort)."""
    _length, pos = _varint(record, 0)
    pos += 1  # attributes
    _ts_delta, pos = _varint(record, pos)
    _offset_delta, pos = _varint(record, pos)
    _key_length, pos = _varint(record, pos)
    _version, kind = struct.unpack_from(">hh", record, pos)
    return bool(kind == _COMMIT)


def batches(partition_dir: Path) -> Iterator[Batch]:
    """Every record batch of one partition's log, in offset order (segment files are named by base offset)."""
    for segment in sorted(partition_dir.glob("*.log")):
        with open(segment, "rb") as fh:
            pos = 0
            while True:
                fh.seek(pos)
                head = fh.read(_HEADER.size + 32)
                if len(head) < _HEADER.size:
                    break
                base, length, _epoch, magic, _crc, attrs, delta, _base_ts, max_ts, producer, *_ = (
                    _HEADER.unpack_from(head)
                )
                if length <= 0:
                    break  # past the last batch written
                if magic != 2:
                    raise ValueError(f"{segment}: record batch at byte {pos} has magic {magic}, not 2")
                control = bool(attrs & _CONTROL)
                yield Batch(
                    base,
                    base + delta,
                    max_ts,
                    producer,
                    bool(attrs & _TRANSACTIONAL),
                    control,
                    control and _marker_is_commit(head[_HEADER.size :]),
                )
                pos += _LOG_OVERHEAD + length


class VisibleTimes:
    """When each record of one partition became visible to a ``read_committed`` reader (broker ms).

    A non-transactional batch is visible at its append time; a transactional
    one at the append time of its producer's next commit marker; records of
    aborted or still open transactions never (-1).
    """

    def __init__(self, found: Iterator[Batch]) -> None:
        starts: list[int] = []
        ends: list[int] = []
        times: list[int] = []
        waiting: dict[int, list[int]] = {}  # producer id -> its data batches not yet committed
        for b in found:
            if b.control:
                for i in waiting.pop(b.producer, []):
                    times[i] = b.max_ts if b.commit else -1
                continue
            starts.append(b.base)
            ends.append(b.last)
            times.append(-1 if b.transactional else b.max_ts)
            if b.transactional:
                waiting.setdefault(b.producer, []).append(len(times) - 1)
        self.starts = np.array(starts, dtype=np.int64)
        self.ends = np.array(ends, dtype=np.int64)
        self.times = np.array(times, dtype=np.int64)

    def at(self, offsets: np.ndarray) -> np.ndarray:
        """Visible time (ms) of the record at each offset; -1 where never visible or not a record."""
        offsets = np.asarray(offsets, dtype=np.int64)
        if not len(self.starts):
            return np.full(len(offsets), -1, dtype=np.int64)
        i = np.maximum(np.searchsorted(self.starts, offsets, side="right") - 1, 0)
        inside = (offsets >= self.starts[i]) & (offsets <= self.ends[i])
        return np.where(inside, self.times[i], -1)


def broker_data_dir(kafka: LocalKafka) -> Path:
    """The local broker's ``log.dirs`` (LocalKafka keeps it beside its ``logs/`` directory)."""
    return kafka.log_path.parents[1] / "data"


def visible_times(kafka: LocalKafka, topic: str, partition: int) -> VisibleTimes:
    return VisibleTimes(batches(broker_data_dir(kafka) / f"{topic}-{partition}"))


class OutputWatcher:
    """Reads the output topic from the start (``read_committed``), folding records into a Checker.

    Keeps the last append time seen and, per partition, the offset of the last
    record read (:meth:`visible_end_ms` turns those into the time the whole
    output was visible).
    """

    def __init__(self, bootstrap: str, topic: str, partitions: int, checker: Checker) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = [TopicPartition(topic, p, 0) for p in range(partitions)]
        self.checker = checker
        self.position = dict.fromkeys(range(partitions), 0)
        self.last_offset = dict.fromkeys(range(partitions), -1)
        self.last_append_ms = 0
        # Records consumed past a drain's target, folded by a later drain (see drain).
        self._ahead: list[Any] = []
        self.consumer = self._consumer()

    def _consumer(self) -> Consumer:
        """A consumer assigned the topic's partitions at the positions read so far."""
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"bench-watch-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                **READ_COMMITTED,
            }
        )
        consumer.assign([TopicPartition(self.topic, p, offset) for p, offset in self.position.items()])
        return consumer

    def reconnect(self) -> None:
        """Start over with a new consumer from the positions read so far. After a broker restart
        a consumer may keep failing every request (the soak's reader did, for the rest of
        soak-60m-158ea45's hour, while a new one read at once)."""
        old, self.consumer = self.consumer, self._consumer()
        old.close()
        self._ahead = []  # the new consumer reads them again, from the positions folded

    def high(self) -> int:
        """Summed end offsets a read_committed reader can reach (the last stable offsets)."""
        return sum(self.consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in self.partitions)

    def ends(self) -> dict[int, int]:
        """Per partition, the end offset a read_committed reader can reach now."""
        return {
            tp.partition: self.consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in self.partitions
        }

    def drain(self, target: dict[int, int] | None = None) -> None:
        """Read up to ``target`` (:meth:`ends`), by default the ends now.

        Folds no record at or past ``target``: one ``consume`` call can return records appended
        after the ends were taken, and a caller that sized its checker between the two (the
        soak: ends, then the inputs produced) would find them unexpected; 4,214 of W4's outputs
        in soak-60m-d794bfd. They wait in ``_ahead`` for a later drain."""
        target = self.ends() if target is None else target
        ahead, self._ahead = self._ahead, []
        self._fold(ahead, target)
        while any(self.position[p] < target[p] for p in target):
            self._fold(self.consume(), target)

    def consume(self) -> list[Any]:
        """The next records read (up to 100,000, 1 s), errors left out."""
        return [m for m in self.consumer.consume(num_messages=100_000, timeout=1.0) if not m.error()]

    def _fold(self, msgs: list[Any], target: dict[int, int]) -> None:
        """Fold ``msgs`` below ``target`` into the checker; keep the rest in ``_ahead``."""
        for msg in msgs:
            p, offset = int(msg.partition() or 0), int(msg.offset() or 0)
            if offset >= target.get(p, 0):
                self._ahead.append(msg)
                continue
            self.checker.add(msg.key(), msg.value())
            self.position[p] = offset + 1
            self.last_offset[p] = offset
            _ts_type, ts = msg.timestamp()
            if ts > self.last_append_ms:
                self.last_append_ms = ts
        # A transaction's commit marker takes an offset no record has: the consumer's own
        # position steps over it (the last record's offset + 1 would stop short of the end), up
        # to the target. A partition with a record waiting ahead has delivered everything below
        # the target (a partition is read in order): it is at the target.
        waiting = {int(m.partition() or 0) for m in self._ahead}
        for tp in self.consumer.position(self.partitions):
            p, end = tp.partition, target.get(tp.partition, 0)
            if p in waiting:
                self.position[p] = max(self.position[p], end)
            elif tp.offset >= 0:
                self.position[p] = max(self.position[p], min(tp.offset, end))

    def visible_end_ms(self, kafka: LocalKafka) -> int:
        """When the last record read became visible, over all partitions (0: nothing read)."""
        ends = [
            int(visible_times(kafka, self.topic, p).at(np.array([offset]))[0])
            for p, offset in self.last_offset.items()
            if offset >= 0
        ]
        return max(ends, default=0)

    def close(self) -> None:
        self.consumer.close()
