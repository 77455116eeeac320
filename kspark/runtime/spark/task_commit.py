"""A task's commit of one micro-batch to Kafka: its output and, under exactly-once, its marker.

docs/state-and-guarantees.md has the design; in short, per Kafka Streams task
and micro-batch:

* **at_least_once**: the output goes out with the worker's warm idempotent
  producer (:class:`~kspark.runtime.spark.kafka_io.RecordSender`), and the
  task waits for every delivery before it ends.
* **exactly_once_v2**: the output, and the task's input offsets committed to
  the ``<application.id>`` consumer group, go out in one Kafka transaction of
  the task's producer (``transactional.id`` :func:`transactional_id`). The
  offsets carry a *marker* in their metadata: the Spark query's id and the
  micro-batch id. Before it writes, a task reads its marker: when it names
  this batch, Kafka has committed the batch's writes already (Spark crashed
  before its own commit, and runs the batch again), and the task writes
  nothing (:attr:`TaskCommit.replay`).

Fencing. A producer is kept warm in the worker for the task's next batch. Any
other instance of the same ``transactional.id`` that called
``init_transactions`` later (a retried attempt in another worker, an executor
that took the task over) fences it, and the warm producer's first
transactional request then fails. So the first request of every transaction
is ``send_offsets_to_transaction`` (synchronous, offsets known before
processing): if it fails for fencing, the producer is replaced by a new one,
whose ``init_transactions`` completes or aborts whatever the other instance
left open, and the marker is read again. Once that first request succeeded
this instance holds the newest epoch, so no other instance can commit for
the task: the marker it read is the last word.

The micro-batch's identity comes from Spark: the ``sql.streaming.queryId``
(persistent in the query's checkpoint) and ``streaming.sql.batchId`` local
properties of the job, which Spark hands to every task's Python worker.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kspark.errors import StreamsException, TaskMigratedException
from kspark.processor.internals.records import OutputRecord
from kspark.runtime.kafka_clients import librdkafka_security
from kspark.runtime.spark.kafka_io import RecordSender, committed_offsets, delivery_errors_into, flush
from kspark.runtime.spark.warm_pool import WarmPool

__all__ = [
    "BatchIdentity",
    "TaskCommit",
    "marker",
    "parse_marker",
    "transactional_id",
    "current_batch",
]

_LOG = logging.getLogger("kspark.producer")

_MARKER = re.compile(r"^kspark1 q=(?P<query>[0-9a-f-]+) b=(?P<batch>\d+)$")

TRANSACTION_TIMEOUT_MS = 300_000
"""A transaction the coordinator aborts when not finished within this time (5 min; the broker's
``transaction.max.timeout.ms`` is 15 min by default). A task's micro-batch must fit in it; a
stateful stage's batch is capped at 2,500,000 records a task by default. Set
``producer.transaction.timeout.ms`` for longer batches."""


@dataclass(frozen=True)
class BatchIdentity:
    """Which micro-batch of which Spark query a task runs in."""

    query: str  # the query's id, kept in its checkpoint across restarts
    batch: int


def current_batch() -> BatchIdentity | None:
    """The micro-batch the calling Spark task belongs to, or None outside a streaming query's task."""
    try:
        from pyspark import TaskContext
    except ImportError:  # pragma: no cover - pyspark is a dependency
        return None
    context = TaskContext.get()
    if context is None:
        return None
    query = context.getLocalProperty("sql.streaming.queryId")
    batch = context.getLocalProperty("streaming.sql.batchId")
    if not query or batch is None:
        return None
    return BatchIdentity(str(query), int(batch))


def marker(batch: BatchIdentity) -> str:
    """The offset metadata that says ``batch`` committed (see the module docstring)."""
    return f"kspark1 q={batch.query} b={batch.batch}"


def parse_marker(metadata: str | None) -> BatchIdentity | None:
    """The batch a committed offset's metadata names, or None for offsets kspark did not mark."""
    m = _MARKER.match(metadata or "")
    return BatchIdentity(m.group("query"), int(m.group("batch"))) if m else None


