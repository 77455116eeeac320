"""The native windowed-count stage's Python work alone: W3's input as pandas frames, no Spark, no Kafka.

    .venv/bin/python -m bench.windowed_stage --records 200000 [--profile]

Builds W3's kspark topology, its :class:`~kspark.runtime.spark.windowed_count.WindowedCountStage`
and one task's batch as the 10,000-row pandas frames Spark hands the stage,
then counts and forwards it as ``_commit`` does (flushing when the pending
windows outgrow the cache), with a stand-in for the Kafka sender and for
Spark's state (so librdkafka and the state server are not in the number).
Prints CPU µs per record (``time.process_time``); ``--profile`` adds
cProfile's top functions. bench/results/history.md quotes it (the W3 sections).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from collections.abc import Iterable
from typing import Any

__all__ = ["main"]


class _Sender:
    """Counts what the stage would write."""

    def __init__(self, conf: Any) -> None:
        self.n = 0

    def send(self, records: Iterable[Any]) -> None:
        for _ in records:
            self.n += 1

    def close(self) -> int:
        return self.n


class _ListState:
    def appendValue(self, value: Any) -> None:  # Spark's ListState API
        pass

    def put(self, values: Any) -> None:
        pass

    def clear(self) -> None:
        pass


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)

    import pandas as pd

    from bench.systems.kspark_app import build
    from bench.workloads import events
    from kspark.config import StreamsConfig
    from kspark.runtime.spark import windowed_count
    from kspark.runtime.spark.lowering import native_count
    from kspark.runtime.spark.tasks import TaskMeta, TopologySpec
    from kspark.runtime.spark.warm import WarmTask

    topology = build({"workload": "W3", "input": "in", "output": "out", "table": "users"})
    config = {"application.id": "bench", "bootstrap.servers": "x:1"}
    builder = topology.internal_builder
    native = native_count(builder, builder.node_groups()[0], StreamsConfig(config))
    if native is None:
        raise SystemExit("W3's count is not lowered with these settings")
    spec = TopologySpec(topology, config, 0, {}, "bench", {})
    windowed_count.RecordSender = _Sender  # type: ignore[attr-defined,assignment]
    stage = windowed_count.WindowedCountStage(spec, native, "in")
    stage._changelog = _ListState()
    evs = list(events(args.records))
    frame = pd.DataFrame(
        {
            "key": [e.key.encode() for e in evs],
            "timestamp": [e.ts for e in evs],
            "offset": list(range(len(evs))),
            "has_headers": [False] * len(evs),
        }
    )
    frames = [frame.iloc[i : i + 10_000] for i in range(0, len(frame), 10_000)]
    warm = WarmTask(0, spec.build_task(0), {})
    profiler = cProfile.Profile() if args.profile else None
    start = time.process_time()
    if profiler is not None:
        profiler.enable()
    batch = windowed_count._Batch(stage, 0, TaskMeta(), warm)
    for chunk in frames:
        batch.count(chunk)
        if batch.pending_bytes > batch.budget:
            batch.flush()
    batch.flush()
    if profiler is not None:
        profiler.disable()
    seconds = time.process_time() - start
    written = batch.sender.close()
    n = args.records
    print(f"{n:,} records: {seconds:.2f} CPU s, {seconds / n * 1e6:.2f} µs a record, {written:,} written")
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
