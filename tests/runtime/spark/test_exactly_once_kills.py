"""kill -9, twenty times, with input flowing: exactly_once_v2 loses nothing and writes nothing twice.

One process runs the same topologies (eos_app.py) under both guarantees, over
the same input, while the test produces records at a steady rate; the whole
process group (Python driver, Spark's JVM, its Python workers) is killed with
SIGKILL at a random moment after each incarnation has committed at least one
micro-batch of each application, and started again. After the last kill the
application runs until its outputs have caught up; then a ``read_committed`` consumer checks:

* exactly_once_v2: every input record appears exactly once in the copy; every
  key's last count is its input count and its counts strictly increase (no
  count written twice); every user's numbering in the repartition topic is
  1..n, each input once; every window's last count is its input count and its
  counts strictly increase.
* at_least_once: nothing is lost; the duplicates are counted and reported.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import pytest

from kspark.dev.kafka import LocalKafka
from tests.runtime.spark.eos_app import REGIONS
from tests.runtime.spark.eos_checks import Input, check

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
KILLS = int(os.environ.get("KSPARK_EOS_KILLS", "20"))
GUARANTEES = ("exactly_once_v2", "at_least_once")


def _start(settings: Path, log: TextIO, *args: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "tests.runtime.spark.eos_app", str(settings), *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        start_new_session=True,  # its own process group: the kill takes the JVM and workers too
    )


def _wait_for_commits(proc: subprocess.Popen[str], apps: list[str], timeout: float) -> None:
    """Until every application has committed a micro-batch in this incarnation."""
    assert proc.stdout is not None
    waiting, deadline = set(apps), time.monotonic() + timeout
    while waiting:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"the application exited ({proc.wait()}) before committing")
        if line.startswith("COMMITTED "):
            waiting -= {a for a in waiting if line.split()[1].startswith(a + "-")}
        if time.monotonic() > deadline:
            raise AssertionError(f"no committed micro-batch of {sorted(waiting)} within {timeout:.0f} s")


def _caught_up(
    kafka: LocalKafka,
    apps: dict[str, dict[str, str]],
    sent: list[tuple[str, int, int]],
    proc: subprocess.Popen[str],
    timeout: float,
) -> dict[str, dict[str, Any]]:
    """The checks once both applications' outputs hold all input (every input in the copy, every
    last count and window count final), or after ``timeout`` whatever they hold."""
    deadline = time.monotonic() + timeout
    while True:
        results = {g: check(kafka, apps[g], sent) for g in GUARANTEES}
        # at_least_once may count a window's records twice: its windows never "finish" that way.
        done = (
            all(
                r["copy_lost"] == 0 and r["numbered_lost"] == 0 and r["counts_exact"]
                for r in results.values()
            )
            and results["exactly_once_v2"]["windows_exact"]
        )
        if done or time.monotonic() > deadline or proc.poll() is not None:
            return results
        time.sleep(5)


@pytest.mark.timeout(1800)  # twenty incarnations of ~10-20 s each, and the catching up
def test_kill_minus_nine_twenty_times_exactly_once_and_at_least_once(
    kafka: LocalKafka, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    # Two partitions, as the machine has two cores: each incarnation starts every task of 8 queries
    # (two applications) before its first commit, and that start-up is most of the test's time.
    inputs = {name: topic_factory(name, partitions=2) for name in ("in-a", "in-b", "in-c")}
    apps: dict[str, dict[str, str]] = {}
    for guarantee in GUARANTEES:
        short = "eos" if guarantee == "exactly_once_v2" else "alos"
        apps[guarantee] = {
            "application.id": f"kills-{short}-{os.getpid()}",
            **inputs,
            **{
                name: topic_factory(f"{short}-{name}", partitions=2) for name in ("copy", "count", "windowed")
            },
        }
    settings = tmp_path / "settings.json"
    state_dir = tmp_path / "state"
    settings.write_text(
        json.dumps({"bootstrap": kafka.bootstrap_servers, "state_dir": str(state_dir), "apps": apps})
    )
    app_ids = [a["application.id"] for a in apps.values()]
    producer = Input(kafka, list(inputs.values()))
    producer.start()
    rng = random.Random(26)
    killed = 0
    incarnations: list[float] = []
    with open(tmp_path / "apps.log", "w") as log:
        try:
            for _ in range(KILLS):
                started = time.monotonic()
                proc = _start(settings, log)
                try:
                    _wait_for_commits(proc, app_ids, timeout=180)
                    incarnations.append(round(time.monotonic() - started, 1))  # to a commit of each
                    time.sleep(rng.uniform(0.0, 2.0))
                finally:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                killed += 1
        finally:
            producer.stop.set()
            producer.join()
        # The last incarnation runs until every output has caught up with the input, then stops.
        final = _start(settings, log)
        try:
            results = _caught_up(kafka, apps, producer.sent, final, timeout=300)
        finally:
            os.killpg(final.pid, signal.SIGKILL)
            final.wait()
    report = {"kills": killed, "seconds_to_first_commits": incarnations, "regions": REGIONS, **results}
    print(json.dumps(report, indent=1))  # the numbers the note quotes
    (tmp_path / "report.json").write_text(json.dumps(report, indent=1))

    eos = results["exactly_once_v2"]
    assert killed == KILLS
    assert eos["inputs"] > 0 and eos["windows"] > 0
    assert eos["copy_lost"] == 0 and eos["copy_duplicates"] == 0, eos
    assert eos["counts_exact"] and eos["counts_strictly_increase"], eos
    assert eos["numbered_lost"] == 0 and eos["numbered_duplicates"] == 0 and eos["numbering_exact"], eos
    assert eos["windows_exact"] and eos["windows_strictly_increase"], eos

    alos = results["at_least_once"]
    assert alos["copy_lost"] == 0 and alos["numbered_lost"] == 0, alos
    assert alos["counts_exact"], alos  # the state commits with the offsets: the last count is right
