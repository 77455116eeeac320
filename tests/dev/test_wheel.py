"""The wheel a user installs: built with ``python -m build --wheel``, installed with pip into a clean
venv (no checkout, no ``--system-site-packages``), then ``kspark --version`` and ``kspark demo`` run
from it in a directory outside the repository.

The wheel is built from a copy of what it is made of (``pyproject.toml``, ``README.md``,
``kspark/``), so the build writes nothing into the checkout and a file the package needs but the
wheel leaves out shows up here. The demo uses the shared jar cache (``KSPARK_HOME``, filled by
``./dev``'s set-up): a cold fetch is minutes of Maven Central, checked by hand instead (README,
"Install from a wheel"). The demo runs under exactly_once_v2 and its own lines are the only ones
on the terminal (Spark's, the workers' and librdkafka's go to the log file it names): the one
end-to-end run of ``kspark demo`` in the suite.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from tests.dev.cli_process import announced_log, noise

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "kspark")
"""What the wheel is built from: the project's metadata, its readme (the long description) and the
package."""


def _run(command: list[str | Path], cwd: Path, timeout: float, env: dict[str, str] | None = None) -> str:
    """Run ``command``; its output, or a failure that quotes it."""
    done = subprocess.run(
        [str(c) for c in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _user_env() -> dict[str, str]:
    """This environment without what would reach back into the checkout or this test run's venv:
    ``PYTHONPATH`` (``kspark run`` and ``load_app`` extend it), Spark's worker interpreters (a
    session in this process sets them to the checkout's venv), ``VIRTUAL_ENV``. ``KSPARK_HOME``
    and ``JAVA_HOME`` stay: the jar cache and the JVM are the machine's."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "PYSPARK_")) and key != "VIRTUAL_ENV"
    }


def _files(directory: Path) -> set[str]:
    """The files under ``directory``, as wheel entry names, without byte code."""
    return {
        p.relative_to(directory.parent).as_posix()
        for p in directory.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


def test_wheel_installs_into_a_clean_venv_and_runs_the_demo(tmp_path: Path) -> None:
    timings: dict[str, float] = {}
    started = time.monotonic()
    source = tmp_path / "source"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, source / name)
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", dist, source], cwd=tmp_path, timeout=300)
    (wheel,) = dist.glob("kspark-*.whl")
    timings["build"] = time.monotonic() - started

    with zipfile.ZipFile(wheel) as archive:
        entries = {name for name in archive.namelist() if not name.endswith("/")}
    assert "kspark/py.typed" in entries
    assert {"kspark/jvm/kafka-broker/pom.xml", "kspark/jvm/spark-kafka-connector/pom.xml"} <= entries
    # Every file of the package is in the wheel: a new non-Python file needs its package-data line.
    assert _files(source / "kspark") - entries == set()
    assert not any(name.startswith(("tests/", "jvm/", "bench/")) for name in entries)

    started = time.monotonic()
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv], cwd=tmp_path, timeout=120)
    install = ["-m", "pip", "install", "--disable-pip-version-check", "--quiet"]
    _run([venv / "bin" / "python", *install, wheel], cwd=tmp_path, timeout=600, env=_user_env())
    timings["venv and pip install"] = time.monotonic() - started

    env = _user_env()
    where = _run([venv / "bin" / "python", "-c", "import kspark; print(kspark.__file__)"], tmp_path, 60, env)
    assert Path(where.strip()).is_relative_to(venv), where

    version = wheel.name.split("-")[1]
    lines = _run([venv / "bin" / "kspark", "--version"], cwd=tmp_path, timeout=60, env=env).splitlines()
    assert lines[0] == f"kspark {version}"
    assert "pyspark 4.2.0" in lines

    started = time.monotonic()
    done = subprocess.run(
        # Under exactly_once_v2: the demo's harder path (transactions, read_committed output), while
        # nearly every other test on Spark runs at_least_once, the command's default.
        [str(venv / "bin" / "kspark"), "demo", "--events", "120", "--timeout", "240", "--exactly-once"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=420,
        stdin=subprocess.DEVNULL,
    )
    timings["demo"] = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    assert "output matches the expected records exactly" in done.stdout
    assert "interactive queries at http://127.0.0.1:" in done.stdout
    assert "kspark: fetching" not in done.stdout  # the shared cache's bundles match the wheel's poms
    assert noise(done.stdout) == [] and done.stderr == "", done.stdout + done.stderr
    path = announced_log(done.stdout)
    log = path.read_text()
    path.unlink()  # the demo leaves its log in the temporary directory for a user to read
    assert "TransformWithStateInPandas Python worker" in log  # PySpark's worker prints went there
    assert "WARNING: Using incubator modules" in log  # and the JVM's own
    print("wheel test timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
