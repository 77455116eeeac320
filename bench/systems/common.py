"""The protocol between bench/run.py and a system's process.

A system process gets its spec as one JSON argument (workload, bootstrap,
input, output, table, app_id, state_dir, commit_ms, partitions), starts
processing, prints ``READY``, and runs until a line ``stop`` (or EOF) arrives
on stdin. It then prints ``RESULT {json}`` with at least ``first_input_ms``:
the wall-clock time (ms) it began processing input. The harness takes the end
from the output topic itself (log-append times), so a system never reports its
own throughput.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["spec_from_argv", "wait_for_stop", "report", "FirstSeen"]


def spec_from_argv() -> dict[str, Any]:
    return dict(json.loads(sys.argv[1]))


def wait_for_stop(
    on_stop: Callable[[], None] | None = None,
    *,
    background: bool = False,
    on_line: Callable[[str], None] | None = None,
) -> None:
    """Block until the harness says stop; with ``background``, call ``on_stop`` from a thread instead.

    Any other line goes to ``on_line`` (bench.state_at_scale asks for the start time with ``first``
    while the system keeps running, to kill it -9 afterwards)."""

    def _wait() -> None:
        for line in sys.stdin:
            if line.strip() == "stop":
                break
            if on_line is not None:
                on_line(line.strip())
        if on_stop is not None:
            on_stop()

    print("READY", flush=True)
    if background:
        threading.Thread(target=_wait, name="bench-stop", daemon=True).start()
    else:
        _wait()


def report(**result: Any) -> None:
    print("RESULT " + json.dumps(result), flush=True)


class FirstSeen:
    """Remembers the wall-clock time of the first call (cheap enough for the hot path)."""

    def __init__(self) -> None:
        self.ms = 0

    def __call__(self) -> None:
        if not self.ms:
            self.ms = int(time.time() * 1000)
