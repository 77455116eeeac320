"""``kspark dev-kafka`` run as a user runs it, read until it says it is up (tests of the command)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def dev_kafka(*args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """The running command and what it printed up to its "Ctrl-C to stop" line (or 120 s);
    killed on leaving if the test did not stop it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kspark", "dev-kafka", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("Ctrl-C"):
                break
        yield proc, "".join(lines)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
