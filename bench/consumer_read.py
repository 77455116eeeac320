"""librdkafka range reads in one Python process: the direct read's consumer settings against others.

    python -m bench.consumer_read [--records 2000000]

Starts a local Kafka, writes ``--records`` benchmark events into one
partition, then reads them all with a librdkafka consumer
(``kspark.runtime.spark.partition_reader.consumer_config`` on top of each
variant's settings) and prints records/s (wall), CPU-µs a record of this
process (librdkafka's threads included) and how much the process's RSS grew
while reading (sampled after every ``consume()``; each variant reads from a
fresh consumer in turn, so later baselines include memory freed by earlier ones).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

__all__ = ["main"]

VARIANTS: dict[str, dict[str, Any]] = {
    "kspark (10 ms queue backoff)": {},
    "librdkafka's 1 s queue backoff": {"fetch.queue.backoff.ms": 1000},
    "1 s backoff, 1M-message prefetch of 128 MB": {
        "fetch.queue.backoff.ms": 1000,
        "queued.min.messages": 1_000_000,
        "queued.max.messages.kbytes": 128 * 1024,
    },
    "10 ms backoff, 16 MB fetches": {"fetch.message.max.bytes": 16 * 1024 * 1024},
}


def _rss_mb() -> int:
    with open("/proc/self/status") as status:
        return int(status.read().split("VmRSS:")[1].split()[0]) // 1024


def main(argv: list[str] | None = None) -> None:
    from confluent_kafka import Consumer, TopicPartition

    from bench.run import preload
    from kspark.dev import LocalKafka
    from kspark.runtime.spark.partition_reader import consumer_config

    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=2_000_000)
    args = ap.parse_args(argv)
    n = args.records
    with LocalKafka() as kafka:
        preload(kafka, "in", n, partitions=1)
        print(f"{n:,} records in one partition, read whole by one consumer")
        print("| settings | records/s | CPU µs a record | RSS growth MB |")
        print("| --- | ---: | ---: | ---: |")
        for name, extra in VARIANTS.items():
            conf = consumer_config(kafka.bootstrap_servers, f"bench-{len(name)}-{time.time()}", {})
            consumer = Consumer({**conf, **extra})
            consumer.assign([TopicPartition("in", 0, 0)])
            base = peak = _rss_mb()
            read, started, cpu = 0, 0.0, 0.0
            while read < n:
                messages = consumer.consume(10_000, 1.0)
                if messages and not started:
                    started, cpu = time.time(), time.process_time()
                read += sum(1 for m in messages if m.error() is None)
                del messages
                peak = max(peak, _rss_mb())
            rate = n / (time.time() - started)
            per = (time.process_time() - cpu) / n * 1e6
            print(f"| {name} | {rate:,.0f} | {per:.2f} | {peak - base} |", flush=True)
            consumer.close()


if __name__ == "__main__":
    main()
