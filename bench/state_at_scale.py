"""State at scale (issue 19): a count over N distinct keys, a join against an N-row table, and restore.

    python -m bench.state_at_scale --keys 2000000 [--events M] [--systems kspark,kstreams]

Starts one :class:`kspark.dev.LocalKafka`, pre-loads the topics (2 partitions,
murmur2 as Java partitions, identical bytes for every system) and runs each
system against them, one at a time:

* **S1** count over N distinct keys: N records with keys ``k<index>`` 0..N-1,
  then N/4 more re-visiting keys spread over the whole key space
  (``index * P mod N``, P a prime not dividing N), so the state holds every key
  and those keys end at count 2. ``group_by_key().count()`` to a topic: bench.run's
  W2 topology in both systems. Check: every key's last output is its count.
* **S2** stream-table join against an N-row table: the table topic (key
  ``k<user>``, a ~60-byte JSON value whose ``tier`` is a per-user string) is
  loaded first, then M events keyed by users spread over [0, N); W4's topology
  (``stream.join(table, joiner)``, output ``{"id","amount","tier"}``) in both
  systems. Check: every event's output, exactly (its amount and its user's tier).
* **Restore**, after S2, with its table in the state: (a) kill -9 the whole
  system, delete its local state (kspark: ``<state.dir>/<app>/tasks``, the task
  directories, keeping Spark's checkpoint, which a cluster keeps on shared
  storage; Kafka Streams: ``<state.dir>/<app>``), restart, produce one marker
  event and time restart (process launch) to the marker's output; (b) the same
  keeping the local state (a restart on the same machine).

Time and throughput are measured as in :mod:`bench.run`: from the system's first
input (kspark: the start of its first non-empty micro-batch; Kafka Streams: the
first record fetched, for S2 the table's first record) to the append time of the
last output (output topics use ``LogAppendTime``). Memory: every process of the
system's tree is sampled every second (:mod:`bench.proctree`); each process's
peak RSS is reported with what it is (Spark driver JVM, kspark's Python driver,
Spark's Python workers, Kafka Streams' JVM), plus the peak total and peak PSS.

kspark runs from a copy of the working tree's ``kspark/`` taken when the run
starts (``--kspark-rev worktree``, the default: the persistent stores were
uncommitted when this was written) or ``git archive <rev>`` (bench.run's way).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, cast

import numpy as np
from confluent_kafka import Consumer, Producer, TopicPartition

from bench.kafka_output import READ_COMMITTED, OutputWatcher
from bench.proctree import TICKS, pss_bytes, tree
from bench.run import AT_LEAST_ONCE, REPO, SYSTEMS, export_kspark
from bench.workloads import BASE_MS, Checker
from kspark.dev.kafka import LocalKafka

__all__ = ["S1Checker", "S2Checker", "spread", "tier", "main"]

PRIMES = (1_000_003, 1_000_033, 1_000_037)
"""Strides of the re-visits (S1) and the event users (S2): ``index * P mod N`` is a
permutation of [0, N) for a P that does not divide N."""
MARKER_BASE_TS = BASE_MS + 10**10
"""Restore markers' event time: after every S2 event."""


def stride(n: int) -> int:
    return next(p for p in PRIMES if math.gcd(p, n) == 1)


def spread(i: np.ndarray, n: int) -> Any:
    """The key index of re-visit / event ``i``: a permutation of [0, n) over i in [0, n)."""
    return (i * stride(n)) % n


def tier(u: Any) -> Any:
    """User ``u``'s tier number (its table row names ``t<number>``): differs between near users."""
    return (u * 7919) % 100_003


def _key(i: int) -> bytes:
    return b"k%09d" % i


# ---------------------------------------------------------------- input


def _producer(kafka: LocalKafka) -> Producer:
    # bench.run.preload's settings: big batches, Java's partitioner, offsets in generation order.
    return Producer(
        {
            "bootstrap.servers": kafka.bootstrap_servers,
            "linger.ms": 50,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
            "partitioner": "murmur2_random",
            "enable.idempotence": True,
        }
    )


