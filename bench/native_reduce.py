"""A sum by key on Spark, native plan against the engine: what lowering ``reduce(operator.add)`` buys.

    .venv/bin/python -m bench.native_reduce --records 1000000

One local Kafka, ``--records`` Long values over 10,000 keys in 2 partitions,
and ``group_by_key().reduce(operator.add).to_stream().to(...)`` run with
``KafkaStreams.process_available()`` on one shared local[2] Spark session:
alternately with ``spark.kspark.nativeLowering`` on and off, each a fresh
application over the whole topic (the first pair warms the JVM; the table
shows every run). Each run's output must end at the sums computed here, or
the command fails.
"""

from __future__ import annotations

import argparse
import operator
import struct
import tempfile
import time
from typing import Any

__all__ = ["main"]

KEYS = 10_000


def _value(i: int) -> int:
    return (i * 7919) % 2001 - 1000  # negative values too


def main(argv: list[str] | None = None) -> int:
    from kspark import Consumed, KafkaStreams, Produced, StreamsBuilder
    from kspark.dev.kafka import LocalKafka
    from kspark.runtime.spark.session import create_spark_session
    from kspark.serde import Serdes

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--pairs", type=int, default=2, help="native/engine run pairs")
    args = ap.parse_args(argv)
    S, L = Serdes.String(), Serdes.Long()
    want: dict[bytes, int] = {}
    for i in range(args.records):
        key = f"k{i % KEYS:05d}".encode()
        want[key] = want.get(key, 0) + _value(i)
    spark = create_spark_session({"spark.master": "local[2]"})
    rows = []
    with LocalKafka(heap="1g", log_level="WARN") as kafka:
        kafka.create_topic("in", 2)
        records = (
            (f"k{i % KEYS:05d}".encode(), struct.pack(">q", _value(i)), 1_000 + i)
            for i in range(args.records)
        )
        kafka.produce("in", records, timeout=600)
        for run in range(2 * args.pairs):
            native = run % 2 == 0
            out = f"out-{run}"
            kafka.create_topic(out, 2)
            b = StreamsBuilder()
            b.stream("in", Consumed.with_(S, L)).group_by_key().reduce(operator.add).to_stream().to(
                out, Produced.with_(S, L)
            )
            config: dict[str, Any] = {
                "application.id": f"bench-reduce-{run}",
                "bootstrap.servers": kafka.bootstrap_servers,
                "state.dir": tempfile.mkdtemp(prefix="bench-reduce-"),
                "spark.kspark.nativeLowering": "true" if native else "false",
            }
            app = KafkaStreams(b.build(), config, spark=spark)
            started = time.monotonic()
            try:
                app.process_available()
            finally:
                app.close()
            seconds = time.monotonic() - started
            got = {
                r.key: L.deserializer().deserialize(out, r.value) for r in kafka.consume_all(out, timeout=120)
            }
            if got != want:
                wrong = sum(1 for k in want if got.get(k) != want[k])
                raise SystemExit(f"run {run} ({'native' if native else 'engine'}): {wrong} keys differ")
            rows.append((run, "native" if native else "engine", seconds))
    print(f"{args.records:,} records, {KEYS:,} keys, 2 partitions, local[2]; output exact in every run")
    print("| run | plan | seconds (process_available, query start included) | records/s |")
    print("| ---: | --- | ---: | ---: |")
    for run, plan, seconds in rows:
        print(f"| {run} | {plan} | {seconds:.2f} | {args.records / seconds:,.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
