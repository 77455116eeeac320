"""Where a Python process's threads are when its interpreter stalls (issue 20's HTTP tail).

    watch = StallWatch(threshold_ms=8.0); watch.start(); ...; watch.stop(); watch.summary()

A daemon thread sleeps ``interval_ms`` at a time and measures how late it
wakes. A wake-up later than ``threshold_ms`` means something kept the thread
from running: the interpreter lock held by another thread (a long call into C
does not let go of it), a garbage collection, or no free core. At each such
stall it takes every other thread's current frame (``sys._current_frames``):
the thread that held the lock has just let go of it, so its frame is at, or
just after, the call that held it. Counting those frames over many stalls
names the likely holders. A sampling profiler that reads the process from
outside (py-spy ``--gil``) crashed on the application's process here.

Frames only show where a holder went after it let go. So each wake-up also
reads every Python thread's CPU clock and the process's: over a stall, the
thread whose clock advanced is the one that ran (held the interpreter), and a
process clock that advanced much less than the stall means the process had no
core at all (the operating system's doing, not the interpreter's). CPU the
process used that no Python thread accounts for ran in threads of C libraries
(librdkafka's, say).
"""

from __future__ import annotations

import collections
import contextlib
import sys
import threading
import time
import traceback
from typing import Any

__all__ = ["StallWatch"]


class StallWatch(threading.Thread):
    """Records stalls longer than ``threshold_ms`` and where the other threads were at each."""

    def __init__(self, threshold_ms: float = 8.0, interval_ms: float = 1.0, depth: int = 6) -> None:
        super().__init__(name="bench-stall-watch", daemon=True)
        self.threshold_s = threshold_ms / 1000
        self.interval_s = interval_ms / 1000
        self.depth = depth
        self.stalls_ms: list[float] = []
        self.wakeups = 0
        # (thread name, innermost frames as text) -> [stalls seen at, summed stall ms]
        self.where: dict[tuple[str, str], list[float]] = collections.defaultdict(lambda: [0, 0.0])
        # thread name -> CPU ms it used during stalls; "(process)" all threads, "(native)" the rest
        self.cpu_ms: dict[str, float] = collections.defaultdict(float)
        self._stop_event = threading.Event()

    def _clocks(self, names: dict[int, str]) -> dict[int, float]:
        clocks: dict[int, float] = {}
        for ident in names:
            with contextlib.suppress(OSError):  # the thread ended
                clocks[ident] = time.clock_gettime(time.pthread_getcpuclockid(ident))
        return clocks

    def run(self) -> None:
        names = {t.ident: t.name for t in threading.enumerate() if t.ident is not None}
        clocks = self._clocks(names)
        process = time.process_time()
        while not self._stop_event.is_set():
            before = time.perf_counter()
            time.sleep(self.interval_s)
            late = time.perf_counter() - before - self.interval_s
            self.wakeups += 1
            if len(names) != threading.active_count():
                names = {t.ident: t.name for t in threading.enumerate() if t.ident is not None}
            now_process, now_clocks = time.process_time(), self._clocks(names)
            stalled = late >= self.threshold_s
            if stalled:
                self._attribute(names, clocks, now_clocks, now_process - process)
            process, clocks = now_process, now_clocks
            if not stalled:
                continue
            self.stalls_ms.append(late * 1000)
            for ident, frame in sys._current_frames().items():
                if ident == self.ident:
                    continue
                stack = traceback.extract_stack(frame)[-self.depth :]
                text = " <- ".join(
                    f"{f.name} ({f.filename.rsplit('/', 2)[-1]}:{f.lineno})" for f in reversed(stack)
                )
                entry = self.where[(names.get(ident, str(ident)), text)]
                entry[0] += 1
                entry[1] += late * 1000

    def _attribute(
        self, names: dict[int, str], before: dict[int, float], after: dict[int, float], process_s: float
    ) -> None:
        self.cpu_ms["(process)"] += process_s * 1000
        accounted = 0.0
        for ident, clock in after.items():
            used = clock - before.get(ident, 0.0)  # a thread new since the last wake-up: all of it
            accounted += used
            if used > 0:
                self.cpu_ms[names.get(ident, str(ident))] += used * 1000
        self.cpu_ms["(native)"] += max(0.0, process_s - accounted) * 1000

    def stop(self) -> None:
        self._stop_event.set()
        self.join(5)

    def summary(self, top: int = 15) -> dict[str, Any]:
        """How many stalls, their percentiles, and the frames seen at most of them."""
        ordered = sorted(self.stalls_ms)

        def at(q: float) -> float:
            return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2) if ordered else 0.0

        frames = sorted(self.where.items(), key=lambda kv: -kv[1][1])[:top]
        return {
            "wakeups": self.wakeups,
            "stalls": len(ordered),
            "stall_ms": {"p50": at(0.5), "p99": at(0.99), "max": at(1.0), "total": round(sum(ordered), 1)},
            # CPU used during the stalls, by thread: compare "(process)" with stall_ms.total
            "cpu_ms_in_stalls": {
                name: round(ms, 1) for name, ms in sorted(self.cpu_ms.items(), key=lambda kv: -kv[1])[:top]
            },
            "frames": [
                {"thread": name, "stalls": int(n), "stall_ms": round(ms, 1), "at": text}
                for (name, text), (n, ms) in frames
            ],
        }
