"""exactly_once_v2 through a broker restart: nothing lost, nothing written twice.

eos_app.py's topologies (direct read, native count, engine tasks with a store,
a repartition topic, a native windowed count) run continuously under
exactly_once_v2 while input flows; the broker is stopped for thirty seconds
(longer than the clients' 30 s request timeouts) and started again. The
application either recovers by itself or stops with an error and is started
again (both are Kafka Streams behaviours); either way, once it has caught
up, the outputs hold every input exactly once.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kspark import KafkaStreams
from kspark.dev.kafka import LocalKafka
from tests.runtime.spark import eos_app
from tests.runtime.spark.eos_app import WINDOW_MS, region_of
from tests.runtime.spark.eos_checks import Input, check

pytestmark = [pytest.mark.integration, pytest.mark.slow]

pyspark_cloudpickle = pytest.importorskip("pyspark.cloudpickle")
pyspark_cloudpickle.register_pickle_by_value(eos_app)
pyspark_cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _committed_batches(app: KafkaStreams) -> int:
    runner = app._runner  # the test's view into the running queries
    return sum(q.lastProgress["batchId"] + 1 for q in list(runner.queries) if q.lastProgress) if runner else 0


def test_a_broker_restart_during_an_exactly_once_run(spark: Any, tmp_path: Path) -> None:
    with LocalKafka() as kafka:  # a broker of its own: this test restarts it
        topics: dict[str, str] = {"application.id": "broker-restart"}
        for name in ("in-a", "in-b", "in-c", "copy", "count", "windowed"):
            kafka.create_topic(name, partitions=2)
            topics[name] = name
        config = {
            "application.id": topics["application.id"],
            "bootstrap.servers": kafka.bootstrap_servers,
            "state.dir": str(tmp_path / "state"),
            "processing.guarantee": "exactly_once_v2",
            "commit.interval.ms": 500,
            **eos_app.KEEP_REPARTITION_RECORDS,
        }
        producer = Input(kafka, ["in-a", "in-b", "in-c"], rate=500)
        producer.start()
        app = KafkaStreams(eos_app.topology(topics), config, spark=spark)
        restarts = 0
        try:
            app.start()
            deadline = time.monotonic() + 120
            while _committed_batches(app) < 3 and time.monotonic() < deadline:
                time.sleep(0.5)
            assert _committed_batches(app) >= 3, "no micro-batch committed before the broker restart"
            kafka.restart(down_seconds=30.0)
            time.sleep(10)
            producer.stop.set()
            producer.join()
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                if app.state() is KafkaStreams.State.ERROR:
                    # It stopped with an error rather than waiting: started again, it continues exactly.
                    assert restarts < 3, "the application failed again and again after the broker restart"
                    app.close(timeout=60)
                    app = KafkaStreams(eos_app.topology(topics), config, spark=spark)
                    app.start()
                    restarts += 1
                result = check(kafka, topics, producer.sent)
                if result["copy_lost"] == 0 and result["counts_exact"] and result["windows_exact"]:
                    break
                time.sleep(5)
        finally:
            app.close(timeout=60)
        result = check(kafka, topics, producer.sent)
    print({"application restarts": restarts, **result})
    assert result["inputs"] > 0
    assert result["copy_lost"] == 0 and result["copy_duplicates"] == 0, result
    assert result["counts_exact"] and result["counts_strictly_increase"], result
    assert (
        result["numbered_lost"] == 0 and result["numbered_duplicates"] == 0 and result["numbering_exact"]
    ), result
    assert result["windows_exact"] and result["windows_strictly_increase"], result


ROOT = Path(__file__).resolve().parents[3]


def test_an_executor_killed_mid_batch_on_a_cluster_still_writes_once(
    kafka: LocalKafka, topic_factory: Any, tmp_path: Path
) -> None:
    """``local-cluster[2,1,1024]``: Spark runs the killed executor's tasks again elsewhere; their
    transactions fence the killed attempts' and the outputs hold every input exactly once."""
    import json
    import os
    import subprocess

    topics: dict[str, str] = {"application.id": f"cluster-kill-{os.getpid()}"}
    for name in ("in-a", "in-b", "in-c", "copy", "count", "windowed"):
        topics[name] = topic_factory(name, partitions=4)
    producer = Input(kafka, [topics["in-a"], topics["in-b"], topics["in-c"]], rate=2_000)
    producer.start()
    time.sleep(6)  # ~12,000 records, preloaded
    producer.stop.set()
    producer.join()
    topics_file = tmp_path / "topics.json"
    topics_file.write_text(json.dumps(topics))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.runtime.spark.eos_cluster_check",
            kafka.bootstrap_servers,
            str(tmp_path / "state"),
            str(topics_file),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0 and "DONE" in proc.stdout, proc.stdout + proc.stderr[-6000:]
    assert "KILLED" in proc.stdout, "no executor was killed during the batch"
    result = check(kafka, topics, producer.sent)
    print(result)
    # The stores, read through interactive queries on the cluster, equal what the input makes.
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith("STORES ")]
    stores = json.loads(line.removeprefix("STORES "))
    per_user = Counter(user for user, _, _ in producer.sent)
    per_window = Counter(f"{region_of(user)}@{ts - ts % WINDOW_MS}" for user, _, ts in producer.sent)
    assert stores["seen"] == dict(per_user), "the Processor API store"
    assert sum(1 for s in stores.values() if s == dict(per_user)) == 2, "seen and the count's store"
    assert dict(per_window) in stores.values(), "the windowed count's store"
    assert result["copy_lost"] == 0 and result["copy_duplicates"] == 0, result
    assert result["counts_exact"] and result["counts_strictly_increase"], result
    assert (
        result["numbered_lost"] == 0 and result["numbered_duplicates"] == 0 and result["numbering_exact"]
    ), result
    assert result["windows_exact"] and result["windows_strictly_increase"], result
