"""Kafka I/O of the Spark runner: the spark-sql-kafka source and kspark's own sink.

The source is Spark's Kafka connector read as ``read_committed``, reduced to
the columns a task needs (timestamps as epoch milliseconds). The sink is
kspark's own: Spark's Kafka sink cannot set record timestamps (Kafka Streams
keeps the input record's timestamp on output) and is at-least-once only, so
each Spark task writes its rows with a confluent-kafka producer, from
``foreachBatch`` through ``mapInArrow`` so that records never travel to the
driver. Keyed records are partitioned with murmur2, as the Java producer
Kafka Streams uses does, so output partitions match Kafka Streams'.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from kspark.errors import StreamsException
from kspark.processor.api import Headers

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "RECORD_DDL",
    "OUTPUT_DDL",
    "encode_headers",
    "decode_headers",
    "read_kafka",
    "KafkaSinkWriter",
    "producer_config",
]

# The row shape every stage exchanges: one Kafka record.
RECORD_DDL = (
    "topic string, partition int, offset long, timestamp long, key binary, value binary, "
    "headers array<struct<key:string,value:binary>>"
)

OUTPUT_DDL = "topic string, partition int, timestamp long, key binary, value binary, headers binary"
"""A serialized output record; ``headers`` packed by :func:`encode_headers` (null when none)."""

_HDR = struct.Struct(">i")


def encode_headers(headers: Headers | None) -> bytes | None:
    """Pack headers into one binary column: count, then (len, key, len, value) each; -1 = null value."""
    if not headers or len(headers) == 0:
        return None
    parts = [_HDR.pack(len(headers))]
    for h in headers:
        k = h.key.encode("utf-8")
        parts.append(_HDR.pack(len(k)))
        parts.append(k)
        if h.value is None:
            parts.append(_HDR.pack(-1))
        else:
            parts.append(_HDR.pack(len(h.value)))
            parts.append(h.value)
    return b"".join(parts)


def decode_headers(data: bytes | None) -> list[tuple[str, bytes | None]]:
    """The inverse of :func:`encode_headers`, as (key, value) pairs."""
    if not data:
        return []
    (n,) = _HDR.unpack_from(data, 0)
    pos = 4
    out: list[tuple[str, bytes | None]] = []
    for _ in range(n):
        (klen,) = _HDR.unpack_from(data, pos)
        pos += 4
        key = data[pos : pos + klen].decode("utf-8")
        pos += klen
        (vlen,) = _HDR.unpack_from(data, pos)
        pos += 4
        if vlen < 0:
            out.append((key, None))
        else:
            out.append((key, data[pos : pos + vlen]))
            pos += vlen
    return out


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


class KafkaSinkWriter:
    """A ``mapInArrow`` function that produces ``OUTPUT_DDL`` rows and returns one count row.

    Picklable (holds only plain config); the producer is opened in the worker.
    Any delivery failure fails the Spark task, so the micro-batch is
    retried: at-least-once, never a silent drop.
    """

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.conf = dict(conf)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        from confluent_kafka import Producer

        # One producer per Spark task, gone when the task ends: a producer kept
        # warm in the worker would outlive the application (and its broker)
        # and keep reconnecting; EOS needs one transactional producer per task anyway.
        errors: list[str] = []

        def on_delivery(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(f"{msg.topic()}[{msg.partition()}]: {err}")

        # Delivery reports for failed records only: a Python callback per delivered
        # record was a tenth of the sink's cost, and success needs no action here.
        producer = Producer({**self.conf, "on_delivery": on_delivery, "delivery.report.only.error": True})
        produce = producer.produce
        written = 0
        for batch in batches:
            cols = batch.to_pydict()
            for topic, partition, ts, key, value, headers in zip(
                cols["topic"],
                cols["partition"],
                cols["timestamp"],
                cols["key"],
                cols["value"],
                cols["headers"],
                strict=True,
            ):
                # -1: librdkafka's "unassigned", its partitioner (murmur2_random) decides
                part = -1 if partition is None else partition
                hdrs: Any = decode_headers(headers) if headers else None
                while True:
                    try:
                        produce(topic, value, key, part, timestamp=ts, headers=hdrs)
                        break
                    except BufferError:
                        producer.poll(0.05)
                written += 1
            producer.poll(0)
        remaining = producer.flush(120)
        if remaining:
            raise StreamsException(f"{remaining} records were not delivered to Kafka within 120 s")
        if errors:
            raise StreamsException(f"Kafka rejected {len(errors)} records, first: {errors[0]}")
        yield pa.RecordBatch.from_pydict({"written": [written]}, schema=pa.schema([("written", pa.int64())]))
