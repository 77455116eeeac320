"""Plots of ``bench.run --json`` results for docs/benchmarks.md.

    python -m bench.plot throughput OUT.png RUN.json [RUN.json ...]
    python -m bench.plot scaling OUT.png RUN.json [RUN.json ...]

``throughput``: input records/s per workload and system (one bar each; a
failed run has no bar), with the broker's consume-and-produce limit as a line
when a run measured it (``--perf``). ``scaling``: kspark's input records/s
against the number of records, one line per workload, from runs at different
``--records``. Needs matplotlib (bench/requirements.txt); the harness does not.
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


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["throughput", "scaling"])
    ap.add_argument("out")
    ap.add_argument("runs", nargs="+")
    args = ap.parse_args(argv)
    (throughput if args.kind == "throughput" else scaling)(args.out, args.runs)


if __name__ == "__main__":
    main()
