"""W5 (issue 18): exactly-once against at-least-once, kspark beside Java Kafka Streams.

    python -m bench.w5 --records 1000000 --json bench/results/w5-1m-COMMIT.json

For each ``--workload`` (W1, W2), each guarantee (at_least_once,
exactly_once_v2) and each commit interval (``--commit-ms``: 100 ms, 1 s and
10 s), on one :class:`kspark.dev.LocalKafka`:

* **throughput** (:func:`bench.run.run_system`): each system over the same
  pre-loaded input, one system at a time, as ``bench.run`` measures it;
* **latency** (:func:`bench.run.run_latency`): p50 and p99 at a fixed
  offered rate. The rate of a workload is half the at-least-once 1 s
  throughput of the slower system measured in this invocation, capped at
  ``--latency-cap`` (50,000 rec/s by default: about what the harness's one
  producer offers on 2 cores beside the broker and a system, see
  docs/benchmarks.md, "Latency: what a micro-batch adds"); ``--latency-rate``
  fixes it instead, and without an at-least-once 1 s throughput the cap is
  the rate.

Under exactly-once every output is read ``read_committed`` and its time is
when it became visible, its transaction's commit marker's append time
(:mod:`bench.kafka_output`). The results go to one JSON file (``--json``,
rewritten after every run, so a stopped invocation keeps what it measured)
and a table is printed with the issue's two targets: exactly-once costs at
most 10% of at-least-once throughput at 1 s, and kspark's exactly-once at
least matches Kafka Streams' exactly-once on W2. Draw the figure with
``python -m bench.plot w5 OUT.png W5.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bench.run import (
    AT_LEAST_ONCE,
    EXACTLY_ONCE_V2,
    GUARANTEES,
    SYSTEMS,
    add_common_args,
    preload,
    preload_table,
    prepare,
    run_latency,
    run_system,
    skip_reason,
)
from kspark.dev.kafka import LocalKafka

__all__ = ["latency_rate", "report", "targets", "main"]

COMMIT_MS = (100, 1_000, 10_000)
LATENCY_CAP = 50_000.0
RATE_FROM_COMMIT_MS = 1_000
EXACTLY_ONCE_MIN_SHARE = 0.90  # of at-least-once throughput, at a 1 s commit interval


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


Row = dict[str, Any]


def _find(rows: list[Row], workload: str, system: str, guarantee: str, commit_ms: int) -> Row | None:
    """The run of one configuration, if there is one."""
    key = (workload, system, guarantee, commit_ms)
    return next(
        (r for r in rows if (r["workload"], r["system"], r["guarantee"], r["commit_ms"]) == key), None
    )


def _throughput(rows: list[Row], workload: str, system: str, guarantee: str, commit_ms: int) -> float | None:
    """The measured rate of one configuration (None: not run, or its output was wrong)."""
    r = _find(rows, workload, system, guarantee, commit_ms)
    return float(r["rate"]) if r is not None and r["ok"] and r["rate"] else None


def latency_rate(
    rows: list[Row], workload: str, systems: list[str], cap: float, fixed: float = 0.0
) -> tuple[float, str]:
    """The offered rate of ``workload``'s latency runs, and how it was chosen.

    ``fixed`` when given; else half the at-least-once throughput at a 1 s
    commit interval of the slowest of ``systems``, at most ``cap``; ``cap``
    when no such throughput was measured.
    """
    if fixed:
        return fixed, "--latency-rate"
    rates = [_throughput(rows, workload, s, AT_LEAST_ONCE, RATE_FROM_COMMIT_MS) for s in systems]
    measured = [r for r in rates if r]
    if not measured or len(measured) < len(rates):
        return cap, f"--latency-cap (no at-least-once {RATE_FROM_COMMIT_MS} ms throughput of every system)"
    half = min(measured) / 2
    if half >= cap:
        return cap, f"--latency-cap (half the slower at-least-once 1 s throughput: {half:,.0f})"
    return round(half), "half the slower system's at-least-once 1 s throughput"


def _rate_cell(rows: list[Row], w: str, s: str, g: str, c: int) -> str:
    r = _find(rows, w, s, g, c)
    if r is None:
        return "-"
    return f"{r['rate']:,.0f}" if r["ok"] and r["rate"] else "FAILED"


def _latency_cell(rows: list[Row], w: str, s: str, g: str, c: int) -> str:
    r = _find(rows, w, s, g, c)
    if r is None:
        return "-"
    if r["check"] != "ok" or r["p99_ms"] is None:
        return "FAILED"
    return f"{r['p50_ms']:,} / {r['p99_ms']:,}"


def report(throughput: list[Row], latency: list[Row]) -> str:
    """The W5 table: per workload, commit interval and system, both guarantees side by side."""
    lines = [
        "| workload | commit ms | system | at-least-once rec/s | exactly-once rec/s | EOS ÷ ALOS "
        "| ALOS p50 / p99 ms | EOS p50 / p99 ms | offered rec/s |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    rows = throughput + latency
    keys = sorted({(r["workload"], r["commit_ms"]) for r in rows})
    systems = [s for s in SYSTEMS if any(r["system"] == s for r in rows)]
    for w, c in keys:
        for s in systems:
            if not any((r["workload"], r["commit_ms"], r["system"]) == (w, c, s) for r in rows):
                continue
            alos = _throughput(throughput, w, s, AT_LEAST_ONCE, c)
            eos = _throughput(throughput, w, s, EXACTLY_ONCE_V2, c)
            share = f"{eos / alos:.2f}" if alos and eos else "-"
            offered = sorted(
                {r["offered_rate"] for r in latency if (r["workload"], r["commit_ms"]) == (w, c)}
            )
            lines.append(
                f"| {w} | {c:,} | {s} | {_rate_cell(throughput, w, s, AT_LEAST_ONCE, c)} "
                f"| {_rate_cell(throughput, w, s, EXACTLY_ONCE_V2, c)} | {share} "
                f"| {_latency_cell(latency, w, s, AT_LEAST_ONCE, c)} "
                f"| {_latency_cell(latency, w, s, EXACTLY_ONCE_V2, c)} "
                f"| {', '.join(f'{o:,.0f}' for o in offered) or '-'} |"
            )
    failed = [
        f"- {r['workload']} {r['system']} {r['guarantee']} {r['commit_ms']} ms throughput: {r['verdict']}"
        for r in throughput
        if not r["ok"]
    ] + [
        f"- {r['workload']} {r['system']} {r['guarantee']} {r['commit_ms']} ms latency: {r['check']}"
        f" (unanswered {r['unanswered']})"
        for r in latency
        if r["check"] != "ok"
    ]
    return "\n".join(lines + (["", *failed] if failed else []))


def targets(throughput: list[Row], records: int) -> list[str]:
    """The issue's two targets against the measured rates, one line each (what was not measured says so)."""
    out = []
    workloads = sorted({r["workload"] for r in throughput})
    systems = [s for s in SYSTEMS if any(r["system"] == s for r in throughput)]
    for w in workloads:
        for s in systems:
            alos = _throughput(throughput, w, s, AT_LEAST_ONCE, RATE_FROM_COMMIT_MS)
            eos = _throughput(throughput, w, s, EXACTLY_ONCE_V2, RATE_FROM_COMMIT_MS)
            if alos and eos:
                verdict = "met" if eos >= EXACTLY_ONCE_MIN_SHARE * alos else "missed"
                out.append(
                    f"{w} {s}: exactly-once at 1 s is {eos / alos:.2f} of at-least-once "
                    f"(target >= {EXACTLY_ONCE_MIN_SHARE:.2f}): {verdict}"
                )
            else:
                out.append(f"{w} {s}: exactly-once share at 1 s not measured (a run missing or failed)")
    for c in sorted({r["commit_ms"] for r in throughput if r["workload"] == "W2"}):
        ks = _throughput(throughput, "W2", "kspark", EXACTLY_ONCE_V2, c)
        kst = _throughput(throughput, "W2", "kstreams", EXACTLY_ONCE_V2, c)
        if ks and kst:
            verdict = "met" if ks >= kst else "missed"
            out.append(
                f"W2 at {records:,} records, commit {c:,} ms: kspark exactly-once is {ks / kst:.2f}x "
                f"Kafka Streams' (target >= 1.00, the issue's at 10M records): {verdict}"
            )
    return out


