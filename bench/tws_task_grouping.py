"""Micro-benchmark: transformWithState grouped by *task* (4 groups), Row API vs pandas API.

Why kspark's stateful stage groups by task and uses the pandas variant:
measures rows/s of a per-key count with one MapState read and write per
distinct key per batch, fed by Spark's rate source (no Kafka involved).

    .venv/bin/python bench/tws_task_grouping.py --api pandas --keys 10000 --rate 200000
    .venv/bin/python bench/tws_task_grouping.py --api row --keys 10000 --rate 100000

Prints, per micro-batch, input rows and Spark's processedRowsPerSecond.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main"]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--api", choices=["row", "pandas"], default="pandas")
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--rate", type=int, default=200_000, help="rows per second offered")
    parser.add_argument("--seconds", type=int, default=40)
    args = parser.parse_args()

    here = str(Path(__file__).resolve().parent)
    sys.path.insert(0, here)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))
    from pyspark.sql import functions as F
    from tws_processors import PandasTaskCounter, RowTaskCounter

    from kspark.runtime.spark.session import create_spark_session

    spark = create_spark_session({"spark.master": "local[2]"})
    df = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", args.rate)
        .option("numPartitions", 4)
        .load()
        .select(
            (F.col("value") % 4).alias("task"),
            (F.col("value") % args.keys).cast("string").cast("binary").alias("k"),
        )
    )
    grouped = df.groupBy("task")
    schema = "task long, n long, keys long"
    if args.api == "row":
        out = grouped.transformWithState(RowTaskCounter(), schema, "Update", "None")
    else:
        out = grouped.transformWithStateInPandas(PandasTaskCounter(), schema, "Update", "None")
    with tempfile.TemporaryDirectory() as ckpt:
        query = (
            out.writeStream.format("noop")
            .outputMode("update")
            .option("checkpointLocation", ckpt)
            .trigger(processingTime="3 seconds")
            .start()
        )
        time.sleep(args.seconds)
        query.stop()
        print(f"api={args.api} keys={args.keys} offered={args.rate}/s")
        for p in query.recentProgress:
            if p["numInputRows"]:
                rate = p["processedRowsPerSecond"]
                print(f"  batch {p['batchId']}: {p['numInputRows']} rows, {rate:.0f} rows/s")


if __name__ == "__main__":
    main()
