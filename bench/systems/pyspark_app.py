"""Hand-written PySpark Structured Streaming: what a Spark user writes today for each workload.

Spark's own Kafka source and sink and DataFrame operations (``from_json``,
``groupBy().count()``, ``window``), update output mode, a processing-time
trigger of ``commit_ms``, ``local[<partitions>]``, ``spark.sql.shuffle.partitions``
equal to the core count (Spark's tuning guide: the default 200 is for
clusters), the default (HDFS-backed, in-memory) state store. W4 joins with a
Python UDF as the joiner against the table read as a static DataFrame (Spark
has no stream-KTable join; this is the usual substitute).
"""

from __future__ import annotations

import json
import sys

from bench.systems.common import report, spec_from_argv, wait_for_stop
from bench.systems.spark_progress import PROGRESS_RETENTION, batches, first_input_ms

__all__ = ["main"]


def main() -> None:
    spec = spec_from_argv()
    import os

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from kspark.runtime.spark.jars import connector_jars

    builder = SparkSession.builder
    for key, value in PROGRESS_RETENTION.items():
        builder = builder.config(key, value)
    spark = (
        builder.master(f"local[{spec['partitions']}]")
        .appName("bench-pyspark")
        .config("spark.jars", ",".join(str(p) for p in connector_jars()))
        .config("spark.sql.shuffle.partitions", str(spec["partitions"]))
        .config("spark.ui.enabled", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # Spark 4's recommended fast path for Python UDFs (W4's joiner).
        .config("spark.sql.execution.pythonUDF.arrow.enabled", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    src = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", spec["bootstrap"])
        # Spark 4.2's connector (kafka-clients 3.9) fails to `subscribe` against a Kafka 4 broker
        # (see docs/spark-runner.md); assigning the partitions explicitly works.
        .option("assign", json.dumps({spec["input"]: list(range(spec["partitions"]))}))
        .option("startingOffsets", "earliest")
        .load()
    )
    schema = StructType(
        [
            StructField("id", LongType()),
            StructField("user", StringType()),
            StructField("amount", LongType()),
            StructField("ts", LongType()),
        ]
    )
    w = spec["workload"]
    if w == "W1":
        ev = src.select(F.col("key"), F.from_json(F.col("value").cast("string"), schema).alias("v"))
        out = ev.where(F.col("v.amount") >= 50).select(
            F.col("key"),
            F.to_json(
                F.struct(
                    F.col("v.id").alias("id"),
                    F.col("v.user").alias("user"),
                    (F.col("v.amount") * 2).alias("score"),
                )
            ).alias("value"),
        )
        mode = "append"
    elif w == "W2":
        out = (
            src.groupBy(F.col("key"))
            .count()
            .select(F.col("key"), F.col("count").cast("string").alias("value"))
        )
        mode = "update"
    elif w == "W3":
        out = (
            src.withWatermark("timestamp", "30 seconds")
            .groupBy(F.col("key"), F.window(F.col("timestamp"), "5 seconds"))
            .count()
            .select(
                F.concat(
                    F.col("key").cast("string"),
                    F.lit("@"),
                    (F.unix_millis(F.col("window.start"))).cast("string"),
                ).alias("key"),
                F.col("count").cast("string").alias("value"),
            )
        )
        mode = "update"
    elif w == "W4":
        users = (
            spark.read.format("kafka")
            .option("kafka.bootstrap.servers", spec["bootstrap"])
            .option("assign", json.dumps({spec["table"]: list(range(spec["partitions"]))}))
            .load()
            .select(F.col("key"), F.col("value").cast("string").alias("user"))
        )

        @F.udf(returnType=StringType())
        def joiner(event: str, user: str) -> str:
            e, u = json.loads(event), json.loads(user)
            return json.dumps({"id": e["id"], "amount": e["amount"], "tier": u["tier"]})

        out = (
            src.select(F.col("key"), F.col("value").cast("string").alias("event"))
            .join(users, "key")
            .select(F.col("key"), joiner(F.col("event"), F.col("user")).alias("value"))
        )
        mode = "append"
    else:
        raise ValueError(f"unknown or unsupported workload {w}")
    query = (
        out.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", spec["bootstrap"])
        .option("topic", spec["output"])
        .option("checkpointLocation", os.path.join(spec["state_dir"], "checkpoint"))
        .outputMode(mode)
        .trigger(processingTime=f"{spec['commit_ms']} milliseconds")
        .start()
    )
    wait_for_stop()
    queries = [query]
    result = {"first_input_ms": first_input_ms(queries), "batches": batches(queries)}
    exc = query.exception()
    query.stop()
    if exc is not None:
        result["error"] = str(exc)[:2000]
    report(**result)
    spark.stop()


if __name__ == "__main__":
    main()
