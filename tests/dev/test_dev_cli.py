"""The kspark command line: parsing, app loading, fetch-jars, dev-kafka."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kspark import cli


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for command in ("demo", "run", "describe", "dev-kafka", "fetch-jars"):
        assert command in out


def test_load_app_calls_topology_and_config_functions(tmp_path: Path) -> None:
    app = tmp_path / "my_app_mod.py"
    app.write_text(
        "class T:\n    def describe(self):\n        return 'Topologies: none'\n"
        "def topology():\n    return T()\n"
        "config = {'application.id': 'x'}\n"
    )
    topology, config = cli.load_app(app)
    assert topology.describe() == "Topologies: none"
    assert config == {"application.id": "x"}
    assert str(tmp_path) in os.environ["PYTHONPATH"].split(os.pathsep)


def test_describe_prints_topology(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = tmp_path / "describe_app_mod.py"
    app.write_text(
        "class T:\n    def describe(self):\n        return 'Sub-topology: 0'\ntopology = T()\nconfig = {}\n"
    )
    assert cli.main(["describe", str(app)]) == 0
    assert "Sub-topology: 0" in capsys.readouterr().out


def test_app_without_topology_is_a_named_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = tmp_path / "empty_app_mod.py"
    app.write_text("config = {}\n")
    assert cli.main(["describe", str(app)]) == 2
    assert "defines no `topology`" in capsys.readouterr().err


def test_missing_app_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "/no/such/app.py"]) == 2
    assert "no such application file" in capsys.readouterr().err


def test_fetch_jars_unknown_bundle(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["fetch-jars", "nope"]) == 2
    assert "known bundles" in capsys.readouterr().err


@pytest.mark.integration
def test_fetch_jars_reports_cached_bundles(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["fetch-jars"]) == 0
    cli.main(["fetch-jars"])
    out = capsys.readouterr().out
    assert "kafka-broker: 46 jars" in out
    assert "spark-kafka-connector: 4 jars" in out
    assert "cached in" in out


@pytest.mark.integration
@pytest.mark.slow
def test_dev_kafka_prints_bootstrap_servers_and_stops_on_ctrl_c() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kspark", "dev-kafka", "--topic", "hello:3"],
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
        text = "".join(lines)
        assert "created topic hello (3 partitions)" in text, text
        servers = next(x for x in lines if x.startswith("bootstrap.servers="))
        assert servers.strip().startswith("bootstrap.servers=127.0.0.1:")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
