"""Soak: W2 and W4 on kspark side by side for an hour at half their maximum rate, the broker
restarted twice; memory and lag over time (issue 21).

    python -m bench.soak                       # 60 minutes, restarts at minutes 20 and 40
    python -m bench.soak --minutes 6 --restart-at 2,4 --warmup 1   # a short rehearsal

Starts one :class:`kspark.dev.LocalKafka`, pre-loads W4's 10,000-row users
table, launches two kspark applications (``bench.systems.kspark_app``: W2
count by key and W4 stream-table join, at-least-once, kspark's defaults,
``local[2]`` each) and produces their inputs at a fixed rate from a thread
of this process (idempotent producer: a broker restart neither loses nor
repeats an input). The defaults are half of each workload's maximum
rate beside the other (``MAX_RATE``): W2 105,319 rec/s (its 1M run alone
in docs/benchmarks.md; beside W4 it kept up at half of it), W4 16,000 (what
it answered beside W2; alone it did 43,243). Input timestamps are the
workloads' own (2023), so the input topics keep their records forever
(``retention.ms=-1``): a time-based retention would delete them unread.

Every ``--sample`` seconds it records, per application: its input lag
(the sum of ``records-lag`` over its queries from ``KafkaStreams.metrics()``,
asked over the harness protocol's ``metrics`` line), the records produced
and not yet answered in its output (W2: produced minus the sum of the last
count per key; W4: produced minus distinct ids seen) and the resident
memory of its driver (Python), JVM and Spark's Python workers; and the
broker's. It restarts the broker (SIGTERM, ``--down`` seconds down, started
again with its data) at each ``--restart-at`` minute.

The applications' JVMs and the broker's run with a fixed, pre-touched heap
(``jvm_options``, :data:`BROKER_JVM`): their resident memory then shows
growth outside the heap (a broker started again grows its heap anew
otherwise: 490 -> 683 MB over soak-60m-158ea45's restarts), and every
``--live-every`` minutes a forced full collection (``jcmd GC.run``) shows
the applications' heaps' live data, growth inside them.

At the end the producer stops, each application must answer every input
(W2: every key's last count equals its number of inputs; W4: every id
joined with the right tier; ``bench.workloads.Checker``), and memory is
judged after ``--warmup`` minutes: a series is flat when its median over the
last tenth of the run is within 10% of its median over the first tenth after
the warm-up. Writes ``soak-<minutes>m-<commit>.json`` / ``.txt`` to
bench/results; ``python -m bench.plot soak OUT.png SOAK.json`` draws it.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from confluent_kafka import KafkaException, Producer

from bench.kafka_output import OutputWatcher
from bench.proctree import tree
from bench.run import AT_LEAST_ONCE, REPO, SYSTEMS, export_kspark
from bench.workloads import KEYS, Checker, _event, _key_indices, event_value, users
from kspark.dev.kafka import LocalKafka

__all__ = ["main"]

MAX_RATE = {"W2": 105_319, "W4": 16_000}
"""W2: records/s kspark reached on 1M pre-loaded records alone (docs/benchmarks.md, all-1m-e288bc7).
W4: what it answered beside W2 at 52,660 rec/s in a 3-minute rehearsal (soak-3m-5bd01d3): at half
its rate alone (21,622) its lag grew all along, so half of its rate alone is not half of its
maximum here."""

LINES: list[str] = []


def say(line: str) -> None:
    LINES.append(line)
    print(line, flush=True)


def event_bytes(i: int) -> tuple[bytes, bytes, int]:
    """Key, value and timestamp of ``bench.workloads`` event ``i``, formatted without ``json``
    (the producer offers ~75,000 records/s from one thread on a 2-core machine)."""
    key = (i * 7919) % KEYS
    amount = (i * 31 + i // 100) % 100
    late = ((i * 2654435761) >> 7) % 20_000 if i % 10 == 3 else 0
    ts = 1_700_000_000_000 + i * 5 - late
    value = b'{"id":%d,"user":"k%05d","amount":%d,"ts":%d}' % (i, key, amount, ts)
    return b"k%05d" % key, value, ts


class Feed(threading.Thread):
    """Produces W2's and W4's inputs at fixed rates until stopped; counts what it produced."""

    def __init__(self, bootstrap: str, topics: dict[str, str], rates: dict[str, float]) -> None:
        super().__init__(name="soak-feed", daemon=True)
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "linger.ms": 20,
                "batch.size": 1_000_000,
                "compression.type": "lz4",
                "queue.buffering.max.messages": 5_000_000,
                "queue.buffering.max.kbytes": 2_000_000,
                "message.timeout.ms": 900_000,  # a broker restart must not expire an input
                "delivery.report.only.error": True,
            }
        )
        self.topics, self.rates = topics, rates
        self.produced = dict.fromkeys(topics, 0)
        self.failed = 0
        self.stopping = threading.Event()

    def _failed(self, err: Any, _msg: Any) -> None:
        if err is not None:
            self.failed += 1

    def run(self) -> None:
        start = time.monotonic()
        while not self.stopping.is_set():
            elapsed = time.monotonic() - start
            for w, topic in self.topics.items():
                due = int(elapsed * self.rates[w])
                i = self.produced[w]
                while i < due:
                    key, value, ts = event_bytes(i)
                    try:
                        self.producer.produce(topic, value, key, timestamp=ts, on_delivery=self._failed)
                    except BufferError:  # the broker is down: the queue is full, wait for it
                        self.producer.poll(0.1)
                        break
                    i += 1
                    self.produced[w] = i  # per record: the sampler reads it while this loop runs
            self.producer.poll(0)
            time.sleep(0.02)

    def stop(self) -> None:
        self.stopping.set()
        self.join(30)
        left = self.producer.flush(600)
        if left:
            raise RuntimeError(f"{left} input records still unsent after 600 s")


class W2Output:
    """The last count per key of W2's output."""

    def __init__(self) -> None:
        self.last: dict[bytes, int] = {}
        self.records = 0

    def add(self, key: bytes | None, value: bytes | None) -> None:
        assert key is not None and value is not None
        self.last[key] = int.from_bytes(value, "big", signed=True)
        self.records += 1

    def answered(self) -> int:
        return sum(self.last.values())

    def verdict(self, n: int) -> str | None:
        want = np.bincount(_key_indices(np.arange(n, dtype=np.int64)), minlength=KEYS)
        wrong = [k for k in range(KEYS) if self.last.get(b"k%05d" % k, 0) != int(want[k])]
        if wrong:
            k = wrong[0]
            return f"{len(wrong)} keys wrong, e.g. k{k:05d}: {self.last.get(b'k%05d' % k)} != {want[k]}"
        return None


