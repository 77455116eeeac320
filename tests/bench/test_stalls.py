"""bench.stalls names the thread that held the interpreter; bench.http_baseline answers point
reads as kspark's endpoint does."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from bench.stalls import StallWatch
from kspark.dev.kafka import free_port


def test_a_thread_holding_the_interpreter_is_charged_with_the_stall() -> None:
    watch = StallWatch(threshold_ms=8.0)
    watch.start()
    time.sleep(0.05)  # the watch has read every thread's clock once

    def hold() -> None:
        for _ in range(3):
            sum(range(20_000_000))  # one call into C: no other thread runs until it returns

    holder = threading.Thread(target=hold, name="holder")
    holder.start()
    holder.join()
    watch.stop()
    summary = watch.summary()
    assert summary["stalls"] >= 1
    cpu = summary["cpu_ms_in_stalls"]
    threads = {name: ms for name, ms in cpu.items() if not name.startswith("(")}
    assert max(threads, key=threads.__getitem__) == "holder"
    assert cpu["holder"] > 0
    assert any(frame["thread"] == "holder" for frame in summary["frames"])


def test_the_http_baseline_answers_point_reads_as_the_query_server_does() -> None:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "bench.http_baseline", str(port), "1000"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert server.stdout is not None
        assert server.stdout.readline().strip() == "ready"
        url = f"http://127.0.0.1:{port}/state/keyvalue/keys/"
        deadline = time.monotonic() + 30
        while True:
            try:
                found = httpx.get(url + "u0000999", timeout=5)
                break
            except httpx.ConnectError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        assert found.status_code == 200
        body = {"store": "keys", "key": "u0000999", "value": 1, "position": {"keys": {"0": 1000}}}
        assert found.json() == body
        assert httpx.get(url + "u0001000", timeout=5).status_code == 404
    finally:
        server.terminate()
        server.wait(10)
