"""Quix Streams (bench/requirements.txt pins the version): the workloads as a Quix user writes them.

Runs in its own virtualenv (Quix pins confluent-kafka below the version kspark
needs). One process consumes all partitions on one core; the harness starts
``partitions`` processes in one consumer group, Quix's way to use more cores.
Settings: Quix defaults (RocksDB state, at-least-once) with
``commit_interval`` from the harness and ``auto_offset_reset="earliest"``.
W2 is a stateful ``apply`` (Quix has no un-windowed count); W3 is
``tumbling_window(5 s, grace 30 s).count().current()`` (every update, as
Kafka Streams without suppression). W4 is ``join_asof`` (Quix's
stream-table join: the latest table row at or before the event's time).
"""

from __future__ import annotations

import os
from typing import Any

from bench.systems.common import FirstSeen, report, spec_from_argv, wait_for_stop

__all__ = ["main"]


def main() -> None:
    from quixstreams import Application, State

    spec = spec_from_argv()
    first = FirstSeen()
    app = Application(
        broker_address=spec["bootstrap"],
        consumer_group=spec["app_id"],
        auto_offset_reset="earliest",
        commit_interval=spec["commit_ms"] / 1000,
        state_dir=os.path.join(spec["state_dir"], f"quix-{os.getpid()}"),
        loglevel="WARNING",
    )
    w = spec["workload"]
    value_in = "json" if w in ("W1", "W4") else "bytes"
    source = app.topic(spec["input"], key_deserializer="str", value_deserializer=value_in)
    out = app.topic(spec["output"], key_serializer="str", value_serializer="json")
    sdf = app.dataframe(source)
    sdf = sdf.update(lambda _v: first())
    if w == "W1":
        sdf = sdf.filter(lambda v: v["amount"] >= 50).apply(
            lambda v: {"id": v["id"], "user": v["user"], "score": v["amount"] * 2}
        )
        sdf.to_topic(out)
    elif w == "W2":

        def count(_value: Any, state: State) -> int:
            c = int(state.get("count", 0)) + 1
            state.set("count", c)
            return c

        sdf.apply(count, stateful=True).to_topic(out)
    elif w == "W3":
        sdf = sdf.tumbling_window(duration_ms=5_000, grace_ms=30_000).count().current()
        sdf = sdf.apply(lambda v, key, _ts, _h: {"k": f"{key}@{v['start']}", "c": v["value"]}, metadata=True)
        sdf.to_topic(out, key=lambda v: v["k"])
    elif w == "W4":
        table = app.topic(spec["table"], key_deserializer="str", value_deserializer="json")
        sdf = sdf.join_asof(
            app.dataframe(table),
            how="inner",
            on_merge=lambda e, u: {"id": e["id"], "amount": e["amount"], "tier": u["tier"]},
        )
        sdf.to_topic(out)
    else:
        raise ValueError(f"unknown or unsupported workload {w}")
    wait_for_stop(app.stop, background=True)
    app.run()
    report(first_input_ms=first.ms)


if __name__ == "__main__":
    main()
