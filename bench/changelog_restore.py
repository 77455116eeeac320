"""A store's restore from its changelog in one Python process: kspark's changelog reader into a
RocksDB store, with librdkafka's fetch-queue settings varied.

    python -m bench.changelog_restore [--records 2000000]

Starts a local Kafka, writes ``--records`` records shaped like bench.state_at_scale's S2 table
(``k<9 digits>`` -> ~60 bytes of JSON) into one partition, then restores them, in turn with each
variant's consumer settings, into a fresh ``RocksDBKeyValueStore`` as a timestamped store's
restore does (8-byte timestamp prefix), twice each. Prints wall seconds, records/s and this
process's CPU seconds (librdkafka's threads included).
"""

from __future__ import annotations

import argparse
import shutil
import struct
import tempfile
import time
from typing import Any

__all__ = ["main"]

_LIBRDKAFKA = {"fetch.queue.backoff.ms": 1000}
VARIANTS: dict[str, dict[str, Any]] = {
    "librdkafka's 1 s fetch-queue backoff": _LIBRDKAFKA,
    "kspark (range reader's 10 ms backoff)": {},
    "1 s backoff, 500,000-message prefetch": {**_LIBRDKAFKA, "queued.min.messages": 500_000},
}


class _Context:
    """What ``RocksDBKeyValueStore.init`` asks of its context."""

    def __init__(self, state_dir: str) -> None:
        self._state_dir = state_dir

    def task_id(self) -> str:
        return "0_0"

    def state_dir(self) -> str:
        return self._state_dir

    def app_configs(self) -> dict[str, Any]:
        return {}


def main(argv: list[str] | None = None) -> None:
    from confluent_kafka import Producer

    from kspark.dev import LocalKafka
    from kspark.runtime.spark.store_restore import ChangelogReader, RestoreRecords
    from kspark.state.internals.rocksdb_key_value_store import RocksDBKeyValueStore

    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=2_000_000)
    args = ap.parse_args(argv)
    n = args.records
    pack = struct.Struct(">q").pack
    with LocalKafka(heap="1g") as kafka:
        kafka.create_topic("changelog", partitions=1)
        producer = Producer(
            {"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 50, "batch.size": 1_000_000}
        )
        for i in range(n):
            value = b'{"user":"k%09d","tier":"t%06d","pad":"0123456789abcdef"}' % (i, i % 100_003)
            while True:
                try:
                    producer.produce("changelog", value, b"k%09d" % i, timestamp=1_700_000_000_000 + i)
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.flush()
        print(f"{n:,} records in one partition, restored whole into a RocksDB store")
        print("| settings | run | seconds | records/s | CPU s |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for run in (1, 2):
            for name, settings in VARIANTS.items():
                reader = ChangelogReader(kafka.bootstrap_servers, f"bench-{run}-{len(name)}", settings)
                state_dir = tempfile.mkdtemp(prefix="kspark-bench-")
                store = RocksDBKeyValueStore("table")
                store.init(_Context(state_dir), store)  # type: ignore[arg-type]

                def apply(records: RestoreRecords, store: RocksDBKeyValueStore = store) -> None:
                    store.restore([(k, None if v is None else pack(ts) + v) for k, v, ts in records])

                began, cpu = time.monotonic(), time.process_time()
                restored = reader.restore("changelog", 0, 0, n, apply)
                seconds, cpu = time.monotonic() - began, time.process_time() - cpu
                assert restored == n, (restored, n)
                print(f"| {name} | {run} | {seconds:.2f} | {n / seconds:,.0f} | {cpu:.2f} |", flush=True)
                store.close()
                reader.close()
                shutil.rmtree(state_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
