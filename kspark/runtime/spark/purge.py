"""Deleting the records of repartition topics that their readers have committed, as Kafka Streams does.

Kafka Streams keeps a repartition topic small: after a commit, at most once every
``repartition.purge.interval.ms``, each task asks the broker to delete the records of its
repartition topic-partitions below its committed offsets (``Admin.deleteRecords``; Kafka's
``TaskManager.maybePurgeCommittedRecords``), and does not wait for the answer: a purge that
failed is logged when the next one is due, and the next one asks again.

On Spark a committed micro-batch is that commit. Its progress report names where the batch
ended per topic-partition (:func:`kspark.runtime.spark.metrics.end_offsets`), and no batch
before it runs again: a restarted query, or a batch run again under ``exactly_once_v2``,
starts at the last committed batch's ends. So once a batch of the query that reads a
repartition topic is committed, the records before its ends can go. The progress of a
low-latency query names no ends (its tasks commit to the consumer group), so what such a query
reads is not purged; the broker's retention still applies there.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["RepartitionPurger"]

_log = logging.getLogger(__name__)

TP = tuple[str, int]


class RepartitionPurger:
    """Deletes the committed records of ``topics`` (full names), at most every ``interval_s``.

    :meth:`committed` is called with each committed batch's ends, on Spark's listener thread; it
    never waits for the broker. ``admin`` makes the (librdkafka) admin client, once, on first use.
    """

    def __init__(
        self,
        topics: Iterable[str],
        interval_s: float,
        admin: Callable[[], Any],
        *,
        request_timeout_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.topics = frozenset(topics)
        self.interval_s = interval_s
        self._make_admin = admin
        self._admin: Any = None
        self._request_timeout_s = request_timeout_s
        self._clock = clock
        self._lock = threading.Lock()
        self._committed: dict[TP, int] = {}  # the furthest committed end of each topic-partition
        self._deleted: dict[TP, int] = {}  # where a purge the broker confirmed deleted up to
        # When the last purge was asked for: the first is due an interval after the start, so a
        # long interval keeps every record (tests that read a repartition topic's records set one).
        self._last = clock()
        self._in_flight: dict[TP, tuple[int, Any]] = {}  # (offset, future) of the purge asked for

    def committed(self, ends: Mapping[TP, int]) -> None:
        """A batch was committed with these ends: note those of repartition topics, and purge
        when one is due and the last one has been answered."""
        mine = {tp: offset for tp, offset in ends.items() if tp[0] in self.topics}
        if not mine:
            return
        with self._lock:
            for tp, offset in mine.items():
                if offset > self._committed.get(tp, -1):
                    self._committed[tp] = offset
            now = self._clock()
            if now - self._last < self.interval_s:
                return
            if not self._answered():
                return  # as in Kafka Streams: no second purge while one is out
            due = {tp: o for tp, o in self._committed.items() if o > self._deleted.get(tp, 0)}
            if not due:
                return
            self._last = now
            self._in_flight = self._ask(due)

    def deleted(self) -> dict[TP, int]:
        """Where the broker has confirmed each topic-partition's records deleted up to (the
        purges answered so far)."""
        with self._lock:
            self._answered()
            return dict(self._deleted)

    def close(self) -> None:
        """Let the admin client go (a purge still out is not waited for)."""
        with self._lock:
            self._in_flight = {}
            self._admin = None

    def _answered(self) -> bool:
        """Whether the purge asked for last has been answered; its results noted (under _lock)."""
        if any(not future.done() for _, future in self._in_flight.values()):
            return False
        failed = []
        for tp, (offset, future) in self._in_flight.items():
            error = future.exception()
            if error is None:
                self._deleted[tp] = max(offset, self._deleted.get(tp, 0))
            else:
                failed.append(f"{tp[0]}-{tp[1]} below {offset}: {error}")
        if failed:
            # Kafka Streams logs a failed purge and asks again at the next one: the records stay
            # until then, which loses nothing.
            _log.warning("Failed to purge committed records of repartition topics: %s", "; ".join(failed))
        self._in_flight = {}
        return True

    def _ask(self, due: Mapping[TP, int]) -> dict[TP, tuple[int, Any]]:
        from confluent_kafka import TopicPartition

        if self._admin is None:
            self._admin = self._make_admin()
        requests = [
            TopicPartition(topic, partition, offset) for (topic, partition), offset in sorted(due.items())
        ]
        try:
            futures = self._admin.delete_records(requests, request_timeout=self._request_timeout_s)
        except Exception as e:  # refused locally (a closed client, say): noted, asked again next time
            _log.warning("Failed to purge committed records of repartition topics: %s", e)
            return {}
        _log.debug("purging repartition topics below %s", dict(due))
        return {(tp.topic, tp.partition): (due[(tp.topic, tp.partition)], f) for tp, f in futures.items()}
