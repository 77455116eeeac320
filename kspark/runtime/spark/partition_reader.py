"""Reads an offset range of one Kafka topic-partition in a Spark Python worker, with librdkafka.

For the direct read of stateless sub-topologies (:mod:`~kspark.runtime.spark.direct_source`).
It keeps the semantics of Spark's Kafka source, which it replaces there:

* ``read_committed``: aborted records and transaction markers are skipped. A
  range may end in markers (its end is the partition's last stable offset
  when the batch was planned, and a transaction's commit marker takes an
  offset), so it is complete at the first record at or past its end, or
  when the consumer reports that it reached the partition's end beyond it.
* A record of the range that Kafka no longer holds (deleted by retention,
  compaction leaves gaps that are fine) fails the read with an error that
  says so, as Spark's source does with its default ``failOnDataLoss``.
* Records come in offset order, about one ``consume()`` batch at a time, as
  column lists, so only that much is Python objects at once.

The consumer is assigned, never subscribed (no group membership; nothing is
committed: Spark's checkpoint holds the offsets) and stays warm in the
worker for the next micro-batch (:data:`CONSUMERS`): a range that starts where
the last one ended continues with what the consumer already fetched, the
records it read past the last end included.
"""

from __future__ import annotations

import bisect
import json
import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kspark.errors import StreamsException
from kspark.runtime.spark.warm_pool import WarmPool

__all__ = [
    "Chunk",
    "PartitionReader",
    "CONSUMERS",
    "check_read_error",
    "consumer_config",
    "consume_toward",
    "read_range",
]

_LOG = logging.getLogger("kspark.consumer")

NO_PROGRESS_SECONDS = 120.0
"""A read that gets no record and no end of partition for this long fails (the broker is gone, or
the range can no longer be read)."""

_UNREADABLE = frozenset(
    {
        "UNKNOWN_TOPIC_OR_PART",
        "_UNKNOWN_PARTITION",
        "_UNKNOWN_TOPIC",
        "TOPIC_AUTHORIZATION_FAILED",
        "GROUP_AUTHORIZATION_FAILED",
    }
)
"""Errors (by librdkafka's name) after which a range cannot be read, however long one waits."""

_CONSUME_BATCH = 10_000  # records per consume() call: one chunk, about one Arrow batch of the JVM path
_CONSUME_WAIT = 0.05
"""Seconds a :func:`consume_toward` call waits for records still missing: about what is lost at the
end of a range that holds fewer records than offsets (transaction markers, compacted gaps)."""


def consume_toward(consumer: Any, wanted: int, most: int) -> list[Any]:
    """Up to ``wanted`` (at most ``most``) messages of a read toward a known end offset.

    librdkafka's ``consume(n, timeout)`` returns when it holds ``n`` messages or at its timeout.
    Asking for a full batch near the end of a caught-up log waited out the whole timeout in
    every micro-batch (W1 at 20,000 records/s and a 100 ms trigger: p50 latency 666 ms before,
    302 ms after, bench/results/latency-100ms-trigger). ``wanted``
    is what the read still lacks in offsets, so in the usual case the call returns as soon as
    the records are there; a short timeout bounds the wait where fewer records than offsets
    remain. Callers loop until their end, so a short call loses nothing.
    """
    return consumer.consume(max(1, min(most, wanted)), _CONSUME_WAIT)  # type: ignore[no-any-return]


def consumer_config(bootstrap_servers: str, group_id: str, extra: Mapping[str, Any]) -> dict[str, Any]:
    """librdkafka settings of a range reader; ``extra`` (the application's ``consumer.*``) on top,
    except for what the reader's semantics rest on."""
    return {
        "bootstrap.servers": bootstrap_servers,
        "group.id": group_id,  # librdkafka wants one; nothing is committed to it
        # librdkafka waits fetch.queue.backoff.ms (1 s) before it fetches again for a partition
        # whose prefetch queue was full (100,000 messages): one partition read at 0.19M records/s,
        # with 10 ms at 1.4M/s, ~50 MB of prefetch (python -m bench.consumer_read).
        "fetch.queue.backoff.ms": 10,
        "log.connection.close": False,
        **dict(extra),
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "isolation.level": "read_committed",
        "enable.partition.eof": True,  # how a range that ends in transaction markers is known to end
        "auto.offset.reset": "error",  # records gone from Kafka fail the read, never skipped
    }


@dataclass(frozen=True, slots=True)
class Chunk:
    """Consecutive records of one topic-partition, in offset order, as columns."""

    offsets: list[int]
    timestamps: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[list[tuple[str, bytes | None]] | None]  # librdkafka's: None for none


def _offset(message: Any) -> int:
    return message.offset()  # type: ignore[no-any-return]