def _produce_all(producer: Producer, topic: str, records: Any) -> None:
    produce = producer.produce
    for key, value, ts in records:
        while True:
            try:
                produce(topic, value, key, timestamp=ts)
                break
            except BufferError:
                producer.poll(0.05)


def event_value(i: int, n: int) -> bytes:
    u = (i * stride(n)) % n
    return b'{"id":%d,"user":"k%09d","amount":%d,"ts":%d}' % (i, u, i % 100, BASE_MS + i)


def table_value(u: int) -> bytes:
    return b'{"user":"k%09d","tier":"t%06d","pad":"0123456789abcdef"}' % (u, tier(u))


def preload(kafka: LocalKafka, topics: dict[str, str], n: int, m: int, partitions: int) -> dict[str, float]:
    """S1's input, S2's table and events; returns seconds per topic (not benchmark numbers)."""
    p = stride(n)
    seconds = {}
    for name in topics.values():
        kafka.create_topic(name, partitions)
    producer = _producer(kafka)
    one = b"1"

    def s1() -> Any:
        for i in range(n):
            yield _key(i), one, BASE_MS + i
        for j in range(n // 4):
            yield _key((j * p) % n), one, BASE_MS + n + j

    def table() -> Any:
        for u in range(n):
            yield _key(u), table_value(u), BASE_MS - 60_000

    def events() -> Any:
        for i in range(m):
            yield _key((i * p) % n), event_value(i, n), BASE_MS + i

    for what, records in (("s1", s1()), ("table", table()), ("events", events())):
        start = time.monotonic()
        _produce_all(producer, topics[what], records)
        if producer.flush(600):
            raise RuntimeError(f"pre-loading {topics[what]} did not finish")
        seconds[what] = round(time.monotonic() - start, 1)
    return seconds


# ---------------------------------------------------------------- checks


class S1Checker:
    """The last count per key, in numpy arrays (a dict of 20M keys would take GBs)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.want = np.ones(n, dtype=np.int8)
        for lo in range(0, n // 4, 5_000_000):
            self.want[spread(np.arange(lo, min(n // 4, lo + 5_000_000), dtype=np.int64), n)] = 2
        self.got = np.zeros(n, dtype=np.int64)
        self.matched = 0
        self.records = 0
        self.duplicates = 0  # not judged: a count's update may repeat under at-least-once
        self.errors: list[str] = []

    def add(self, key: bytes | None, value: bytes | None) -> None:
        self.records += 1
        try:
            k = int((key or b"")[1:])
            if len(value or b"") != 8:
                raise ValueError("a Long count must be 8 bytes")
            c = int.from_bytes(value or b"", "big", signed=True)
            want = int(self.want[k])
            old = int(self.got[k])
            self.matched += int(c == want) - int(old == want)
            self.got[k] = c
        except (ValueError, IndexError) as e:
            if len(self.errors) < 5:
                self.errors.append(f"bad output record key={key!r} value={value!r}: {e}")

    def complete(self) -> bool:
        return self.matched == self.n and not self.errors

    def verdict(self) -> str | None:
        if self.errors:
            return self.errors[0]
        if self.matched == self.n:
            return None
        absent = np.flatnonzero(self.got == 0)
        wrong = np.flatnonzero((self.got != 0) & (self.got != self.want))
        example = (
            f"; e.g. k{wrong[0]:09d}: got {self.got[wrong[0]]}, want {self.want[wrong[0]]}"
            if len(wrong)
            else ""
        )
        names = [f"k{k:09d}" for k in absent[:3]]
        return f"{len(absent)} keys missing (e.g. {names}), {len(wrong)} wrong{example}"


class S2Checker:
    """Every event's join output, checked as it arrives (a bit per event id kept); ids from ``m`` on
    are restore markers, checked the same way but not counted."""

    def __init__(self, n: int, m: int) -> None:
        self.n, self.m = n, m
        self.seen = np.zeros(m, dtype=np.bool_)
        self.distinct = 0
        self.records = 0
        self.duplicates = 0
        self.markers: dict[int, int] = {}  # marker id -> times seen
        self.wrong = 0
        self.examples: list[str] = []

    def expected(self, i: int) -> dict[str, Any]:
        u = (i * stride(self.n)) % self.n
        return {"id": i, "amount": i % 100, "tier": f"t{tier(u):06d}"}

    def add(self, key: bytes | None, value: bytes | None) -> None:
        self.records += 1
        try:
            out = json.loads(value or b"null")
            i = out["id"]
            if not isinstance(i, int) or i < 0 or out != self.expected(i):
                raise ValueError(f"want {self.expected(i) if isinstance(i, int) and i >= 0 else 'an id'}")
        except (ValueError, TypeError, KeyError) as e:
            self.wrong += 1
            if len(self.examples) < 3:
                self.examples.append(f"key={key!r} value={value!r}: {e}")
            return
        if i >= self.m:
            self.markers[i] = self.markers.get(i, 0) + 1
        elif self.seen[i]:
            self.duplicates += 1
        else:
            self.seen[i] = True
            self.distinct += 1

    def complete(self) -> bool:
        return self.distinct == self.m

    def verdict(self) -> str | None:
        if self.distinct == self.m and not self.wrong:
            return None
        missing = np.flatnonzero(~self.seen)
        return (
            f"{len(missing)} events without output (e.g. ids {missing[:3].tolist()}), {self.wrong} wrong"
            + (f"; e.g. {self.examples[0]}" if self.examples else "")
        )


# ---------------------------------------------------------------- processes and memory


def _describe(pid: int, comm: str) -> str:
    """What a process of a system's tree is, for the memory table."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        cmd = ""
    if "KStreamsBench" in cmd:
        return "Kafka Streams JVM"
    if "org.apache.spark" in cmd or (comm == "java" and "spark" in cmd):
        return "Spark driver JVM"
    if "bench.systems.kspark_app" in cmd:
        return "kspark driver (Python, KafkaStreams)"
    if comm.startswith("python") or "python" in cmd.split(" ", 1)[0]:
        return "Python worker"
    return comm


class Sampler:
    """Samples the process trees under ``roots`` every second: each process's peak RSS, the peak
    total RSS and PSS. ``roots`` may change (a restart) while it runs."""

    def __init__(self) -> None:
        self.roots: list[int] = []
        self.per_pid: dict[int, dict[str, Any]] = {}
        self.peak_total = 0.0
        self.peak_pss = 0.0
        self.cpu_ticks: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def cpu_seconds(self) -> float:
        return sum(self.cpu_ticks.values()) / TICKS

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            self.sample()

    def sample(self) -> None:
        found = tree(list(self.roots))
        total = 0.0
        for pid, (comm, rss, ticks) in found.items():
            mb = rss / 2**20
            total += mb
            self.cpu_ticks[pid] = ticks
            entry = self.per_pid.get(pid)
            if entry is None:
                entry = self.per_pid[pid] = {"pid": pid, "what": _describe(pid, comm), "peak_rss_mb": 0.0}
            entry["peak_rss_mb"] = max(entry["peak_rss_mb"], mb)
        self.peak_total = max(self.peak_total, total)
        if found:
            self.peak_pss = max(self.peak_pss, pss_bytes(list(found)) / 2**20)

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join(5)
        # Every process seen, largest first; tiny helpers (a shell, under 20 MB) folded away.
        procs = sorted(self.per_pid.values(), key=lambda e: -e["peak_rss_mb"])
        return {
            "peak_total_rss_mb": round(self.peak_total),
            "peak_pss_mb": round(self.peak_pss),
            "processes": [
                {**e, "peak_rss_mb": round(e["peak_rss_mb"])} for e in procs if e["peak_rss_mb"] >= 20
            ],
        }


def _kill_tree(procs: list[subprocess.Popen[str]]) -> None:
    """kill -9 every process of the trees (the system's process group, and any child outside it)."""
    pids = list(tree([p.pid for p in procs]))
    for p in procs:
        with contextlib.suppress(OSError):
            os.killpg(p.pid, signal.SIGKILL)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    for p in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.communicate(timeout=30)


def _stop(procs: list[subprocess.Popen[str]], logs: Path) -> dict[str, Any]:
    """Ask the system to stop; its RESULT report (first_input_ms, ...)."""
    for p in procs:
        with contextlib.suppress(OSError):
            if p.poll() is None and p.stdin:
                p.stdin.write("stop\n")
                p.stdin.flush()
    report: dict[str, Any] = {}
    for i, p in enumerate(procs):
        try:
            out, _ = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            _kill_tree([p])
            out = ""
        (logs / f"stdout-{i}-{int(time.time())}.log").write_text(out or "")
        for line in (out or "").splitlines():
            if "RESULT {" in line:
                report.update(json.loads(line[line.index("RESULT {") + 7 :]))
    return report


def _du_mb(path: str) -> float:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, f)).st_size
    return round(total / 2**20, 1)


