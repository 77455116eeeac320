"""The ``kspark`` command run as a user runs it (tests of the command): ``dev-kafka`` read until it
says it is up, and what tells kspark's own output from everything that belongs in its log file."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


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


_NOISE = re.compile(
    r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d [A-Z]+ "  # log4j's lines, and Python logging's in the same layout
    r"|^WARNING: "  # the JVM's own ("Using incubator modules")
    r"|^%\d\|\d+\.\d+\|"  # librdkafka's
    r"|Python worker"  # PySpark's workers' prints
    r"|^Traceback \(most recent call last\)|^\s+at [\w$./]+\(|^\s+File \""  # traces, Python's and Java's
)


def noise(text: str) -> list[str]:
    """The lines of a command's output that belong in its log file, not on the terminal."""
    return [line for line in text.splitlines() if _NOISE.search(line)]


def announced_log(text: str) -> Path:
    """The log file a command named in its first line (kspark.runtime.logs.announcement)."""
    match = re.match(r"kspark: .* logs go to (\S+) \(--verbose", text)
    assert match is not None, text
    return Path(match.group(1))
