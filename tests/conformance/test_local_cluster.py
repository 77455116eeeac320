"""Every conformance scenario on ``local-cluster[2,1,1024]``: two executor JVMs, their own Python workers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kspark.dev.kafka import LocalKafka

from .local_cluster_check import NATIVE
from .scenarios import SCENARIOS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.integration
@pytest.mark.slow
def test_scenarios_pass_on_a_multi_process_cluster(kafka: LocalKafka, tmp_path: Path) -> None:
    names = [s.name for s in SCENARIOS]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.conformance.local_cluster_check",
            kafka.bootstrap_servers,
            str(tmp_path),
            *names,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    report = proc.stdout + proc.stderr[-4000:]
    assert proc.returncode == 0, report
    expected = [line for n in names for line in [f"ok {n}", *([f"ok {n} (native)"] if n in NATIVE else [])]]
    assert [line for line in proc.stdout.splitlines() if line.startswith("ok ")] == expected
