"""What Spark's real-time mode gives a Python stage: end-to-end latency, Kafka to Kafka.

    .venv/bin/python -m bench.realtime_mode [--rate 200] [--seconds 30] [--batch "5 seconds"]

Spark 4.2's real-time mode (``trigger(realTime=...)``) keeps each task
running for a whole batch and hands it records as Kafka returns them. Of
what a kspark stage needs it allows only Spark's Kafka source and, for
Python code, the ``foreach`` sink (docs/spark-runner.md, "Status"). This
bench runs two queries over one local Kafka, one after the other, each
from topic ``in`` (2 partitions, ``local[2]``) in real-time mode:

* ``jvm``: Spark's Kafka sink, no Python: what the mode itself gives;
* ``python-foreach``: a Python ``ForeachWriter`` producing each row with
  librdkafka as its ``process`` gets it: the route a stateless kspark
  stage would take.

It produces ``--rate`` records a second for ``--seconds``, each value the
time it was produced, and prints the p50 / p99 / max of (consumed from
``out`` - produced), per query. PySpark's ``foreach`` reaches Python
through ``SerDeUtil.AutoBatchedPickler``, which doubles the rows it pickles
into one message until a message reaches 1 MB, so rows wait for their
batch to fill (or the real-time batch to end).
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from typing import Any

__all__ = ["main", "percentiles"]


def percentiles(latencies_ms: list[float]) -> tuple[float, float, float]:
    """p50, p99 and max of ``latencies_ms`` (not empty)."""
    ordered = sorted(latencies_ms)
    return ordered[len(ordered) // 2], ordered[int(len(ordered) * 0.99)], ordered[-1]


class _ProduceEach:
    """The ``python-foreach`` query's writer: each row to ``out`` as ``process`` gets it."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.producer: Any = None

    def open(self, partition_id: int, epoch_id: int) -> bool:
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 0})
        return True

    def process(self, row: Any) -> None:
        self.producer.produce("out", key=row["key"], value=row["value"])
        self.producer.poll(0)

    def close(self, error: BaseException | None) -> None:
        if self.producer is not None:
            left = self.producer.flush(30)
            if left:
                raise RuntimeError(f"{left} records not delivered")
        if error is not None:
            raise error


def _measure(kafka: Any, query: Any, rate: float, seconds: float) -> list[float]:
    """Produce to ``in`` at ``rate`` for ``seconds`` while reading ``out``; latencies in ms."""
    from confluent_kafka import Consumer, Producer

    consumer = Consumer(
        {
            "bootstrap.servers": kafka.bootstrap_servers,
            "group.id": f"rtm-{time.time()}",
            "auto.offset.reset": "latest",
        }
    )
    consumer.subscribe(["out"])
    while not consumer.assignment():  # positioned before the first record is produced
        consumer.poll(0.1)
    latencies: list[float] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                latencies.append((time.time() - float(message.value())) * 1000)

    reader = threading.Thread(target=read)
    reader.start()
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 0})
    start = time.monotonic()
    sent = 0
    while time.monotonic() - start < seconds:
        producer.produce("in", key=str(sent).encode(), value=repr(time.time()).encode(), partition=sent % 2)
        producer.poll(0)
        sent += 1
        time.sleep(max(0.0, start + sent / rate - time.monotonic()))
    producer.flush(30)
    deadline = time.monotonic() + 30
    while len(latencies) < sent and time.monotonic() < deadline and query.exception() is None:
        time.sleep(0.1)
    done.set()
    reader.join()
    consumer.close()
    if query.exception() is not None:
        raise RuntimeError(f"the query failed: {query.exception()}")
    if len(latencies) < sent:
        raise RuntimeError(f"{len(latencies)} of {sent} records reached out within 30 s")
    return latencies


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rate", type=float, default=200.0, help="records per second offered")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--batch", default="5 seconds", help="the real-time trigger's batch duration")
    args = ap.parse_args(argv)

    from confluent_kafka.admin import NewTopic

    from kspark.dev.kafka import LocalKafka
    from kspark.runtime.spark.kafka_io import read_kafka
    from kspark.runtime.spark.session import create_spark_session

    with LocalKafka() as kafka:
        admin = kafka.admin()
        for topic, partitions in (("in", 2), ("out", 1)):
            admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result()
        spark = create_spark_session({"spark.master": "local[2]"})
        for name in ("jvm", "python-foreach"):
            source = read_kafka(spark, kafka.bootstrap_servers, {"in": 2}, starting_offsets="latest")
            writer = source.select("key", "value").writeStream.queryName(name)
            if name == "jvm":
                writer = (
                    writer.format("kafka")
                    .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
                    .option("topic", "out")
                )
            else:
                writer = writer.foreach(_ProduceEach(kafka.bootstrap_servers))
            query = (
                writer.option("checkpointLocation", tempfile.mkdtemp(prefix=f"rtm-{name}-"))
                .outputMode("update")
                .trigger(realTime=args.batch)
                .start()
            )
            try:
                time.sleep(10)  # the first batch's tasks are running and reading
                p50, p99, most = percentiles(_measure(kafka, query, args.rate, args.seconds))
            finally:
                query.stop()
            print(f"{name}: p50 {p50:,.0f} ms, p99 {p99:,.0f} ms, max {most:,.0f} ms", flush=True)


if __name__ == "__main__":
    main()