def _drop_topics_since(kafka: LocalKafka, before: set[str]) -> None:
    """Delete the topics a run created (output, latency input, Kafka Streams' internal ones)."""
    for topic in sorted(set(kafka.list_topics()) - before):
        if not topic.startswith("__"):
            kafka.delete_topic(topic, timeout=60)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.w5", description=__doc__.split("\n")[0])
    add_common_args(ap, workloads="W1,W2", systems="kspark,kstreams")
    ap.add_argument(
        "--commit-ms",
        default=",".join(str(c) for c in COMMIT_MS),
        help="comma-separated commit / trigger intervals (ms)",
    )
    ap.add_argument("--guarantees", default=",".join(GUARANTEES), help="comma-separated, of the two")
    ap.add_argument(
        "--latency-rate",
        type=float,
        default=0.0,
        help="offered rec/s of every latency run (default: half the slower system's at-least-once 1 s "
        "throughput of the workload, at most --latency-cap)",
    )
    ap.add_argument("--latency-cap", type=float, default=LATENCY_CAP, help="rec/s (default 50,000)")
    ap.add_argument("--no-latency", action="store_true", help="throughput only")
    ap.add_argument(
        "--no-throughput", action="store_true", help="latency only (at --latency-rate or the cap)"
    )
    args = ap.parse_args(argv)
    commits = _ints(args.commit_ms)
    guarantees = [g.strip() for g in args.guarantees.split(",") if g.strip()]
    if not commits or any(g not in GUARANTEES for g in guarantees):
        ap.error(f"--commit-ms needs intervals; --guarantees takes {', '.join(GUARANTEES)}")
    workloads, systems = prepare(ap, args)
    out: dict[str, Any] = {"args": vars(args), "throughput": [], "latency": [], "latency_rates": {}}

    def save() -> None:
        out["targets"] = targets(out["throughput"], args.records)
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=1))

    def config(commit_ms: int, guarantee: str, rate: float = 0.0) -> argparse.Namespace:
        changed = {"commit_ms": commit_ms, "guarantee": guarantee, "latency_rate": rate}
        return argparse.Namespace(**{**vars(args), **changed})

    plan = [
        (w, c, g, SYSTEMS[s])
        for w in workloads
        for c in commits
        for g in guarantees
        for s in systems
        if not _skipped(w, c, g, s)
    ]
    with LocalKafka(heap="1g", log_level="WARN") as kafka:
        if not args.no_throughput:
            input_topic = f"input-{args.records}"
            load_rate = preload(kafka, input_topic, args.records, args.partitions)
            print(f"pre-loaded {args.records:,} records at {load_rate:,.0f} rec/s", flush=True)
            table_topic = None
            if "W4" in workloads:
                table_topic = "users"
                preload_table(kafka, table_topic, args.partitions)
            for w, c, g, system in plan:
                before = set(kafka.list_topics())
                r = run_system(kafka, system, w, args.records, input_topic, config(c, g), table_topic)
                row = {**r.__dict__, "guarantee": g, "commit_ms": c}
                out["throughput"].append(row)
                shown = f"{r.rate:,.0f} rec/s" if r.ok and r.rate else "FAILED"
                print(f"{w} {system.name} {g} {c} ms: {shown}, {r.seconds} s, {r.verdict}", flush=True)
                _drop_topics_since(kafka, before)
                save()
        if not args.no_latency:
            for w in workloads:
                rate, why = latency_rate(out["throughput"], w, systems, args.latency_cap, args.latency_rate)
                out["latency_rates"][w] = {"rate": rate, "from": why}
                print(f"{w} latency at {rate:,.0f} rec/s offered ({why})", flush=True)
            for w, c, g, system in plan:
                before = set(kafka.list_topics())
                row = run_latency(kafka, system, w, config(c, g, out["latency_rates"][w]["rate"]))
                out["latency"].append(row)
                print(json.dumps(row), flush=True)
                _drop_topics_since(kafka, before)
                save()
    save()
    print()
    print(
        f"W5: records={args.records:,} partitions={args.partitions} kspark={args.kspark_commit} "
        f"load average before={args.load_before}"
    )
    print(report(out["throughput"], out["latency"]))
    print()
    print("\n".join(out["targets"]))
    ok = all(r["ok"] for r in out["throughput"]) and all(r["check"] == "ok" for r in out["latency"])
    return 0 if ok else 1


def _skipped(workload: str, commit_ms: int, guarantee: str, system: str) -> bool:
    why = skip_reason(SYSTEMS[system], workload, guarantee)
    if why:
        print(f"{workload} {system} {guarantee} {commit_ms} ms: {why}, skipped", flush=True)
    return why is not None


if __name__ == "__main__":
    sys.exit(main())
