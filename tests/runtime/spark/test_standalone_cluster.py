"""docs/cluster.md's ``spark-submit`` on a real Spark standalone cluster, a worker killed mid-run.

The test starts a standalone master and two workers (one core, 1 GB each) from the installed
pyspark on loopback (``bin/spark-class org.apache.spark.deploy.master.Master`` and
``...deploy.worker.Worker``), writes docs/cluster.md's application (a windowed count of page views
per category, the category function in a module shipped with ``--py-files``) and submits it with
pyspark's ``bin/spark-submit`` as the doc says: ``--master spark://…``, the Kafka connector by
``--packages`` (resolved from Maven Central), ``PYSPARK_PYTHON`` naming the one Python
environment every node has. It produces page views, waits for the first counts, kills one worker
with everything it runs (its process group: the worker JVM, its executor JVM and that executor's
Python workers, as a machine lost) while more page views arrive, and checks the counts.

``processing.guarantee=exactly_once_v2``, read ``read_committed``, is what makes the check exact
(docs/state-and-guarantees.md): every (category, window) count ends at the number of page views
sent for it (nothing lost), and each key's counts strictly increase (nothing counted or written
twice, though the killed executor's tasks ran again on the other one). Then the driver -- the
Python process ``spark-submit`` runs -- gets SIGTERM: the application closes and ``spark-submit``
exits 0, as docs/cluster.md says.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kspark.dev.kafka import LocalKafka, free_port
from kspark.runtime.spark.jars import connector_package
from kspark.serde import Serdes

pytestmark = [pytest.mark.integration, pytest.mark.slow]

pyspark = pytest.importorskip("pyspark")
SPARK_HOME = Path(pyspark.__file__).parent
CATEGORIES = 5
WINDOW_MS = 60_000

APP = """\
# pageview_counts.py: docs/cluster.md's application, with the test's topics and settings.
import signal
import sys
import threading
from datetime import timedelta

from pyspark.sql import SparkSession

from kspark import Consumed, KafkaStreams, Produced, StreamsBuilder, TimeWindows
from kspark.serde import Serdes

from my_functions import by_category   # importable on the executors


def topology():
    b = StreamsBuilder()
    (b.stream(PAGEVIEWS, Consumed.with_(Serdes.String(), Serdes.JSON()))
      .group_by(by_category)
      .windowed_by(TimeWindows(size=timedelta(minutes=1), grace=timedelta(seconds=30)))
      .count()
      .to_stream()
      .to(PER_CATEGORY,
          Produced.with_(Serdes.time_windowed(Serdes.String(), 60_000), Serdes.Long())))
    return b.build()


APPLICATION_ID, BOOTSTRAP, STATE_DIR, PAGEVIEWS, PER_CATEGORY = sys.argv[1:6]
config = {
    "application.id": APPLICATION_ID,
    "bootstrap.servers": BOOTSTRAP,
    "state.dir": STATE_DIR,
    "commit.interval.ms": 1000,
    "default.key.serde": "string",   # the repartitioned category keys
    "processing.guarantee": "exactly_once_v2",
}

if __name__ == "__main__":
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    spark = SparkSession.builder.getOrCreate()     # the session spark-submit made
    app = KafkaStreams(topology(), config, spark=spark)
    # Spark gone from under the application (spark-submit's JVM stopped): stop waiting.
    app.set_state_listener(lambda new, old: new is KafkaStreams.State.ERROR and stop.set())
    app.start()
    print("STARTED", flush=True)
    stop.wait()
    app.close()
    print("CLOSED", flush=True)
"""

FUNCTIONS = """\
def by_category(key, view):
    return view["category"]
"""


# Maven Central alone (docs/cluster.md): Spark's own resolver chain also asks the local Maven
# repository, and fails the whole download when that holds an artifact's pom without its jar (as
# ~/.m2 does after Maven resolved a build that needed the pom only).
IVY_SETTINGS = """\
<ivysettings>
  <settings defaultResolver="central"/>
  <resolvers>
    <ibiblio name="central" m2compatible="true" root="https://repo1.maven.org/maven2/"/>
  </resolvers>