def transactional_id(application_id: str, subtopology: int, partition: int) -> str:
    """The task's ``transactional.id``: stable for the Kafka Streams task."""
    return f"{application_id}-{subtopology}_{partition}"


class _TransactionalProducer:
    """A producer of one ``transactional.id``, initialised (its epoch claimed) when made."""

    def __init__(self, conf: Mapping[str, Any], transactional_id: str) -> None:
        from confluent_kafka import Producer

        self.errors: list[str] = []
        self.stuck = False  # a call on it never returned: it is abandoned, never aborted or reused
        self.producer = Producer(
            {
                "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS,
                **conf,
                "transactional.id": transactional_id,
                "on_delivery": delivery_errors_into(self.errors),
                "delivery.report.only.error": True,
                "log.connection.close": False,
                "logger": _LOG,
            }
        )
        # Completes or aborts what an earlier instance of this id left open, and fences it.
        self.producer.init_transactions(120)


SEND_OFFSETS_TIMEOUT_S = 60.0
"""librdkafka's timeout for ``send_offsets_to_transaction``; the call is abandoned 30 s after it."""


def _returns_within(call: Callable[[], object], seconds: float) -> bool:
    """Run ``call`` in a thread; False if it has not returned after ``seconds`` (it is left to
    finish, or not, on its own). Its exception, if it raised one, is raised here."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as e:  # handed to the caller's thread
            outcome.append(e)

    thread = threading.Thread(target=run, name="kspark-send-offsets", daemon=True)
    thread.start()
    thread.join(seconds)
    if not outcome:
        return False
    if outcome[0] is not None:
        raise outcome[0]
    return True


TRANSACTIONAL: WarmPool[_TransactionalProducer] = WarmPool(60.0)
"""This worker's idle transactional producers, by ``transactional.id`` and configuration."""


COMMITTED_TIMEOUT_S = 60.0
"""How long a task keeps asking for its group's committed offsets while the answer is an error
that clears by itself (Java's ``default.api.timeout.ms``)."""

WARM_COMMITTED_TIMEOUT_S = 5.0
"""The same wait for a task that has a warm producer: offsets that stay unstable that long are
held by a transaction a newer producer of the task's ``transactional.id`` left open (an attempt on
an executor that was lost); they stay so until a producer claims the id's epoch, which aborts it,
or the transaction times out. So the task makes a new producer rather than wait."""


class _MarkerReader:
    """Reads and describes the ``<application.id>`` group's committed offsets (never subscribes)."""

    def __init__(self, bootstrap: str, group: str, extra: Mapping[str, Any]) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer(
            {
                **dict(extra),
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                # OffsetFetch then waits for offsets a pending transaction holds (KIP-447).
                "isolation.level": "read_committed",
                "logger": _LOG,
            }
        )

    def committed(
        self, partitions: Sequence[tuple[str, int]], timeout_s: float = COMMITTED_TIMEOUT_S
    ) -> dict[tuple[str, int], tuple[int, str | None]]:
        got = committed_offsets(self.consumer, partitions, timeout_s)
        return {(tp.topic, tp.partition): (tp.offset, tp.metadata) for tp in got}

    def close(self) -> None:
        self.consumer.close()


MARKER_READERS: WarmPool[_MarkerReader] = WarmPool(60.0, _MarkerReader.close)


