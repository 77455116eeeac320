"""Kafka I/O of the Spark runner: the spark-sql-kafka source and kspark's own sink.

The source is Spark's Kafka connector read as ``read_committed``, reduced to
the columns a task needs (timestamps as epoch milliseconds). The sink is
kspark's own: Spark's Kafka sink cannot set record timestamps (Kafka Streams
keeps the input record's timestamp on output) and is at-least-once only, so
the stage that runs the tasks writes their output records itself, with a
confluent-kafka producer kept warm in the Python worker (:class:`RecordSender`), and hands
Spark only a count. Records never travel to the driver, nor back to the JVM
and into a second Python stage (the runner did that first: a whole extra
Arrow round trip per output record). Keyed records are partitioned with
murmur2, as the Java producer Kafka Streams uses does, so output partitions
match Kafka Streams'.

:class:`HeaderReader` reads a few records' headers back by offset, for the
native counts, which Spark hands fixed-width columns only. :class:`OffsetLister`
lists partitions' first or last stable offsets, for the direct read's planner and
the global stores' replicas.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kspark.errors import StreamsException
from kspark.processor.api import Headers
from kspark.processor.internals.records import OutputRecord
from kspark.runtime.spark.warm_pool import WarmPool

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from kspark.config import StreamsConfig

__all__ = [
    "RECORD_DDL",
    "WRITTEN_DDL",
    "read_kafka",
    "SPARK_SOURCE_CONSUMER_DEFAULTS",
    "RecordSender",
    "delivery_errors_into",
    "flush",
    "HeaderReader",
    "producer_config",
    "OffsetLister",
    "OFFSETS_RETRY_SECONDS",
    "committed_offsets",
    "group_start",
]

# The row shape every stage exchanges: one Kafka record.
RECORD_DDL = (
    "topic string, partition int, offset long, timestamp long, key binary, value binary, "
    "headers array<struct<key:string,value:binary>>"
)

WRITTEN_DDL = "written long, task_metrics string"
"""What a stage returns to Spark: how many output records its Spark task wrote, and what its
Kafka Streams tasks report (records dropped, end-to-end latencies: warm.new_task_metrics)."""


SPARK_SOURCE_CONSUMER_DEFAULTS: dict[str, str] = {
    # A Spark task whose range ends at the end of a log that gets no newer records waits out a
    # fetch that the broker holds for fetch.max.wait.ms (500 ms by default): every such task
    # took ~0.5 s whatever it read (a batch over 200 one-record topic-partitions on 2 cores:
    # 53-56 s at 500 ms, 3.2-3.4 s at 10 ms). A task reads a known offset range, so a short wait adds
    # no requests while records flow.
    "kafka.fetch.max.wait.ms": "10",
    # Spark's source polls its consumer for one record at a time from the records of a poll; at
    # the Java default of 500 a poll, W2's 10M-record batch under exactly_once_v2 took 27-28 s,
    # at 10,000 20.3 s (bench/results/w2-10m-eos-consumer-04f456c). The records are those the
    # consumer has fetched already: no more memory.
    "kafka.max.poll.records": "10000",
}
"""Options of Spark's Kafka source that kspark sets unless ``consumer.*`` settings give them."""


def read_kafka(
    spark: SparkSession,
    bootstrap_servers: str,
    partitions: Mapping[str, int],
    *,
    starting_offsets: str = "earliest",
    options: Mapping[str, str] | None = None,
) -> DataFrame:
    """A streaming DataFrame of ``RECORD_DDL`` rows from every partition of ``partitions`` (read_committed).

    Partitions are assigned explicitly (topic -> partition count, read by the
    runner's admin client): the connector's ``subscribe`` strategy asks the
    broker with a DescribeTopicPartitions call that Kafka 4 brokers answer
    with UnknownTopicOrPartition for kafka-clients 3.9, so it cannot be used.
    """
    import json

    from pyspark.sql import functions as F

    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("assign", json.dumps({t: list(range(n)) for t, n in sorted(partitions.items())}))
        .option("startingOffsets", starting_offsets)
        .option("includeHeaders", "true")
        .option("kafka.isolation.level", "read_committed")
    )
    for k, v in {**SPARK_SOURCE_CONSUMER_DEFAULTS, **(options or {})}.items():
        reader = reader.option(k, v)
    return reader.load().select(
        "topic",
        "partition",
        "offset",
        F.unix_millis("timestamp").alias("timestamp"),
        "key",
        "value",
        "headers",
    )


