"""Why the native count's aggregation carries only fixed-width columns: Spark's plan per buffer shape.

    .venv/bin/python -m bench.count_aggregation --records 5000000

A streaming aggregation (kspark's session, ``local[2]``, update mode, one
``availableNow`` batch from Parquet files, so no Kafka) of W2's shape --
``--records`` rows, 10,000 keys, two tasks, empty Kafka headers -- grouped
by (partition, key) as ``lowering.count_plan`` groups, with the count's
aggregates and four ways to carry the latest record's headers:

* ``fixed``: count, max(timestamp), max(offset) only (no headers at all);
* ``flag``: plus ``max_by(size(headers) > 0, offset)`` (what kspark does);
* ``max_by``: plus ``max_by(headers, offset)`` (what kspark did: a
  variable-width buffer, so Spark sorts instead of hashing);
* ``object-hash``: ``max_by(headers, offset)`` with a typed-imperative
  aggregate beside it and ``spark.sql.objectHashAggregate.sortBased.fallbackThreshold``
  raised for this query only, so Spark's object-hash aggregate keeps it.

Prints each plan's aggregate operator and the batch's seconds (best of two).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from typing import Any

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=5_000_000)
    args = ap.parse_args(argv)

    from pyspark.sql import functions as F

    from kspark.runtime.spark.session import create_spark_session

    spark = create_spark_session({"spark.master": "local[2]", "spark.sql.shuffle.partitions": "2"})
    work = tempfile.mkdtemp(prefix="count-aggregation-")
    try:
        src = f"{work}/input"
        spark.range(args.records).select(
            (F.col("id") % 2).cast("int").alias("partition"),
            F.col("id").alias("offset"),
            (F.col("id") * 5).alias("timestamp"),
            F.encode(F.concat(F.lit("user-"), (F.col("id") * 7919 % 10_000).cast("string")), "UTF-8").alias(
                "key"
            ),
            F.expr("CAST(array() AS array<struct<key:string,value:binary>>)").alias("headers"),
        ).repartition(2).write.parquet(src)
        schema = spark.read.parquet(src).schema
        base = [F.count(F.lit(1)), F.max("timestamp"), F.max("offset")]
        typed_imperative = F.expr("collect_list(CAST(NULL AS INT))")  # always empty
        plans: list[tuple[str, list[Any], dict[str, str]]] = [
            ("fixed", base, {}),
            ("flag", [*base, F.max_by(F.size("headers") > 0, "offset")], {}),
            ("max_by", [*base, F.max_by("headers", "offset")], {}),
            (
                "object-hash",
                [*base, F.max_by("headers", "offset"), typed_imperative],
                {"spark.sql.objectHashAggregate.sortBased.fallbackThreshold": "1000000"},
            ),
        ]
        _run(spark, src, schema, "warm-up", base, {}, f"{work}/ck-warm-up")
        for name, aggs, conf in plans:
            best, operator = min(
                _run(spark, src, schema, name, aggs, conf, f"{work}/ck-{name}-{attempt}")
                for attempt in range(2)
            )
            print(f"{name:12s} {best:6.2f} s  {operator}", flush=True)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


def _run(
    spark: Any, src: str, schema: Any, name: str, aggs: list[Any], conf: dict[str, str], checkpoint: str
) -> tuple[float, str]:
    """One availableNow batch of the aggregation; (seconds, its aggregate operator)."""
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:  # a streaming query keeps a copy of the session's settings from its start
        query = (
            spark.readStream.schema(schema)
            .parquet(src)
            .groupBy("partition", "key")
            .agg(*aggs)
            .writeStream.format("noop")
            .outputMode("update")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
    finally:
        for key in conf:
            spark.conf.unset(key)
    started = time.monotonic()
    query.awaitTermination()
    seconds = time.monotonic() - started
    plan = query._jsq.streamingQuery().lastExecution().executedPlan().toString()
    operator = next(op for op in ("ObjectHashAggregate", "SortAggregate", "HashAggregate") if op in plan)
    return seconds, operator


if __name__ == "__main__":
    main()
