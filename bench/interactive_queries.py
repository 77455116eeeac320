"""Interactive queries (issue 20): what the changelog topics cost W2, and reads while W2 runs.

    python -m bench.interactive_queries --records 10000000 --base REV --json bench/results/iq-COMMIT.json

One :class:`kspark.dev.LocalKafka`, two parts:

1. **The changelog's cost.** W2 (a count over 10,000 keys, ``bench.run``'s
   harness and measure) on the same pre-loaded input, alternately with
   kspark at ``--base`` (a revision before stores wrote changelog topics)
   and at ``--kspark-rev`` (default HEAD), ``--rounds`` times each.
2. **Reads under load.** One application in this process, with
   ``application.server`` set: a count over ``--keys`` distinct keys (its
   store ``keys`` holds ``--keys`` entries once loaded) and W2 beside it,
   ``spark.kspark.maxOffsetsPerTrigger`` capping it at half of W2's rate from
   part 1. Once ``keys`` holds every key, for ``--seconds`` while W2 runs:
   point lookups of random keys (``--store``: RocksDB or in memory) through
   Python (``store(...).get``, from a thread of the application's process)
   and through HTTP
   (``GET /state/keyvalue/keys/{key}``, one kept-alive connection, from a
   process of its own: bench/http_lookups.py), each at ``--lookup-rate``,
   timed one by one; the replicas' freshness (a batch's commit seen -> readable); the
   rate W2 really processed at (its store's position over time). With
   ``--baseline``, then the same HTTP lookups, W2 still running, against
   bench/http_baseline.py: an HTTP stack over a dict in a process of its own
   (``--baseline-stacks``), the floor that stack meets on this machine under
   this load. ``--renice N`` runs Spark's JVM, its Python workers and the
   broker at nice ``N`` (bench/renice.py) and ``--switch-interval-ms`` sets
   the application process's ``sys.setswitchinterval``: what is left of the
   HTTP tail when the processing yields the cores, and the interpreter lock
   changes hands sooner.

Part 2 runs the working tree's kspark (this process imports it). Results
go to ``--json`` and a summary is printed with the issue's targets: Python
p99 < 1 ms, HTTP p99 < 5 ms, W2 with the changelog within 10% of before,
freshness p99 under one trigger interval.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from bench.http_baseline import STACKS
from bench.renice import Renicer, java_children
from bench.run import SYSTEMS, add_common_args, export_kspark, preload, run_system
from bench.stalls import StallWatch
from kspark.dev.kafka import LocalKafka, free_port

TRIGGER_MS = 1000


class _GcPauses:
    """The application process's garbage collections while the lookups run (``gc.callbacks``):
    per generation how many, and their longest and total time, in ms. A collection stops every
    thread of the interpreter, the query server's included."""

    def __init__(self) -> None:
        self.started: float | None = None
        self.ms: dict[int, list[float]] = {0: [], 1: [], 2: []}

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self.started = time.perf_counter()
        elif self.started is not None:
            self.ms[info["generation"]].append((time.perf_counter() - self.started) * 1000)
            self.started = None

    def summary(self) -> dict[str, dict[str, float]]:
        return {
            f"gen{g}": {"n": len(v), "max": round(max(v, default=0.0), 2), "total": round(sum(v), 1)}
            for g, v in self.ms.items()
        }


def _percentiles(samples: list[float]) -> dict[str, float]:
    if not samples:
        return {}
    ordered = sorted(samples)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)

    return {"n": len(ordered), "p50": at(0.50), "p99": at(0.99), "max": round(ordered[-1], 3)}


def changelog_cost(kafka: LocalKafka, args: argparse.Namespace) -> dict[str, Any]:
    """Part 1: W2's rate at ``--base`` and at ``--kspark-rev``, alternately."""
    topic = f"input-{args.records}"
    preload(kafka, topic, args.records, args.partitions)
    sources = {args.base: export_kspark(args.base), args.kspark_rev: export_kspark(args.kspark_rev)}
    rates: dict[str, list[float]] = {rev: [] for rev in sources}
    for _ in range(args.rounds):
        for rev, src in sources.items():
            args.kspark_src = src
            result = run_system(kafka, SYSTEMS["kspark"], "W2", args.records, topic, args)
            if not result.ok or result.rate is None:
                raise RuntimeError(f"W2 at {rev} failed: {result.verdict}")
            rates[rev].append(result.rate)
            print(f"W2 kspark {rev}: {result.rate:,.0f} rec/s", flush=True)
    base, new = (statistics.median(rates[r]) for r in (args.base, args.kspark_rev))
    return {"rates": rates, "base_median": base, "new_median": new, "ratio": new / base}


