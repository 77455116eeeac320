"""How long the read replica's calls into C keep another thread of its process from running.

    python -m bench.replica_holds [--keys 1000000] [--calls 100]

The interactive-query server's event loop shares its process with the store replica's thread
(kspark/runtime/spark/replica.py). Two of that thread's calls hold the interpreter lock for their
whole length, so the loop waits them out however short the switch interval is: a RocksDB
store's restore of a chunk of changelog records (one ``write`` into rocksdict) and librdkafka's
``consume`` of a batch of records (it builds their Python objects). This bench times both at the
sizes the replica has used, with a probe thread that sleeps 0.2 ms at a time and records how late
it wakes while the calls run: its lateness is the wait a request on the event loop would see.

Prints, per call and size: the call's own time (p50, p99) and the probe's lateness (p99, max).
Starts a local Kafka for ``consume``.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable

from bench.changelog_restore import _Context
from bench.interactive_queries import _percentiles

__all__ = ["main"]


class _Probe(threading.Thread):
    """Sleeps 0.2 ms at a time; records how late each wake-up is while ``on`` is set."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.on = threading.Event()
        self.done = threading.Event()
        self.late_ms: list[float] = []

    def run(self) -> None:
        while not self.done.is_set():
            before = time.perf_counter()
            time.sleep(0.0002)
            late = (time.perf_counter() - before - 0.0002) * 1000
            if self.on.is_set():
                self.late_ms.append(late)


def _time(name: str, size: int, calls: int, call: Callable[[], object]) -> None:
    probe = _Probe()
    probe.start()
    took: list[float] = []
    for _ in range(calls):
        probe.on.set()
        began = time.perf_counter()
        call()
        took.append((time.perf_counter() - began) * 1000)
        probe.on.clear()
        time.sleep(0.002)  # the probe runs between calls, as the loop does between chunks
    probe.done.set()
    probe.join()
    took_ms, late_ms = _percentiles(took), _percentiles(probe.late_ms)
    cells = [took_ms["p50"], took_ms["p99"], late_ms["p99"], late_ms["max"]]
    print(f"| {name} | {size:,} | " + " | ".join(f"{c:.2f}" for c in cells) + " |", flush=True)


def main(argv: list[str] | None = None) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    from kspark.dev import LocalKafka
    from kspark.state.internals.rocksdb_key_value_store import RocksDBKeyValueStore

    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=1_000_000, help="distinct keys the store is written with")
    ap.add_argument("--calls", type=int, default=100, help="calls timed per size")
    args = ap.parse_args(argv)
    sys.setswitchinterval(0.0005)  # as the serving process sets it (kspark/runtime/spark/serving.py)
    print("| call | records per call | call p50 ms | call p99 ms | probe late p99 ms | probe late max ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")

    state_dir = tempfile.mkdtemp(prefix="kspark-bench-")
    store = RocksDBKeyValueStore("counts")
    store.init(_Context(state_dir), store)  # type: ignore[arg-type]
    rng = random.Random(1)
    for size in (2_000, 250, 64):

        def restore(size: int = size) -> None:
            store.restore([(b"k%09d" % rng.randrange(args.keys), b"\0" * 16) for _ in range(size)])

        _time("RocksDB store restore", size, args.calls, restore)
    store.close()
    shutil.rmtree(state_dir, ignore_errors=True)

    with LocalKafka(heap="1g") as kafka:
        kafka.create_topic("changelog", partitions=1)
        producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 50})
        total = (10_000 + 1_000 + 250) * args.calls
        for i in range(total):
            while True:
                try:
                    producer.produce("changelog", b"\0" * 16, b"k%09d" % (i % args.keys))
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.flush()
        consumer = Consumer(
            {
                "bootstrap.servers": kafka.bootstrap_servers,
                "group.id": "bench-replica-holds",
                "enable.auto.commit": False,
            }
        )
        consumer.assign([TopicPartition("changelog", 0, OFFSET_BEGINNING)])
        consumer.consume(1, 10.0)  # connected and fetching before the timing starts
        for size in (10_000, 1_000, 250):
            time.sleep(2.0)  # librdkafka's prefetch queue refills
            _time("librdkafka consume", size, args.calls, lambda size=size: consumer.consume(size, 1.0))
        consumer.close()


if __name__ == "__main__":
    main()