class Runner:
    """One system's runs: S1, S2 and the restores after S2."""

    def __init__(
        self, kafka: LocalKafka, system: str, args: argparse.Namespace, topics: dict[str, str]
    ) -> None:
        self.kafka, self.system, self.args, self.topics = kafka, system, args, topics
        self.rid = uuid.uuid4().hex[:6]

    def spec(self, workload: str, output: str, state_dir: str) -> dict[str, Any]:
        # S1 is W2's topology in both systems; S2 W4's (Kafka Streams' "S2" marks its start at the table).
        wl = {"S1": "W2", "S2": "S2" if self.system == "kstreams" else "W4"}[workload]
        return {
            "workload": wl,
            "bootstrap": self.kafka.bootstrap_servers,
            "input": self.topics["s1" if workload == "S1" else "events"],
            "output": output,
            "table": self.topics["table"] if workload == "S2" else None,
            "app_id": f"state-{self.system}-{workload.lower()}-{self.rid}",
            "state_dir": state_dir,
            "commit_ms": self.args.commit_ms,
            "guarantee": AT_LEAST_ONCE,
            "partitions": self.args.partitions,
            "extra": dict(kv.split("=", 1) for kv in self.args.kspark_conf)
            if self.system == "kspark"
            else {},
        }

    def launch(self, spec: dict[str, Any], logs: Path, tag: str) -> subprocess.Popen[str]:
        paths = [self.args.kspark_src, str(REPO)]
        cmd = SYSTEMS[self.system].command(spec, self.args)
        return subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(logs / f"stderr-{tag}.log", "w"),
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
            cwd=logs,  # not the repository: see bench.run._launch
            start_new_session=True,
        )

    def run(
        self, workload: str, n: int, m: int
    ) -> tuple[dict[str, Any], list[subprocess.Popen[str]], dict[str, Any]]:
        """Run ``workload`` to a checked output; returns (result, the live processes, spec)."""
        records = n + n // 4 if workload == "S1" else n + m
        output = f"out-{self.system}-{workload.lower()}-{self.rid}"
        self.kafka.create_topic(output, self.args.partitions, {"message.timestamp.type": "LogAppendTime"})
        state_dir = tempfile.mkdtemp(
            prefix=f"state-bench-{self.system}-{workload.lower()}-", dir=self.args.state_root
        )
        spec = self.spec(workload, output, state_dir)
        logs = Path(self.args.logs) / f"{self.system}-{workload.lower()}-{self.rid}"
        logs.mkdir(parents=True, exist_ok=True)
        checker: S1Checker | S2Checker = S1Checker(n) if workload == "S1" else S2Checker(n, m)
        watcher = OutputWatcher(
            self.kafka.bootstrap_servers, output, self.args.partitions, cast(Checker, checker)
        )
        sampler = Sampler().start()
        launched = time.time()
        procs = [self.launch(spec, logs, "run")]
        sampler.roots = [p.pid for p in procs]
        result: dict[str, Any] = {
            "system": self.system,
            "workload": workload,
            "records": records,
            "keys": n,
            "events": m if workload == "S2" else None,
            "logs": str(logs),
        }
        verdict = ""
        deadline = time.monotonic() + self.args.timeout
        last_high, busy_at, busy_cpu = -1, time.monotonic(), 0.0
        while time.monotonic() < deadline:
            time.sleep(1.0)
            if procs[0].poll() is not None:
                verdict = f"process exited with {procs[0].returncode} before finishing (see {logs})"
                break
            high = watcher.high()
            if high == last_high:  # read while the output is quiet (bench.run's way)
                watcher.drain()
                if checker.complete():
                    break
            cpu = sampler.cpu_seconds()
            if high != last_high or cpu > busy_cpu + 0.5:
                busy_at, busy_cpu = time.monotonic(), cpu
            elif time.monotonic() - busy_at > self.args.idle:
                verdict = f"idle for {self.args.idle:.0f} s with the output incomplete"
                break
            last_high = high
        else:
            verdict = f"timed out after {self.args.timeout} s"
        watcher.drain()
        memory = sampler.stop()
        check = checker.verdict()
        result.update(
            ok=not verdict and check is None,
            check=(verdict + (": " if verdict and check else "") + (check or "")) or "ok",
            output_records=checker.records,
            duplicates=checker.duplicates,
            memory=memory,
            state_mb=_du_mb(state_dir),
        )
        watcher.close()
        alive = procs[0].poll() is None
        if workload == "S1" or not alive or not result["ok"]:
            report = _stop(procs, logs) if alive else {}
            shutil.rmtree(state_dir, ignore_errors=True)
            procs = []
        else:
            # S2's processes stay up for the restores: killed -9 there, not stopped.
            report = self._first_input_live(procs[0])
        first = report.get("first_input_ms") or 0
        end_ms = watcher.last_append_ms
        if result["ok"] and first and end_ms:
            result["seconds"] = round((end_ms - first) / 1000, 1)
            result["wall_seconds"] = round(end_ms / 1000 - launched, 1)
            result["rate"] = round(records / result["seconds"]) if result["seconds"] > 0 else None
        result["batches"] = report.get("batches")
        return result, procs, spec

    def _first_input_live(self, proc: subprocess.Popen[str]) -> dict[str, Any]:
        """S2 keeps running for the restores, so its report comes from a ``first`` line on stdin
        (bench.systems.common.wait_for_stop), answered with ``FIRST {json}`` on stdout."""
        got: dict[str, Any] = {}

        def read() -> None:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write("first\n")
            proc.stdin.flush()
            for line in proc.stdout:
                if line.startswith("RESTORE {"):  # Kafka Streams' restore listener
                    got.setdefault("restore_events", []).append(json.loads(line[8:]))
                if line.startswith("FIRST {"):
                    got.update(json.loads(line[6:]))
                    return

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(660)
        return got

    def restore(
        self, procs: list[subprocess.Popen[str]], spec: dict[str, Any], mode: str, marker: int, n: int
    ) -> tuple[dict[str, Any], list[subprocess.Popen[str]]]:
        """kill -9, (``delete``: remove the local state,) restart, one marker event: seconds to its output."""
        logs = Path(self.args.logs) / f"{self.system}-s2-{self.rid}"
        local = (
            os.path.join(spec["state_dir"], spec["app_id"], "tasks")
            if self.system == "kspark"
            else os.path.join(spec["state_dir"], spec["app_id"])
        )
        _kill_tree(procs)
        state_mb = _du_mb(local)
        if mode == "delete":
            shutil.rmtree(local, ignore_errors=True)
        consumer = Consumer(
            {
                "bootstrap.servers": self.kafka.bootstrap_servers,
                "group.id": f"restore-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                **READ_COMMITTED,
            }
        )
        ends = [
            TopicPartition(
                spec["output"], p, consumer.get_watermark_offsets(TopicPartition(spec["output"], p), 10)[1]
            )
            for p in range(self.args.partitions)
        ]
        consumer.assign(ends)
        sampler = Sampler().start()
        launched = time.time()
        new = [self.launch(spec, logs, f"restore-{mode}")]
        sampler.roots = [p.pid for p in new]
        producer = Producer(
            {"bootstrap.servers": self.kafka.bootstrap_servers, "partitioner": "murmur2_random"}
        )
        u = (marker * stride(n)) % n
        producer.produce(
            self.topics["events"], event_value(marker, n), _key(u), timestamp=MARKER_BASE_TS + marker
        )
        producer.flush(30)
        want = S2Checker(n, 0).expected(marker)
        result: dict[str, Any] = {"mode": mode, "local_state_mb_before": state_mb, "marker_id": marker}
        deadline = time.monotonic() + self.args.restore_timeout
        found: int | None = None
        while found is None and time.monotonic() < deadline:
            if new[0].poll() is not None:
                result["error"] = f"process exited with {new[0].returncode} (see {logs})"
                break
            for msg in consumer.consume(num_messages=10_000, timeout=0.5):
                if msg.error() or json.loads(msg.value() or b"null").get("id") != marker:
                    continue
                if json.loads(msg.value() or b"null") != want:
                    result["error"] = f"marker output {msg.value()!r}, want {want}"
                found = msg.timestamp()[1]
                break
        consumer.close()
        if found is not None:
            # kspark: its micro-batches since the restart (Spark's duration breakdown); Kafka Streams:
            # when each store partition's restore began and ended (its restore listener).
            # Kafka Streams processes a task once its own stores are restored: the marker's task can
            # finish before the other, so ask until every started restore has ended.
            live = self._first_input_live(new[0])
            events = live.get("restore_events") or []
            until = time.monotonic() + self.args.restore_timeout
            while _restoring(events) and time.monotonic() < until:
                time.sleep(1.0)
                events = events + (self._first_input_live(new[0]).get("restore_events") or [])
            result["batches"] = live.get("batches")
            result["restore_events"] = events
            starts = [e["ms"] for e in events if e["event"] == "start"]
            ends = [e["ms"] for e in events if e["event"] == "end"]
            if starts and ends:
                result["restore_began_s"] = round(min(starts) / 1000 - launched, 1)
                result["restore_seconds"] = round((max(ends) - min(starts)) / 1000, 1)
                result["restored_records"] = sum(e.get("records", 0) for e in events if e["event"] == "end")
                result["restore_seconds_by_partition"] = {
                    str(e["partition"]): round(
                        (
                            e["ms"]
                            - next(
                                s["ms"]
                                for s in events
                                if s["event"] == "start"
                                and s["partition"] == e["partition"]
                                and s["store"] == e["store"]
                            )
                        )
                        / 1000,
                        1,
                    )
                    for e in events
                    if e["event"] == "end"
                }
                if _restoring(events):
                    result["restore_unfinished"] = sorted(_restoring(events))
        result["memory"] = sampler.stop()
        if found is None:
            result.setdefault("error", f"no marker output within {self.args.restore_timeout} s")
        else:
            result["seconds"] = round(found / 1000 - launched, 1)
        result["local_state_mb_after"] = _du_mb(local)
        return result, new