def _load_keys(kafka: LocalKafka, topic: str, keys: int, partitions: int) -> dict[int, int]:
    """``keys`` records of distinct keys; the offset of the last one per partition."""
    from kspark.processor.internals.partitioning import default_partition

    kafka.create_topic(topic, partitions)
    producer = Producer(
        {
            "bootstrap.servers": kafka.bootstrap_servers,
            "linger.ms": 50,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
            "enable.idempotence": True,
            "partitioner": "murmur2_random",
        }
    )
    last: dict[int, int] = {}
    counts = [0] * partitions
    for i in range(keys):
        key = f"u{i:07d}".encode()
        p = default_partition(key, partitions)
        last[p] = counts[p]
        counts[p] += 1
        while True:
            try:
                producer.produce(topic, key=key, value=b"x", timestamp=1 + i)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(300):
        raise RuntimeError(f"loading {topic} did not finish")
    return last


def reads_under_load(kafka: LocalKafka, args: argparse.Namespace, w2_rate: float) -> dict[str, Any]:
    """Part 2: point lookups of a store of ``--keys`` keys through Python and HTTP while W2 runs
    beside it, in the same application, capped at half of W2's rate."""
    from kspark import Consumed, KafkaStreams, Materialized, Produced, StreamsBuilder
    from kspark.query import Position, PositionBound, StoreQueryParameters
    from kspark.serde import Serdes
    from kspark.state import QueryableStoreTypes, Stores

    rate = w2_rate / 2
    keys_topic, w2_topic = "iq-keys", "iq-w2"
    last = _load_keys(kafka, keys_topic, args.keys, args.partitions)
    # Enough to run at that rate through the keys' load (~50 s), the lookups and each baseline:
    # a W2 out of input would leave the later stacks a quieter machine.
    stacks = len(args.baseline_stacks.split(",")) if args.baseline else 0
    w2_records = int(rate * ((args.seconds + 10) * (1 + stacks) + 60))
    preload(kafka, w2_topic, w2_records, args.partitions)
    s, b_, long_ = Serdes.String(), Serdes.ByteArray(), Serdes.Long()
    b = StreamsBuilder()
    # --store memory: the store (and so its replica in the driver) in memory instead of RocksDB
    keys_store = Stores.in_memory_key_value_store("keys") if args.store == "memory" else "keys"
    b.stream(keys_topic, Consumed.with_(s, b_)).group_by_key().count(Materialized.as_(keys_store))
    (
        b.stream(w2_topic, Consumed.with_(s, b_))
        .group_by_key()
        .count(Materialized.as_("w2-counts"))
        .to_stream()
        .to("iq-w2-out", Produced.with_(s, long_))
    )
    kafka.create_topic("iq-w2-out", args.partitions)
    port = free_port()
    config = {
        "application.id": "bench-iq",
        "bootstrap.servers": kafka.bootstrap_servers,
        "state.dir": tempfile.mkdtemp(prefix="bench-iq-"),
        "commit.interval.ms": TRIGGER_MS,
        "application.server": f"127.0.0.1:{port}",
        "spark.master": f"local[{args.partitions}]",
        # Spark's cap is per query, over all its partitions: W2 at half its rate.
        "spark.kspark.maxOffsetsPerTrigger": str(max(1, int(rate * TRIGGER_MS / 1000))),
    }
    if args.processing_nice:
        config["spark.kspark.processingNice"] = str(args.processing_nice)
    if args.switch_interval_ms:
        sys.setswitchinterval(args.switch_interval_ms / 1000)
    app = KafkaStreams(b.build(), config)
    app.start()
    renicer = None
    if args.renice:
        # Spark's JVM (the tasks' threads in local mode) with its Python workers, and the broker
        renicer = Renicer([*java_children(os.getpid()), *([kafka.pid] if kafka.pid else [])], args.renice)
        renicer.start()
    try:
        all_keys = PositionBound.at(Position.from_map({keys_topic: last}))
        params = StoreQueryParameters.from_name_and_type("keys", QueryableStoreTypes.key_value_store())
        started = time.monotonic()
        view = app.store(params.with_position_bound(all_keys, timeout=1800))
        loaded_s = time.monotonic() - started
        entries = view.approximate_num_entries()
        w2 = app.store("w2-counts", QueryableStoreTypes.key_value_store())
        replicas = app._runner.replicas  # type: ignore[union-attr]
        assert replicas is not None
        replicas.freshness_ms.clear()
        stop = threading.Event()
        python_ms: list[float] = []
        errors: list[str] = []

        def python_reader() -> None:
            rng = random.Random(1)
            while not stop.is_set():
                key = f"u{rng.randrange(args.keys):07d}"
                t0 = time.perf_counter()
                value = view.get(key)
                python_ms.append((time.perf_counter() - t0) * 1000)
                if value != 1:
                    errors.append(f"python: {key} -> {value}")
                time.sleep(1 / args.lookup_rate)

        # The HTTP endpoint's serving process (the default) has replicas of its own: its first
        # read starts them, and it is timed once they hold the keys, as the Python reads are.
        http_loaded_s = _await_keys(f"http://127.0.0.1:{port}/state/keyvalue/keys/u0000000", keys_topic, last)
        client = _http_client(f"http://127.0.0.1:{port}/state/keyvalue/keys/", args)

        reader = threading.Thread(target=python_reader)
        pauses = _GcPauses()
        gc.callbacks.append(pauses)
        stalls = StallWatch() if args.stalls else None
        # W2's rate over the timed reads only (not over the serving process's load above).
        w2_before = sum(w2.position().get_partition_positions(w2_topic).values())
        t_start = time.monotonic()
        reader.start()
        if stalls is not None:
            stalls.start()
        try:
            out = client.communicate(timeout=args.seconds + 120)[0]
            if client.returncode != 0:  # its reason is on stderr, above
                raise SystemExit(f"bench.http_lookups failed: exit code {client.returncode}")
            http = json.loads(out)
        finally:
            stop.set()
            reader.join()
            gc.callbacks.remove(pauses)
            if stalls is not None:
                stalls.stop()
        elapsed = time.monotonic() - t_start
        errors += [f"http: {e}" for e in http["errors"]]
        w2_processed = sum(w2.position().get_partition_positions(w2_topic).values()) - w2_before
        baseline: dict[str, Any] = {}
        if args.baseline:
            w2_at = sum(w2.position().get_partition_positions(w2_topic).values())
            t_baseline = time.monotonic()
            stacks = args.baseline_stacks.split(",")
            baseline["stacks"] = {stack: _baseline_reads(args, stack) for stack in stacks}
            baseline["http_ms"] = baseline["stacks"][stacks[0]]
            baseline["w2_processed_rec_s"] = round(
                (sum(w2.position().get_partition_positions(w2_topic).values()) - w2_at)
                / (time.monotonic() - t_baseline)
            )
        return {
            "keys": entries,
            "w2_cap_rec_s": rate,
            "w2_processed_rec_s": round(w2_processed / elapsed),
            "gc_pauses_ms": pauses.summary(),
            "initial_load_s": round(loaded_s, 1),
            "initial_load_http_s": round(http_loaded_s, 1),
            "python_ms": _percentiles(python_ms),
            "http_ms": http["summary"] if "summary" in http else _percentiles(http["ms"]),
            "http_client": args.http_client,
            "freshness_ms": _percentiles(list(replicas.freshness_ms)),
            "trigger_ms": TRIGGER_MS,
            "errors": errors[:10],
            "error_count": len(errors),
            **({"stalls": stalls.summary()} if stalls is not None else {}),
            **({"reniced": {"nice": args.renice, "threads": renicer.threads}} if renicer else {}),
            **({"baseline": baseline} if baseline else {}),
        }
    finally:
        if renicer is not None:
            renicer.stop()
        app.close()


