"""Timed point lookups over HTTP from a process of its own (bench.interactive_queries).

    python -m bench.http_lookups URL_PREFIX KEYS RATE SECONDS [httpx|wrk|wrk-paced]

GETs ``URL_PREFIX`` + a random key of ``u0000000`` .. ``u{KEYS-1}`` over one kept-alive
connection for ``SECONDS``, each timed. A process of its own: a client in the application's
process would wait for the application's interpreter lock too, and its waits are not the
server's latency. Two clients:

* ``httpx`` (default): Python, ``RATE`` requests/s; prints ``{"ms": [...], "errors": [...]}``.
  Its own time is in every latency, and on a loaded machine that is most of it.
* ``wrk`` (Debian's ``wrk``, C): one connection, each request sent when the last is answered
  (``RATE`` does not apply); prints ``{"summary": {"n", "p50", "p99", "max"}, "errors": [...]}``
  from wrk's latency histogram. Closer to what the server itself takes; but the server is then
  never idle, and on a loaded machine a process that never sleeps is the one the scheduler
  makes wait for a core.
* ``wrk-paced``: the same, each request sent ``1/RATE`` s after the last was answered (wrk's
  ``delay()``): the server serves ``RATE`` requests/s at most, as a service queried at that
  rate would be. Each latency is from the request's write to its answer, as wrk times it.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx

# wrk's Lua: a random key per request; the summary as one JSON line (latencies in microseconds).
_WRK_SCRIPT = """
math.randomseed(2)
request = function()
  return wrk.format("GET", "{path}" .. string.format("u%07d", math.random(0, {keys} - 1)))
end
{delay}
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK {{"n": %d, "p50": %.3f, "p99": %.3f, "max": %.3f, "errors": %d}}\\n',
    summary.requests, latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000, e.connect + e.read + e.write + e.status + e.timeout))
end
"""


def _httpx(prefix: str, keys: int, rate: float, seconds: float) -> dict[str, object]:
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
    return {"ms": latencies, "errors": errors[:10], "error_count": len(errors)}


def _wrk(prefix: str, keys: int, seconds: float, rate: float | None) -> dict[str, object]:
    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit("no wrk on PATH (Debian: apt-get install wrk)")
    url = urlsplit(prefix)
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        # wrk waits whole milliseconds (its delay() result is truncated to an integer).
        delay = f"delay = function() return {max(1, round(1000 / rate))} end" if rate else ""
        f.write(_WRK_SCRIPT.format(path=url.path, keys=keys, delay=delay))
    try:
        done = subprocess.run(
            [
                wrk,
                "-t1",
                "-c1",
                f"-d{int(seconds)}s",
                "--timeout",
                "10s",
                "-s",
                f.name,
                f"{url.scheme}://{url.netloc}/",
            ],
            capture_output=True,
            text=True,
            timeout=seconds + 60,
            check=True,
        )
    finally:
        Path(f.name).unlink()
    line = next(x for x in done.stdout.splitlines() if x.startswith("WRK "))
    summary = json.loads(line[4:])
    failed = summary.pop("errors")
    return {"summary": summary, "errors": [f"{failed} failed requests"] if failed else []}


def main(argv: list[str]) -> int:
    prefix, keys, rate, seconds = argv[0], int(argv[1]), float(argv[2]), float(argv[3])
    client = argv[4] if len(argv) > 4 else "httpx"
    if client == "httpx":
        out = _httpx(prefix, keys, rate, seconds)
    else:
        out = _wrk(prefix, keys, seconds, rate if client == "wrk-paced" else None)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