class TaskCommit:
    """One task attempt's writes for one micro-batch (see the module docstring).

    ``input_partitions``: the task's input topic-partitions. Use: :meth:`begin` (False: the
    batch is a replay that Kafka committed, and :meth:`send` discards), :meth:`send` as
    output appears, then :meth:`commit` (returns the records written) or, on failure,
    :meth:`abort`. Offsets (``{(topic, partition): offset after the batch's last record}``)
    go to ``begin`` when known before processing, else to ``commit``.
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        producer_config: Mapping[str, Any],
        transactional_id: str,
        input_partitions: Sequence[tuple[str, int]],
    ) -> None:
        self.application_id = str(config["application.id"])
        self.exactly_once = str(config.get("processing.guarantee", "at_least_once")) == "exactly_once_v2"
        self.producer_config = dict(producer_config)
        self.transactional_id = transactional_id
        self.input_partitions = list(input_partitions)
        # The group's offsets are read by a consumer with the application's connection settings
        # (its consumer.* tuning is the Java client's: Spark's source takes it, librdkafka may not).
        self.consumer_config = librdkafka_security(config, "consumer")
        self.replay = False
        self.written = 0
        self._sender: RecordSender | None = None
        self._txn: _TransactionalProducer | None = None
        self._reader: _MarkerReader | None = None
        self._key = ""
        self._reader_key = ""
        self._batch = BatchIdentity("", -1)

    # ------------------------------------------------------------------ begin
    def begin(self, offsets: Mapping[tuple[str, int], int] | None = None) -> bool:
        """Start the task's writes for the batch; False when Kafka already committed them."""
        if not self.exactly_once:
            self._sender = RecordSender(self.producer_config)
            return True
        batch = current_batch()
        if batch is None:
            raise StreamsException(
                "exactly_once_v2 needs the Spark micro-batch's identity (sql.streaming.queryId and "
                "streaming.sql.batchId): the stage must run inside a kspark streaming query"
            )
        self._batch = batch
        bootstrap = str(self.producer_config["bootstrap.servers"])
        self._reader_key = json.dumps(
            [bootstrap, self.application_id, self.consumer_config], sort_keys=True, default=str
        )
        reader = MARKER_READERS.borrow(
            self._reader_key, lambda: _MarkerReader(bootstrap, self.application_id, self.consumer_config)
        )
        try:
            began = self._begin(reader, dict(offsets or {}))
        except BaseException:
            reader.close()
            raise
        if began:
            self._reader = reader  # its group metadata goes with the offsets; given back at commit
        else:
            MARKER_READERS.give_back(self._reader_key, reader)
        return began

    def _begin(self, reader: _MarkerReader, offsets: dict[tuple[str, int], int]) -> bool:
        from confluent_kafka import KafkaException

        self._key = json.dumps([self.transactional_id, self.producer_config], sort_keys=True, default=str)
        for _ in range(3):
            fresh = self._key not in TRANSACTIONAL
            txn = TRANSACTIONAL.borrow(
                self._key, lambda: _TransactionalProducer(self.producer_config, self.transactional_id)
            )
            try:
                committed = reader.committed(
                    self.input_partitions, COMMITTED_TIMEOUT_S if fresh else WARM_COMMITTED_TIMEOUT_S
                )
            except StreamsException as e:
                if fresh:
                    raise
                _LOG.info("%s: %s; taking the task back with a new producer", self.transactional_id, e)
                continue  # dropped: the next borrow makes a new producer, which claims the epoch
            if any(parse_marker(meta) == self._batch for _, meta in committed.values()):
                # Kafka committed this batch's writes; Spark had not committed the batch.
                TRANSACTIONAL.give_back(self._key, txn)
                self.replay = True
                return False
            # The offsets this batch commits where known now, else those committed before (with
            # the new marker): sending them first is what proves a warm producer is not fenced.
            first = {tp: offset for tp, (offset, _) in committed.items() if offset >= 0}
            first.update(offsets)
            try:
                txn.producer.begin_transaction()
                if first:
                    self._send_offsets(txn, reader, first)
                elif not fresh:
                    # Nothing to prove it with: a new producer claims the epoch instead.
                    _abort(txn)
                    continue
            except _Stuck as e:
                _LOG.warning("%s; trying again with a new producer", e)
                continue  # abandoned: the next borrow makes a new producer, which claims the epoch
            except KafkaException as e:
                if not _fenced(e):
                    _abort(txn)
                    raise StreamsException(
                        f"{self.transactional_id}: could not begin a transaction: {e}"
                    ) from e
                _LOG.info("%s: fenced by a newer instance; taking the task back", self.transactional_id)
                continue  # dropped: the next borrow makes a new producer, which claims the epoch
            self._txn = txn
            return True
        raise TaskMigratedException(f"{self.transactional_id} was fenced again and again while starting")

    def _send_offsets(
        self, txn: _TransactionalProducer, reader: _MarkerReader, offsets: Mapping[tuple[str, int], int]
    ) -> None:
        from confluent_kafka import TopicPartition

        mark = marker(self._batch)
        positions = [TopicPartition(t, p, o, metadata=mark) for (t, p), o in sorted(offsets.items())]
        group = reader.consumer.consumer_group_metadata()
        # librdkafka can block here past its own timeout when the group coordinator went away (a
        # broker restart: confluentinc/librdkafka#5456, #5511). The wait is bounded here instead;
        # a producer stuck in it is abandoned and the task fails, to be run again with a new one.
        if not _returns_within(
            lambda: txn.producer.send_offsets_to_transaction(positions, group, SEND_OFFSETS_TIMEOUT_S),
            SEND_OFFSETS_TIMEOUT_S + 30,
        ):
            txn.stuck = True
            raise _Stuck(
                f"{self.transactional_id}: Kafka did not take the batch's input offsets within "
                f"{SEND_OFFSETS_TIMEOUT_S + 30:.0f} s (its group coordinator is unreachable); the task "
                "fails and runs again with a new producer"
            )

    # ------------------------------------------------------------------ writes
    def send(self, records: Iterable[OutputRecord]) -> None:
        if self.replay:
            return
        if self._sender is not None:
            self._sender.send(records)
            return
        txn = self._txn
        assert txn is not None, "begin() first"
        producer = txn.producer
        produce = producer.produce
        written = 0
        for r in records:
            partition = -1 if r.partition is None else r.partition
            headers: Any = r.headers.to_list() if len(r.headers) else None
            while True:
                try:
                    produce(r.topic, r.value, r.key, partition, timestamp=r.timestamp, headers=headers)
                    break
                except BufferError:
                    producer.poll(0.05)
            written += 1
        producer.poll(0)
        self.written += written

    # ------------------------------------------------------------------ end
    def commit(self, offsets: Mapping[tuple[str, int], int] | None = None) -> int:
        """Wait for every record (and, under exactly-once, commit the transaction, with ``offsets``
        when :meth:`begin` could not know them); returns the records written."""
        if self.replay:
            return 0
        if self._sender is not None:
            sender, self._sender = self._sender, None
            return sender.close()
        txn, self._txn = self._txn, None
        reader, self._reader = self._reader, None
        assert txn is not None and reader is not None, "begin() first"
        try:
            if offsets:
                self._send_offsets(txn, reader, offsets)
            remaining = flush(txn.producer, 120)
            if remaining:
                raise StreamsException(f"{remaining} records were not delivered to Kafka within 120 s")
            if txn.errors:
                raise StreamsException(f"Kafka rejected {len(txn.errors)} records, first: {txn.errors[0]}")
            txn.producer.commit_transaction(120)
        except BaseException:
            _abort(txn)
            reader.close()
            raise
        TRANSACTIONAL.give_back(self._key, txn)
        MARKER_READERS.give_back(self._reader_key, reader)
        return self.written

    def abort(self) -> None:
        """After a failure: nothing of this attempt becomes visible (its clients are not reused)."""
        self._sender = None  # a RecordSender's borrowed producer is simply not given back
        txn, self._txn = self._txn, None
        if txn is not None:
            _abort(txn)
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.close()


class _Stuck(StreamsException):
    """A transactional call never returned; its producer is abandoned."""


def _fenced(error: Exception) -> bool:
    """Whether a transactional call failed because a newer instance of the id fenced this one."""
    from confluent_kafka import KafkaError

    kafka_error = error.args[0] if error.args else None
    if not isinstance(kafka_error, KafkaError):
        return False
    return kafka_error.code() in (
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
    )


def _abort(txn: _TransactionalProducer) -> None:
    if txn.stuck:
        return  # its transaction stays open until the next instance's init_transactions aborts it
    try:
        txn.producer.abort_transaction(30)
    except Exception as e:  # the next instance's init_transactions aborts it in any case
        _LOG.warning("aborting a transaction failed (%s); the task's next attempt aborts it", e)
