"""Build and run the Java reference harness (jvm/reference-harness) on Java Kafka Streams' test driver.

The harness is compiled with ``javac`` against the ``kafka-streams`` jar bundle
(:mod:`kspark.jvm.jars`, resolved once from Maven Central and then offline),
into ``<kspark cache>/reference-harness/<hash of the sources>/``; a finished
build is marked by a stamp file, so it happens once per source change, not
once per test session.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kspark.jvm.jars import compile_java, find_java

__all__ = ["HARNESS_DIR", "build_harness", "run_harness"]

HARNESS_DIR = Path(__file__).resolve().parents[2] / "jvm" / "reference-harness"
_MAIN = "io.kspark.reference.ReferenceHarness"


def _sources() -> list[Path]:
    return sorted((HARNESS_DIR / "src" / "main" / "java").rglob("*.java"))


def build_harness() -> str:
    """Compile the harness once; return the classpath that runs it."""
    return compile_java("reference-harness", _sources(), "kafka-streams")


def run_harness(scenarios: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Run every scenario in one JVM; return its JSON lines grouped by scenario name."""
    classpath = build_harness()
    # a private state directory: Java's default (/tmp/kafka-streams/<app id>) is shared by concurrent
    # runs, whose RocksDB stores then fail to open or flush
    state_dir = tempfile.mkdtemp(prefix="kspark-reference-state-")
    scenarios = [{**s, "config": {**s.get("config", {}), "state.dir": state_dir}} for s in scenarios]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(list(scenarios), fh)
        path = fh.name
    try:
        proc = subprocess.run(
            [
                str(find_java()),
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=error",
                "-cp",
                classpath,
                _MAIN,
                path,
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
    finally:
        os.unlink(path)
        shutil.rmtree(state_dir, ignore_errors=True)
    if proc.returncode != 0:
        raise RuntimeError(f"the reference harness failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    by_scenario: dict[str, list[dict[str, Any]]] = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            by_scenario.setdefault(entry["scenario"], []).append(entry)
    return by_scenario
