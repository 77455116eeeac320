"""Run conformance scenarios on a multi-process Spark cluster: ``local-cluster[2,1,1024]``.

Two executor JVMs with their own Python workers, so nothing may rely on
driver memory or on a single process. A SparkContext is one per process,
hence this runs as its own process (``test_local_cluster.py`` starts it):

    python -m tests.conformance.local_cluster_check BOOTSTRAP STATE_DIR SCENARIO...

Exit status 0 when every scenario matches the reference interpreter.
"""

from __future__ import annotations

import sys
import uuid
from itertools import count
from typing import Any

from kspark.dev.kafka import LocalKafka

from . import harness, scenarios
from .harness import cached_difference, difference, reference_outputs, spark_outputs

__all__ = ["main", "NATIVE"]

NATIVE = ("count", "tumbling_window_count", "hopping_window_count")
"""Scenarios whose counts the runner computes natively when the record cache is on."""

CACHE_ON = {"statestore.cache.max.bytes": 10 * 1024 * 1024}


class _Broker(LocalKafka):
    """The already running test broker, reached by address (never started or stopped here)."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__()
        self._address = bootstrap

    @property
    def bootstrap_servers(self) -> str:
        return self._address


def main(argv: list[str]) -> int:
    from pyspark import cloudpickle

    from kspark.runtime.spark.session import create_spark_session

    bootstrap, state_dir, names = argv[0], argv[1], argv[2:]
    for module in (scenarios, harness):
        cloudpickle.register_pickle_by_value(module)
    spark = create_spark_session({"spark.master": "local-cluster[2,1,1024]"})
    broker = _Broker(bootstrap)
    counter = count()

    def topic_factory(prefix: str = "t", partitions: int = 1, config: Any = None) -> str:
        name = f"lc-{prefix}-{uuid.uuid4().hex[:8]}-{next(counter)}"
        broker.create_topic(name, partitions=partitions, config=config)
        return name

    failed = 0
    try:
        for name in names:
            scenario = scenarios.BY_NAME[name]
            config = {
                "application.id": f"lc-{name}-{uuid.uuid4().hex[:6]}",
                "bootstrap.servers": bootstrap,
                "state.dir": state_dir,
                "statestore.cache.max.bytes": 0,
                **scenario.config,
            }
            got = spark_outputs(scenario, config, broker, spark, topic_factory)
            expected = reference_outputs(scenario, config)
            if got != expected:
                failed += 1
                print(f"MISMATCH {name}:\n{difference(got, expected)}", flush=True)
            else:
                print(f"ok {name}", flush=True)
            if name in NATIVE:
                # Record cache on: the native count runs, restarted twice, its tasks on either executor.
                cached = {**config, "application.id": f"{config['application.id']}-c", **CACHE_ON}
                got = spark_outputs(scenario, cached, broker, spark, topic_factory, runs=3)
                wrong = cached_difference(got, reference_outputs(scenario, config))
                failed += bool(wrong)
                print(
                    f"MISMATCH {name} (native, restarted):\n{wrong}" if wrong else f"ok {name} (native)",
                    flush=True,
                )
    finally:
        spark.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
