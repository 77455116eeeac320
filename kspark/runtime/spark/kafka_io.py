"""Kafka I/O of the Spark runner: the spark-sql-kafka source and kspark's own sink.

The source is Spark's Kafka connector read as ``read_committed``, reduced to
the columns a task needs (timestamps as epoch milliseconds). The sink is
kspark's own: Spark's Kafka sink cannot set record timestamps (Kafka Streams
keeps the input record's timestamp on output) and is at-least-once only, so
the stage that runs the tasks writes their output records itself, with one
confluent-kafka producer per Spark task (:class:`RecordSender`), and hands
Spark only a count. Records never travel to the driver, nor back to the JVM
and into a second Python stage (the runner did that first: a whole extra
Arrow round trip per output record). Keyed records are partitioned with
murmur2, as the Java producer Kafka Streams uses does, so output partitions
match Kafka Streams'.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kspark.errors import StreamsException
from kspark.processor.internals.records import OutputRecord

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "RECORD_DDL",
    "WRITTEN_DDL",
    "read_kafka",
    "RecordSender",
    "producer_config",
]

# The row shape every stage exchanges: one Kafka record.
RECORD_DDL = (
    "topic string, partition int, offset long, timestamp long, key binary, value binary, "
    "headers array<struct<key:string,value:binary>>"
)

WRITTEN_DDL = "written long"
"""What a stage returns to Spark: how many output records its Spark task wrote."""


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
    for k, v in (options or {}).items():
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


class RecordSender:
    """Writes a Spark task's output records to Kafka with a producer of its own.

    Opened lazily in the worker (only plain config is pickled), closed by
    :meth:`close`, which waits for every delivery: a delivery failure raises,
    failing the Spark task so that the micro-batch is retried -- at-least-once,
    never a silent drop. One producer per Spark task, gone when the task ends:
    a producer kept warm in the worker would outlive the application (and its
    broker) and keep reconnecting; exactly-once needs one transactional
    producer per task anyway.
    """

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.conf = dict(conf)
        self.written = 0
        self._errors: list[str] = []
        self._producer: Any = None

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None:
            self._errors.append(f"{msg.topic()}[{msg.partition()}]: {err}")

    def _open(self) -> Any:
        from confluent_kafka import Producer

        # Delivery reports for failed records only: a Python callback per delivered
        # record was a tenth of the sink's cost, and success needs no action here.
        self._producer = Producer(
            {**self.conf, "on_delivery": self._on_delivery, "delivery.report.only.error": True}
        )
        return self._producer

    def send(self, records: Iterable[OutputRecord]) -> None:
        producer = self._producer or self._open()
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
        if self._producer is None:
            return 0
        remaining = self._producer.flush(120)
        self._producer = None
        if remaining:
            raise StreamsException(f"{remaining} records were not delivered to Kafka within 120 s")
        if self._errors:
            raise StreamsException(f"Kafka rejected {len(self._errors)} records, first: {self._errors[0]}")
        return self.written