def producer_config(bootstrap_servers: str, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """librdkafka settings that make output match a Java producer's placement and order."""
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap_servers,
        # Java's default partitioner for keyed records; librdkafka's default is CRC32.
        "partitioner": "murmur2_random",
        "enable.idempotence": True,
        "linger.ms": 5,
        "batch.num.messages": 10000,
        "queue.buffering.max.messages": 1000000,
    }
    conf.update(extra or {})
    return conf


_LOG = logging.getLogger("kspark.producer")


class _WarmProducer:
    """A producer of this Python worker process and the delivery errors it reported."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        from confluent_kafka import Producer

        self.errors: list[str] = []
        # Delivery reports for failed records only: a Python callback per delivered
        # record was a tenth of the sink's cost, and success needs no action here.
        # librdkafka's log lines through Python logging are served by poll()/flush()
        # only: a producer in use reports as before, an idle warm one (its broker
        # gone with its application, say) does not print reconnect failures.
        self.producer = Producer(
            {
                **conf,
                "on_delivery": delivery_errors_into(self.errors),
                "delivery.report.only.error": True,
                "log.connection.close": False,
                "logger": _LOG,
            }
        )


def delivery_errors_into(errors: list[str]) -> Callable[[Any, Any], None]:
    """A producer's ``on_delivery`` that appends each failed record's error to ``errors``.

    Not a method of the producer's owner: the producer holds its callback, and a bound method
    would hold the owner, a cycle that only the garbage collector breaks; dropping the owner
    must destroy the producer (its librdkafka threads and buffers) at once."""

    def on_delivery(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(f"{msg.topic()}[{msg.partition()}]: {err}")

    return on_delivery


def flush(producer: Any, timeout: float) -> int:
    """``producer.flush(timeout)``, raising the producer's own error where confluent-kafka hides it.

    After a fatal error (a transactional producer fenced by a newer instance, say) confluent-kafka
    may call ``on_delivery`` with that error already raised; the callback's first call into the
    client then fails with ``SystemError: ... returned a result with an exception set``, whose
    cause is the real ``KafkaException`` (seen once in the suite: a fenced zombie's commit). The
    cause is what the caller needs (``_fenced`` reads it), so it is raised instead."""
    try:
        return int(producer.flush(timeout))
    except SystemError as e:
        if isinstance(e.__cause__, Exception):
            raise e.__cause__ from None  # the SystemError only says the callback saw it too
        raise


PRODUCERS: WarmPool[_WarmProducer] = WarmPool(60.0)
"""This worker's idle producers by configuration (dropping the last reference destroys one)."""


class RecordSender:
    """Writes a Spark task's output records to Kafka.

    Opened lazily in the worker (only plain config is pickled), closed by
    :meth:`close`, which waits for every delivery: a delivery failure raises,
    failing the Spark task so that the micro-batch is retried -- at-least-once,
    never a silent drop.

    The producer is borrowed from the worker process and given back after a
    clean close, so the next Spark task in this worker (the next micro-batch)
    reuses it: a fresh idempotent librdkafka producer waits ~0.5 s for its
    producer id before its first delivery (``python -m bench.producer_start``),
    a fixed cost that dominated small micro-batches. A producer left idle for
    60 s is closed, so one does not outlive its application for long; one
    whose task failed, or that reported a delivery error, is never reused.
    """

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.conf = dict(conf)
        self.written = 0
        self._key = json.dumps(self.conf, sort_keys=True, default=str)
        self._warm: _WarmProducer | None = None

    def _open(self) -> Any:
        self._warm = PRODUCERS.borrow(self._key, lambda: _WarmProducer(self.conf))
        return self._warm.producer

    def send(self, records: Iterable[OutputRecord]) -> None:
        producer = self._warm.producer if self._warm is not None else self._open()
        produce = producer.produce
        written = 0
        for r in records:
            # -1: librdkafka's "unassigned", its partitioner (murmur2_random) decides
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

    def close(self) -> int:
        """Wait for every record to be delivered; returns how many were written."""
        warm, self._warm = self._warm, None
        if warm is None:
            return 0
        remaining = flush(warm.producer, 120)
        if remaining:
            raise StreamsException(f"{remaining} records were not delivered to Kafka within 120 s")
        if warm.errors:
            raise StreamsException(f"Kafka rejected {len(warm.errors)} records, first: {warm.errors[0]}")
        PRODUCERS.give_back(self._key, warm)
        return self.written


_READ_TIMEOUT_S = 120.0
_log = logging.getLogger(__name__)


class HeaderReader:
    """Reads the headers of given records of one topic back from Kafka, by offset.

    For the native counts (:mod:`~kspark.runtime.spark.lowering`,
    :mod:`~kspark.runtime.spark.windowed_count`): Spark hands them only a
    flag for "this record had headers", and they ask here for the records
    they forward whose flag is set. Offsets are read in
    order; a gap of up to ``seek_gap`` records is read through (a new fetch
    costs ~0.1 s here, reading on ~2 µs a record), a longer one is skipped
    by re-assigning the partition, so a call reads at most the range its
    offsets span (``python -m bench.header_reader``: 0.1 s for W2's keys,
    1.6 s for a skewed 2.5M-record batch, every record with headers).
    Opened lazily, assigned and never subscribed: no group membership,
    nothing committed.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        group_id: str,
        *,
        seek_gap: int = 100_000,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.settings = dict(settings or {})  # connection settings (kafka_clients.py)
        self.group_id = group_id
        self.seek_gap = seek_gap
        self._consumer: Any = None

    @staticmethod
    def of_application(config: Mapping[str, Any]) -> HeaderReader:
        """A reader for the application whose StreamsConfig settings are ``config``."""
        from kspark.config import StreamsConfig
        from kspark.runtime.kafka_clients import librdkafka_security

        streams_config = StreamsConfig(dict(config))
        return HeaderReader(
            ",".join(streams_config.bootstrap_servers()),
            f"{streams_config.application_id()}-headers",
            settings=librdkafka_security(config, "consumer"),
        )

    def read(self, topic: str, partition: int, offsets: Sequence[int]) -> dict[int, Headers]:
        """Headers by offset of the records at ``offsets``; one Kafka no longer holds (deleted by
        retention or compaction since it was counted) is logged and left out."""
        from confluent_kafka import TopicPartition

        if self._consumer is None:
            from confluent_kafka import Consumer

            self._consumer = Consumer(
                {
                    **self.settings,
                    "bootstrap.servers": self.bootstrap_servers,
                    "group.id": self.group_id,
                    "enable.auto.commit": False,
                    "isolation.level": "read_committed",
                    "enable.partition.eof": False,
                    # librdkafka's 1 MB per partition fetch made a sequential read 3.6x slower
                    # (6.8 vs 1.9 µs a record, python -m bench.header_reader).
                    "fetch.message.max.bytes": 16 * 1024 * 1024,
                    "fetch.max.bytes": 64 * 1024 * 1024,
                    # At the log's end the broker holds a fetch this long, and a seek waits for it.
                    "fetch.wait.max.ms": 10,
                    # A deleted offset reads on from the log's start: the records before it are gone.
                    "auto.offset.reset": "earliest",
                }
            )
        wanted = sorted(set(offsets))
        found: dict[int, Headers] = {}
        i = 0
        while i < len(wanted):
            self._consumer.assign([TopicPartition(topic, partition, wanted[i])])
            position = wanted[i]
            deadline = time.monotonic() + _READ_TIMEOUT_S
            while i < len(wanted) and wanted[i] - position <= self.seek_gap:
                # No more than the offsets left: a full batch returns at once, a partial one only
                # at the timeout (the partition's last record is often the last one wanted).
                messages = self._consumer.consume(min(1000, wanted[-1] - position + 1), timeout=0.1)
                if messages:
                    deadline = time.monotonic() + _READ_TIMEOUT_S  # a long read-through is progress
                elif time.monotonic() > deadline:
                    raise StreamsException(
                        f"Could not read {topic}[{partition}] at offset {wanted[i]} "
                        f"within {_READ_TIMEOUT_S} s"
                    )
                for msg in messages:
                    if msg.error() is not None:
                        raise StreamsException(f"Reading {topic}[{partition}]: {msg.error()}")
                    offset = msg.offset()
                    position = offset + 1
                    while i < len(wanted) and wanted[i] < offset:
                        _log.warning(
                            "%s[%s] no longer holds offset %s: its count is forwarded without headers",
                            topic,
                            partition,
                            wanted[i],
                        )
                        i += 1
                    if i < len(wanted) and wanted[i] == offset:
                        found[offset] = Headers(msg.headers())  # None: no headers
                        i += 1
                    if i == len(wanted) or wanted[i] - position > self.seek_gap:
                        break
        return found

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


OFFSETS_RETRY_SECONDS = 120.0
"""How long offsets are retried on errors that clear by themselves (a broker restarting)."""


class _Retry(Exception):
    """One listing of offsets met an error that clears by itself."""


class OffsetLister:
    """Partitions' first offsets or last stable offsets (the end a ``read_committed`` consumer
    reaches), through an admin client opened on first use.

    Not the consumer's ``get_watermark_offsets``: its high watermark is past the last stable offset
    while a transaction is open, and librdkafka's query can wait forever whatever its timeout
    (librdkafka #2588, #4878; seen here in a Spark worker). An admin request times out. Errors that
    clear by themselves (a broker restarting: stale leader epochs, no leader yet, connections
    refused) are retried with a fresh admin client for up to :data:`OFFSETS_RETRY_SECONDS`; then,
    or for any other error, :class:`StreamsException` names the partition and the error."""

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        request_timeout_s: float = 60.0,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.settings = dict(settings or {})  # connection settings (kafka_clients.py)
        self.request_timeout_s = request_timeout_s
        self._admin: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_admin": None}

    def close(self) -> None:
        """Let the admin client go (it connects to the cluster until dropped); a later call to
        :meth:`offsets` opens another."""
        self._admin = None

    def offsets(
        self, partitions: Iterable[tuple[str, int]], *, latest: bool, committed: bool = True
    ) -> dict[tuple[str, int], int]:
        """Each partition's last stable offset (``latest``; its high watermark when not
        ``committed``) or first offset."""
        from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
        from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

        request = {
            TopicPartition(t, p): OffsetSpec.latest() if latest else OffsetSpec.earliest()  # type: ignore[no-untyped-call]
            for t, p in partitions
        }
        deadline = time.monotonic() + OFFSETS_RETRY_SECONDS
        while True:
            if self._admin is None:
                # Its log lines through Python logging: librdkafka's own printer would write to
                # stderr, once a second, for as long as a lister outlives its cluster.
                conf: dict[str, Any] = {**self.settings, "bootstrap.servers": self.bootstrap_servers}
                # confluent-kafka takes a logging.Logger here; its type stub says only str or number
                self._admin = AdminClient({**conf, "logger": _log})  # type: ignore[dict-item]
            isolation = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
            futures = self._admin.list_offsets(
                request, isolation_level=isolation, request_timeout=self.request_timeout_s
            )
            out: dict[tuple[str, int], int] = {}
            try:
                for tp, future in futures.items():
                    try:
                        # The admin request times out by itself; the margin is for a client that
                        # does not deliver its result at all.
                        out[(tp.topic, tp.partition)] = int(
                            future.result(timeout=self.request_timeout_s + 30).offset
                        )
                    except (KafkaException, TimeoutError) as e:
                        if passing(e) and time.monotonic() < deadline:
                            raise _Retry from e
                        raise StreamsException(
                            f"Could not list the offsets of {tp.topic}[{tp.partition}] on "
                            f"{self.bootstrap_servers}: {e!r}"
                        ) from e
                return out
            except _Retry as retry:
                # The error's text, not the error: a handler that keeps records (pytest's) would keep
                # its traceback's frames, and every object they hold, alive.
                _log.warning(
                    "listing offsets on %s: %s; retrying", self.bootstrap_servers, repr(retry.__cause__)
                )
                self._admin = None  # its metadata may be what is stale
                time.sleep(1.0)


def passing(error: BaseException) -> bool:
    """Whether a Kafka error clears by itself: retriable, or metadata a restarted broker fixes.

    Coordinator errors are among them: a broker that just started (or took over the
    ``__consumer_offsets`` partition) answers NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS
    until it has loaded the group; Java's consumer retries those until its timeout.
    """
    from confluent_kafka import KafkaError

    if isinstance(error, TimeoutError):
        return True
    kafka_error = error.args[0] if error.args else None
    if not isinstance(kafka_error, KafkaError):
        return False
    return passing_error(kafka_error)


def passing_error(kafka_error: Any) -> bool:
    """:func:`passing` for a ``KafkaError`` itself (a per-partition error of a response)."""
    from confluent_kafka import KafkaError

    codes = (
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    )
    return bool(kafka_error.retriable()) or kafka_error.code() in codes


def committed_offsets(consumer: Any, partitions: Sequence[tuple[str, int]], timeout_s: float) -> list[Any]:
    """``consumer``'s group's committed offsets of ``partitions`` (``TopicPartition`` s), asked
    again until ``timeout_s`` while the answer is an error that clears by itself (a coordinator
    still loading the group after a broker started: NOT_COORDINATOR), as Java's consumer does."""
    from confluent_kafka import KafkaException, TopicPartition

    deadline = time.monotonic() + timeout_s
    while True:
        left = max(1.0, deadline - time.monotonic())
        try:
            got = consumer.committed([TopicPartition(t, p) for t, p in partitions], timeout=left)
            failed = next((tp for tp in got if tp.error is not None), None)
            if failed is None:
                return list(got)
            error: BaseException = KafkaException(failed.error)
            where = f"{failed.topic}[{failed.partition}]"
        except KafkaException as e:
            error, where = e, ", ".join(f"{t}[{p}]" for t, p in partitions)
        if not passing(error) or time.monotonic() >= deadline:
            raise StreamsException(f"Reading the committed offsets of {where}: {error}") from error
        _log.warning("reading the committed offsets of %s: %s; retrying", where, str(error))  # text: above
        time.sleep(0.5)


