"""Start an executor's Python daemons while the queries plan their first micro-batch.

Spark starts a Python daemon (:mod:`kspark.runtime.spark.worker_daemon`: an
interpreter that imports pandas, pyarrow, pyspark and kspark before it forks
workers) when the first Python task asks for a worker: in a query's first
micro-batch, after that batch's planning, on the critical path (~0.9 s of a
1M-record W1 batch here, bench/results/first-batch-python-daemon/). Started
by a one-row job in the background while the queries plan, it is up by the
time their tasks run.

Spark keeps one daemon per environment, and two kinds of stage have different
ones (``SPARK_SIMPLIFIED_TRACEBACK`` is set for Arrow runners only):

* stages that map Arrow batches -- a direct read's reader, ``mapInArrow``
  (``Stage.maps_arrow_batches``): warmed by a ``mapInArrow`` job;
* ``transformWithStateInPandas`` stages (engine tasks, native windowed
  counts): warmed by a batch ``transformWithStateInPandas`` job.

Each job runs only for a plan that has that kind of stage, so no daemon is
started that the queries would not use. On a cluster a job warms the executor
that runs it. A failure is logged and changes nothing: the first task then
starts the daemon, as it would have.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from kspark.runtime.spark.plan import Stage

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

__all__ = ["start_python_workers"]

_log = logging.getLogger(__name__)


def _pass_through(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield from batches


def _no_output_processor() -> Any:
    """A ``StatefulProcessor`` that reads its rows and writes nothing (pyspark imported late)."""
    from kspark.runtime.spark.tasks import stateful_processor_base

    class NoOutput(stateful_processor_base()):  # type: ignore[misc]
        def init(self, handle: Any) -> None:
            pass

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            for _ in rows:
                pass
            return iter(())

        def close(self) -> None:
            pass

    return NoOutput()


def _map_arrow_job(spark: SparkSession) -> None:
    spark.range(0, 1, 1, 1).mapInArrow(_pass_through, "id long").collect()


def _transform_with_state_job(spark: SparkSession) -> None:
    one = spark.range(0, 1, 1, 1)
    one.groupBy("id").transformWithStateInPandas(
        _no_output_processor(), "id long", "Append", "None"
    ).collect()


def start_python_workers(spark: SparkSession, stages: Iterable[Stage]) -> threading.Thread:
    """Start, in a background thread, the daemons of the kinds of stage in ``stages`` (a
    plan's); the thread ends when they are up (or their jobs failed, logged)."""
    maps_arrow = [stage.maps_arrow_batches for stage in stages]
    jobs: list[tuple[str, Callable[[SparkSession], None]]] = []
    if any(maps_arrow):
        jobs.append(("mapInArrow", _map_arrow_job))
    if not all(maps_arrow):
        jobs.append(("transformWithStateInPandas", _transform_with_state_job))

    def run() -> None:
        for name, job in jobs:
            try:
                job(spark)
            except Exception as e:  # the queries start their own workers regardless
                _log.warning(
                    "starting the %s Python workers ahead of the first micro-batch failed: %s", name, e
                )

    thread = threading.Thread(target=run, name="kspark-python-workers", daemon=True)
    thread.start()
    return thread
