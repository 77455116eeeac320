"""Plots of ``bench.run --json`` results for docs/benchmarks.md.

    python -m bench.plot throughput OUT.png RUN.json [RUN.json ...]
    python -m bench.plot scaling OUT.png RUN.json [RUN.json ...]
    python -m bench.plot w5 OUT.png W5.json
    python -m bench.plot soak OUT.png SOAK.json

``throughput``: input records/s per workload and system (one bar each; a
failed run has no bar), with the broker's consume-and-produce limit as a line
when a run measured it (``--perf``). ``scaling``: kspark's input records/s
against the number of records, one line per workload, from runs at different
``--records``. ``w5``: a ``bench.w5`` result, one column per workload:
input records/s (top) and p99 latency (bottom, log) per commit interval, a
bar per system and guarantee (exactly-once hatched; a failed or missing run
has no bar). Needs matplotlib (bench/requirements.txt); the harness does not.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

__all__ = ["main"]

SYSTEM_ORDER = ("kspark", "pyspark", "quix", "kstreams", "faust")


def _load(paths: list[str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    results: list[dict[str, Any]] = []
    limits: dict[str, Any] = {}
    for p in paths:
        data = json.loads(Path(p).read_text())
        results.extend(data.get("results", []))
        limits.update(data.get("limits") or {})
    return results, limits


def throughput(out: str, paths: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results, limits = _load(paths)
    workloads = sorted({r["workload"] for r in results})
    systems = [s for s in SYSTEM_ORDER if any(r["system"] == s for r in results)]
    width = 0.8 / max(len(systems), 1)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for i, system in enumerate(systems):
        xs, ys = [], []
        for j, w in enumerate(workloads):
            rate = next(
                (r["rate"] for r in results if r["system"] == system and r["workload"] == w and r["ok"]), None
            )
            if rate:
                xs.append(j + i * width)
                ys.append(rate)
        ax.bar(xs, ys, width, label=system)
    if limits.get("pipe_consume"):
        ax.axhline(limits["pipe_consume"], color="grey", linestyle="--", label="broker consume+produce limit")
    records = sorted({r["records"] for r in results})
    ax.set_xticks([j + width * (len(systems) - 1) / 2 for j in range(len(workloads))], workloads)
    ax.set_yscale("log")
    ax.set_ylabel("input records / s (log)")
    ax.set_title(f"Throughput, {', '.join(f'{n:,}' for n in records)} records, 2 partitions, 2 cores")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def scaling(out: str, paths: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results, _ = _load(paths)
    fig, ax = plt.subplots(figsize=(7, 4))
    for w in sorted({r["workload"] for r in results if r["system"] == "kspark"}):
        # One point per input size: a later file's run (a re-run) replaces an earlier one.
        by_size = {
            r["records"]: r["rate"]
            for r in results
            if r["system"] == "kspark" and r["workload"] == w and r["ok"]
        }
        points = sorted(by_size.items())
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=w)
    ax.set_xscale("log")
    ax.set_xlabel("input records (log)")
    ax.set_ylabel("input records / s")
    ax.set_ylim(bottom=0)
    ax.set_title("kspark throughput against input size")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


W5_GUARANTEES = (("at_least_once", "at-least-once", ""), ("exactly_once_v2", "exactly-once", "//"))


def w5(out: str, paths: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = json.loads(Path(paths[0]).read_text())
    tp, lat = data.get("throughput", []), data.get("latency", [])
    rows = tp + lat
    workloads = sorted({r["workload"] for r in rows})
    commits = sorted({r["commit_ms"] for r in rows})
    systems = [s for s in SYSTEM_ORDER if any(r["system"] == s for r in rows)]
    bars = [(s, g) for s in systems for g in W5_GUARANTEES]
    width = 0.8 / max(len(bars), 1)
    colors = {s: f"C{i}" for i, s in enumerate(SYSTEM_ORDER)}
    fig, axes = plt.subplots(2, len(workloads), figsize=(5.5 * len(workloads), 7), squeeze=False)
    for col, w in enumerate(workloads):
        for row, (source, field, label) in enumerate(
            ((tp, "rate", "input records / s"), (lat, "p99_ms", "p99 latency, ms (log)"))
        ):
            ax = axes[row][col]
            for i, (s, (g, g_label, hatch)) in enumerate(bars):
                xs, ys = [], []
                for j, c in enumerate(commits):
                    r = next(
                        (
                            r
                            for r in source
                            if (r["workload"], r["system"], r["guarantee"], r["commit_ms"]) == (w, s, g, c)
                        ),
                        None,
                    )
                    good = r is not None and (r.get("ok") or r.get("check") == "ok") and r.get(field)
                    if good and r is not None:
                        xs.append(j + i * width)
                        ys.append(r[field])
                ax.bar(
                    xs, ys, width, color=colors[s], hatch=hatch, edgecolor="black", label=f"{s}, {g_label}"
                )
            ax.set_xticks(
                [j + width * (len(bars) - 1) / 2 for j in range(len(commits))], [f"{c:,} ms" for c in commits]
            )
            ax.set_ylabel(label)
            if field == "p99_ms":
                ax.set_yscale("log")
                ax.set_ylim(bottom=10)
                rates = sorted({r["offered_rate"] for r in lat if r["workload"] == w})
                offered = ", ".join(f"{x:,.0f}" for x in rates)
                ax.set_title(f"{w}: p99 at {offered} rec/s offered", fontsize="medium")
            else:
                ax.set_title(f"{w}: throughput, {data['args']['records']:,} records", fontsize="medium")
            ax.set_xlabel("commit / trigger interval")
    axes[0][-1].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle("W5: at-least-once against exactly_once_v2, 2 partitions, 2 cores")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def soak(out: str, paths: list[str]) -> None:
    """A ``bench.soak`` run: resident memory per process (top) and lag (bottom) over time, the
    broker's restarts as vertical lines."""
    import matplotlib

    matplotlib.use("Agg")
    import statistics

    import matplotlib.pyplot as plt

    data = json.loads(Path(paths[0]).read_text())
    samples = data["samples"]
    minutes = [s["t"] / 60 for s in samples]

    def smoothed(values: list[float]) -> list[float]:
        # A rolling median of 11 samples: a child the JVM forks to run a command shows for a
        # moment the JVM's whole RSS (runs before bench.soak told those from Python workers).
        return [statistics.median(values[max(0, i - 5) : i + 6]) for i in range(len(values))]

    fig, (mem, lag) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    for i, w in enumerate(("W2", "W4")):
        for key, style, what in (
            ("jvm_mb", "-", "JVM"),
            ("workers_mb", "--", "Python workers (rolling median)"),
            ("driver_mb", ":", "driver"),
        ):
            values = [s[w][key] for s in samples]
            if key == "workers_mb":
                values = smoothed(values)
            mem.plot(minutes, values, style, color=f"C{i}", label=f"{w} {what}")
        # The JVM's heap in use (jstat, once a minute; runs before 2026-11-27 did not sample it).
        heap = [s for s in samples if s[w].get("heap_used_mb") is not None]
        if heap:
            mem.plot(
                [s["t"] / 60 for s in heap],
                [s[w]["heap_used_mb"] for s in heap],
                "o",
                markersize=2,
                color=f"C{i}",
                label=f"{w} JVM heap in use",
            )
        lag.plot(minutes, [s[w]["lag"] for s in samples], color=f"C{i}", label=f"{w} input lag (records-lag)")
    mem.plot(minutes, [s["broker_mb"] for s in samples], color="C2", label="Kafka broker")
    mem.set_ylabel("resident memory, MB")
    mem.set_ylim(bottom=0)
    lag.set_ylabel("records")
    lag.set_xlabel("minutes")
    for e in data["events"]:
        for ax in (mem, lag):
            ax.axvline(e["t"] / 60, color="grey", linestyle="-.", linewidth=0.8)
    mem.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    lag.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    rates = ", ".join(f"{w} {r:,.0f} rec/s" for w, r in data["rates"].items())
    fig.suptitle(f"Soak: {rates} for {data['minutes']:g} min, broker restarted (dash-dot lines)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["throughput", "scaling", "w5", "soak"])
    ap.add_argument("out")
    ap.add_argument("runs", nargs="+")
    args = ap.parse_args(argv)
    {"throughput": throughput, "scaling": scaling, "w5": w5, "soak": soak}[args.kind](args.out, args.runs)


if __name__ == "__main__":
    main()
