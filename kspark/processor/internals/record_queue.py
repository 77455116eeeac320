"""Per-partition record queues and the partition group that picks the next record.

As Kafka's ``RecordQueue``: raw records are deserialized and timestamped
when they reach the head (deserialization errors go to the deserialization
exception handler; negative extracted timestamps are dropped and counted).
As Kafka's ``PartitionGroup``: the next record comes from the non-empty queue
with the smallest head timestamp (ties broken as ``java.util.PriorityQueue``
does), and stream time is the largest timestamp taken so far.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kspark.processor.internals.java_compat import JavaPriorityQueue
from kspark.processor.internals.nodes import SourceNode
from kspark.processor.internals.records import ConsumerRecord, RawRecord
from kspark.processor.internals.timestamp_extractors import TimestampExtractor

__all__ = ["StampedRecord", "RecordQueue", "PartitionGroup", "UNKNOWN"]

UNKNOWN = -1
_log = logging.getLogger(__name__)


@dataclass(slots=True)
class StampedRecord:
    """A deserialized record with its extracted timestamp; ``record`` None marks a corrupted one."""

    record: ConsumerRecord | None
    raw: RawRecord
    timestamp: int

    @property
    def corrupted(self) -> bool:
        return self.record is None


class RecordQueue:
    """The buffered records of one input partition."""

    def __init__(
        self,
        topic: str,
        partition: int,
        source: SourceNode,
        extractor: TimestampExtractor,
        deserialize: Callable[[SourceNode, RawRecord], ConsumerRecord | None],
        on_dropped: Callable[[str], None],
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.source = source
        self._extractor = extractor
        self._deserialize = deserialize
        self._on_dropped = on_dropped
        self._fifo: deque[RawRecord] = deque()
        self._head: StampedRecord | None = None
        self.partition_time = UNKNOWN

    def add_raw_records(self, records: Iterable[RawRecord]) -> int:
        self._fifo.extend(records)
        self._update_head()
        return self.size()

    def poll(self) -> StampedRecord:
        head = self._head
        assert head is not None
        self._head = None
        self.partition_time = max(self.partition_time, head.timestamp)
        self._update_head()
        return head

    def take_all(self) -> tuple[StampedRecord | None, list[RawRecord]]:
        """Remove every buffered record, for a caller that takes them itself (``StreamTask``'s
        fused batches): the head as it was stamped (deserialized, records before it that failed
        already handled), and the raw records behind it. Partition time does not move."""
        head, records = self._head, list(self._fifo)
        self._head = None
        self._fifo.clear()
        return head, records

    def size(self) -> int:
        return len(self._fifo) + (0 if self._head is None else 1)

    def is_empty(self) -> bool:
        return self._head is None and not self._fifo

    def head_timestamp(self) -> int:
        return UNKNOWN if self._head is None else self._head.timestamp

    def head_offset(self) -> int | None:
        """The offset of the first record still buffered (None when empty): where a consumer
        that commits only what was processed commits this partition."""
        if self._head is not None:
            return self._head.raw.offset
        return self._fifo[0].offset if self._fifo else None

    def _update_head(self) -> None:
        last_corrupted: RawRecord | None = None
        while self._head is None and self._fifo:
            raw = self._fifo.popleft()
            record = self._deserialize(self.source, raw)
            if record is None:
                last_corrupted = raw
                continue
            try:
                ts = self._extractor.extract(record, self.partition_time)
            except Exception as e:
                from kspark.errors import StreamsException

                if isinstance(e, StreamsException):
                    raise
                raise StreamsException(
                    f"Fatal user code error in TimestampExtractor callback for record {record}"
                ) from e
            if ts < 0:
                _log.warning(
                    "Skipping record due to negative extracted timestamp. "
                    "topic=[%s] partition=[%s] offset=[%s] "
                    "extractedTimestamp=[%s] extractor=[%s]",
                    record.topic,
                    record.partition,
                    record.offset,
                    ts,
                    type(self._extractor).__name__,
                )
                self._on_dropped("negative timestamp")
                continue
            self._head = StampedRecord(record, raw, ts)
        # keep the last corrupted record so its offset still gets committed (KAFKA-6502)
        if self._head is None and last_corrupted is not None:
            self._head = StampedRecord(None, last_corrupted, UNKNOWN)


class PartitionGroup:
    """All input partitions of a task; chooses the next record by head timestamp.

    A task with one input partition (most stateless and aggregating tasks)
    takes records straight from its queue: with one candidate the
    head-timestamp choice is the queue's order, and the priority queue's
    bookkeeping was a tenth of the per-record cost.
    """

    def __init__(self) -> None:
        self.queues: dict[tuple[str, int], RecordQueue] = {}
        self._non_empty: JavaPriorityQueue[RecordQueue] = JavaPriorityQueue(
            lambda a, b: a.head_timestamp() < b.head_timestamp()
        )
        self._single: RecordQueue | None = None
        self.stream_time = UNKNOWN

    def add_queue(self, queue: RecordQueue) -> None:
        self.queues[(queue.topic, queue.partition)] = queue
        if len(self.queues) == 1:
            self._single = queue
            return
        if self._single is not None and not self._single.is_empty():
            self._non_empty.offer(self._single)  # it was not tracked while it was the only queue
        self._single = None

    def add_raw_records(self, topic: str, partition: int, records: Iterable[RawRecord]) -> int:
        queue = self.queues[(topic, partition)]
        old = queue.size()
        new = queue.add_raw_records(records)
        if old == 0 and new > 0 and self._single is None:
            self._non_empty.offer(queue)
        return new

    def next_record(self) -> tuple[StampedRecord, RecordQueue] | None:
        queue = self._single
        if queue is not None:
            if queue.is_empty():
                return None
        else:
            queue = self._non_empty.poll()
            if queue is None:
                return None
        record = queue.poll()
        if self._single is None and not queue.is_empty():
            self._non_empty.offer(queue)
        if record.timestamp > self.stream_time:
            self.stream_time = record.timestamp
        return record, queue

    def take_all(self, queue: RecordQueue) -> tuple[StampedRecord | None, list[RawRecord]]:
        """:meth:`RecordQueue.take_all` of ``queue``, the only queue with records; stream time
        does not move (the caller advances it as it takes the records)."""
        if self._single is None:
            polled = self._non_empty.poll()
            assert polled is queue and not self._non_empty, "take_all() of the only non-empty queue"
        return queue.take_all()

    def num_buffered(self) -> int:
        return sum(q.size() for q in self.queues.values())
