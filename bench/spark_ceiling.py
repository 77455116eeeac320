"""What Spark itself costs on this machine: the ceiling under any Spark-based W1, kspark's included.

    python -m bench.spark_ceiling --records 1000000
    python -m bench.spark_ceiling --records 100000 --micro-batches 10000

Starts a LocalKafka, pre-loads the W1 input (as ``bench.run`` does), starts
one Spark session with kspark's settings (``local[2]``) and times batch
reads of the whole topic, each a separate Spark job, in order:

* ``source count``: Spark's Kafka source, records counted in the JVM;
* ``mapInArrow no-op``: the same rows handed to Python as Arrow batches, only counted;
* ``mapInArrow columns``: ... and the key and value columns turned into Python lists;
* ``mapInArrow W1 in Python``: ... and W1 done per record with ``json`` (no engine, no output).

Each is run twice; the first of a kind includes query planning and, for the
Python ones, the first worker. The rate is records / seconds of the job.

With ``--micro-batches N`` it measures instead what a *streaming* micro-batch
costs Spark alone: a query over the topic with ``maxOffsetsPerTrigger`` N, a
1 s processing-time trigger and ``foreachBatch`` running ``mapInArrow``
no-op, as kspark's stateless stage is run; it prints Spark's ``addBatch`` and
``triggerExecution`` per batch (the first batch left out: start-up).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["main"]


def _noop(batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    n = 0
    for b in batches:
        n += b.num_rows
    yield pa.RecordBatch.from_pydict({"n": [n]})


def _columns(batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    n = 0
    for b in batches:
        b.column("key").to_pylist()
        n += len(b.column("value").to_pylist())
    yield pa.RecordBatch.from_pydict({"n": [n]})


def _w1_python(batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    n = 0
    for b in batches:
        out = []
        for v in b.column("value").to_pylist():
            d = json.loads(v)
            if d["amount"] >= 50:
                out.append(json.dumps({"id": d["id"], "user": d["user"], "score": d["amount"] * 2}).encode())
        n += b.num_rows
    yield pa.RecordBatch.from_pydict({"n": [n]})


def _micro_batches(spark: Any, bootstrap: str, n: int, per_batch: int) -> None:
    stream = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("assign", json.dumps({"in": [0, 1]}))
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(per_batch))
        .option("includeHeaders", "true")
        .load()
    )
    query = (
        stream.writeStream.foreachBatch(lambda df, _: df.mapInArrow(_noop, "n long").collect())
        .option("checkpointLocation", tempfile.mkdtemp(prefix="spark-ceiling-"))
        .trigger(processingTime="1 second")
        .start()
    )
    try:
        while sum(p["numInputRows"] for p in query.recentProgress) < n:
            if query.exception() is not None:
                raise RuntimeError(f"the query failed: {query.exception()}")
            time.sleep(0.5)
    finally:
        query.stop()
    batches = [p["durationMs"] for p in query.recentProgress if p["numInputRows"]][1:]
    print(f"{n:,} records in micro-batches of {per_batch:,}, 2 partitions, local[2], mapInArrow no-op")
    print("| batch | addBatch ms | triggerExecution ms |\n| ---: | ---: | ---: |")
    for i, ms in enumerate(batches, start=2):
        print(f"| {i} | {ms['addBatch']:,} | {ms['triggerExecution']:,} |")
    add = sorted(ms["addBatch"] for ms in batches)
    print(f"addBatch min {add[0]:,} / median {add[len(add) // 2]:,} / max {add[-1]:,} ms")


def main(argv: list[str] | None = None) -> None:
    from bench.run import preload
    from kspark.dev import LocalKafka
    from kspark.runtime.spark.session import create_spark_session

    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--micro-batches", type=int, default=0, help="records per streaming micro-batch")
    args = ap.parse_args(argv)
    n = args.records
    with LocalKafka() as kafka:
        preload(kafka, "in", n, 2)
        spark = create_spark_session({"spark.master": "local[2]"})
        if args.micro_batches:
            _micro_batches(spark, kafka.bootstrap_servers, n, args.micro_batches)
            spark.stop()
            return

        def source() -> Any:
            return (
                spark.read.format("kafka")
                .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
                .option("assign", json.dumps({"in": [0, 1]}))
                .option("includeHeaders", "true")
                .load()
            )

        jobs: list[tuple[str, Callable[..., Any] | None]] = [
            ("source count", None),
            ("mapInArrow no-op", _noop),
            ("mapInArrow columns", _columns),
            ("mapInArrow W1 in Python", _w1_python),
        ]
        print(f"{n:,} records, 2 partitions, local[2]")
        print("| job | run | seconds | records/s |\n| --- | ---: | ---: | ---: |")
        for name, fn in jobs:
            for run in (1, 2):
                start = time.monotonic()
                df = source()
                if fn is None:
                    got = df.count()
                else:
                    got = sum(int(r["n"]) for r in df.mapInArrow(fn, "n long").collect())
                seconds = time.monotonic() - start
                if got != n:
                    raise RuntimeError(f"{name}: saw {got} records, wanted {n}")
                print(f"| {name} | {run} | {seconds:.2f} | {n / seconds:,.0f} |", flush=True)
        spark.stop()


if __name__ == "__main__":
    main()
