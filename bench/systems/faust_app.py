"""Faust (faust-streaming, bench/requirements.txt): the workloads as a Faust user writes them.

Runs in the peers' virtualenv. One worker process is one asyncio loop (one
core); the harness starts ``partitions`` workers, Faust's way to scale.
Settings: Faust defaults (in-memory tables with changelog topics,
at-least-once) with the web server off (two workers on one host),
``broker_commit_interval`` from the harness and ``consumer_auto_offset_reset=earliest``.
W2 keeps the counts in a ``Table``; W3 counts in a tumbling windowed ``Table``.
No W4: a ``Table`` whose changelog is the user topic lost a join while the two
workers rebalanced (1 of 20,000 events found no user), and a ``GlobalTable``
hung in recovery with two workers (a limitation Faust's docstring names).
Faust has no way to report from its loop before shutdown that
survives SIGTERM reliably, so the start time is printed as soon as the first
record arrives.
"""

from __future__ import annotations

import os
import signal
import time

from bench.systems.common import report, spec_from_argv, wait_for_stop

__all__ = ["main"]


def main() -> None:
    import faust

    spec = spec_from_argv()
    app = faust.App(
        spec["app_id"],
        broker=f"kafka://{spec['bootstrap']}",
        store="memory://",
        web_enabled=False,
        topic_partitions=spec["partitions"],
        broker_commit_interval=spec["commit_ms"] / 1000,
        consumer_auto_offset_reset="earliest",
        datadir=os.path.join(spec["state_dir"], f"faust-{os.getpid()}"),
    )
    w = spec["workload"]
    src = app.topic(
        spec["input"],
        partitions=spec["partitions"],
        key_serializer="raw",
        value_serializer="json" if w == "W1" else "raw",
    )
    out = app.topic(
        spec["output"], partitions=spec["partitions"], key_serializer="raw", value_serializer="json"
    )
    seen = [False]

    def first() -> None:
        if not seen[0]:
            seen[0] = True
            report(first_input_ms=int(time.time() * 1000))

    if w == "W1":

        @app.agent(src)
        async def w1(stream):  # type: ignore[no-untyped-def]
            async for key, v in stream.items():
                first()
                if v["amount"] >= 50:
                    await out.send(
                        key=key, value={"id": v["id"], "user": v["user"], "score": v["amount"] * 2}
                    )

    elif w == "W2":
        counts = app.Table("counts", default=int, partitions=spec["partitions"])

        @app.agent(src)
        async def w2(stream):  # type: ignore[no-untyped-def]
            async for key, _v in stream.items():
                first()
                k = key.decode()
                counts[k] += 1
                await out.send(key=key, value=counts[k])

    elif w == "W3":
        # Windows of event time (Faust's default relativity: the message timestamp); a window
        # is kept 35 s (size + the 30 s grace) behind the partition's latest timestamp.
        windows = app.Table("w3", default=int, partitions=spec["partitions"]).tumbling(5.0, expires=35.0)

        @app.agent(src)
        async def w3(stream):  # type: ignore[no-untyped-def]
            async for event in stream.events():
                first()
                k = event.key.decode()
                windows[k] += 1
                ms = round(event.message.timestamp * 1000)
                await out.send(key=f"{k}@{ms - ms % 5_000}".encode(), value=windows[k].current())

    else:
        raise ValueError(f"unknown or unsupported workload {w}")

    wait_for_stop(lambda: os.kill(os.getpid(), signal.SIGTERM), background=True)
    faust.Worker(app, loglevel="WARNING", redirect_stdouts=False).execute_from_commandline()


if __name__ == "__main__":
    main()