class App:
    """One kspark application (bench.systems.kspark_app) and its output's checker."""

    def __init__(
        self, kafka: LocalKafka, workload: str, topics: dict[str, str], args: argparse.Namespace
    ) -> None:
        self.workload = workload
        rid = uuid.uuid4().hex[:6]
        self.state_dir = tempfile.mkdtemp(prefix=f"soak-{workload.lower()}-")
        self.logs = Path(args.logs) / f"soak-{workload.lower()}-{rid}"
        self.logs.mkdir(parents=True, exist_ok=True)
        spec = {
            "workload": workload,
            "bootstrap": kafka.bootstrap_servers,
            "input": topics[workload],
            "output": topics[f"{workload}-out"],
            "table": topics["users"] if workload == "W4" else None,
            "app_id": f"soak-{workload.lower()}-{rid}",
            "state_dir": self.state_dir,
            "commit_ms": args.commit_ms,
            "guarantee": AT_LEAST_ONCE,
            "partitions": args.partitions,
            "extra": {
                # Spark's default: bench.systems keeps every progress report to find a run's first
                # batch, which an hour of batches turns into a growing heap (soak-60m-a730749).
                "spark.sql.streaming.numRecentProgressUpdates": "100",
                "spark.driver.extraJavaOptions": jvm_options(),
            },
        }
        stderr = open(self.logs / "stderr.log", "w")  # noqa: SIM115 (the process's own, for its life)
        self.proc = subprocess.Popen(
            SYSTEMS["kspark"].command(spec, args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([args.kspark_src, str(REPO)])},
            cwd=self.logs,
            start_new_session=True,
        )
        self.w2 = W2Output()
        self.w4 = Checker("W4", 0)
        sink: Any = self.w2 if workload == "W2" else self.w4
        self.watcher = OutputWatcher(kafka.bootstrap_servers, spec["output"], args.partitions, sink)
        self.metrics: dict[str, Any] = {}
        self._got = threading.Event()
        self.ready = threading.Event()
        threading.Thread(target=self._read, name=f"soak-{workload}-stdout", daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with open(self.logs / "stdout.log", "w") as out:
            for line in self.proc.stdout:
                out.write(line)
                if line.strip() == "READY":
                    self.ready.set()
                if line.startswith("METRICS {"):
                    self.metrics = json.loads(line[8:])
                    self._got.set()

    def ask_metrics(self) -> dict[str, Any]:
        """The application's lag and state, or {} when it does not answer within 10 s."""
        self._got.clear()
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write("metrics\n")
            self.proc.stdin.flush()
        except OSError:
            return {}
        return dict(self.metrics) if self._got.wait(10) else {}

    def unanswered(self, produced: int) -> int:
        """Inputs produced whose answer is not yet in the output read so far."""
        if self.workload == "W2":
            return produced - self.w2.answered()
        return produced - self.w4.distinct

    def drain(self, produced: Callable[[], int]) -> bool:
        """Read the output so far; False when the broker could not say where it ends (it has
        just restarted and the reader's metadata is stale: the next sample reads on).

        The output's ends are taken before the inputs produced are counted: every output up to
        those ends answers an input produced before, so the checker expects it (counted the other
        way round, an output of an input produced in between was "unexpected" and its id left
        "missing": 18,665 of W4's in soak-60m-a730749)."""
        try:
            ends = self.watcher.ends()
            if self.workload == "W4" and produced() > self.w4.n:
                self.w4.resize(produced())
            self.watcher.drain(ends)
        except KafkaException as e:
            print(f"  {self.workload}'s output reader failed ({e}); it starts over", flush=True)
            self.watcher.reconnect()
            return False
        return True

    def memory(self) -> dict[str, float]:
        """RSS in MB of the driver, the JVM and the Python workers (summed, and their count)."""
        procs = tree([self.proc.pid])
        driver = procs.get(self.proc.pid)
        jvm = sum(rss for comm, rss, _ in procs.values() if comm == "java")
        # Python workers only: a child the JVM forks to run a command is named after the forking
        # thread and, until it execs, shows the whole JVM's RSS (a 1.2 GB "worker" for a moment);
        # its command line is still the JVM's, which names pyspark's jars, so only the program
        # (argv[0]) tells it from a worker.
        workers = [
            rss
            for pid, (comm, rss, _) in procs.items()
            if pid != self.proc.pid and comm != "java" and b"python" in _program(pid)
        ]
        return {
            "driver_mb": round((driver[1] if driver else 0) / 2**20, 1),
            "jvm_mb": round(jvm / 2**20, 1),
            "workers_mb": round(sum(workers) / 2**20, 1),
            "workers": len(workers),
        }

    def live_heap(self) -> float | None:
        """The JVM's heap in use right after a full collection (``jcmd GC.run``: the parallel
        collector's ``System.gc()`` is one), in MB: its live data. Asked every ``--live-every``
        minutes; a collection pauses the application for a few hundred ms."""
        pids = [pid for pid, (comm, _, _) in tree([self.proc.pid]).items() if comm == "java"]
        if not pids:
            return None
        try:
            subprocess.run(["jcmd", str(pids[0]), "GC.run"], capture_output=True, timeout=120, check=True)
        except (OSError, subprocess.SubprocessError):
            return None
        return self.heap().get("heap_used_mb")

    def heap(self) -> dict[str, float]:
        """The JVM's heap from ``jstat -gc`` (MB): used in all and in the old generation, and
        committed. Taken once a minute, for the reading of ``jvm_mb``: its resident memory grows
        with the committed heap up to ``-Xmx`` and says nothing alone about a leak."""
        pids = [pid for pid, (comm, _, _) in tree([self.proc.pid]).items() if comm == "java"]
        if not pids:
            return {}
        try:
            out = subprocess.run(
                ["jstat", "-gc", str(pids[0])], capture_output=True, text=True, timeout=30
            ).stdout.split()
        except (OSError, subprocess.TimeoutExpired):
            return {}
        half = len(out) // 2
        gc = dict(zip(out[:half], out[half:], strict=True))
        try:
            kb = {k: float(gc[k]) for k in ("S0U", "S1U", "EU", "OU", "S0C", "S1C", "EC", "OC")}
        except (KeyError, ValueError):
            return {}
        return {
            "heap_used_mb": round((kb["S0U"] + kb["S1U"] + kb["EU"] + kb["OU"]) / 1024, 1),
            "heap_old_mb": round(kb["OU"] / 1024, 1),
            "heap_committed_mb": round((kb["S0C"] + kb["S1C"] + kb["EC"] + kb["OC"]) / 1024, 1),
        }

    def verdict(self, produced: int) -> str | None:
        if self.workload == "W2":
            return self.w2.verdict(produced)
        self.w4.resize(max(produced, self.w4.n))
        return self.w4.verdict()

    def stop(self) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write("stop\n")
            self.proc.stdin.flush()
            self.proc.wait(180)
        except (OSError, subprocess.TimeoutExpired):
            os.killpg(self.proc.pid, 9)
            self.proc.wait(30)
        self.watcher.close()
        shutil.rmtree(self.state_dir, ignore_errors=True)


BROKER_JVM = ("-Xms1g", "-XX:+AlwaysPreTouch")
"""The broker's heap fixed at its ``-Xmx`` (1 GB) and touched at start, as the applications'."""


def jvm_options() -> str:
    """kspark's own driver JVM options plus a fixed, pre-touched heap (``-Xms`` = ``-Xmx``, Spark's
    default 1 GB). A JVM's resident memory otherwise grows until its heap has filled once (the
    parallel collector collects its old generation only when full: soak-60m-a730749's W2 JVM grew
    for 48 minutes, to its heap plus ~300 MB), which hides whether anything else grows. Pinned,
    its resident memory shows growth outside the heap, and :meth:`App.live_heap` growth inside."""
    from kspark.runtime.spark.session import spark_settings

    base = spark_settings({"spark.master": "local[2]"})["spark.driver.extraJavaOptions"]
    return f"{base} -Xms1g -XX:+AlwaysPreTouch"


def _program(pid: int) -> bytes:
    """The file name of the program ``pid`` runs (its argv[0], without the directory)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv0 = fh.read().split(b"\0", 1)[0]
    except OSError:
        return b""
    return argv0.rsplit(b"/", 1)[-1]


def flatness(samples: list[dict[str, Any]], key: str, warmup_s: float, end_s: float) -> dict[str, Any]:
    """Median of ``key`` over the first and the last tenth of the samples after the warm-up and
    before the input stopped (then the applications idle and Spark lets workers go)."""
    after = [s[key] for s in samples if warmup_s <= s["t"] < end_s and s.get(key) is not None]
    if len(after) < 10:
        return {"first": None, "last": None, "change": None, "max": None}
    tenth = max(1, len(after) // 10)
    first, last = statistics.median(after[:tenth]), statistics.median(after[-tenth:])
    change = (last - first) / first if first else None
    return {"first": first, "last": last, "max": max(after), "change": change}


def run(args: argparse.Namespace) -> dict[str, Any]:
    rates = {"W2": args.w2_rate, "W4": args.w4_rate}
    duration = args.minutes * 60
    restarts = [float(m) * 60 for m in args.restart_at.split(",") if m.strip()]
    for i in (0, 3, 12_345, 99_999_991):  # the fast formatter writes what the workloads define
        e = _event(i)
        if event_bytes(i) != (e.key.encode(), event_value(e), e.ts):
            raise AssertionError(f"bench.soak.event_bytes({i}) differs from bench.workloads")
    samples: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    with LocalKafka(heap="1g", log_level="WARN", jvm_options=BROKER_JVM) as kafka:
        keep = {"retention.ms": "-1"}
        topics = {"W2": "soak-w2-in", "W4": "soak-w4-in", "users": "soak-users"}
        for name in topics.values():
            kafka.create_topic(name, args.partitions, keep)
        for w in ("W2", "W4"):
            topics[f"{w}-out"] = f"soak-{w.lower()}-out"
            kafka.create_topic(
                topics[f"{w}-out"], args.partitions, {"message.timestamp.type": "LogAppendTime"}
            )
        table = Producer({"bootstrap.servers": kafka.bootstrap_servers})
        for k, v, ts in users():
            table.produce(topics["users"], v, k.encode(), timestamp=ts)
        table.flush(60)
        apps = {w: App(kafka, w, topics, args) for w in ("W2", "W4")}
        feed = Feed(kafka.bootstrap_servers, {w: topics[w] for w in ("W2", "W4")}, rates)
        for w, app in apps.items():  # the load starts once both applications run
            if not app.ready.wait(300):
                raise RuntimeError(f"{w} did not start within 300 s (logs: {app.logs})")
        began = time.monotonic()
        feed.start()
        say(
            f"soak: W2 {rates['W2']:,.0f} rec/s, W4 {rates['W4']:,.0f} rec/s for {args.minutes} min; "
            f"broker restarts at {[round(r / 60, 1) for r in restarts]} min"
        )

        def restart(at: float) -> None:
            t0 = time.monotonic() - began
            kafka.restart(down_seconds=args.down)
            events.append(
                {"t": round(t0, 1), "up_at": round(time.monotonic() - began, 1), "what": "broker restart"}
            )
            say(
                f"  broker restarted at {t0 / 60:.1f} min, "
                f"serving again at {(time.monotonic() - began) / 60:.1f} min"
            )

        pending = list(restarts)
        restarter: threading.Thread | None = None
        stopped_at, next_line, next_live = 0.0, 0.0, args.live_every * 60
        while True:
            t = time.monotonic() - began
            if pending and t >= pending[0]:
                restarter = threading.Thread(target=restart, args=(pending.pop(0),), daemon=True)
                restarter.start()
            if t >= duration and not stopped_at:
                feed.stop()
                stopped_at = t
                say(
                    f"  input stopped at {t / 60:.1f} min: "
                    f"W2 {feed.produced['W2']:,}, W4 {feed.produced['W4']:,} records"
                )
            sample: dict[str, Any] = {"t": round(t, 1)}
            for w, app in apps.items():
                if app.proc.poll() is not None:
                    raise RuntimeError(f"{w} exited with {app.proc.returncode} (logs: {app.logs})")
                restarting = restarter is not None and restarter.is_alive()
                m = {} if restarting else app.ask_metrics()
                read = not restarting and app.drain(functools.partial(feed.produced.__getitem__, w))
                sample[w] = {
                    "produced": feed.produced[w],
                    "lag": m.get("lag"),
                    "state": m.get("state"),
                    "unanswered": app.unanswered(feed.produced[w]) if read else None,
                    **app.memory(),
                }
            pid = kafka.pid
            broker = tree([pid]).get(pid) if pid else None
            sample["broker_mb"] = round(broker[1] / 2**20, 1) if broker else None
            sample["harness_mb"] = round(tree([os.getpid()])[os.getpid()][1] / 2**20, 1)
            if t >= next_line:
                next_line += 60
                for w, app in apps.items():
                    sample[w].update(app.heap())
                say(
                    f"  {t / 60:5.1f} min "
                    + " | ".join(
                        f"{w} lag {sample[w]['lag']} unanswered {sample[w]['unanswered']} "
                        f"driver {sample[w]['driver_mb']:.0f} jvm {sample[w]['jvm_mb']:.0f} "
                        f"workers {sample[w]['workers_mb']:.0f}/{sample[w]['workers']} MB "
                        f"heap {sample[w].get('heap_used_mb')}/{sample[w].get('heap_committed_mb')} MB"
                        for w in apps
                    )
                    + f" | broker {sample['broker_mb']} MB"
                )
            if t >= next_live and not stopped_at:
                next_live += args.live_every * 60
                for w, app in apps.items():
                    sample[w]["live_heap_mb"] = app.live_heap()
                say(
                    f"  {t / 60:5.1f} min live heap after a full GC: "
                    + ", ".join(f"{w} {sample[w]['live_heap_mb']} MB" for w in apps)
                )
            samples.append(sample)
            if stopped_at and all(sample[w]["unanswered"] == 0 for w in apps):
                break
            if stopped_at and t > stopped_at + args.drain_timeout:
                say(f"  outputs still incomplete {args.drain_timeout:.0f} s after the input stopped")
                break
            time.sleep(max(0.0, args.sample - (time.monotonic() - began - t)))
        for w, app in apps.items():
            app.drain(functools.partial(feed.produced.__getitem__, w))
        verdicts = {w: app.verdict(feed.produced[w]) for w, app in apps.items()}
        caught_up_s = round(time.monotonic() - began - stopped_at, 1)
        for app in apps.values():
            app.stop()
    warm = args.warmup * 60
    series: dict[str, Any] = {}
    heap: dict[str, Any] = {}
    for w in apps:
        flat_samples = [{"t": s["t"], **s[w]} for s in samples]
        series[w] = {
            k: flatness(flat_samples, k, warm, stopped_at) for k in ("driver_mb", "jvm_mb", "workers_mb")
        }
        heap[w] = {
            k: flatness(flat_samples, k, warm, stopped_at)
            for k in ("heap_used_mb", "heap_old_mb", "heap_committed_mb")
        }
        live = [s[w]["live_heap_mb"] for s in samples if s[w].get("live_heap_mb") is not None]
        heap[w]["live_heap_mb"] = {"series": live}
    series["broker"] = {"broker_mb": flatness(samples, "broker_mb", warm, stopped_at)}
    return {
        "rates": rates,
        "minutes": args.minutes,
        "produced": feed.produced,
        "produce_failures": feed.failed,
        "verdicts": verdicts,
        "caught_up_seconds_after_input_stopped": caught_up_s,
        "outputs": {"W2": apps["W2"].w2.records, "W4": apps["W4"].w4.records},
        "w4_duplicates": apps["W4"].w4.duplicates,
        "events": events,
        "memory": series,
        "jvm_heap": heap,
        "samples": samples,
    }


def _report(result: dict[str, Any], args: argparse.Namespace) -> bool:
    say("")
    say(f"kspark={args.kspark_commit} UTC {time.strftime('%Y-%m-%d %H:%M', time.gmtime())}")
    ok: bool = result["produce_failures"] == 0
    for w in ("W2", "W4"):
        v = result["verdicts"][w]
        ok = ok and v is None
        say(
            f"{w}: {result['produced'][w]:,} inputs, {result['outputs'][w]:,} outputs: "
            f"{v or 'complete and exact'}"
        )
    say(f"outputs complete {result['caught_up_seconds_after_input_stopped']} s after the input stopped")
    say("memory after the warm-up (MB, median of the first and last tenth; max):")
    for who, per in result["memory"].items():
        for key, f in per.items():
            if f["first"] is None:
                say(f"  {who} {key}: too few samples")
                continue
            flat = abs(f["change"] or 0) <= 0.10
            ok = ok and flat
            say(
                f"  {who} {key}: {f['first']:.0f} -> {f['last']:.0f} ({f['change']:+.1%}), "
                f"max {f['max']:.0f}: {'flat' if flat else 'NOT flat'}"
            )
    say("JVM heap (jstat -gc, once a minute; for the reading of jvm_mb, not judged):")
    for who, per in result.get("jvm_heap", {}).items():
        for key, f in per.items():
            if key == "live_heap_mb":
                say(f"  {who} live heap after each forced full GC (MB): {f['series']}")
            elif f["first"] is not None:
                say(
                    f"  {who} {key}: {f['first']:.0f} -> {f['last']:.0f} ({f['change']:+.1%}), "
                    f"max {f['max']:.0f}"
                )
    for e in result["events"]:
        after = [s for s in result["samples"] if s["t"] > e["up_at"]]
        back = {}
        for w in ("W2", "W4"):
            before = [s[w]["unanswered"] for s in result["samples"] if s["t"] < e["t"]]
            baseline = [u for u in before if u is not None][-6:]
            level = max(baseline) if baseline else 0
            first = next(
                (
                    s["t"]
                    for s in after
                    if s[w]["unanswered"] is not None and s[w]["unanswered"] <= level * 1.5
                ),
                None,
            )
            back[w] = None if first is None else round(first - e["up_at"], 1)
        say(f"  {e['what']} at {e['t'] / 60:.1f} min: unanswered back to its level before after {back} s")
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--w2-rate", type=float, default=MAX_RATE["W2"] / 2)
    ap.add_argument("--w4-rate", type=float, default=MAX_RATE["W4"] / 2)
    ap.add_argument("--restart-at", default="20,40", help="minutes at which the broker restarts")
    ap.add_argument("--down", type=float, default=10.0, help="seconds the broker stays down")
    ap.add_argument("--warmup", type=float, default=10.0, help="minutes before memory is judged")
    ap.add_argument("--sample", type=float, default=10.0, help="seconds between samples")
    ap.add_argument(
        "--live-every", type=float, default=10.0, help="minutes between the JVMs' live-heap checks (full GCs)"
    )
    ap.add_argument("--drain-timeout", type=float, default=600.0)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--commit-ms", type=int, default=1000)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--kspark-rev", default="HEAD", help="the git revision of kspark/ the applications run")
    ap.add_argument("--logs", default=str(Path(tempfile.gettempdir()) / "kspark-bench-logs"))
    ap.add_argument("--out", default=str(REPO / "bench" / "results"))
    args = ap.parse_args(argv)
    args.kspark_commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", args.kspark_rev],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    args.kspark_src = export_kspark(args.kspark_rev)
    result = run(args)
    ok = _report(result, args)
    stem = Path(args.out) / f"soak-{args.minutes:g}m-{args.kspark_commit}"
    stem.with_suffix(".json").write_text(json.dumps({"args": vars(args), **result}, indent=1))
    stem.with_suffix(".txt").write_text("\n".join(LINES) + "\n")
    say(f"wrote {stem}.json / .txt")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