class PartitionReader:
    """A warm librdkafka consumer of one topic-partition (see the module docstring)."""

    def __init__(self, conf: Mapping[str, Any], topic: str, partition: int) -> None:
        from confluent_kafka import Consumer

        self.topic, self.partition = topic, partition
        self.consumer = Consumer({**conf, "logger": _LOG})
        self._next: int | None = None  # offset the records in ``_ahead``/the consumer continue from
        self._ahead: list[Any] = []  # consumed past the last range's end, for the next one
        self._assigned = False

    def read(self, start: int, end: int) -> Iterator[Chunk]:
        """The records with offsets in [start, end), a chunk at a time."""
        from confluent_kafka import TopicPartition

        if self._next != start:
            self._ahead = []
            tp = TopicPartition(self.topic, self.partition, start)
            if self._assigned:
                self.consumer.seek(tp)
            else:
                self.consumer.assign([tp])
                self._assigned = True
        self._next = None  # unknown until this read completes
        position = start
        deadline = time.monotonic() + NO_PROGRESS_SECONDS
        while position < end:
            if self._ahead:
                messages, self._ahead = self._ahead, []
            else:
                messages = consume_toward(self.consumer, end - position, _CONSUME_BATCH)
            events = [m for m in messages if m.error() is not None]  # (KafkaError == None raises)
            if messages and not events:
                # Records only, the usual case: columns by comprehension, cut at the range's end.
                if messages[-1].offset() >= end:
                    cut = bisect.bisect_left(messages, end, key=_offset)
                    messages, self._ahead = messages[:cut], messages[cut:]
                    position = end
                else:
                    position = messages[-1].offset() + 1
                offsets = [m.offset() for m in messages]
                timestamps = [m.timestamp()[1] for m in messages]
                keys = [m.key() for m in messages]
                values = [m.value() for m in messages]
                headers = [m.headers() for m in messages]
            else:
                offsets, timestamps, keys, values, headers, position = self._columns(messages, position, end)
            if offsets:
                deadline = time.monotonic() + NO_PROGRESS_SECONDS
                yield Chunk(offsets, timestamps, keys, values, headers)
            elif position < end and time.monotonic() > deadline:
                raise StreamsException(
                    f"Reading {self.topic}[{self.partition}] offsets {position} to {end}: no record "
                    f"and no end of the partition within {NO_PROGRESS_SECONDS:.0f} s"
                )
        self._next = end

    def _columns(
        self, messages: list[Any], position: int, end: int
    ) -> tuple[list[int], list[int], list[Any], list[Any], list[Any], int]:
        """The records among ``messages`` below ``end`` as columns, and the position after them;
        the end of the partition past ``end`` completes the range; other events are checked."""
        from confluent_kafka import KafkaError

        offsets: list[int] = []
        timestamps: list[int] = []
        keys: list[Any] = []
        values: list[Any] = []
        headers: list[Any] = []
        for i, msg in enumerate(messages):
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    if msg.offset() >= end:
                        return offsets, timestamps, keys, values, headers, end  # markers, aborted records
                    continue
                self._check(error, position, end)
                continue
            offset = msg.offset()
            if offset >= end:
                self._ahead = messages[i:]
                return offsets, timestamps, keys, values, headers, end
            offsets.append(offset)
            timestamps.append(msg.timestamp()[1])
            keys.append(msg.key())
            values.append(msg.value())
            headers.append(msg.headers())
            position = offset + 1
        return offsets, timestamps, keys, values, headers, position

    def _check(self, error: Any, position: int, end: int) -> None:
        check_read_error(error, f"{self.topic}[{self.partition}] offsets {position} to {end}")

    def close(self) -> None:
        self.consumer.close()


def check_read_error(error: Any, where: str) -> None:
    """Raise for a consumer error (a ``KafkaError``) after which ``where`` cannot be read;
    librdkafka retries the others (a broker restarting, say) itself, and they are logged."""
    from confluent_kafka import KafkaError

    code = error.code()
    if code in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
        raise StreamsException(
            f"Records of {where} are no longer in Kafka (deleted by retention or a DeleteRecords "
            f"request since they were planned): {error.str()}. Their output would be lost, so the "
            "query stops, as with Spark's Kafka source (failOnDataLoss)"
        )
    if error.fatal() or error.name() in _UNREADABLE:
        raise StreamsException(f"Reading {where}: {error.str()}")
    _LOG.warning("Reading %s: %s (retrying)", where, error.str())


CONSUMERS: WarmPool[PartitionReader] = WarmPool(60.0, PartitionReader.close)
"""This worker's idle range readers, by configuration and topic-partition."""


def read_range(conf: Mapping[str, Any], topic: str, partition: int, start: int, end: int) -> Iterator[Chunk]:
    """The records of ``topic[partition]`` in [start, end), a chunk at a time, read by a warm reader
    of this worker (returned to it only when the whole range was read)."""
    key = json.dumps([conf, topic, partition], sort_keys=True, default=str)
    reader = CONSUMERS.borrow(key, lambda: PartitionReader(conf, topic, partition))
    try:
        yield from reader.read(start, end)
    except BaseException:
        reader.close()  # its position is unknown
        raise
    CONSUMERS.give_back(key, reader)
