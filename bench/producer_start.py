"""What a fresh producer costs a micro-batch: first delivery of a new vs a warm librdkafka producer.

    python -m bench.producer_start [--records 2500] [--runs 5]

Starts a LocalKafka and sends ``--records`` small records with kspark's
producer settings (``kafka_io.producer_config``: idempotent), then waits for
their delivery (``flush``): with a new producer each run, with one producer
kept across runs, and with a new non-idempotent producer. A Spark task of a
small live micro-batch sends a few thousand records: before kspark kept its
producers warm, every task paid the first row's cost.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    from confluent_kafka import Producer

    from kspark.dev import LocalKafka
    from kspark.runtime.spark.kafka_io import producer_config

    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=2500)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    with LocalKafka() as kafka:
        kafka.create_topic("out", partitions=2)
        conf = producer_config(kafka.bootstrap_servers)
        warm = Producer(conf)
        warm.produce("out", b"warm-up")
        warm.flush(30)
        cases: list[tuple[str, Callable[[], Any]]] = [
            ("new idempotent producer (before)", lambda: Producer(conf)),
            ("warm producer, reused (now)", lambda: warm),
            ("new producer, idempotence off", lambda: Producer({**conf, "enable.idempotence": False})),
        ]
        print(f"{args.records:,} records of 60 bytes per run, {args.runs} runs, flush() included")
        print("| producer | median ms | max ms |\n| --- | ---: | ---: |")
        for name, make in cases:
            times = []
            for _ in range(args.runs):
                start = time.monotonic()
                producer = make()
                for i in range(args.records):
                    producer.produce("out", b"x" * 60, b"k%d" % i)
                if producer.flush(30):
                    raise RuntimeError(f"{name}: records not delivered within 30 s")
                times.append((time.monotonic() - start) * 1000)
            print(f"| {name} | {statistics.median(times):,.0f} | {max(times):,.0f} |", flush=True)


if __name__ == "__main__":
    main()
