"""One Spark batch read over many small topic-partitions: Kafka's fetch.max.wait.ms at the log's end.

    python -m bench.spark_source_wait [--topics 100] [--repeat 2]

Starts a local Kafka, creates ``--topics`` topics of 2 partitions with one
record in each partition, and counts them with one batch read of Spark's
Kafka source (kspark's session, ``read_committed``), each read ``--repeat``
times with the consumer's ``fetch.max.wait.ms`` at Kafka's default (500 ms)
and at kspark's (``kspark.runtime.spark.kafka_io.SPARK_SOURCE_CONSUMER_DEFAULTS``).
Every Spark task's range ends at the end of its log, as in a caught-up
stream, and each task waits out a fetch the broker holds for that long: the
wall time of the read is about tasks x wait / cores.
"""

from __future__ import annotations

import argparse
import time

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic

    from kspark.dev.kafka import LocalKafka
    from kspark.runtime.spark.kafka_io import SPARK_SOURCE_CONSUMER_DEFAULTS
    from kspark.runtime.spark.session import create_spark_session

    ap = argparse.ArgumentParser(prog="python -m bench.spark_source_wait", description=__doc__.split("\n")[0])
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    variants = {"Kafka's default (500 ms)": {}, "kspark's": dict(SPARK_SOURCE_CONSUMER_DEFAULTS)}
    with LocalKafka() as kafka:
        topics = [f"wait-{i}" for i in range(args.topics)]
        admin = kafka.admin()  # kept: its futures fail once it is collected
        for future in admin.create_topics([NewTopic(t, 2, 1) for t in topics]).values():
            future.result(timeout=60)
        producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
        for topic in topics:
            for partition in (0, 1):
                producer.produce(topic, b"v", b"k", partition=partition)
        assert producer.flush(60) == 0
        spark = create_spark_session()
        try:
            for name, options in variants.items():
                for _ in range(args.repeat):
                    reader = (
                        spark.read.format("kafka")
                        .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
                        .option("subscribe", ",".join(topics))
                        .option("kafka.isolation.level", "read_committed")
                    )
                    for key, value in options.items():
                        reader = reader.option(key, value)
                    started = time.monotonic()
                    rows = reader.load().count()
                    seconds = time.monotonic() - started
                    partitions = 2 * len(topics)
                    print(f"{name}: {rows} records from {partitions} topic-partitions in {seconds:.1f} s")
        finally:
            spark.stop()


if __name__ == "__main__":
    main()
