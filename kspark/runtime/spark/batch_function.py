"""The function each kspark query gives Spark's ``foreachBatch``: run a micro-batch, count what it did.

Its stage (runner.py) reads, processes and writes the batch's records on the
executors; what comes back to the driver is one row per Spark task, with the
records it wrote (and read, and its tasks' reports, where the stage says).
A batch cut short by ``KafkaStreams.close()`` fails in the shape Spark
recognises as a stop, so nothing of it is committed and it runs again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark.runtime.spark.metrics import TaskReports, task_reports

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["RunBatch"]


class _StoppedDuringBatch(Exception):
    """A micro-batch cut short by ``stop()``: nothing of it is committed; it runs again at the next start."""


# Spark tells "interrupted by stop()" from a failure of a foreachBatch function by matching
# this shape in the Python traceback (StreamExecution.PROXY_ERROR). Its regex recurses per
# character: on the full traceback of a cancelled job (Java stack traces included) it overflows
# the stack and Spark prints a StackOverflowError of ~1,000 lines. A short message that still
# has the shape is classified as the stop it is.
_STOPPED_MESSAGE = (
    "micro-batch {batch_id} was cancelled by stop() and runs again from the checkpoint at the next start"
    " (py4j.protocol.Py4JJavaError: An error occurred while calling foreachBatch:"
    " java.lang.InterruptedException)"
)


class RunBatch:
    """The ``foreachBatch`` function: run a micro-batch (its stage writes the output) and count the output.

    ``tail``: what runs over the batch's rows and writes the output itself (a
    native count's updated rows go through its ``CountTail``): DataFrame -> DataFrame.
    ``stopping``: set by :meth:`SparkRunner.stop`; a batch that fails while it
    is set was cancelled by the stop and says so in the shape Spark expects.
    ``idle`` and ``last_done`` let the stop wait for a running batch.
    ``records_read``: input records of the batches so far, when the rows say
    (a direct read's do, direct_source.py; Spark's ``numInputRows`` counts its rows).
    """

    def __init__(
        self,
        on_batch: Callable[[int, int], None] | None,
        tail: Any = None,
        stopping: threading.Event | None = None,
        after_collect: Callable[[int], None] | None = None,
    ) -> None:
        self.on_batch = on_batch
        self.tail = tail
        # Called with the batch id once its tasks have returned (their writes are in Kafka),
        # before Spark commits it: where the query's changelogs end (replica.py).
        self.after_collect = after_collect
        self.stopping = stopping if stopping is not None else threading.Event()
        self.idle = threading.Event()
        self.idle.set()
        self.last_done = -1  # the last batch id this function returned from
        self.records_read: int | None = None
        self.batch_records: dict[int, int] = {}  # records of recent batches, when the rows say
        self.batch_written: dict[int, int] = {}  # output records of recent batches
        self.batch_reports: dict[int, TaskReports] = {}  # what the tasks reported, when any
        # The rows' columns: one query's batches all have its stage's schema, and asking a
        # DataFrame for them is a JVM round trip at every micro-batch.
        self._columns: frozenset[str] | None = None

    def release(self) -> None:
        """Drop what the function calls back into (its query has stopped): py4j keeps the
        function for as long as the JVM holds its proxy, which must not keep the runner alive."""
        self.on_batch = None
        self.after_collect = None
        self.tail = None

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        self.idle.clear()
        try:
            if self.tail is not None:
                df = self.tail(df)
            try:
                rows = df.collect()
            except Exception:
                if self.stopping.is_set():
                    raise _StoppedDuringBatch(_STOPPED_MESSAGE.format(batch_id=batch_id)) from None
                raise
            if self.after_collect is not None:
                self.after_collect(batch_id)
            if self._columns is None:
                self._columns = frozenset(df.columns)
            written = sum(int(r["written"]) for r in rows)
            self.batch_written[batch_id] = written
            for old in [b for b in self.batch_written if b < batch_id - 100]:
                del self.batch_written[old]  # the metrics listener took them long ago
                self.batch_reports.pop(old, None)
            if "task_metrics" in self._columns:
                reports = task_reports(str(r["task_metrics"] or "") for r in rows)
                if reports.dropped or reports.e2e:
                    self.batch_reports[batch_id] = reports
            if "records" in self._columns:
                records = sum(int(r["records"]) for r in rows)
                self.records_read = (self.records_read or 0) + records
                self.batch_records[batch_id] = records
                for old in [b for b in self.batch_records if b < batch_id - 100]:
                    del self.batch_records[old]
            if self.on_batch is not None:
                self.on_batch(batch_id, written)
            self.last_done = batch_id
        finally:
            self.idle.set()
