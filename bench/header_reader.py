"""What the native count pays when records carry headers: reading the latest records' headers back.

    .venv/bin/python -m bench.header_reader --records 2500000 [--keys 10000]

The native count's Spark aggregation keeps only whether a key's latest
record had headers (kspark/runtime/spark/lowering.py); the tail then reads
those records back from Kafka by offset (:class:`~kspark.runtime.spark.kafka_io.HeaderReader`).
W2's input has no headers, so its runs never read anything. This measures the
other extreme: every record has headers, one task's batch of ``--records``
records in one partition, and the reader fetches the latest record of every
key, for keys drawn uniformly (W2's shape: the latest records bunch at the
end of the batch) and from a Zipf-like skew (rare keys' latest records lie
anywhere, so the reader seeks). Prints seconds per read, cold (new
consumer) and warm, against the batch's record count.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

__all__ = ["main"]


def _keys(n: int, keys: int, skewed: bool, seed: int) -> list[int]:
    rng = random.Random(seed)
    if not skewed:
        return [rng.randrange(keys) for _ in range(n)]
    weights = [1.0 / (k + 1) ** 1.1 for k in range(keys)]
    return rng.choices(range(keys), weights=weights, k=n)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=2_500_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--seek-gap", type=int, nargs="*", default=[], help="HeaderReader seek_gap values to try")
    args = ap.parse_args(argv)

    from kspark.dev.kafka import LocalKafka
    from kspark.runtime.spark.kafka_io import HeaderReader

    with LocalKafka(heap="1g", log_level="WARN") as kafka:
        for skewed in (False, True):
            name = "skewed" if skewed else "uniform"
            topic = f"headers-{name}"
            kafka.create_topic(topic, partitions=1)
            keys = _keys(args.records, args.keys, skewed, seed=1)
            started = time.monotonic()
            kafka.produce(
                topic,
                ((b"user-%d" % k, b"v", 1000, 0, [("trace", b"%d" % i)]) for i, k in enumerate(keys)),
                timeout=600,
            )
            loaded = time.monotonic() - started
            latest = {k: i for i, k in enumerate(keys)}  # offset = index: one producer, one partition
            offsets = sorted(latest.values())
            print(
                f"{name}: {args.records:,} records with headers ({loaded:.0f} s to load), "
                f"{len(offsets):,} keys, their latest records span offsets {offsets[0]:,}..{offsets[-1]:,}"
            )
            for gap in args.seek_gap or [None]:
                kwargs = {} if gap is None else {"seek_gap": gap}
                reader = HeaderReader(kafka.bootstrap_servers, f"bench-{name}", **kwargs)
                print(f"  seek_gap {reader.seek_gap:,}:")
                try:
                    _read(reader, topic, offsets, args.records)
                finally:
                    reader.close()


def _read(reader: Any, topic: str, offsets: list[int], records: int) -> None:
    for run in ("cold", "warm"):
        started = time.monotonic()
        got = reader.read(topic, 0, offsets)
        seconds = time.monotonic() - started
        assert len(got) == len(offsets), (len(got), len(offsets))
        assert all(got[o].to_list() == [("trace", b"%d" % o)] for o in offsets)
        print(
            f"    {run}: {seconds:.2f} s to read {len(offsets):,} records' headers "
            f"({seconds / records * 1e6:.2f} µs per batch record)"
        )


if __name__ == "__main__":
    main()
