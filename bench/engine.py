"""The per-record engine alone: a workload's topology run by one ``StreamTask``, no Spark, no Kafka.

    python -m bench.engine --workload W1,W2,W3,W4 --records 100000 [--commit-every N] [--profile]

Builds the kspark topology of each workload (``bench.systems.kspark_app``),
feeds one task the workload's input as ``RawRecord``s and runs it as the
Spark runner's stages do (process, punctuate, commit; the output records
are not sent anywhere). Prints records per CPU-second of this process (``time.process_time``,
so another process on the machine disturbs it less than wall time would).
A workload's task runs every way it can (``PATHS``): through the engine's
queues and nodes; fused as the stateless stage runs it (W1,
``kspark/processor/internals/fused.py``); and its count as a low-latency
task's count line (W2, ``kspark/runtime/spark/low_latency_count.py``).
This is the ceiling of one core's Python work per record under any runner;
``--profile`` prints cProfile's top functions. ``--commit-every N`` commits
after every N records (the default, once at the end, is a long micro-batch):
a low-latency task commits every ``commit.interval.ms``, so its record cache
forwards about one output and one changelog record per input.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

__all__ = ["PATHS", "main", "run"]


PATHS = ("engine", "fused", "fused lines", "count line")
"""How a task runs: the engine's queues and nodes; fused from its source (a stateless task, as
the stateless stage runs it); its fusable lines from a source fused (as the Spark runner's
stateful tasks run them); its count as a low-latency task's count line (low_latency_count.py)."""


def run(
    workload: str,
    n: int,
    path: str = "engine",
    profiler: cProfile.Profile | None = None,
    commit_every: int = 0,
) -> tuple[float, int] | None:
    """(CPU seconds, output records incl. changelog) of one task over ``n`` input records, run as
    ``path`` says (:data:`PATHS`; None when the task cannot run so). ``profiler`` is enabled over
    the measured work only (not the input's generation); ``commit_every``: a commit after every
    that many records (0: once, at the end)."""
    from bench.systems.kspark_app import build
    from bench.workloads import event_value, events, users
    from kspark.processor.api import Headers
    from kspark.processor.internals.fused import FusedChain
    from kspark.processor.internals.records import RawRecord
    from kspark.runtime.spark.direct_source import to_headers
    from kspark.runtime.spark.low_latency_count import CountLine
    from kspark.runtime.spark.plan import physical_plan
    from kspark.runtime.spark.task_input import FeedChunk
    from kspark.runtime.spark.tasks import TopologySpec, _run

    topology = build({"workload": workload, "input": "in", "output": "out", "table": "users"})
    config = {"application.id": "bench", "bootstrap.servers": "x:1"}
    spec = TopologySpec(topology, config, 0, {}, "engine", {})
    task = spec.build_task(0)
    records = [RawRecord("in", 0, i, e.ts, e.key.encode(), event_value(e)) for i, e in enumerate(events(n))]
    chain = FusedChain.of(task) if path == "fused" else None
    if path == "fused" and chain is None:
        return None
    if path == "fused lines" and not task.fuse_sources():
        return None
    line = None
    if path == "count line":
        low = physical_plan(topology, {**config, "spark.kspark.lowLatency": "true"}, {"in": 1, "out": 1})
        native = low.subtopologies[0].native
        if native is None:
            return None
        line = CountLine(task, native, "in", 0)
    if workload == "W4":
        # The table's records all precede the events (their timestamps do), as the task would
        # take them from its two partitions; loading them is not part of the measured work.
        table = [RawRecord("users", 0, i, ts, k.encode(), v) for i, (k, v, ts) in enumerate(users())]
        task.add_records("users", 0, table)
        _run(task)
    offsets, timestamps = [r.offset for r in records], [r.timestamp for r in records]
    keys, values = [r.key for r in records], [r.value for r in records]
    if profiler is not None:
        profiler.enable()
    start = time.process_time()
    out = []
    step = commit_every or len(records)
    for i in range(0, len(records), step):
        j = i + step
        if chain is not None:
            none = [None] * len(offsets[i:j])
            chain.process("in", 0, offsets[i:j], timestamps[i:j], keys[i:j], values[i:j], none, Headers)
        elif line is not None:
            none = [None] * len(offsets[i:j])
            line.process(
                FeedChunk("in", 0, offsets[i:j], timestamps[i:j], keys[i:j], values[i:j], none, to_headers)
            )
            line.flush()
        else:
            task.add_records("in", 0, records[i : i + step])
        out += _run(task)
    seconds = time.process_time() - start
    if profiler is not None:
        profiler.disable()
    return seconds, len(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="W1,W2,W3", help="any of W1-W4")
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--commit-every", type=int, default=0, help="records between commits (0: one at the end)")
    args = ap.parse_args(argv)
    print("| workload | path | records | CPU s | records per CPU-second | outputs (incl. changelog) |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for w in [x.strip().upper() for x in args.workload.split(",") if x.strip()]:
        for path in PATHS:
            profiler = cProfile.Profile() if args.profile else None
            result = run(w, args.records, path, profiler, args.commit_every)
            if result is None:
                continue
            seconds, outputs = result
            rate = args.records / seconds
            n = args.records
            print(f"| {w} | {path} | {n:,} | {seconds:.2f} | {rate:,.0f} | {outputs:,} |", flush=True)
            if profiler is not None:
                # Under cProfile the rate above is its own (a profiled run is several times slower).
                pstats.Stats(profiler).sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main()