def run_system(
    kafka: LocalKafka, system: str, args: argparse.Namespace, topics: dict[str, str]
) -> dict[str, Any]:
    runner = Runner(kafka, system, args, topics)
    out: dict[str, Any] = {"system": system, "runs": [], "restore": []}
    for workload in args.workloads:
        result, procs, spec = runner.run(workload, args.keys, args.events)
        say(f"{workload} {system}: {_line(result)}")
        out["runs"].append(result)
        if workload != "S2" or not procs:
            continue
        marker = args.events + (0 if system == "kspark" else 10)
        for mode in ("delete", "keep"):
            r, procs = runner.restore(procs, spec, mode, marker, args.keys)
            marker += 1
            say(
                f"restore ({mode} local state) {system}: {r.get('seconds')} s {r.get('error', '')}; "
                f"peak {r['memory']['peak_total_rss_mb']} MB"
            )
            out["restore"].append(r)
        _stop(procs, Path(args.logs))
        shutil.rmtree(spec["state_dir"], ignore_errors=True)
    return out


# ---------------------------------------------------------------- report

LINES: list[str] = []


def say(line: str) -> None:
    print(line, flush=True)
    LINES.append(line)


def _line(r: dict[str, Any]) -> str:
    mem = r["memory"]
    return (
        f"{r.get('rate') or '-'} rec/s, {r.get('seconds')} s, check {r['check'][:200]}, peak total "
        f"{mem['peak_total_rss_mb']} MB, "
        + ", ".join(f"{p['what']} {p['peak_rss_mb']}" for p in mem["processes"][:6])
    )