</ivysettings>
"""


def _alive_workers(webui: int) -> int | None:
    """The master's count of ALIVE workers, or None while its web UI does not answer with JSON
    (not listening yet, or an empty body while it starts: CI saw a JSONDecodeError there)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{webui}/json", timeout=5) as response:
            state = json.load(response)
    except (OSError, ValueError):
        return None
    return sum(1 for worker in state.get("workers", []) if worker.get("state") == "ALIVE")


def _busy(ui: int, executors: set[str]) -> bool:
    """Whether one of ``executors`` runs a task now, by the driver's REST API on port ``ui``."""
    try:
        base = f"http://127.0.0.1:{ui}/api/v1/applications"
        with urllib.request.urlopen(base, timeout=5) as response:
            (app,) = json.load(response)
        with urllib.request.urlopen(f"{base}/{app['id']}/executors", timeout=5) as response:
            return any(e["id"] in executors and e["activeTasks"] > 0 for e in json.load(response))
    except (OSError, ValueError):
        return False


def _tail(path: Path, chars: int = 4000) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return f"--- {path.name} ---\n{text[-chars:]}"


class StandaloneCluster:
    """A standalone master and workers on 127.0.0.1, each in a process group of its own."""

    def __init__(self, root: Path, workers: int = 2) -> None:
        self.root = root
        self.port = free_port()
        self.webui = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.workers = [f"worker-{i}" for i in range(workers)]

    def env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1", **extra}

    def _launch(self, name: str, args: list[str], env: dict[str, str]) -> None:
        with open(self.root / f"{name}.log", "wb") as log:
            self.procs[name] = subprocess.Popen(
                [str(SPARK_HOME / "bin" / "spark-class"), *args],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: killed with its children
            )

    def start(self, timeout: float = 90.0) -> None:
        self._launch(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                *("--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.webui)),
            ],
            self.env(SPARK_LOCAL_DIRS=str(self.root / "master-local")),
        )
        for name in self.workers:
            work = self.root / name
            self._launch(
                name,
                [
                    "org.apache.spark.deploy.worker.Worker",
                    self.url,
                    *("--cores", "1", "--memory", "1g", "--host", "127.0.0.1"),
                    *("--webui-port", str(free_port()), "--work-dir", str(work / "work")),
                ],
                self.env(SPARK_WORKER_DIR=str(work / "work"), SPARK_LOCAL_DIRS=str(work / "local")),
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                assert proc.poll() is None, f"{name} exited\n" + _tail(self.root / f"{name}.log")
            if _alive_workers(self.webui) == len(self.workers):
                return
            time.sleep(0.5)
        raise AssertionError("the workers did not register\n" + self.logs())

    def executor_pids(self, worker: str) -> list[int]:
        """The executor JVMs a worker started (CoarseGrainedExecutorBackend in its process group)."""
        group = self.procs[worker].pid  # a session leader: its pid is its group's id
        pids = []
        for proc in Path("/proc").iterdir():
            with contextlib.suppress(OSError, ValueError, IndexError):
                if (
                    proc.name.isdigit()
                    and os.getpgid(int(proc.name)) == group
                    and b"CoarseGrainedExecutorBackend" in (proc / "cmdline").read_bytes()
                ):
                    pids.append(int(proc.name))
        return pids

    def executor_ids(self, worker: str) -> set[str]:
        """Spark's ids of the executors a worker ran (its work directory has one per executor)."""
        return {p.name for p in (self.root / worker / "work").glob("app-*/*") if p.is_dir()}

    def kill(self, name: str) -> None:
        """SIGKILL a daemon and all it started: a worker's executor JVM and Python workers with it."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.procs[name].pid, signal.SIGKILL)
        self.procs[name].wait(30)

    def logs(self) -> str:
        parts = [_tail(self.root / f"{name}.log") for name in self.procs]
        parts += [_tail(p) for p in sorted(self.root.glob("worker-*/work/app-*/*/stderr"))]
        return "\n".join(parts)

    def close(self) -> None:
        for name in reversed(list(self.procs)):
            self.kill(name)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[StandaloneCluster]:
    root = tmp_path / "cluster"
    root.mkdir()
    standalone = StandaloneCluster(root)
    try:
        standalone.start()
        yield standalone
    finally:
        standalone.close()


class PageViews(threading.Thread):
    """Produces page view i: key ``user-<i>``, value ``{"category": "cat-<i % 5>", "i": i}``.

    Timestamps are the test's, not the clock's: the first ``first`` views fall in window
    ``start``, the later ones in the next window, all within 30 s after it begins -- inside the
    first window's 30 s grace, so no view is late, whatever order the repartitioned categories
    reach the count in, and every count is known.
    """

    def __init__(self, kafka: LocalKafka, topic: str, start: int, first: int) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "enable.idempotence": True})
        self.topic, self.start_ms, self.first = topic, start, first
        self.sent: list[tuple[str, int]] = []  # (category, window start)
        self.stop = threading.Event()
        self.rate = 200  # views a second while running as a thread

    def produce(self, count: int) -> None:
        for _ in range(count):
            i = len(self.sent)
            if i < self.first:
                window, ts = self.start_ms, self.start_ms + i * 50_000 // self.first
            else:
                window = self.start_ms + WINDOW_MS
                ts = window + min(i - self.first, 25_000)
            category = f"cat-{i % CATEGORIES}"
            value = json.dumps({"category": category, "i": i}).encode()
            self.producer.produce(self.topic, value, f"user-{i}".encode(), timestamp=ts)
            self.sent.append((category, window))
        self.producer.poll(0)

    def run(self) -> None:
        while not self.stop.wait(0.05):
            self.produce(self.rate // 20)
        assert self.producer.flush(30) == 0

    def expected(self) -> dict[tuple[str, int], int]:
        return dict(Counter(self.sent))


def _counts(kafka: LocalKafka, topic: str) -> dict[tuple[str, int], list[int]]:
    """Each (category, window start)'s counts in the output topic, in order, committed only."""
    keys = Serdes.time_windowed(Serdes.String(), WINDOW_MS).deserializer()
    values = Serdes.Long().deserializer()
    out: dict[tuple[str, int], list[int]] = {}
    for r in kafka.consume_all(topic, read_committed=True):
        key, count = keys.deserialize(topic, r.key), values.deserialize(topic, r.value)
        assert key is not None and count is not None, r
        out.setdefault((key.key, key.window.start), []).append(count)
    return out


def _wait_for(
    what: str, condition: Callable[[], bool], submit: subprocess.Popen[bytes], logs: Callable[[], str]
) -> None:
    deadline = time.monotonic() + 180
    while not condition():
        assert submit.poll() is None, f"spark-submit exited ({submit.returncode}) before {what}\n{logs()}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{logs()}"
        time.sleep(1.0)


def _submit(
    kafka: LocalKafka, topic_factory: Any, cluster: StandaloneCluster, tmp_path: Path
) -> tuple[subprocess.Popen[bytes], PageViews, str, int, Callable[[], str]]:
    """docs/cluster.md's application submitted to ``cluster`` with 1,000 page views in its input,
    once its first counts are out: (spark-submit, the views, the output topic, the driver UI's
    port, the logs)."""
    pageviews = topic_factory("pageviews", partitions=2)
    per_category = topic_factory("pageviews-per-category", partitions=2)
    app_dir = tmp_path / "app"
    app_dir.mkdir()
    (app_dir / "pageview_counts.py").write_text(APP)
    (app_dir / "ivysettings.xml").write_text(IVY_SETTINGS)
    with zipfile.ZipFile(app_dir / "my_functions.zip", "w") as zf:
        zf.writestr("my_functions.py", FUNCTIONS)
    now = int(time.time() * 1000)
    views = PageViews(kafka, pageviews, start=now - now % WINDOW_MS, first=1_000)
    views.produce(1_000)
    assert views.producer.flush(30) == 0

    submit_log = tmp_path / "spark-submit.log"
    ui = free_port()

    def logs() -> str:
        return _tail(submit_log, 8000) + "\n" + cluster.logs()

    command = [
        str(SPARK_HOME / "bin" / "spark-submit"),
        *("--master", cluster.url),
        *("--packages", connector_package(pyspark.__version__)),
        *("--conf", f"spark.ui.port={ui}"),
        *("--conf", f"spark.jars.ivySettings={app_dir / 'ivysettings.xml'}"),
        *("--py-files", "my_functions.zip"),
        "pageview_counts.py",
        *(f"standalone-{os.getpid()}-{pageviews}", kafka.bootstrap_servers, str(tmp_path / "state")),
        *(pageviews, per_category),
    ]
    # One Python environment on every node (docs/cluster.md): the driver's and the executors'.
    env = cluster.env(PYSPARK_PYTHON=sys.executable)
    env.pop("PYTHONPATH", None)
    with open(submit_log, "wb") as log:
        submit = subprocess.Popen(
            command, cwd=app_dir, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        _wait_for("the first counts", lambda: bool(_counts(kafka, per_category)), submit, logs)
        assert submit.poll() is None, logs()
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(submit.pid, signal.SIGKILL)
        submit.wait(30)
        raise
    return submit, views, per_category, ui, logs


def _driver(submit: subprocess.Popen[bytes]) -> int:
    """The Python driver: the process spark-submit's JVM (client mode) runs the application in."""
    (pid,) = [
        int(p)
        for p in subprocess.run(
            ["pgrep", "-P", str(submit.pid), "-f", "pageview_counts.py"], capture_output=True, text=True
        ).stdout.split()
    ]
    return pid


def test_spark_submit_to_a_standalone_cluster_survives_a_lost_worker(
    kafka: LocalKafka, topic_factory: Any, cluster: StandaloneCluster, tmp_path: Path
) -> None:
    submit, views, per_category, ui, logs = _submit(kafka, topic_factory, cluster, tmp_path)
    submit_log = tmp_path / "spark-submit.log"
    try:
        executors = {w: cluster.executor_pids(w) for w in cluster.workers}
        assert all(executors.values()), f"an executor on each worker: {executors}\n{logs()}"

        views.start()  # more views arrive while a worker is lost
        time.sleep(3)
        # In the middle of a task: the driver's UI says when worker-0's executor runs one.
        _wait_for("a task on worker-0", lambda: _busy(ui, cluster.executor_ids("worker-0")), submit, logs)
        cluster.kill("worker-0")
        killed = executors["worker-0"]
        _wait_for("the master to drop worker-0", lambda: _alive_workers(cluster.webui) == 1, submit, logs)
        time.sleep(5)
        views.stop.set()
        views.join(60)
        assert not any(Path(f"/proc/{pid}").exists() for pid in killed), "the executor outlived the kill"
        expected = views.expected()
        _wait_for(
            "every count to reach its number of views",
            lambda: {k: v[-1] for k, v in _counts(kafka, per_category).items()} == expected,
            submit,
            logs,
        )
        assert submit.poll() is None, "the application ended by itself\n" + logs()
        counts = _counts(kafka, per_category)
        assert len(expected) == 2 * CATEGORIES and sum(expected.values()) == len(views.sent) > 1_000
        for key, sequence in counts.items():
            assert sequence == sorted(set(sequence)), f"{key}: counted or written twice: {sequence}"

        # The driver in client mode is the Python process spark-submit runs: it closes the
        # application on SIGTERM, and spark-submit then exits 0.
        os.kill(_driver(submit), signal.SIGTERM)
        assert submit.wait(120) == 0, logs()
        assert "CLOSED" in submit_log.read_text(errors="replace"), logs()
    finally:
        views.stop.set()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(submit.pid, signal.SIGKILL)
        submit.wait(30)
    print(f"{len(views.sent)} views, counts {expected}")


def test_the_application_runs_as_docs_cluster_md_shows_it() -> None:
    """The submitted application's main block is docs/cluster.md's, line for line (but for the
    test's markers in its output), and so are its imports (but ``sys``, for the test's settings)
    and its topology's steps."""
    doc = (Path(__file__).resolve().parents[3] / "docs" / "cluster.md").read_text()
    main = APP[APP.index('if __name__ == "__main__":') :]
    lines = [line for line in main.splitlines() if line.strip() and "print(" not in line]
    imports = [line for line in APP.splitlines() if line.startswith(("from ", "import "))]
    lines += [line for line in imports if line != "import sys"]
    lines += [line for line in APP.splitlines() if line.lstrip().startswith((".group_by", ".windowed_by"))]
    missing = [line for line in lines if line not in doc.splitlines()]
    assert not missing, f"docs/cluster.md lacks {missing}"
