"""Where a Spark micro-batch's time goes: Spark's event log, and the JIT from a JFR recording.

A bench run with an event log (and optionally a Java Flight Recording of the driver JVM)::

    mkdir -p /tmp/ev && python -m bench.run --workload W2 --records 2000000 --systems kspark \\
        --kspark-conf spark.kspark.maxOffsetsPerTrigger=1000000 \\
        --kspark-conf spark.eventLog.enabled=true --kspark-conf spark.eventLog.dir=file:///tmp/ev \\
        --kspark-conf "spark.driver.extraJavaOptions=-XX:+UseParallelGC \\
            -XX:StartFlightRecording=filename=/tmp/w2.jfr,settings=profile"
    python -m bench.first_batch /tmp/ev/eventlog_v2_local-* --jfr /tmp/w2.jfr

prints, per Spark job (one per micro-batch here), each stage's wall time and its tasks' run
time, CPU time, GC time and records, and the JVM's JIT compile time while the job ran. The
first batch against the same batch warm is the fixed cost of a cold start.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

__all__ = ["main", "events", "jobs", "jit_seconds"]


def events(path: Path) -> list[dict[str, Any]]:
    """The events of a Spark event log (a directory of rolled files or one file, zstd or plain)."""
    files = sorted(path.glob("events_*")) if path.is_dir() else [path]
    out: list[dict[str, Any]] = []
    for f in files:
        raw = f.read_bytes()
        if f.suffix == ".zstd" or raw[:4] == b"\x28\xb5\x2f\xfd":
            if shutil.which("zstd") is None:
                raise SystemExit(f"{f} is zstd-compressed and no zstd tool is on PATH")
            raw = subprocess.run(["zstd", "-d", "-c", str(f)], check=True, capture_output=True).stdout
        out.extend(json.loads(line) for line in raw.decode().splitlines() if line.strip())
    return out


def jobs(evs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per job: start/end (epoch ms) and its stages with summed task metrics."""
    by_job: dict[int, dict[str, Any]] = {}
    stage_job: dict[int, int] = {}
    stages: dict[int, dict[str, Any]] = {}
    for e in evs:
        kind = e["Event"].rsplit(".", 1)[-1]
        if kind == "SparkListenerJobStart":
            by_job[e["Job ID"]] = {"job": e["Job ID"], "start": e["Submission Time"], "stages": []}
            for s in e["Stage Infos"]:
                stage_job[s["Stage ID"]] = e["Job ID"]
        elif kind == "SparkListenerJobEnd":
            by_job[e["Job ID"]]["end"] = e["Completion Time"]
        elif kind == "SparkListenerTaskEnd":
            m = e.get("Task Metrics") or {}
            s = stages.setdefault(
                e["Stage ID"], {"tasks": 0, "run_ms": 0, "cpu_ms": 0.0, "gc_ms": 0, "records": 0}
            )
            s["tasks"] += 1
            s["run_ms"] += m.get("Executor Run Time", 0)
            s["cpu_ms"] += m.get("Executor CPU Time", 0) / 1e6
            s["gc_ms"] += m.get("JVM GC Time", 0)
            s["records"] += (m.get("Input Metrics") or {}).get("Records Read", 0) + (
                m.get("Shuffle Read Metrics") or {}
            ).get("Total Records Read", 0)
        elif kind == "SparkListenerStageCompleted":
            info = e["Stage Info"]
            s = stages.setdefault(
                info["Stage ID"], {"tasks": 0, "run_ms": 0, "cpu_ms": 0.0, "gc_ms": 0, "records": 0}
            )
            s.update(
                stage=info["Stage ID"],
                wall_ms=info.get("Completion Time", 0) - info.get("Submission Time", 0),
                name=info["Stage Name"].split(" at ")[0],
            )
            job = stage_job.get(info["Stage ID"])
            if job is not None:
                by_job[job]["stages"].append(s)
    return [by_job[j] for j in sorted(by_job)]


