"""exactly_once_v2 on ``local-cluster[2,1,1024]`` with an executor killed in the middle of a batch.

    python -m tests.runtime.spark.eos_cluster_check BOOTSTRAP STATE_DIR TOPICS.json

A SparkContext is one per process, so the test (test_exactly_once_faults.py)
runs this as a process of its own. The input is already in Kafka; the
application (eos_app.py's topologies, its engine step slowed down so that a
micro-batch takes seconds) processes it with ``process_available()`` while a
thread kills one executor JVM with SIGKILL once the batch is running. Spark
runs the lost tasks again on an executor that lives; their transactions fence
the killed attempts'. Then it reads every store through interactive queries.
Prints ``KILLED <pid>``, ``STORES <json>`` and ``DONE`` and exits 0.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

from kspark import KafkaStreams
from kspark.errors import InvalidStateStoreException
from kspark.state import QueryableStoreTypes
from tests.runtime.spark import eos_app
from tests.spark_conf import TEST_SPARK_CONF


def _executor_pids() -> list[int]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    return [int(line.split()[0]) for line in out.splitlines() if "CoarseGrainedExecutorBackend" in line]


def _kill_one_executor_when_busy(done: threading.Event) -> None:
    """Once an executor's Python workers are processing (the batch runs), kill that executor."""
    while not done.is_set():
        for pid in _executor_pids():
            children = subprocess.run(
                ["pgrep", "-P", str(pid)], capture_output=True, text=True
            ).stdout.split()
            if children:  # its Python daemon forked workers: tasks are running there
                time.sleep(2.0)
                os.kill(pid, signal.SIGKILL)
                print(f"KILLED {pid}", flush=True)
                return
        time.sleep(0.2)


def main(argv: list[str]) -> int:
    from kspark.runtime.spark.session import create_spark_session

    bootstrap, state_dir, topics_file = argv
    with open(topics_file, encoding="utf-8") as fh:
        topics = json.load(fh)
    spark = create_spark_session(
        {**TEST_SPARK_CONF, "spark.master": "local-cluster[2,1,1024]", "spark.task.maxFailures": "8"}
    )
    config = {
        "application.id": topics["application.id"],
        "bootstrap.servers": bootstrap,
        "state.dir": state_dir,
        "processing.guarantee": "exactly_once_v2",
        **eos_app.KEEP_REPARTITION_RECORDS,
    }
    # Each numbered record takes 2 ms: the batch lasts long enough for the kill to hit it.
    app = KafkaStreams(eos_app.topology(topics, slow_ms=2.0), config, spark=spark)
    done = threading.Event()
    threading.Thread(target=_kill_one_executor_when_busy, args=(done,), daemon=True).start()
    try:
        app.process_available()
        # Interactive queries on the cluster: every store as the driver's replica has it, for the
        # test to check against the input (the state lived on executors, one of them killed).
        print("STORES " + json.dumps(store_contents(app)), flush=True)
    finally:
        done.set()
        app.close()
        spark.stop()
    print("DONE", flush=True)
    return 0


def store_contents(app: KafkaStreams) -> dict[str, dict[str, int]]:
    """Each queryable store's entries: key-value stores by key, window stores by ``key@start``."""
    out: dict[str, dict[str, int]] = {}
    for name in sorted(app.metadata_for_all_streams_clients()[0].state_store_names):
        try:
            view = app.store(name, QueryableStoreTypes.key_value_store())
            out[name] = {str(kv.key): kv.value for kv in view.all()}
        except InvalidStateStoreException:  # not a key-value store
            view = app.store(name, QueryableStoreTypes.window_store())
            out[name] = {f"{kv.key.key}@{kv.key.window.start}": kv.value for kv in view.all()}
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