def tables(results: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| workload | system | input records | seconds | rec/s | check | peak RSS per process (MB) "
        "| peak total RSS MB | peak PSS MB | local state MB |",
        "| --- | --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: |",
    ]
    for sysres in results:
        for r in sysres["runs"]:
            mem = r["memory"]
            procs = "; ".join(f"{p['what']} {p['peak_rss_mb']:,}" for p in mem["processes"])
            rate = f"{r['rate']:,}" if r.get("rate") else "FAILED" if not r["ok"] else "-"
            lines.append(
                f"| {r['workload']} | {r['system']} | {r['records']:,} | {r.get('seconds') or '-'} | "
                f"{rate} | {r['check'][:160]} | "
                f"{procs} | {mem['peak_total_rss_mb']:,} | {mem['peak_pss_mb']:,} | {r['state_mb']:,} |"
            )
    lines += [
        "",
        "| restore after S2 | system | restart to marker output, s | local state before (MB) "
        "| where the time went | peak RSS per process (MB) | peak total RSS MB |",
        "| --- | --- | ---: | ---: | --- | --- | ---: |",
    ]
    for sysres in results:
        for r in sysres["restore"]:
            mem = r["memory"]
            procs = "; ".join(f"{p['what']} {p['peak_rss_mb']:,}" for p in mem["processes"])
            what = "kill -9, local state deleted" if r["mode"] == "delete" else "kill -9, local state kept"
            lines.append(
                f"| {what} | {sysres['system']} | {r.get('seconds', 'FAILED: ' + r.get('error', ''))} | "
                f"{r['local_state_mb_before']:,} | {_restore_detail(r)} | {procs} | "
                f"{mem['peak_total_rss_mb']:,} |"
            )
    return lines


