"""One command: every workload on kspark and its peers, same broker, same data, same cores.

    python -m bench.run --workload W1,W2 --records 1000000 --systems kspark,pyspark,quix,kstreams

Starts one :class:`kspark.dev.LocalKafka`, pre-loads the input topics
(2 partitions, identical bytes for every system), then runs each system in its
own process group against them, one at a time. The output topic of each run is
created with ``message.timestamp.type=LogAppendTime``, so the broker stamps
when each output record arrived. Throughput is

    input records / (last output append time - time the system began processing)

where the start is reported by the system (its first input record; for Spark,
the start of its first non-empty micro-batch): start-up and group joins are
excluded, everything from the first fetch to the last output write counts.
A run counts only when its output equals the result computed in Python
(:mod:`bench.workloads`). Peak memory is the largest summed RSS of the
system's process tree, sampled every 0.5 s, and the largest summed PSS (a
page shared by forked processes counts once in all). See docs/benchmarks.md.

``--guarantee exactly_once_v2`` runs kspark and Kafka Streams under Kafka's
exactly-once (``processing.guarantee``); the other systems are skipped,
saying why. Outputs are read ``read_committed`` under both guarantees, and
under exactly-once a run ends when its last output became visible: the
append time of its transaction's commit marker (:mod:`bench.kafka_output`).
``bench.w5`` runs both guarantees at several commit intervals.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from confluent_kafka import Consumer, Producer, TopicPartition

from bench import jvm
from bench.kafka_output import READ_COMMITTED, OutputWatcher, visible_times
from bench.perf_tools import broker_limits
from bench.proctree import TICKS, pss_bytes, rss_by_command, tree
from bench.workloads import (
    WORKLOADS,
    Checker,
    answer_groups,
    answer_times,
    event_value,
    events,
    output_answer,
    users,
)
from kspark.dev.kafka import LocalKafka

__all__ = [
    "System",
    "SYSTEMS",
    "GUARANTEES",
    "RunResult",
    "run_system",
    "run_latency",
    "preload",
    "add_common_args",
    "prepare",
    "skip_reason",
    "main",
]

AT_LEAST_ONCE, EXACTLY_ONCE_V2 = "at_least_once", "exactly_once_v2"
GUARANTEES = (AT_LEAST_ONCE, EXACTLY_ONCE_V2)


def events_from(i: int) -> Any:
    """Event ``i`` (and on) of the benchmark input, without generating those before it."""
    from bench.workloads import _event

    yield _event(i)


REPO = Path(__file__).resolve().parents[1]
PEERS_PYTHON = os.environ.get("BENCH_PEERS_PYTHON", "/tmp/venvpeers/bin/python")
FLINK_PYTHON = os.environ.get("BENCH_FLINK_PYTHON", "/tmp/venvflink/bin/python")


@dataclass(frozen=True)
class System:
    name: str
    command: Callable[[dict[str, Any], argparse.Namespace], list[str]]
    count_format: dict[str, str]
    workloads: tuple[str, ...]
    instances: Callable[[dict[str, Any]], int] = lambda spec: 1
    # processing.guarantee values the harness can run it under; why not exactly-once, if not.
    guarantees: tuple[str, ...] = (AT_LEAST_ONCE,)
    no_exactly_once: str = ""


def skip_reason(system: System, workload: str, guarantee: str) -> str | None:
    """Why ``system`` does not run ``workload`` under ``guarantee`` here (None: it runs)."""
    if workload not in system.workloads:
        return "not implemented for this system"
    if guarantee not in system.guarantees:
        return f"no {guarantee} in this harness: {system.no_exactly_once}"
    return None


def _py(
    module: str, python: Callable[[argparse.Namespace], str]
) -> Callable[[dict[str, Any], argparse.Namespace], list[str]]:
    return lambda spec, args: [python(args), "-m", module, json.dumps(spec)]


def _pyflink(*flags: str) -> Callable[[dict[str, Any], argparse.Namespace], list[str]]:
    """bench/systems/pyflink_app.py under the PyFlink interpreter; ``--sql`` for its SQL variant."""
    return lambda spec, args: [args.flink_python, "-m", "bench.systems.pyflink_app", json.dumps(spec), *flags]


# kspark on Spark's local-cluster master: one executor JVM per partition (one core, 1 GB heap each,
# with their own Python workers) beside the driver, so records cross processes as on a cluster.
LOCAL_CLUSTER = "local-cluster[{partitions},1,1024]"


def _kspark_cluster(spec: dict[str, Any], args: argparse.Namespace) -> list[str]:
    master = LOCAL_CLUSTER.format(partitions=spec["partitions"])
    spec = {**spec, "extra": {"spark.master": master, **spec.get("extra", {})}}
    return [args.python, "-m", "bench.systems.kspark_app", json.dumps(spec)]


def _kspark_low_latency(spec: dict[str, Any], args: argparse.Namespace) -> list[str]:
    """kspark with ``spark.kspark.lowLatency``: long-running tasks wherever the plan allows them."""
    spec = {**spec, "extra": {"spark.kspark.lowLatency": "true", **spec.get("extra", {})}}
    return [args.python, "-m", "bench.systems.kspark_app", json.dumps(spec)]


def _kstreams(spec: dict[str, Any], _args: argparse.Namespace) -> list[str]:
    return [
        jvm.java(),
        "-Xmx1g",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp",
        jvm.kstreams_classpath(),
        "io.kspark.bench.KStreamsBench",
        spec["workload"],
        spec["bootstrap"],
        spec["input"],
        spec["output"],
        spec["app_id"],
        spec["state_dir"],
        str(spec["partitions"]),
        str(spec["commit_ms"]),
        spec.get("table") or "",
        spec.get("guarantee", AT_LEAST_ONCE),
    ]


SYSTEMS: dict[str, System] = {
    s.name: s
    for s in (
        System(
            "kspark",
            _py("bench.systems.kspark_app", lambda a: a.python),
            {"W2": "long", "W3": "long"},
            ("W1", "W2", "W3", "W4"),
            guarantees=GUARANTEES,
        ),
        System(
            "kspark-cluster",
            _kspark_cluster,
            {"W2": "long", "W3": "long"},
            ("W1", "W2", "W3", "W4"),
            guarantees=GUARANTEES,
        ),
        System(
            "kspark-lowlatency",
            _kspark_low_latency,
            {"W2": "long", "W3": "long"},
            ("W1", "W2", "W3", "W4"),
        ),
        System(
            "pyspark",
            _py("bench.systems.pyspark_app", lambda a: a.python),
            {"W2": "str", "W3": "str"},
            ("W1", "W2", "W3", "W4"),
            no_exactly_once="Spark's Kafka sink writes without transactions (at-least-once only)",
        ),
        System(
            "quix",
            _py("bench.systems.quix_app", lambda a: a.peers_python),
            {"W2": "json", "W3": "jsonc"},
            ("W1", "W2", "W3", "W4"),
            instances=lambda spec: int(spec["partitions"]),
            no_exactly_once="its app (bench/systems/quix_app.py) runs at-least-once only; Quix's own "
            "exactly-once mode is not wired into the harness",
        ),
        System(
            "faust",
            _py("bench.systems.faust_app", lambda a: a.peers_python),
            {"W2": "json", "W3": "json"},
            ("W1", "W2", "W3"),
            instances=lambda spec: int(spec["partitions"]),
            no_exactly_once="its app (bench/systems/faust_app.py) runs at-least-once only; Faust's own "
            "exactly_once mode is not wired into the harness",
        ),
        System(
            "pyflink",
            _pyflink(),
            {"W2": "long", "W3": "long"},
            ("W1", "W2", "W3", "W4"),
            guarantees=GUARANTEES,
        ),
        System(
            "pyflink-sql",
            _pyflink("--sql"),
            {"W2": "long", "W3": "long"},
            ("W2", "W3"),
            guarantees=GUARANTEES,
        ),
        System(
            "kstreams",
            _kstreams,
            {"W2": "long", "W3": "long"},
            ("W1", "W2", "W3", "W4"),
            guarantees=GUARANTEES,
        ),
    )
}


@dataclass
class RunResult:
    system: str
    workload: str
    records: int
    ok: bool = False
    verdict: str = ""
    rate: float | None = None
    seconds: float | None = None
    wall_seconds: float | None = None
    peak_rss_mb: float | None = None
    peak_pss_mb: float | None = None
    output_records: int = 0
    duplicates: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------- input


def preload(kafka: LocalKafka, topic: str, n: int, partitions: int) -> float:
    """Write the n input events; returns records/s of the load (not a benchmark number)."""
    kafka.create_topic(topic, partitions)
    producer = Producer(
        {
            "bootstrap.servers": kafka.bootstrap_servers,
            "linger.ms": 50,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
            # Java's default partitioner, so Kafka Streams and kspark see the same key -> partition.
            "partitioner": "murmur2_random",
            # Offsets in generation order even when a batch is retried (right after the topic is
            # created, say): without it a retried first batch landed after later ones, its records
            # were then beyond W3's grace, and every Kafka Streams-like system rightly dropped them.
            "enable.idempotence": True,
        }
    )
    start = time.monotonic()
    for e in events(n):
        while True:
            try:
                producer.produce(topic, key=e.key.encode(), value=event_value(e), timestamp=e.ts)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(120):
        raise RuntimeError(f"pre-loading {topic} did not finish")
    return n / (time.monotonic() - start)


def preload_table(kafka: LocalKafka, topic: str, partitions: int) -> None:
    kafka.create_topic(topic, partitions)
    producer = Producer(
        {
            "bootstrap.servers": kafka.bootstrap_servers,
            "linger.ms": 20,
            "partitioner": "murmur2_random",
            "enable.idempotence": True,
        }
    )
    for key, value, ts in users():
        producer.produce(topic, key=key.encode(), value=value, timestamp=ts)
    if producer.flush(60):
        raise RuntimeError(f"pre-loading {topic} did not finish")


# ---------------------------------------------------------------- measuring


def _spec(
    system: System,
    args: argparse.Namespace,
    kafka: LocalKafka,
    run_id: str,
    workload: str,
    input_topic: str,
    output: str,
    table_topic: str | None,
    state_dir: str,
) -> dict[str, Any]:
    """What a system process is told to run (its one command-line argument, as JSON)."""
    kspark = system.name.startswith("kspark")  # --kspark-conf is for every kspark variant
    return {
        "workload": workload,
        "bootstrap": kafka.bootstrap_servers,
        "input": input_topic,
        "output": output,
        "table": table_topic,
        "app_id": f"bench-{run_id}",
        "state_dir": state_dir,
        "commit_ms": args.commit_ms,
        "guarantee": args.guarantee,
        "partitions": args.partitions,
        "extra": dict(kv.split("=", 1) for kv in args.kspark_conf) if kspark else {},
    }


def _launch(
    system: System,
    spec: dict[str, Any],
    args: argparse.Namespace,
    logs: Path,
    instance: int,
    stack: contextlib.ExitStack,
) -> subprocess.Popen[str]:
    """Start instance ``instance`` of a system in its own process group, stderr to ``logs``."""
    paths = [args.kspark_src, str(REPO)] if args.kspark_src else [str(REPO)]
    return subprocess.Popen(
        system.command(spec, args),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stack.enter_context(open(logs / f"stderr-{instance}.log", "w")),
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
        # Not the repository: Python puts the cwd first on sys.path of `python -m`
        # processes, Spark's Python workers included, which then ran the working
        # tree's kspark instead of the exported revision.
        cwd=logs,
        start_new_session=True,
    )


def _py_spy(
    args: argparse.Namespace, system: System, procs: list[subprocess.Popen[str]], logs: Path
) -> list[str]:
    """py-spy recording every process of ``system`` (and its children) when ``--py-spy`` names it:
    the raw profiles' paths (``python -m bench.pyspy_top`` reads them), none otherwise."""
    if not args.py_spy or system.name not in args.py_spy.split(","):
        return []
    paths = [str(logs / f"py-spy-{i}.txt") for i in range(len(procs))]
    for p, path in zip(procs, paths, strict=True):
        # It ends by itself when its process does.
        subprocess.Popen(
            [
                *(args.py_spy_bin, "record", "--pid", str(p.pid), "--subprocesses", "--rate", "50"),
                *("--format", "raw", "--output", path, "--nonblocking"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    return paths


def run_system(
    kafka: LocalKafka,
    system: System,
    workload: str,
    n: int,
    input_topic: str,
    args: argparse.Namespace,
    table_topic: str | None = None,
) -> RunResult:
    result = RunResult(system.name, workload, n)
    run_id = f"{system.name}-{workload.lower()}-{uuid.uuid4().hex[:6]}"
    output = f"out-{run_id}"
    kafka.create_topic(output, args.partitions, {"message.timestamp.type": "LogAppendTime"})
    state_dir = tempfile.mkdtemp(prefix=f"bench-{run_id}-")
    spec = _spec(system, args, kafka, run_id, workload, input_topic, output, table_topic, state_dir)
    checker = Checker(workload, n, system.count_format.get(workload, "long"))
    watcher = OutputWatcher(kafka.bootstrap_servers, output, args.partitions, checker)
    logs = Path(args.logs) / run_id
    logs.mkdir(parents=True, exist_ok=True)
    procs: list[subprocess.Popen[str]] = []
    peak = [0.0]
    peak_pss = [0.0]
    cpu = [(time.monotonic(), 0.0)]  # (when, CPU seconds of the tree): when the tree last did work
    stop_sampling = threading.Event()

    rss_series: list[dict[str, Any]] = []
    interval_peak = [0.0]

    cpu_by_pid: dict[int, tuple[str, int]] = {}  # pid -> (command, CPU ticks when last seen)

    def sample() -> None:
        while not stop_sampling.wait(0.5):
            found = tree([p.pid for p in procs])
            for pid, (comm, _, ticks) in found.items():
                cpu_by_pid[pid] = (comm, ticks)
            rss = sum(p[1] for p in found.values()) / 2**20
            peak_pss[0] = max(peak_pss[0], pss_bytes(list(found)) / 2**20)
            seconds = sum(p[2] for p in found.values()) / TICKS
            peak[0] = max(peak[0], rss)
            interval_peak[0] = max(interval_peak[0], rss)
            if not rss_series or time.time() - launched >= rss_series[-1]["s"] + 10:
                # Every 10 s: whether memory grows, in which process kind, and the
                # highest total since the previous entry (a spike between entries).
                by_command = rss_by_command([p.pid for p in procs])
                rss_series.append(
                    {"s": round(time.time() - launched), **by_command, "peak": round(interval_peak[0])}
                )
                interval_peak[0] = 0.0
            # "Busy" = more than 5% of one core since the last busy mark.
            if seconds - cpu[-1][1] > 0.05 * (time.monotonic() - cpu[-1][0]) + 0.2:
                cpu.append((time.monotonic(), seconds))

    launched = time.time()
    stack = contextlib.ExitStack()
    try:
        for i in range(system.instances(spec)):
            procs.append(_launch(system, spec, args, logs, i, stack))
        threading.Thread(target=sample, daemon=True).start()
        spied = _py_spy(args, system, procs, logs)
        if spied:
            result.extra["py_spy"] = spied
        deadline = time.monotonic() + args.timeout
        last_high = -1
        while time.monotonic() < deadline:
            time.sleep(1.0)
            dead = [p for p in procs if p.poll() is not None]
            if dead:
                result.verdict = f"process exited with {dead[0].returncode} before finishing (see {logs})"
                break
            high = watcher.high()
            # Read only while the output is quiet: the check then competes little with the system.
            if high == last_high and high > sum(watcher.position.values()):
                watcher.drain()
                if checker.complete():
                    break
            last_high = high
            if time.monotonic() - cpu[-1][0] > args.idle and not checker.complete():
                watcher.drain()
                if not checker.complete():
                    result.verdict = f"idle for {args.idle:.0f} s with the output incomplete"
                    break
        else:
            result.verdict = f"timed out after {args.timeout} s"
        watcher.drain()
    finally:
        stop_sampling.set()
        reports = []
        for p in procs:
            try:
                if p.poll() is None and p.stdin:
                    p.stdin.write("stop\n")
                    p.stdin.flush()
            except OSError:
                pass
        for i, p in enumerate(procs):
            try:
                out, _ = p.communicate(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)
                out, _ = p.communicate()
            (logs / f"stdout-{i}.log").write_text(out or "")
            for line in (out or "").splitlines():
                # A terminal escape may come first (Faust's spinner hides the cursor).
                if "RESULT {" in line:
                    reports.append(json.loads(line[line.index("RESULT {") + 7 :]))
        watcher.close()
        stack.close()
        shutil.rmtree(state_dir, ignore_errors=True)
    result.peak_rss_mb = round(peak[0])
    result.peak_pss_mb = round(peak_pss[0])
    result.extra["rss_mb_every_10s"] = rss_series
    # CPU seconds per process kind over the whole run (start-up included), as last sampled.
    cpu_seconds: dict[str, float] = {}
    for comm, ticks in cpu_by_pid.values():
        cpu_seconds[comm] = cpu_seconds.get(comm, 0.0) + ticks / TICKS
    result.extra["cpu_seconds"] = {k: round(v, 1) for k, v in sorted(cpu_seconds.items())}
    result.output_records = checker.records
    result.duplicates = checker.duplicates
    firsts = [r["first_input_ms"] for r in reports if r.get("first_input_ms")]
    result.extra.update({k: v for r in reports for k, v in r.items() if k != "first_input_ms"})
    verdict = checker.verdict()
    if not result.verdict:
        result.verdict = verdict or "ok"
        result.ok = verdict is None
    elif verdict:
        result.verdict += f": {verdict}"
    # The end is the last output's append time; under exactly-once the time it became visible,
    # its transaction's commit marker's append time (bench.kafka_output). Both are kept.
    visible_ms = watcher.visible_end_ms(kafka) if watcher.last_append_ms else 0
    result.extra.update(last_append_ms=watcher.last_append_ms, visible_end_ms=visible_ms)
    end_ms = visible_ms if args.guarantee == EXACTLY_ONCE_V2 else watcher.last_append_ms
    if result.ok and firsts and end_ms:
        result.seconds = (end_ms - min(firsts)) / 1000
        result.wall_seconds = end_ms / 1000 - launched
        result.rate = n / result.seconds if result.seconds > 0 else None
    elif result.ok:
        result.ok = False
        result.verdict = "no start time reported"
    return result


_LATENCY_READY_RECORDS = 200


def run_latency(kafka: LocalKafka, system: System, workload: str, args: argparse.Namespace) -> dict[str, Any]:
    """A workload at a fixed offered load: end-to-end latency from produce call to output append time.

    The system starts on an empty input topic (W4: and a pre-loaded table);
    the harness produces ``_LATENCY_READY_RECORDS`` records and waits for
    their output (the system is up), then produces ``--latency-rate``
    records/s for ``--latency-seconds`` and reads the output as it arrives.
    An input's latency ends at the append time of the first output that
    answers it (:func:`bench.workloads.answer_times`: W1/W4 the output of its
    id; W2/W3 the first output of its key (and window) whose count includes
    it). Records produced in the first ``--latency-warmup`` seconds of the
    load are excluded from the percentiles. The output must equal the
    expected result for every record produced. When the harness's producer
    finds its queue full (the broker behind), it waits for deliveries and
    reports the seconds it waited (``producer_stalled_s``): the load was not
    offered then. The output is read
    ``read_committed``; under exactly-once an output's time is when it became
    visible, its transaction's commit marker's append time
    (:mod:`bench.kafka_output`), not its own append time.
    """
    run_id = f"{system.name}-lat-{workload.lower()}-{uuid.uuid4().hex[:6]}"
    input_topic, output = f"in-{run_id}", f"out-{run_id}"
    kafka.create_topic(input_topic, args.partitions)
    kafka.create_topic(output, args.partitions, {"message.timestamp.type": "LogAppendTime"})
    table_topic = None
    if workload == "W4":
        table_topic = f"users-{run_id}"
        preload_table(kafka, table_topic, args.partitions)
    state_dir = tempfile.mkdtemp(prefix=f"bench-{run_id}-")
    spec = _spec(system, args, kafka, run_id, workload, input_topic, output, table_topic, state_dir)
    logs = Path(args.logs) / run_id
    logs.mkdir(parents=True, exist_ok=True)
    procs: list[subprocess.Popen[str]] = []
    fmt = system.count_format.get(workload, "long")
    total = _LATENCY_READY_RECORDS + int(args.latency_rate * args.latency_seconds)
    sent = np.full(total, np.nan)  # wall time of each measured input's produce() call
    out_groups, out_counts, out_times = array("q"), array("q"), array("d")
    out_partitions, out_offsets = array("q"), array("q")  # of each answering output
    with contextlib.ExitStack() as stack:
        for i in range(system.instances(spec)):
            procs.append(_launch(system, spec, args, logs, i, stack))
        spied = _py_spy(args, system, procs, logs)
        producer = Producer(
            {"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 5, "partitioner": "murmur2_random"}
        )
        consumer = Consumer(
            {
                "bootstrap.servers": kafka.bootstrap_servers,
                "group.id": f"lat-{run_id}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                **READ_COMMITTED,
            }
        )
        consumer.assign([TopicPartition(output, p, 0) for p in range(args.partitions)])
        ready = Checker(workload, _LATENCY_READY_RECORDS, fmt)
        checker = Checker(workload, total, fmt)

        def read(timeout: float) -> None:
            for msg in consumer.consume(num_messages=10_000, timeout=timeout):
                if msg.error():
                    continue
                key, value = msg.key(), msg.value()
                checker.add(key, value)
                if not ready.complete():
                    ready.add(key, value)
                answer = output_answer(workload, key, value, fmt)
                if answer is not None:
                    out_groups.append(answer[0])
                    out_counts.append(answer[1])
                    out_times.append(msg.timestamp()[1] / 1000)
                    out_partitions.append(int(msg.partition() or 0))
                    out_offsets.append(int(msg.offset() or 0))

        stalled = [0.0]  # seconds the producer's queue was full: the load was not offered then

        def send(i: int) -> None:
            e = next(events_from(i))
            while True:
                try:
                    producer.produce(input_topic, key=e.key.encode(), value=event_value(e), timestamp=e.ts)
                    return
                except BufferError:  # the broker is behind: wait for deliveries, and say so
                    waited = time.monotonic()
                    producer.poll(0.05)
                    stalled[0] += time.monotonic() - waited

        # The load starts once the system has answered a first few records: start-up
        # (a JVM, a Spark session, Python workers) is not latency at a steady load.
        for i in range(_LATENCY_READY_RECORDS):
            send(i)
        producer.flush(30)
        ready_by = time.time() + args.timeout
        while not ready.complete() and time.time() < ready_by:
            read(0.5)
        start = time.time()
        i = _LATENCY_READY_RECORDS
        while i < total:
            due = min(total, _LATENCY_READY_RECORDS + int((time.time() - start) * args.latency_rate))
            while i < due:
                send(i)
                sent[i] = time.time()
                i += 1
            producer.poll(0)
            read(0.005)
        producer.flush(30)
        deadline = time.time() + 120
        while time.time() < deadline and not checker.complete():
            read(0.5)
        for p in procs:
            with contextlib.suppress(OSError):
                if p.stdin:
                    p.stdin.write("stop\n")
                    p.stdin.flush()
        for p in procs:
            try:
                p.communicate(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)
                p.communicate()
        consumer.close()
    shutil.rmtree(state_dir, ignore_errors=True)
    verdict = checker.verdict()
    groups, expects = answer_groups(workload, total)
    times = np.frombuffer(out_times, dtype=np.float64)
    if args.guarantee == EXACTLY_ONCE_V2:
        times = times.copy()
        parts, offsets = np.frombuffer(out_partitions, np.int64), np.frombuffer(out_offsets, np.int64)
        for partition in range(args.partitions):
            here = parts == partition
            times[here] = visible_times(kafka, output, partition).at(offsets[here]) / 1000
    answered = answer_times(
        groups, np.frombuffer(out_groups, dtype=np.int64), np.frombuffer(out_counts, dtype=np.int64), times
    )
    measured = expects & (sent >= start + args.latency_warmup)
    if getattr(args, "latency_dump", ""):  # each measured input's send time and latency, for a look over time
        np.save(args.latency_dump, np.stack([sent[measured], (answered[measured] - sent[measured]) * 1000]))
    latencies = np.sort((answered[measured] - sent[measured]) * 1000)
    unanswered = int(np.isnan(latencies).sum())

    def pct(q: float) -> float | None:
        done = latencies[~np.isnan(latencies)]
        return round(float(done[min(len(done) - 1, int(q * len(done)))])) if len(done) else None

    return {
        "system": system.name,
        "workload": workload,
        "guarantee": args.guarantee,
        "commit_ms": args.commit_ms,
        "offered_rate": args.latency_rate,
        "produced": total,
        "outputs": checker.records,
        "measured": int(measured.sum()),
        "unanswered": unanswered,
        "p50_ms": pct(0.50),
        "p99_ms": pct(0.99),
        "max_ms": pct(1.0),
        "check": verdict or "ok",
        "producer_stalled_s": round(stalled[0], 1),
        **({"py_spy": spied} if spied else {}),
    }


def export_kspark(rev: str) -> str:
    """``kspark/`` at ``rev`` in a temp dir, put first on the systems' PYTHONPATH."""
    out = tempfile.mkdtemp(prefix="kspark-bench-src-")
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, "kspark"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", out], input=archive.stdout, check=True)
    return out


# ---------------------------------------------------------------- report


def _fmt_rate(r: RunResult) -> str:
    return f"{r.rate:,.0f}" if r.ok and r.rate else "FAILED" if not r.ok else "n/a"


def table(results: list[RunResult], systems: list[str]) -> str:
    lines = [
        "| workload | system | input rec/s | kspark ÷ system | seconds | wall s (incl. start) "
        "| peak RSS MB | peak PSS MB | output records | check |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for w in sorted({r.workload for r in results}):
        ks = next((r for r in results if r.workload == w and r.system == "kspark" and r.ok), None)
        for s in systems:
            for r in (r for r in results if r.workload == w and r.system == s):
                ratio = f"{ks.rate / r.rate:.2f}x" if ks and ks.rate and r.ok and r.rate else "-"
                lines.append(
                    f"| {w} | {s} | {_fmt_rate(r)} | {ratio} | {r.seconds or '-'} | "
                    f"{round(r.wall_seconds, 1) if r.wall_seconds else '-'} | {r.peak_rss_mb} | "
                    f"{r.peak_pss_mb} | "
                    f"{r.output_records:,} | "
                    f"{r.verdict[:120]} |"
                )
    return "\n".join(lines)


def add_common_args(ap: argparse.ArgumentParser, *, workloads: str, systems: str) -> None:
    """The options bench.run shares with drivers built on it (bench.w5)."""
    ap.add_argument("--workload", default=workloads, help=f"comma-separated, of {','.join(WORKLOADS)}")
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--systems", default=systems, help=f"comma-separated, of {','.join(SYSTEMS)}")
    ap.add_argument("--partitions", type=int, default=2, help="input partitions = cores = threads/processes")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    ap.add_argument(
        "--idle",
        type=float,
        default=45.0,
        help="stop a run whose processes stay idle this long with the output incomplete",
    )
    ap.add_argument("--latency-seconds", type=float, default=90.0)
    ap.add_argument("--latency-warmup", type=float, default=45.0)
    ap.add_argument("--python", default=sys.executable, help="interpreter with kspark and pyspark")
    ap.add_argument("--peers-python", default=PEERS_PYTHON, help="interpreter with quixstreams and faust")
    ap.add_argument(
        "--flink-python",
        default=FLINK_PYTHON,
        help="interpreter with apache-flink (bench/requirements-pyflink.txt; default $BENCH_FLINK_PYTHON)",
    )
    ap.add_argument("--logs", default=str(Path(tempfile.gettempdir()) / "kspark-bench-logs"))
    ap.add_argument("--json", help="also write the results as JSON here")
    ap.add_argument(
        "--kspark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra kspark config, e.g. spark.kspark.maxOffsetsPerTrigger=20000 (repeatable)",
    )
    ap.add_argument(
        "--py-spy", default="", help="comma-separated systems to profile with py-spy (all their processes)"
    )
    ap.add_argument("--py-spy-bin", default=str(Path(sys.executable).parent / "py-spy"))
    ap.add_argument(
        "--kspark-rev",
        default="HEAD",
        help="git revision of kspark/ the systems run (exported to a temp dir: the shared working tree may "
        "hold someone's unfinished edits); 'worktree' runs the working tree as it is",
    )


def prepare(ap: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """Check the workloads and systems asked for, note the load and the kspark commit, export kspark."""
    workloads = [w.strip().upper() for w in args.workload.split(",") if w.strip()]
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in systems if s not in SYSTEMS] + [w for w in workloads if w not in WORKLOADS]
    if unknown:
        ap.error(f"unknown: {unknown}; systems are {sorted(SYSTEMS)}, workloads {WORKLOADS}")
    args.load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    rev = "HEAD" if args.kspark_rev == "worktree" else args.kspark_rev
    args.kspark_commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", rev], capture_output=True, text=True, check=True
    ).stdout.strip() + ("+worktree" if args.kspark_rev == "worktree" else "")
    args.kspark_src = None
    if args.kspark_rev != "worktree":
        args.kspark_src = export_kspark(args.kspark_rev)
    return workloads, systems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    add_common_args(ap, workloads="W1,W2", systems="kspark,pyspark,quix,kstreams")
    ap.add_argument("--commit-ms", type=int, default=1000, help="commit / trigger interval of every system")
    ap.add_argument(
        "--guarantee",
        choices=GUARANTEES,
        default=AT_LEAST_ONCE,
        help="processing.guarantee of every system that has it (kspark, kstreams); others are skipped "
        "under exactly_once_v2",
    )
    ap.add_argument(
        "--latency-rate",
        type=float,
        default=0.0,
        help="instead of throughput: each --workload's latency at this offered load (records/s)",
    )
    ap.add_argument(
        "--latency-dump",
        default="",
        help="with --latency-rate: save each measured input's send time and latency (ms) here (.npy)",
    )
    ap.add_argument("--perf", action="store_true", help="also run Kafka's perf tools (the broker's limit)")
    args = ap.parse_args(argv)
    workloads, systems = prepare(ap, args)

    def runs(w: str) -> list[System]:
        """The systems that run ``w`` under the guarantee, saying why for each that does not."""
        chosen = []
        for s in systems:
            why = skip_reason(SYSTEMS[s], w, args.guarantee)
            if why:
                print(f"{w} {s}: {why}, skipped", flush=True)
            else:
                chosen.append(SYSTEMS[s])
        return chosen

    results: list[RunResult] = []
    with LocalKafka(heap="1g", log_level="WARN") as kafka:
        if args.latency_rate:
            lat = [run_latency(kafka, system, w, args) for w in workloads for system in runs(w)]
            for row in lat:
                print(json.dumps(row), flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps({"args": vars(args), "latency": lat}, indent=1))
            return 0 if all(r["check"] == "ok" for r in lat) else 1
        input_topic = f"input-{args.records}"
        load_rate = preload(kafka, input_topic, args.records, args.partitions)
        print(f"pre-loaded {args.records:,} records into {input_topic} at {load_rate:,.0f} rec/s", flush=True)
        table_topic = None
        if "W4" in workloads:
            table_topic = "users"
            preload_table(kafka, table_topic, args.partitions)
        limits = broker_limits(kafka, args.records, args.partitions, input_topic) if args.perf else None
        if limits:
            print(
                "broker limit (Kafka perf tools, rec/s): "
                + ", ".join(f"{k} {v:,.0f}" for k, v in limits.items())
            )
        for w in workloads:
            for system in runs(w):
                r = run_system(kafka, system, w, args.records, input_topic, args, table_topic)
                print(
                    f"{w} {system.name}: {_fmt_rate(r)} rec/s, {r.seconds} s, peak {r.peak_rss_mb} MB "
                    f"(PSS {r.peak_pss_mb}), {r.output_records} out, {r.verdict}",
                    flush=True,
                )
                results.append(r)
    print()
    print(
        f"records={args.records:,} partitions={args.partitions} commit/trigger={args.commit_ms} ms "
        f"guarantee={args.guarantee} kspark={args.kspark_commit} load average before={args.load_before}"
    )
    print(table(results, systems))
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {"args": vars(args), "limits": limits, "results": [r.__dict__ for r in results]}, indent=1
            )
        )
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
