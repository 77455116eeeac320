"""Timed point lookups over HTTP from a process of its own (bench.interactive_queries).

    python -m bench.http_lookups URL_PREFIX KEYS RATE SECONDS

GETs ``URL_PREFIX`` + a random key of ``u0000000`` .. ``u{KEYS-1}`` at ``RATE``
requests/s over one kept-alive connection for ``SECONDS``, each timed, and
prints ``{"ms": [...], "errors": [...]}``. A process of its own: a client in
the application's process would wait for the application's interpreter lock
too, and its waits are not the server's latency.
"""

from __future__ import annotations

import json
import random
import sys
import time

import httpx


def main(argv: list[str]) -> int:
    prefix, keys, rate, seconds = argv[0], int(argv[1]), float(argv[2]), float(argv[3])
    rng = random.Random(2)
    latencies: list[float] = []
    errors: list[str] = []
    deadline = time.monotonic() + seconds
    with httpx.Client(timeout=10) as client:
        while time.monotonic() < deadline:
            key = f"u{rng.randrange(keys):07d}"
            t0 = time.perf_counter()
            r = client.get(prefix + key)
            latencies.append((time.perf_counter() - t0) * 1000)
            if r.status_code != 200:
                errors.append(f"{key}: {r.status_code}")
            time.sleep(1 / rate)
    print(json.dumps({"ms": latencies, "errors": errors[:10], "error_count": len(errors)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