def _restoring(events: list[dict[str, Any]]) -> set[tuple[str, int]]:
    """(store, partition) whose restore began and has not ended (Kafka Streams' listener events)."""
    began = {(e["store"], e["partition"]) for e in events if e["event"] == "start"}
    return began - {(e["store"], e["partition"]) for e in events if e["event"] == "end"}


def _restore_detail(r: dict[str, Any]) -> str:
    if "restore_seconds" in r:
        # The gap before the restore is the consumer group waiting out the killed member's session
        # (session.timeout.ms, 45 s by default) before it hands its partitions to the new one.
        unfinished = f"; unfinished {r['restore_unfinished']}" if r.get("restore_unfinished") else ""
        return (
            f"restore began {r['restore_began_s']} s after launch, took {r['restore_seconds']} s "
            f"({r['restored_records']:,} records; by partition {r['restore_seconds_by_partition']} s"
            f"{unfinished}); marker out "
            f"{round(r['seconds'] - r['restore_began_s'], 1)} s after the restore began"
        )
    batches = r.get("batches") or []
    if batches:
        ms = sum(int(b["ms"].get("triggerExecution", 0)) for b in batches)
        return f"{len(batches)} non-empty micro-batch(es) since launch, {ms / 1000:.1f} s"
    return "-"


