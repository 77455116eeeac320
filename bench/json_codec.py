"""The JSON serde's codec against the standard library, per value, on the benchmark's own records.

    python -m bench.json_codec [--values 200000]

Times decoding the workloads' input values (W1/W4 events, 60 bytes) and
encoding W1's output values, once with ``json`` as kspark used it before
(``json.loads`` of the decoded text; one ``JSONEncoder``) and once with
``kspark.serde._json`` (orjson where it gives ``json``'s value). Prints
microseconds per value (best of 5 rounds, CPU time of this process).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

__all__ = ["main"]


def _best(fn: Callable[[Any], Any], items: list[Any], rounds: int = 5) -> float:
    """Best CPU-µs per item of ``fn`` over ``items``."""
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for item in items:
            fn(item)
        best = min(best, time.process_time() - start)
    return best / len(items) * 1e6


def main(argv: list[str] | None = None) -> None:
    from bench.workloads import event_value, events
    from kspark.serde import _json

    ap = argparse.ArgumentParser()
    ap.add_argument("--values", type=int, default=200_000)
    args = ap.parse_args(argv)

    raw = [event_value(e) for e in events(args.values)]
    decoded = [json.loads(r) for r in raw]
    outputs = [{"id": v["id"], "user": v["user"], "score": v["amount"] * 2} for v in decoded]
    encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    assert all(_json.decode(r) == v for r, v in zip(raw, decoded, strict=True))
    assert all(_json.encode(o) == encoder.encode(o).encode() for o in outputs)

    print(f"{args.values:,} values, CPU µs per value, best of 5")
    print("| operation | json | kspark codec | ratio |")
    print("| --- | ---: | ---: | ---: |")
    rows = [
        ("decode an event (60 bytes)", lambda r: json.loads(r.decode("utf-8")), _json.decode, raw),
        ("encode a W1 output", lambda o: encoder.encode(o).encode("utf-8"), _json.encode, outputs),
    ]
    for name, stdlib, codec, items in rows:
        a, b = _best(stdlib, items), _best(codec, items)
        print(f"| {name} | {a:.3f} | {b:.3f} | {a / b:.1f}x |", flush=True)


if __name__ == "__main__":
    main()
