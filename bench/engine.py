"""The per-record engine alone: a workload's topology run by one ``StreamTask``, no Spark, no Kafka.

    python -m bench.engine --workload W1,W2,W3,W4 --records 100000 [--profile]

Builds the kspark topology of each workload (``bench.systems.kspark_app``),
feeds one task the workload's input as ``RawRecord``s and runs it as the
Spark runner's stages do (process, punctuate, commit; the output records
are not sent anywhere). Prints records per CPU-second of this process (``time.process_time``,
so another process on the machine disturbs it less than wall time would).
A workload whose task is a fused chain (``kspark/processor/internals/fused.py``,
W1) is run both ways: through the engine's queues and nodes, and fused as
the stateless stage runs it.
This is the ceiling of one core's Python work per record under any runner;
``--profile`` prints cProfile's top functions.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

__all__ = ["main", "run"]


def run(
    workload: str, n: int, fused: bool = False, lines: bool = False, profiler: cProfile.Profile | None = None
) -> tuple[float, int] | None:
    """(CPU seconds, output records incl. changelog) of one task over ``n`` input records;
    ``fused``: run the task as a fused chain (None if it is not one); ``lines``: run its fusable
    lines from a source fused, as the Spark runner's stateful tasks do (None if it has none).
    ``profiler`` is enabled over the measured work only (not the input's generation)."""
    from bench.systems.kspark_app import build
    from bench.workloads import event_value, events, users
    from kspark.processor.api import Headers
    from kspark.processor.internals.fused import FusedChain
    from kspark.processor.internals.records import RawRecord
    from kspark.runtime.spark.tasks import TopologySpec, _run

    topology = build({"workload": workload, "input": "in", "output": "out", "table": "users"})
    config = {"application.id": "bench", "bootstrap.servers": "x:1"}
    spec = TopologySpec(topology, config, 0, {}, "engine", {})
    task = spec.build_task(0)
    records = [RawRecord("in", 0, i, e.ts, e.key.encode(), event_value(e)) for i, e in enumerate(events(n))]
    chain = FusedChain.of(task) if fused else None
    if fused and chain is None:
        return None
    if lines and not task.fuse_sources():
        return None
    if workload == "W4":
        # The table's records all precede the events (their timestamps do), as the task would
        # take them from its two partitions; loading them is not part of the measured work.
        table = [RawRecord("users", 0, i, ts, k.encode(), v) for i, (k, v, ts) in enumerate(users())]
        task.add_records("users", 0, table)
        _run(task)
    if profiler is not None:
        profiler.enable()
    start = time.process_time()
    if chain is not None:
        columns = [[getattr(r, name) for r in records] for name in ("offset", "timestamp", "key", "value")]
        chain.process("in", 0, *columns, [None] * len(records), Headers)
    else:
        task.add_records("in", 0, records)
    out = _run(task)
    seconds = time.process_time() - start
    if profiler is not None:
        profiler.disable()
    return seconds, len(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="W1,W2,W3", help="any of W1-W4")
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    print("| workload | path | records | CPU s | records per CPU-second | outputs (incl. changelog) |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for w in [x.strip().upper() for x in args.workload.split(",") if x.strip()]:
        for path in ("engine", "fused", "fused lines"):
            profiler = cProfile.Profile() if args.profile else None
            result = run(w, args.records, path == "fused", path == "fused lines", profiler)
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
