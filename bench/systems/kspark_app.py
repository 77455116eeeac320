"""kspark: the workloads written with kspark's DSL, run by ``KafkaStreams.start()`` on Spark (local[2]).

Settings: kspark's defaults (Spark session from ``create_spark_session``, its
RocksDB state store, record cache as the runner has it) with
``commit.interval.ms`` (the trigger interval) and ``processing.guarantee``
(at-least-once unless ``--guarantee exactly_once_v2``) from the harness and
``spark.master=local[<partitions>]``. The functions live in this importable
module because Spark's Python workers import them by name.
"""

from __future__ import annotations

import json
import time
from typing import Any

from bench.systems.common import report, spec_from_argv, wait_for_stop
from bench.systems.spark_progress import PROGRESS_RETENTION, batches, first_input_ms
from kspark import KeyValue

__all__ = ["build", "main", "keep", "score", "window_key", "join_tier"]


def keep(_key: str, v: dict[str, Any]) -> bool:
    return int(v["amount"]) >= 50


def score(v: dict[str, Any]) -> dict[str, Any]:
    return {"id": v["id"], "user": v["user"], "score": v["amount"] * 2}


def window_key(wk: Any, count: int) -> Any:
    # KeyValue imported once, at the top: an import statement in a per-record function cost
    # about 1 µs a record under cProfile (`python -m bench.windowed_stage --profile`).
    return KeyValue(f"{wk.key}@{wk.window.start}", count)


def join_tier(event: dict[str, Any], user: dict[str, Any]) -> dict[str, Any]:
    return {"id": event["id"], "amount": event["amount"], "tier": user["tier"]}


def build(spec: dict[str, Any]) -> Any:
    from kspark import Consumed, Produced, StreamsBuilder, TimeWindows
    from kspark.serde import Serdes

    s, j, b, long_ = Serdes.String(), Serdes.JSON(), Serdes.ByteArray(), Serdes.Long()
    builder = StreamsBuilder()
    w = spec["workload"]
    if w == "W1":
        builder.stream(spec["input"], Consumed.with_(s, j)).filter(keep).map_values(score).to(
            spec["output"], Produced.with_(s, j)
        )
    elif w == "W2":
        builder.stream(spec["input"], Consumed.with_(s, b)).group_by_key().count().to_stream().to(
            spec["output"], Produced.with_(s, long_)
        )
    elif w == "W3":
        (
            builder.stream(spec["input"], Consumed.with_(s, b))
            .group_by_key()
            .windowed_by(TimeWindows(size=5_000, grace=30_000))
            .count()
            .to_stream()
            .map(window_key)
            .to(spec["output"], Produced.with_(s, long_))
        )
    elif w == "W4":
        users = builder.table(spec["table"], Consumed.with_(s, j))
        builder.stream(spec["input"], Consumed.with_(s, j)).join(users, join_tier).to(
            spec["output"], Produced.with_(s, j)
        )
    else:
        raise ValueError(f"unknown workload {w}")
    return builder.build()


def main() -> None:
    from pyspark.sql import SparkSession

    from kspark import KafkaStreams

    spec = spec_from_argv()
    config = {
        "application.id": spec["app_id"],
        "bootstrap.servers": spec["bootstrap"],
        "state.dir": spec["state_dir"],
        "commit.interval.ms": spec["commit_ms"],
        "processing.guarantee": spec.get("guarantee", "at_least_once"),
        "spark.master": f"local[{spec['partitions']}]",
        **PROGRESS_RETENTION,
        **spec.get("extra", {}),
    }
    app = KafkaStreams(build(spec), config)
    app.start()

    def result() -> dict[str, Any]:
        spark = SparkSession.getActiveSession()
        queries = list(spark.streams.active) if spark is not None else []
        # kspark's stages write output while their micro-batch runs; the batch (its state
        # commit) may end after the last output record, and Spark reports a batch's start
        # only when it ends.
        deadline = time.monotonic() + 600
        while first_input_ms(queries) == 0 and time.monotonic() < deadline:
            time.sleep(0.5)
        return {"first_input_ms": first_input_ms(queries), "batches": batches(queries)}

    def on_line(line: str) -> None:
        if line == "first":  # the report without stopping (bench.state_at_scale)
            print("FIRST " + json.dumps(result()), flush=True)
        elif line == "metrics":  # input lag and the application's state (bench.soak)
            metrics = app.metrics()
            lags = [v for m, v in metrics.items() if m.name == "records-lag"]  # none before a batch
            status = {
                "lag": sum(lags) if lags else None,
                "processed": sum(v for m, v in metrics.items() if m.name == "process-total"),
                "state": app.state().name,
            }
            print("METRICS " + json.dumps(status), flush=True)

    wait_for_stop(on_line=on_line)
    final = result()
    app.close()
    report(**final)


if __name__ == "__main__":
    main()