def group_start(config: StreamsConfig, partitions: Mapping[str, int]) -> dict[str, dict[str, int]]:
    """Where a query that has no checkpoint starts, per topic -> partition (a string): the offsets
    the ``<application.id>`` group committed (``kspark reset`` writes them, an exactly-once run
    and a low-latency one commit them), kept inside what the log still holds, as a new Kafka
    Streams instance starts from its group's offsets. Partitions without one are left out (they
    start at ``auto.offset.reset``)."""
    from confluent_kafka import Consumer

    from kspark.runtime.kafka_clients import librdkafka_client, librdkafka_security

    settings = librdkafka_client(config.originals(), "consumer")
    consumer = Consumer(
        {**settings, "group.id": config.application_id(), "enable.auto.commit": False, "logger": _log}
    )
    try:
        wanted = [(t, p) for t, n in sorted(partitions.items()) for p in range(n)]
        committed = {(tp.topic, tp.partition): tp.offset for tp in committed_offsets(consumer, wanted, 60.0)}
    finally:
        consumer.close()
    committed = {tp: offset for tp, offset in committed.items() if offset >= 0}
    if not committed:
        return {}
    lister = OffsetLister(
        settings["bootstrap.servers"], settings=librdkafka_security(config.originals(), "admin")
    )
    first = lister.offsets(committed, latest=False)
    last = lister.offsets(committed, latest=True)
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in committed.items():
        out.setdefault(topic, {})[str(partition)] = min(
            max(offset, first[(topic, partition)]), last[(topic, partition)]
        )
    return out
