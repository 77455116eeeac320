"""A direct-read Spark task's Python work alone: read a partition, run W1's fused chain, write.

    python -m bench.direct_stage [--records 1000000] [--rounds 3] [--profile]

Starts a local Kafka, writes ``--records`` W1 events into one partition,
then, in this one process, does what a direct-read Spark task of W1 does
(``direct_source._Reader.read``): reads the partition with the warm range
reader, runs the fused filter-and-map chain over each chunk and writes the
output with the warm producer, waiting for every delivery. Each round reads
the whole partition again into a new output topic with a new task.
Prints records/s (wall), CPU-µs a record of this process (librdkafka's
threads included) and of its Python thread alone; the broker's own work is
not counted. ``--profile``
prints cProfile's top functions of the last round.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
import uuid

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    from bench.run import preload
    from bench.systems.kspark_app import build
    from kspark.dev import LocalKafka
    from kspark.runtime.spark.direct_source import _headers
    from kspark.runtime.spark.kafka_io import RecordSender, producer_config
    from kspark.runtime.spark.partition_reader import consumer_config, read_range
    from kspark.runtime.spark.tasks import TopologySpec, process_stateless

    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    n = args.records
    with LocalKafka() as kafka:
        preload(kafka, "in", n, partitions=1)
        conf = consumer_config(kafka.bootstrap_servers, "bench-direct-stage", {})
        print(f"W1, {n:,} records in one partition, one process (the Python work of one direct-read task)")
        print("| round | seconds | records/s | CPU µs a record | of it, Python's thread | outputs |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in range(args.rounds):
            out = f"out-{r}"
            kafka.create_topic(out, partitions=2)
            topology = build({"workload": "W1", "input": "in", "output": out, "table": "users"})
            spec = TopologySpec(
                topology,
                {
                    "application.id": f"bench-{uuid.uuid4().hex[:6]}",
                    "bootstrap.servers": kafka.bootstrap_servers,
                },
                0,
                {},
                uuid.uuid4().hex,
                producer_config(kafka.bootstrap_servers),
            )
            profiler = cProfile.Profile() if args.profile and r == args.rounds - 1 else None
            wall, cpu, own = time.time(), time.process_time(), time.thread_time()
            if profiler is not None:
                profiler.enable()
            sender = RecordSender(spec.producer_config)
            for c in read_range(conf, "in", 0, 0, n):
                process_stateless(
                    spec, sender, "in", 0, c.offsets, c.timestamps, c.keys, c.values, c.headers, _headers
                )
            written = sender.close()
            if profiler is not None:
                profiler.disable()
            seconds, cpu, own = time.time() - wall, time.process_time() - cpu, time.thread_time() - own
            print(
                f"| {r} | {seconds:.2f} | {n / seconds:,.0f} | {cpu / n * 1e6:.2f} | {own / n * 1e6:.2f} "
                f"| {written:,} |",
                flush=True,
            )
            if profiler is not None:
                pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