def progress(evs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each micro-batch's progress report (``durationMs``: latestOffset, queryPlanning, addBatch ...)."""
    return [e["progress"] for e in evs if e["Event"].endswith("QueryProgressEvent")]


def _iso_ms(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000


def _seconds(duration: str) -> float:
    m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?", duration)
    if m is None:
        raise ValueError(f"unexpected JFR duration {duration!r}")
    h, mins, s = m.groups()
    return int(h or 0) * 3600 + int(mins or 0) * 60 + float(s or 0)


def _jfr_events(jfr: Path, event: str) -> list[dict[str, Any]]:
    """The field values of every ``event`` in a recording (``jfr print --json``)."""
    out = subprocess.run(
        ["jfr", "print", "--json", "--events", event, str(jfr)], check=True, capture_output=True, text=True
    ).stdout
    return [e["values"] for e in json.loads(out)["recording"]["events"]]


def jit_seconds(jfr: Path) -> list[tuple[float, float]]:
    """(epoch ms, cumulative JIT compile seconds) from a recording's CompilerStatistics events."""
    samples = [
        (_iso_ms(v["startTime"]), _seconds(v["totalTimeSpent"]))
        for v in _jfr_events(jfr, "jdk.CompilerStatistics")
    ]
    return sorted(samples)


def compilations(jfr: Path) -> list[tuple[float, str, float]]:
    """(epoch ms, compiled class, seconds) per JIT compilation the recording kept.

    JFR's ``profile`` settings keep only compilations over 100 ms; record with
    ``jfr configure --input profile --output all.jfc jdk.Compilation#threshold=0ms`` for all.
    """
    return [
        (_iso_ms(v["startTime"]), v["method"]["type"]["name"], _seconds(v["duration"]))
        for v in _jfr_events(jfr, "jdk.Compilation")
    ]


def _origin(cls: str) -> str:
    """What a compiled class belongs to: Spark's generated code, or its package (3 levels)."""
    if "GeneratedClass" in cls:
        return "(Spark whole-stage codegen)"
    return ".".join(cls.replace("/", ".").split("$")[0].split(".")[:3])


def _jit_between(samples: list[tuple[float, float]], start: float, end: float) -> float | None:
    """Compile seconds spent between two instants (the statistics come once a second)."""
    before = [s for t, s in samples if t <= start]
    after = [s for t, s in samples if t >= end]
    if not before or not after:
        return None
    return after[0] - before[-1]


def _print_compilations(
    job_list: list[dict[str, Any]], compiled: list[tuple[float, str, float]], top: int
) -> None:
    for job in job_list:
        by_origin: dict[str, tuple[int, float]] = {}
        for when, cls, seconds in compiled:
            if job["start"] <= when <= job.get("end", job["start"]):
                n, total = by_origin.get(_origin(cls), (0, 0.0))
                by_origin[_origin(cls)] = (n + 1, total + seconds)
        count = sum(n for n, _ in by_origin.values())
        seconds_all = sum(s for _, s in by_origin.values())
        print(f"\njob {job['job']}: {count:,} compilations, {seconds_all:.2f} s")
        for origin, (n, seconds) in sorted(by_origin.items(), key=lambda kv: -kv[1][1])[:top]:
            print(f"  {seconds:6.2f} s {n:5} {origin}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("eventlog", type=Path, help="an event log directory (eventlog_v2_*) or file")
    ap.add_argument("--jfr", type=Path, help="a JFR recording of the same driver JVM")
    ap.add_argument(
        "--compilations", type=int, default=0, metavar="N", help="per job, the N origins of most JIT time"
    )
    args = ap.parse_args(argv)
    jit = jit_seconds(args.jfr) if args.jfr else []
    evs = events(args.eventlog)
    for p in progress(evs):
        ms = p.get("durationMs", {})
        print(f"batch {p['batchId']}: " + ", ".join(f"{k} {v:,}" for k, v in sorted(ms.items())) + " ms")
    print()
    print(
        "| job | stage | wall ms | tasks | task run ms | task CPU ms | GC ms | records "
        "| JIT compile s in job |"
    )
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for job in jobs(evs):
        compile_s = _jit_between(jit, job["start"], job.get("end", job["start"])) if jit else None
        for i, s in enumerate(job["stages"]):
            shown = f"{compile_s:.1f}" if compile_s is not None and i == 0 else ""
            print(
                f"| {job['job']} | {s['stage']} {s['name']} | {s['wall_ms']:,} | {s['tasks']} | "
                f"{s['run_ms']:,} | {s['cpu_ms']:,.0f} | {s['gc_ms']:,} | {s['records']:,} | {shown} |"
            )
        print(f"| {job['job']} | (job wall) | {job.get('end', 0) - job['start']:,} | | | | | | |")
    if args.jfr and args.compilations:
        _print_compilations(jobs(evs), compilations(args.jfr), args.compilations)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
