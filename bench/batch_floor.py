"""Where a micro-batch's time goes at a steady load: Spark's own breakdown, phase by phase.

    .venv/bin/python -m bench.batch_floor --workload W1 --rate 20000 --commit-ms 100 \
        [--seconds 40] [--conf K=V]

Starts a local Kafka, runs one workload of ``bench.systems.kspark_app`` with
``KafkaStreams.start()`` (``local[2]``, the trigger at ``--commit-ms``) and
produces ``--rate`` records a second into it from this process for
``--seconds``. Then prints, per streaming query, the p50 / p90 / max of each
phase Spark reports in its progress (``durationMs``: ``addBatch`` is the
``foreachBatch`` call with the tasks, ``walCommit`` and ``commitOffsets``
the offset and commit logs, ``triggerExecution`` the whole batch) over the
second half of the batches (the first are warming up). A record waits for
about one and a half ``triggerExecution``s when batches run back to back,
which is the latency floor of a micro-batch engine (docs/benchmarks.md,
"Latency"). The inputs are JSON events with W1's fields (``id``, ``user``,
``amount``) whatever the workload; W4's table stays empty.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from typing import Any

__all__ = ["main", "phases"]


def phases(progress: list[dict[str, Any]]) -> dict[str, tuple[int, int, int]]:
    """p50, p90 and max of each ``durationMs`` phase over the batches given."""
    values: dict[str, list[int]] = {}
    for report in progress:
        for phase, ms in report.get("durationMs", {}).items():
            values.setdefault(phase, []).append(int(ms))
    out = {}
    for phase, ms in sorted(values.items()):
        ms.sort()
        out[phase] = (ms[len(ms) // 2], ms[int(len(ms) * 0.9)], ms[-1])
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", default="W1", choices=["W1", "W2", "W3", "W4"])
    ap.add_argument("--rate", type=float, default=20_000.0, help="records per second offered")
    ap.add_argument("--commit-ms", type=int, default=100, help="commit.interval.ms: the trigger")
    ap.add_argument("--seconds", type=float, default=40.0)
    ap.add_argument("--conf", action="append", default=[], help="KEY=VALUE, another application setting")
    args = ap.parse_args(argv)

    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic
    from pyspark.sql import SparkSession

    from bench.systems.kspark_app import build
    from bench.systems.spark_progress import PROGRESS_RETENTION
    from kspark import KafkaStreams
    from kspark.dev.kafka import LocalKafka

    with LocalKafka() as kafka:
        admin = kafka.admin()
        for topic in ("input", "output", "users"):
            admin.create_topics([NewTopic(topic, 2, 1)])[topic].result()
        spec = {"workload": args.workload, "input": "input", "output": "output", "table": "users"}
        app = KafkaStreams(
            build(spec),
            {
                "application.id": "batch-floor",
                "bootstrap.servers": kafka.bootstrap_servers,
                "state.dir": tempfile.mkdtemp(prefix="kspark-batch-floor-"),
                "commit.interval.ms": args.commit_ms,
                "spark.master": "local[2]",
                **PROGRESS_RETENTION,
                **dict(kv.split("=", 1) for kv in args.conf),
            },
        )
        app.start()
        try:
            producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 5})
            start = time.time()
            sent = 0
            while time.time() < start + args.seconds:
                due = int((time.time() - start) * args.rate)
                while sent < due:
                    value = {"id": sent, "user": f"u{sent % 100}", "amount": sent % 100}
                    producer.produce("input", key=f"k{sent % 1000}", value=json.dumps(value))
                    sent += 1
                producer.poll(0)
                time.sleep(0.002)
            producer.flush()
            time.sleep(3)
            spark = SparkSession.getActiveSession()
            assert spark is not None
            print(f"{args.workload} at {args.rate:,.0f} rec/s, trigger {args.commit_ms} ms, {sent:,} records")
            for query in spark.streams.active:
                progress = [p for p in query.recentProgress if int(p.get("numInputRows", 0)) > 0]
                late = progress[len(progress) // 2 :]
                print(f"{query.name}: {len(progress)} batches with input, the last {len(late)}:")
                for phase, (p50, p90, most) in phases(late).items():
                    print(f"  {phase:18s} p50 {p50:6,d}  p90 {p90:6,d}  max {most:6,d} ms")
        finally:
            app.close()


if __name__ == "__main__":
    main()