def _http_client(url_prefix: str, args: argparse.Namespace) -> subprocess.Popen[str]:
    """bench/http_lookups.py against ``url_prefix``, a process of its own, as a service's would be."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench.http_lookups",
            url_prefix,
            str(args.keys),
            str(args.lookup_rate),
            str(args.seconds),
            args.http_client,
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )


def _await_keys(url: str, topic: str, last: dict[int, int]) -> float:
    """Read ``url`` with a position bound at the keys' last offsets (waiting as long as the load
    takes); the seconds it took."""
    import httpx

    started = time.monotonic()
    bound = json.dumps({topic: {str(p): o for p, o in last.items()}})
    while True:  # each read waits at most 300 s (the endpoint's limit), then answers 409
        r = httpx.get(url, params={"position": bound, "timeout_ms": 300_000}, timeout=330)
        if r.status_code == 200:
            return time.monotonic() - started
        if r.status_code != 409 or time.monotonic() - started > 1800:
            raise RuntimeError(f"{url} answered {r.status_code}: {r.text}")


def _await_answer(url: str, timeout_s: float = 120.0) -> None:
    """Wait until ``url`` answers 200: a server may listen before its app is built (granian's
    worker process builds its dict after the server printed ``ready``)."""
    import httpx

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not answer in {timeout_s:g} s")
        time.sleep(0.5)


def _baseline_reads(args: argparse.Namespace, stack: str) -> Any:
    """The same lookups against bench/http_baseline.py (HTTP stack ``stack`` over a dict, in a
    process of its own), for ``--seconds``, W2 still running: that stack's floor under this load."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "bench.http_baseline", str(port), str(args.keys), stack],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    try:
        assert server.stdout is not None
        if server.stdout.readline().strip() != "ready":
            raise RuntimeError("bench.http_baseline did not start")
        _await_answer(f"http://127.0.0.1:{port}/state/keyvalue/keys/u0000000")
        client = _http_client(f"http://127.0.0.1:{port}/state/keyvalue/keys/", args)
        http = json.loads(client.communicate(timeout=args.seconds + 120)[0])
        if http["errors"]:
            raise RuntimeError(f"baseline lookups failed: {http['errors']}")
        return http["summary"] if "summary" in http else _percentiles(http["ms"])
    finally:
        server.terminate()
        server.wait(10)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.interactive_queries", description=__doc__.split("\n")[0]
    )
    add_common_args(ap, workloads="W2", systems="kspark")
    ap.add_argument("--base", required=True, help="a kspark revision without changelog topics")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--lookup-rate", type=float, default=500.0, help="lookups/s per reader")
    ap.add_argument("--skip-cost", action="store_true", help="only part 2, at --w2-rate")
    ap.add_argument("--w2-rate", type=float, default=0.0, help="W2's rate, when part 1 is skipped")
    ap.add_argument(
        "--http-client",
        choices=("httpx", "wrk", "wrk-paced"),
        default="httpx",
        help="httpx: Python, --lookup-rate requests/s; wrk: C, one connection as fast as it answers; "
        "wrk-paced: wrk, each request 1/--lookup-rate s after the last answer",
    )
    ap.add_argument(
        "--stalls",
        action="store_true",
        help="also record the application process's interpreter stalls and where its threads were "
        "(bench/stalls.py)",
    )
    ap.add_argument(
        "--store",
        choices=("rocksdb", "memory"),
        default="rocksdb",
        help="the queried store's kind (the default: RocksDB, as Materialized.as_(name) makes it)",
    )
    ap.add_argument(
        "--baseline",
        action="store_true",
        help="then, W2 still running, the same HTTP lookups against an HTTP stack over a dict in a "
        "process of its own (bench/http_baseline.py): that stack's floor under this load",
    )
    ap.add_argument(
        "--baseline-stacks",
        default="fastapi",
        help="with --baseline, the HTTP stacks to time over the dict, comma-separated: fastapi, raw, "
        "uvloop (kspark's point-read path), granian (bench/http_baseline.py says what each is)",
    )
    ap.add_argument(
        "--processing-nice",
        type=int,
        default=0,
        help="spark.kspark.processingNice: Spark's JVM and Python workers at this nice value",
    )
    ap.add_argument(
        "--renice",
        type=int,
        default=0,
        help="run Spark's JVM, its Python workers and the broker at this nice value (bench/renice.py)",
    )
    ap.add_argument(
        "--switch-interval-ms",
        type=float,
        default=0.0,
        help="the application process's sys.setswitchinterval (Python's default: 5 ms)",
    )
    args = ap.parse_args(argv)
    unknown = set(args.baseline_stacks.split(",")) - set(STACKS)
    if unknown:
        ap.error(f"--baseline-stacks: unknown {sorted(unknown)}; one of {', '.join(STACKS)}")
    args.commit_ms = TRIGGER_MS
    args.guarantee = "at_least_once"
    results: dict[str, Any] = {"args": {k: v for k, v in vars(args).items() if k != "kspark_src"}}
    with LocalKafka(heap="1g", log_level="WARN") as kafka:
        if not args.skip_cost:
            results["changelog_cost"] = changelog_cost(kafka, args)
            rate = results["changelog_cost"]["new_median"]
        else:
            rate = args.w2_rate
        results["reads"] = reads_under_load(kafka, args, rate)
    text = json.dumps(results, indent=1, default=str)
    print(text)
    if args.json:
        Path(args.json).write_text(text)
    reads = results["reads"]
    print(f"Python lookup p99 {reads['python_ms'].get('p99')} ms (target < 1 ms)")
    print(f"HTTP lookup p99 {reads['http_ms'].get('p99')} ms (target < 5 ms)")
    if "baseline" in reads:
        print(
            f"HTTP baseline (a dict in a process of its own) p99 {reads['baseline']['http_ms'].get('p99')} ms"
        )
    print(f"freshness p99 {reads['freshness_ms'].get('p99')} ms (target < {TRIGGER_MS} ms)")
    if "changelog_cost" in results:
        print(f"W2 with changelog / before: {results['changelog_cost']['ratio']:.3f} (target >= 0.90)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
