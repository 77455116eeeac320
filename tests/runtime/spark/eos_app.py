"""The application the kill -9 test runs (test_exactly_once_kills.py), one process per incarnation.

    python -m tests.runtime.spark.eos_app SETTINGS.json

``SETTINGS.json``: ``{"bootstrap": ..., "state_dir": ..., "apps": {guarantee: {"application.id":
..., topics...}}}``. One Spark session runs one application per guarantee over the same input
topics, so every kill hits both at once. Each runs two topologies:

* **copy and count**: a copy of every record of ``in-a`` (direct read) and a count per key of
  ``in-c`` (native count; the test writes each input record to both topics);
* **stateful, repartitioned, windowed** (``in-b``): a Processor API step numbers each user's
  records in a store (engine tasks), the numbered records are re-keyed by region through the
  repartition topic ``<application.id>-numbered-repartition``, and counted per region in 10 s
  windows with a 10 minute grace (native windowed count): state on both sides of the topic.

It runs continuously and prints ``COMMITTED <query> <batch> <seconds since it started>`` for
each micro-batch Spark commits (an application keeps the trigger mode its checkpoint was
written with, so the test's last incarnation runs this way too, until the outputs have caught
up).
"""

from __future__ import annotations

import functools
import json
import sys
import threading
import time
from typing import Any

from kspark import (
    Consumed,
    KafkaStreams,
    KeyValue,
    Produced,
    Repartitioned,
    StreamsBuilder,
    TimeWindows,
    Topology,
)
from kspark.kafka_streams import StreamsUncaughtExceptionHandler
from kspark.processor import Processor, ProcessorContext, Record
from kspark.serde import Serdes
from kspark.state import Stores
from tests.spark_conf import TEST_SPARK_CONF

S, L = Serdes.String(), Serdes.Long()
WINDOW_MS = 10_000
# Upstream tasks of the repartition topic fall behind one another while the application is down
# (kills, a broker restart); a record older than its window's end plus grace would be dropped as
# late, as in Kafka Streams, and the window's count would then rightly differ from the input's.
GRACE_MS = 600_000
REGIONS = 3
# eos_checks.check reads the numbered repartition topic whole, so its records stay: no purge of
# committed repartition records (kspark/runtime/spark/purge.py) within a test's run.
KEEP_REPARTITION_RECORDS = {"repartition.purge.interval.ms": 10**12}


def region_of(user: str) -> str:
    return f"region-{int(user.split('-')[1]) % REGIONS}"


class Numbering(Processor[str, str]):
    """Forwards each record of a user as ``<user>:<n>:<value>``, ``n`` counting the user's records
    (``slow_ms`` per record: a batch that lasts, for the test that kills an executor during one)."""

    def __init__(self, slow_ms: float = 0.0) -> None:
        self.slow_ms = slow_ms

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.seen: Any = context.get_state_store("seen")

    def process(self, record: Record[str, str]) -> None:
        if self.slow_ms:
            time.sleep(self.slow_ms / 1000)
        n = (self.seen.get(record.key) or 0) + 1
        self.seen.put(record.key, n)
        self.context.forward(record.with_value(f"{record.key}:{n}:{record.value}"))


def topology(t: dict[str, str], slow_ms: float = 0.0) -> Topology:
    b = StreamsBuilder()
    b.stream(t["in-a"], Consumed.with_(S, S)).to(t["copy"], Produced.with_(S, S))
    b.stream(t["in-c"], Consumed.with_(S, S)).group_by_key().count().to_stream().to(
        t["count"], Produced.with_(S, L)
    )
    b.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("seen"), S, L))
    (
        b.stream(t["in-b"], Consumed.with_(S, S))
        .process(functools.partial(Numbering, slow_ms), "seen")
        .map(lambda k, v: KeyValue(region_of(k), v))
        .repartition(Repartitioned.with_(S, S).with_name("numbered"))  # <application.id>-numbered-repartition
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(WINDOW_MS, GRACE_MS))
        .count()
        .to_stream()
        .map(lambda k, v: KeyValue(f"{k.key}@{k.window.start}", v))
        .to(t["windowed"], Produced.with_(S, L))
    )
    return b.build()


def _report_commits(apps: list[KafkaStreams], stop: threading.Event, began: float) -> None:
    last: dict[str, int] = {}
    while not stop.wait(0.1):
        for app in apps:
            runner = app._runner  # the test's view into the running queries
            for query in list(runner.queries) if runner is not None else []:
                progress = query.lastProgress
                if progress and progress["batchId"] > last.get(query.name, -1):
                    last[query.name] = progress["batchId"]
                    seconds = time.monotonic() - began
                    print(f"COMMITTED {query.name} {progress['batchId']} {seconds:.1f}", flush=True)


def _replace(error: BaseException) -> StreamsUncaughtExceptionHandler:
    print(f"REPLACED after {type(error).__name__}: {str(error)[:200]}", flush=True)
    return StreamsUncaughtExceptionHandler.REPLACE_THREAD


def main(argv: list[str]) -> int:
    from kspark.runtime.spark.session import create_spark_session

    began = time.monotonic()
    with open(argv[0], encoding="utf-8") as fh:
        settings = json.load(fh)
    spark = create_spark_session(TEST_SPARK_CONF)
    session_s = time.monotonic() - began
    apps = []
    for guarantee, topics in sorted(settings["apps"].items()):
        config = {
            "application.id": topics["application.id"],
            "bootstrap.servers": settings["bootstrap"],
            "state.dir": settings["state_dir"],
            "processing.guarantee": guarantee,
            "commit.interval.ms": 500,
            **KEEP_REPARTITION_RECORDS,
        }
        apps.append(KafkaStreams(topology(topics), config, spark=spark))
    for app in apps:
        # A query that fails (its Python worker slow to start on a loaded machine, say) restarts
        # from its checkpoint, as a failed stream thread is replaced; the results must still hold.
        app.set_uncaught_exception_handler(_replace)
        app.start()
    stop = threading.Event()
    threading.Thread(target=_report_commits, args=(apps, stop, began), daemon=True).start()
    print("STARTED", flush=True)
    # where an incarnation's time goes, in the test's apps.log
    print(
        f"eos_app: session in {session_s:.1f} s, applications started "
        f"{time.monotonic() - began - session_s:.1f} s later",
        file=sys.stderr,
        flush=True,
    )
    while all(app.state() is not KafkaStreams.State.ERROR for app in apps):
        time.sleep(0.5)
    stop.set()
    print("FAILED", flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
