"""What Spark costs before kspark's windowed-count stage runs: W3's plan with a stage that only drains.

    .venv/bin/python -m bench.tws_floor --records 10000000 --batch 5000000

Starts a local Kafka, pre-loads the W3 input (``bench.run.preload``) and
runs kspark's plan for a native windowed count -- the Kafka source as
kspark reads it, the task column, ``groupBy(task)`` and
``transformWithStateInPandas`` in kspark's Spark session -- with a stage
that takes every row and does nothing (``tws_processors.PandasRowDrain``).
Prints each micro-batch's duration: Spark's floor under kspark's W3 batch
of the same size (bench/results/history.md, "W3 after the leaner
count-forward path", compares them).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--batch", type=int, default=5_000_000, help="maxOffsetsPerTrigger")
    ap.add_argument("--partitions", type=int, default=2)
    args = ap.parse_args(argv)

    repo = str(Path(__file__).resolve().parents[1])
    sys.path.insert(0, repo)  # Spark's Python workers import bench.tws_processors by this path
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))
    from pyspark.sql import functions as F

    from bench.run import preload
    from bench.tws_processors import PandasRowDrain
    from kspark.dev.kafka import LocalKafka
    from kspark.runtime.spark.kafka_io import read_kafka
    from kspark.runtime.spark.session import create_spark_session
    from kspark.runtime.spark.shuffle import task_grouping_key

    with LocalKafka(heap="1g", log_level="WARN") as kafka:
        rate = preload(kafka, "w3", args.records, args.partitions)
        print(f"pre-loaded {args.records:,} records at {rate:,.0f} rec/s", flush=True)
        spark = create_spark_session({"spark.master": f"local[{args.partitions}]"})
        spark.conf.set("spark.sql.shuffle.partitions", str(args.partitions))
        source = read_kafka(
            spark,
            kafka.bootstrap_servers,
            {"w3": args.partitions},
            options={"maxOffsetsPerTrigger": str(args.batch)},
        )
        keys = F.array(*[F.lit(task_grouping_key(p, args.partitions)) for p in range(args.partitions)])
        task = F.element_at(keys, F.col("partition") + 1)
        stage = (
            source.select(task.alias("kspark_task"), "key", "timestamp", "offset", "headers")
            .groupBy("kspark_task")
            .transformWithStateInPandas(PandasRowDrain(), "written long", "Update", "None")
        )
        with tempfile.TemporaryDirectory() as ckpt:
            start = time.monotonic()
            query = (
                stage.writeStream.format("noop")
                .outputMode("update")
                .option("checkpointLocation", ckpt)
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()
            wall = time.monotonic() - start
            for p in query.recentProgress:
                if p["numInputRows"]:
                    ms = p["durationMs"]["triggerExecution"]
                    print(f"batch {p['batchId']}: {p['numInputRows']:,} rows, triggerExecution {ms} ms")
            rate = args.records / wall
            print(f"{args.records:,} records in {wall:.1f} s (query start to end): {rate:,.0f} rec/s")
        spark.stop()


if __name__ == "__main__":
    main()
