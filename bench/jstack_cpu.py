"""CPU seconds per thread group of the Spark driver JVM, read with ``jstack`` at the end of its life.

    python -m bench.jstack_cpu &      # then start a run, e.g. python -m bench.run --systems kspark ...

Polls for a JVM running ``org.apache.spark.deploy.SparkSubmit``, takes a
``jstack`` every 0.5 s while it lives (each thread's ``cpu=`` is its CPU time
so far) and, once it has exited, prints the last snapshot's CPU seconds per
thread group (JIT compilers C1/C2, Spark task threads, GC, ...). Work done
after the last snapshot is missed, and the snapshots themselves cost the
run a little CPU.
"""

from __future__ import annotations

import collections
import re
import subprocess
import time

__all__ = ["main"]


def _driver_pid() -> str | None:
    out = subprocess.run(
        ["pgrep", "-f", "org.apache.spark.deploy.SparkSubmit"], capture_output=True, text=True
    ).stdout.split()
    for pid in out:
        try:
            with open(f"/proc/{pid}/cmdline") as fh:
                if fh.read().split("\0")[0].endswith("java"):
                    return pid
        except OSError:
            continue
    return None


def _group(name: str) -> str:
    if name.startswith(("C1 ", "C2 ")):
        return name.split()[0] + " compiler"
    return re.sub(r"[\d#\-]+", "", name).strip()


def main() -> None:
    last = ""
    while True:
        pid = _driver_pid()
        if pid is None:
            if last:
                break
            time.sleep(0.2)
            continue
        out = subprocess.run(["jstack", pid], capture_output=True, text=True).stdout
        if "cpu=" in out:
            last = out
        time.sleep(0.5)
    groups: collections.Counter[str] = collections.Counter()
    for m in re.finditer(r'^"([^"]+)".*?cpu=([\d.]+)ms', last, re.M):
        groups[_group(m.group(1))] += float(m.group(2)) / 1000
    for group, seconds in groups.most_common(15):
        print(f"{seconds:8.2f} s  {group}")


if __name__ == "__main__":
    main()