def _snapshot_worktree() -> str:
    """A copy of the working tree's kspark/ (others may edit it while the run goes on)."""
    out = tempfile.mkdtemp(prefix="kspark-bench-src-")
    shutil.copytree(REPO / "kspark", Path(out) / "kspark", ignore=shutil.ignore_patterns("__pycache__"))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.state_at_scale", description=__doc__.split("\n")[0])
    ap.add_argument("--keys", type=int, required=True, help="N: distinct keys (S1) and table rows (S2)")
    ap.add_argument("--events", type=int, help="M: S2's events (default min(N, 5,000,000))")
    ap.add_argument("--systems", default="kspark,kstreams")
    ap.add_argument("--workloads", default="S1,S2")
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--commit-ms", type=int, default=1000)
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    ap.add_argument("--restore-timeout", type=float, default=1200.0)
    ap.add_argument("--idle", type=float, default=180.0, help="fail a run idle this long, output incomplete")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument(
        "--kspark-rev", default="worktree", help="'worktree' (a copy taken at start) or a git revision"
    )
    ap.add_argument("--kspark-conf", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--logs", default=str(Path(tempfile.gettempdir()) / "kspark-bench-logs"))
    ap.add_argument(
        "--state-root", default=None, help="where the systems' state directories go (default: tmp)"
    )
    ap.add_argument("--out", default=str(REPO / "bench" / "results"), help="directory for the .json and .txt")
    args = ap.parse_args(argv)
    n = args.keys
    args.events = args.events if args.events is not None else min(n, 5_000_000)
    args.workloads = [w.strip().upper() for w in args.workloads.split(",") if w.strip()]
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if bad := [s for s in systems if s not in ("kspark", "kstreams")] + [
        w for w in args.workloads if w not in ("S1", "S2")
    ]:
        ap.error(f"unknown: {bad}; systems kspark, kstreams; workloads S1, S2")
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    if args.kspark_rev == "worktree":
        args.kspark_src = _snapshot_worktree()
        args.kspark_commit = f"{head}+worktree"
    else:
        args.kspark_src = export_kspark(args.kspark_rev)
        args.kspark_commit = args.kspark_rev
    load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    results = []
    with LocalKafka(heap="1g", log_level="WARN") as kafka:
        topics = {"s1": f"s1-{n}", "table": f"s2-table-{n}", "events": f"s2-events-{n}"}
        loaded = preload(kafka, topics, n, args.events, args.partitions)
        say(f"pre-loaded S1 {n + n // 4:,}, table {n:,}, events {args.events:,} records in {loaded} s")
        for system in systems:
            results.append(run_system(kafka, system, args, topics))
    say("")
    say(
        f"keys={n:,} events={args.events:,} partitions={args.partitions} commit={args.commit_ms} ms "
        f"kspark={args.kspark_commit} load average before={load_before} "
        f"UTC {time.strftime('%Y-%m-%d %H:%M', time.gmtime())}"
    )
    for line in tables(results):
        say(line)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"state-at-scale-{n}-{head}"
    args_json = {k: v for k, v in vars(args).items()}
    stem.with_suffix(".json").write_text(
        json.dumps({"args": args_json, "preload_seconds": loaded, "results": results}, indent=1)
    )
    stem.with_suffix(".txt").write_text("\n".join(LINES) + "\n")
    ok = all(r["ok"] for s in results for r in s["runs"]) and all(
        "seconds" in r for s in results for r in s["restore"]
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
