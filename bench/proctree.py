"""The process trees bench.run samples: RSS, PSS and CPU time of a system's processes (from /proc)."""

from __future__ import annotations

import os

__all__ = ["tree", "rss_by_command", "pss_bytes", "PAGE", "TICKS"]

PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")
"""Bytes per page (RSS in /proc/<pid>/stat is in pages) and clock ticks per second (CPU times)."""


def tree(roots: list[int]) -> dict[int, tuple[str, int, int]]:
    """pid -> (command name, RSS bytes, CPU ticks) of every process in the trees under ``roots``."""
    children: dict[int, list[int]] = {}
    usage: dict[int, tuple[str, int, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
            fields = stat[stat.rindex(")") + 2 :].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
            comm = stat[stat.index("(") + 1 : stat.rindex(")")]
            usage[int(entry)] = (comm, int(fields[21]) * PAGE, int(fields[11]) + int(fields[12]))
        except (OSError, ValueError, IndexError):
            continue
    found = {}
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid in usage:
            found[pid] = usage[pid]
        todo.extend(children.get(pid, []))
    return found


def rss_by_command(roots: list[int]) -> dict[str, int]:
    """RSS in MB per command name (java, python, ...) of the process trees under ``roots``."""
    by: dict[str, int] = {}
    for comm, rss, _ in tree(roots).values():
        by[comm] = by.get(comm, 0) + rss
    return {comm: round(rss / 2**20) for comm, rss in sorted(by.items())}


def pss_bytes(pids: list[int]) -> int:
    """Summed proportional set size of ``pids``: a page shared by n of them counts 1/n in each
    (RSS counts forked workers' shared pages once per process)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except (OSError, ValueError):
            continue  # the process ended between listing and reading
    return total
