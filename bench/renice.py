"""Lower the CPU priority of Spark's JVM, its Python workers and the broker while a bench runs.

bench.interactive_queries ``--renice N``: on this 2-core machine the HTTP reads share the
cores with W2's tasks; this asks what the reads' tail is when the processing yields the cores
to them (every thread of every process in the trees under the given roots at nice ``N``,
re-applied every half second, as new threads and workers appear).
"""

from __future__ import annotations

import os
import threading

from bench.proctree import tree

__all__ = ["Renicer", "java_children"]


def java_children(pid: int) -> list[int]:
    """The ``java`` processes whose parent is ``pid`` (PySpark's JVM, in local mode the tasks')."""
    return [p for p, (comm, _, _) in tree([pid]).items() if comm == "java" and _parent(p) == pid]


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as fh:
        stat = fh.read()
    return int(stat[stat.rindex(")") + 2 :].split()[1])


class Renicer:
    """Every thread of the process trees under ``roots`` at nice ``niceness``, until stopped."""

    def __init__(self, roots: list[int], niceness: int) -> None:
        self._roots = roots
        self._niceness = niceness
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-renice", daemon=True)
        self.threads = 0  # how many threads were reniced, over the run

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        done: set[int] = set()
        while not self._stop.is_set():
            for pid in tree(self._roots):
                try:
                    tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
                except OSError:
                    continue  # the process ended
                for tid in tids:
                    if tid in done:
                        continue
                    try:
                        os.setpriority(os.PRIO_PROCESS, tid, self._niceness)
                        done.add(tid)
                    except OSError:
                        continue  # the thread ended
            self.threads = len(done)
            self._stop.wait(0.5)
