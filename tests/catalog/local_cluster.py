"""Run catalog cases on a multi-process Spark cluster, ``local-cluster[2,1,1024]``: two executor
JVMs with Python workers of their own, so nothing may rely on the driver's memory or on one
process. A SparkContext is one per process, hence this is a process of its own
(``test_spark_runs.py`` starts it)::

    python -m tests.catalog.local_cluster BOOTSTRAP STATE_DIR OUT CASE_ID...

It runs the cases (one prefixed ``restarted/`` is restarted mid-stream), packed into
applications as the local-mode runs are, on the already running
broker at BOOTSTRAP and pickles ``{case id: {"outputs", "error", "application", "seconds",
"topics"}}`` (plain Python values only) to OUT; the test compares them with the reference.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

from kspark.dev.kafka import LocalKafka
from tests.spark_conf import TEST_SPARK_CONF

from .scenarios import BY_NAME
from .spark import CONFIGS, Case, CatalogRunner

__all__ = ["main", "parse_case_id", "RESTARTED", "RESTARTS"]

RESTARTED = "restarted/"
"""A case id with this prefix runs with its input in ``RESTARTS + 1`` slices, the application
restarted after each (its tasks then start again on either executor)."""

RESTARTS = 2


class _Broker(LocalKafka):
    """The already running test broker, reached by address (never started or stopped here)."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__()
        self._address = bootstrap

    @property
    def bootstrap_servers(self) -> str:
        return self._address


def parse_case_id(case_id: str) -> Case:
    """The case a :attr:`Case.id` names."""
    name, config_id, partitions = case_id.rsplit("/", 2)
    config = next(c for c in CONFIGS if c.id == config_id)
    return Case(BY_NAME[name], config, int(partitions.removeprefix("p")))


def main(argv: list[str]) -> int:
    from kspark.runtime.spark.session import create_spark_session

    bootstrap, state_dir, out, case_ids = argv[0], Path(argv[1]), Path(argv[2]), argv[3:]
    cases = [parse_case_id(c) for c in case_ids if not c.startswith(RESTARTED)]
    restarted = [parse_case_id(c.removeprefix(RESTARTED)) for c in case_ids if c.startswith(RESTARTED)]
    spark = create_spark_session({**TEST_SPARK_CONF, "spark.master": "local-cluster[2,1,1024]"})
    try:
        runner = CatalogRunner(_Broker(bootstrap), spark, state_dir)
        outcomes = runner.run(cases)
        if restarted:
            again = runner.run(restarted, restarts=RESTARTS)
            outcomes.update({RESTARTED + case_id: o for case_id, o in again.items()})
    finally:
        spark.stop()
    plain = {
        case_id: {
            "outputs": o.outputs,
            "error": o.error,
            "application": o.application,
            "seconds": o.seconds,
            "topics": dict(o.topics),
        }
        for case_id, o in outcomes.items()
    }
    out.write_bytes(pickle.dumps(plain))
    print(f"ran {len(cases)} cases; timings {runner.timings}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
