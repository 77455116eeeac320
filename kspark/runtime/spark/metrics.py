"""``KafkaStreams.metrics()`` on Spark: Kafka Streams' metric names, from Spark's query progress.

A Kafka Streams thread runs its tasks and commits them together; on Spark a
streaming query does (plan.py), so each query is a *thread* here, and its
name (``<application.id>-subtopology-<n>``...) the ``thread-id`` tag. Each
micro-batch is one commit. What kspark reports (docs/operations.md):

* ``stream-thread-metrics`` per query: ``process-total`` (input records),
  ``process-rate``, ``commit-total`` (micro-batches), ``commit-rate``,
  ``commit-latency-avg`` / ``-max`` (a batch's ``triggerExecution`` time:
  planning, processing, writing and committing), ``process-latency-avg`` /
  ``-max`` (a batch's ``addBatch`` time, processing and writing, divided by
  its input records: Kafka Streams' thread divides a processing pass's time
  by the records it processed), rates and latencies over Kafka's default
  sample window (``metrics.sample.window.ms`` x ``metrics.num.samples``,
  60 s);
* ``consumer-fetch-manager-metrics`` per query: ``records-lag`` per input
  topic-partition (its last stable offset minus where the query's last
  committed batch ended) and ``records-lag-max``;
* ``producer-metrics`` per query: ``record-send-total`` and ``record-send-rate``
  (output records the query's tasks wrote);
* ``stream-task-metrics`` per task that has dropped a record:
  ``dropped-records-total`` and ``dropped-records-rate`` (tags ``thread-id``,
  the query, and ``task-id``), counted by the tasks in the Python workers
  and sent with each Spark task's row (``warm.new_task_metrics``);
* ``stream-processor-node-metrics`` per source and terminal node of a task
  that processed a record: ``record-e2e-latency-avg`` / ``-min`` / ``-max``
  over the sample window (the task's wall clock, set as its micro-batch or
  a chunk of it starts: ``warm.refresh_wall_clock``, minus the record's
  timestamp), sent the same way;
* ``stream-state-metrics`` per store operation, at the ``DEBUG`` recording
  level only: ``<op>-rate``, ``<op>-latency-avg`` / ``-max`` (ns; tags
  ``thread-id``, ``task-id``, ``<scope>-state-id``), timed by the stores'
  typed layer (``kspark.state.internals.store_metrics``), sent the same way;
* ``stream-metrics``: ``alive-stream-threads`` (running queries).

Counts come from a ``StreamingQueryListener`` on the driver (every batch,
not only the last hundred a query keeps); a direct read's records come from
its batches' rows (Spark counts one row per task there).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from kspark.metrics import MetricName
from kspark.processor.internals.latency import E2E_GROUP, LatencyStats
from kspark.state.internals.store_metrics import STATE_GROUP

__all__ = [
    "QueryMetrics",
    "BatchCounts",
    "TaskReports",
    "ProgressListener",
    "task_reports",
    "thread_metrics",
    "lag_metrics",
]

_log = logging.getLogger(__name__)
_K = TypeVar("_K")

THREAD_GROUP = "stream-thread-metrics"
TASK_GROUP = "stream-task-metrics"
FETCH_GROUP = "consumer-fetch-manager-metrics"
CLIENT_GROUP = "stream-metrics"
PRODUCER_GROUP = "producer-metrics"


@dataclass
class TaskReports:
    """What a batch's rows say of its Kafka Streams tasks (``warm.new_task_metrics``): records
    dropped per task id, and end-to-end latencies per (task id, source or terminal node)."""

    dropped: dict[str, int] = field(default_factory=dict)
    e2e: dict[tuple[str, str], LatencyStats] = field(default_factory=dict)
    # (task id, store scope, store, operation) -> the operation's calls, latencies in ns
    stores: dict[tuple[str, str, str, str], LatencyStats] = field(default_factory=dict)


def task_reports(cells: Iterable[str]) -> TaskReports:
    """The ``task_metrics`` cells of a batch's rows (JSON ``{"dropped": {task: records}, "e2e":
    {task: {node: [count, sum, min, max]}}}``, ``""`` for nothing), summed."""
    out = TaskReports()
    for cell in cells:
        if not cell:
            continue
        report = json.loads(cell)
        for task, n in report.get("dropped", {}).items():
            out.dropped[task] = out.dropped.get(task, 0) + int(n)
        for task, nodes in report.get("e2e", {}).items():
            for node, stats in nodes.items():
                _merge_into(out.e2e, (task, node), LatencyStats.of(stats))
        for task, stores in report.get("stores", {}).items():
            for store, timed in stores.items():
                for operation, stats in timed["ops"].items():
                    key = (task, str(timed["scope"]), store, operation)
                    _merge_into(out.stores, key, LatencyStats.of(stats))
    return out


def _merge_into(into: dict[Any, LatencyStats], key: Any, stats: LatencyStats) -> None:
    have = into.get(key)
    if have is None:
        into[key] = stats
    else:
        have.merge(stats)


@dataclass(frozen=True)
class BatchCounts:
    """What a batch's rows say: input records (None: Spark counts them), output records written,
    and what its tasks report (records dropped, end-to-end latencies)."""

    records: int | None
    written: int
    tasks: TaskReports = field(default_factory=TaskReports)


@dataclass
class QueryMetrics:
    """One query's committed micro-batches: totals and those of the sample window."""

    records: int = 0
    commits: int = 0
    # (when, records, latency ms, records written)
    window: deque[tuple[float, int, float, int]] = field(default_factory=deque)
    ends: dict[tuple[str, int], int] = field(default_factory=dict)  # where the last batch ended
    written: int = 0
    dropped: dict[str, int] = field(default_factory=dict)  # records dropped so far, by task id
    # (when, records dropped by task id) of the batches in the sample window that dropped any
    dropped_window: deque[tuple[float, Mapping[str, int]]] = field(default_factory=deque)
    # Every (task id, node) that reported an end-to-end latency, and those of the sample window.
    e2e_nodes: set[tuple[str, str]] = field(default_factory=set)
    e2e_window: deque[tuple[float, Mapping[tuple[str, str], LatencyStats]]] = field(default_factory=deque)
    # Every (task id, scope, store, operation) timed (DEBUG level), and those of the sample window.
    store_ops: set[tuple[str, str, str, str]] = field(default_factory=set)
    store_window: deque[tuple[float, Mapping[tuple[str, str, str, str], LatencyStats]]] = field(
        default_factory=deque
    )
    # (when, processing ms per input record) of the sample window's batches that read any
    process_window: deque[tuple[float, float]] = field(default_factory=deque)

    def add(
        self,
        when: float,
        records: int,
        latency_ms: float,
        written: int,
        window_s: float,
        tasks: TaskReports | None = None,
        process_ms: float | None = None,
    ) -> None:
        """One committed batch at ``when``: ``latency_ms`` its whole time, ``process_ms`` the part
        spent processing and writing (None: not known)."""
        self.records += records
        self.commits += 1
        self.written += written
        self.window.append((when, records, latency_ms, written))
        while self.window and self.window[0][0] < when - window_s:
            self.window.popleft()
        if tasks is not None and tasks.dropped:
            for task, n in tasks.dropped.items():
                self.dropped[task] = self.dropped.get(task, 0) + n
            self.dropped_window.append((when, dict(tasks.dropped)))
        while self.dropped_window and self.dropped_window[0][0] < when - window_s:
            self.dropped_window.popleft()
        if tasks is not None and tasks.e2e:
            self.e2e_nodes.update(tasks.e2e)
            self.e2e_window.append((when, dict(tasks.e2e)))
        while self.e2e_window and self.e2e_window[0][0] < when - window_s:
            self.e2e_window.popleft()
        if tasks is not None and tasks.stores:
            self.store_ops.update(tasks.stores)
            self.store_window.append((when, dict(tasks.stores)))
        while self.store_window and self.store_window[0][0] < when - window_s:
            self.store_window.popleft()
        if process_ms is not None and records > 0:
            self.process_window.append((when, process_ms / records))
        while self.process_window and self.process_window[0][0] < when - window_s:
            self.process_window.popleft()

    def copy(self) -> QueryMetrics:
        return QueryMetrics(
            self.records,
            self.commits,
            deque(self.window),
            dict(self.ends),
            self.written,
            dict(self.dropped),
            deque(self.dropped_window),
            set(self.e2e_nodes),
            deque(self.e2e_window),
            set(self.store_ops),
            deque(self.store_window),
            deque(self.process_window),
        )


class ProgressListener:
    """Feeds :class:`QueryMetrics` from Spark's progress events of the queries ``watch`` names.

    ``records_of(name, batch_id)`` gives a batch's input records where a stage
    counts its own (a direct read; else None: ``numInputRows``) and the records
    it wrote.
    """

    def __init__(
        self,
        watch: Callable[[str], bool],
        records_of: Callable[[str, int], BatchCounts],
        window_s: float,
    ) -> None:
        self.watch = watch
        self.records_of = records_of
        self.window_s = window_s
        self.queries: dict[str, QueryMetrics] = {}
        self.lock = threading.Lock()
        self._listener: Any = None
        # Told of every committed batch of a watched query: (query, batch id, where it ended).
        self.on_commit: Callable[[str, int, dict[tuple[str, int], int]], None] | None = None
        self._json_listener: _JsonProgressListener | None = None  # what the JVM calls (attach)

    def on_progress(
        self,
        name: str,
        batch_id: int,
        rows: int,
        latency_ms: float,
        ends: dict[tuple[str, int], int],
        process_ms: float | None = None,
    ) -> None:
        if not self.watch(name):
            return
        counts = self.records_of(name, batch_id)
        with self.lock:
            metrics = self.queries.setdefault(name, QueryMetrics())
            records = rows if counts.records is None else counts.records
            metrics.add(
                time.monotonic(), records, latency_ms, counts.written, self.window_s, counts.tasks, process_ms
            )
            if ends:
                metrics.ends = ends
        if self.on_commit is not None:
            self.on_commit(name, batch_id, ends)

    def on_progress_json(self, progress: Mapping[str, Any]) -> None:
        """A query's progress report, as Spark's JSON of it."""
        durations = progress.get("durationMs") or {}
        self.on_progress(
            str(progress.get("name")),
            int(progress["batchId"]),
            int(progress.get("numInputRows") or 0),
            float(durations.get("triggerExecution", 0)),
            end_offsets(progress),
            float(durations["addBatch"]) if "addBatch" in durations else None,
        )

    def attach(self, spark: Any) -> None:
        """Register with ``spark``'s streaming query manager (once)."""
        from pyspark.sql.streaming.listener import StreamingQueryListener

        owner = self

        class Listener(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None:
                pass

            def onQueryProgress(self, event: Any) -> None:  # Spark Connect's path
                owner.on_progress_json(json.loads(event.progress.json))

            def onQueryIdle(self, event: Any) -> None:
                pass

            def onQueryTerminated(self, event: Any) -> None:
                pass

            @property
            def _jlistener(self) -> Any:
                # What PySpark registers in the driver's JVM (a private hook of its own): a
                # listener that reads each report as JSON (_JsonProgressListener).
                from pyspark import SparkContext

                if not hasattr(self, "_jlistenerobj"):
                    assert SparkContext._jvm is not None
                    owner._json_listener = _JsonProgressListener(owner.on_progress_json)
                    self._jlistenerobj = SparkContext._jvm.PythonStreamingQueryListenerWrapper(
                        owner._json_listener
                    )
                return self._jlistenerobj

        if self._listener is None:
            self._listener = Listener()
            spark.streams.addListener(self._listener)

    @property
    def attached(self) -> bool:
        return self._listener is not None

    def detach(self, spark: Any) -> None:
        if self._listener is not None:
            spark.streams.removeListener(self._listener)
            self._listener = None
        if self._json_listener is not None:
            # py4j keeps the object the JVM was handed for as long as the JVM holds its proxy,
            # maybe for the process's life: it must not keep this listener (and its runner).
            self._json_listener.on_progress = lambda progress: None
            self._json_listener = None

    def snapshot(self) -> dict[str, QueryMetrics]:
        with self.lock:
            return {n: m.copy() for n, m in self.queries.items()}


class _JsonProgressListener:
    """Spark's ``PythonStreamingQueryListener``, implemented in Python through py4j, that reads a
    progress report as its JSON: three calls into the JVM a report.

    PySpark's own implementation converts every field of a report with a call into the JVM each
    (a state operator's custom metrics one by one): on W2 at a 100 ms trigger that conversion
    was two thirds of the driver's py-spy samples in calls into the JVM, competing with the
    ``foreachBatch`` calls; reading JSON took a micro-batch's p50 from 287 to 243 ms (``python -m
    bench.batch_floor --workload W2 --rate 20000 --commit-ms 100``,
    bench/results/latency-100ms-trigger).
    """

    def __init__(self, on_progress: Callable[[Mapping[str, Any]], None]) -> None:
        self.on_progress = on_progress

    def onQueryStarted(self, jevent: Any) -> None:
        pass

    def onQueryProgress(self, jevent: Any) -> None:
        self.on_progress(json.loads(jevent.progress().json()))

    def onQueryIdle(self, jevent: Any) -> None:
        pass

    def onQueryTerminated(self, jevent: Any) -> None:
        pass

    class Java:  # py4j: the Java interface this implements
        implements: ClassVar[list[str]] = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]


def thread_metrics(queries: Mapping[str, QueryMetrics], window_s: float) -> dict[MetricName, float]:
    """The ``stream-thread-metrics`` of each query (see the module docstring)."""
    out: dict[MetricName, float] = {}
    for name, m in queries.items():
        latencies = [latency for _, _, latency, _ in m.window]

        def put(metric: str, value: float, thread: str = name) -> None:
            out[MetricName.of(metric, THREAD_GROUP, thread_id=thread)] = value

        put("process-total", float(m.records))
        put("process-rate", sum(records for _, records, _, _ in m.window) / window_s)
        put("commit-total", float(m.commits))
        put("commit-rate", len(m.window) / window_s)
        # Kafka reports NaN for an average and a maximum without samples.
        put("commit-latency-avg", sum(latencies) / len(latencies) if latencies else float("nan"))
        put("commit-latency-max", max(latencies) if latencies else float("nan"))
        per_record = [ms for _, ms in m.process_window]
        put("process-latency-avg", sum(per_record) / len(per_record) if per_record else float("nan"))
        put("process-latency-max", max(per_record) if per_record else float("nan"))
        # Its producers' output, as a Kafka producer's metrics (client-id: the query).
        sent = sum(written for _, _, _, written in m.window)
        out[MetricName.of("record-send-total", PRODUCER_GROUP, client_id=name)] = float(m.written)
        out[MetricName.of("record-send-rate", PRODUCER_GROUP, client_id=name)] = sent / window_s
        for task, total in sorted(m.dropped.items()):
            recent = sum(d.get(task, 0) for _, d in m.dropped_window)
            out[MetricName.of("dropped-records-total", TASK_GROUP, thread_id=name, task_id=task)] = float(
                total
            )
            out[MetricName.of("dropped-records-rate", TASK_GROUP, thread_id=name, task_id=task)] = (
                recent / window_s
            )
        for task, node in sorted(m.e2e_nodes):
            stats = _in_window((task, node), m.e2e_window)
            tags = {"thread_id": name, "task_id": task, "processor_node_id": node}
            out[MetricName.of("record-e2e-latency-avg", E2E_GROUP, **tags)] = stats.avg()
            out[MetricName.of("record-e2e-latency-min", E2E_GROUP, **tags)] = stats.minimum()
            out[MetricName.of("record-e2e-latency-max", E2E_GROUP, **tags)] = stats.maximum()
        for task, scope, store, operation in sorted(m.store_ops):
            stats = _in_window((task, scope, store, operation), m.store_window)
            store_tags = (("thread-id", name), ("task-id", task), (f"{scope}-state-id", store))
            out[MetricName(f"{operation}-rate", STATE_GROUP, store_tags)] = stats.count / window_s
            out[MetricName(f"{operation}-latency-avg", STATE_GROUP, store_tags)] = stats.avg()
            out[MetricName(f"{operation}-latency-max", STATE_GROUP, store_tags)] = stats.maximum()
    return out


def _in_window(key: _K, window: Iterable[tuple[float, Mapping[_K, LatencyStats]]]) -> LatencyStats:
    """``key``'s stats summed over the batches of a sample window."""
    stats = LatencyStats()
    for _, batch in window:
        got = batch.get(key)
        if got is not None:
            stats.merge(got)
    return stats


def end_offsets(progress: Mapping[str, Any] | None) -> dict[tuple[str, int], int]:
    """Where a query's last committed batch ended, per topic-partition (its sources' ``endOffset``)."""
    out: dict[tuple[str, int], int] = {}
    for source in (progress or {}).get("sources") or []:
        end = source.get("endOffset")
        if isinstance(end, str):
            try:
                end = json.loads(end)
            except ValueError:
                continue
        if not isinstance(end, dict):
            continue
        if "epoch" in end:  # a low-latency query's batch (low_latency.py): the group has the ends
            continue
        for topic, partitions in end.items():
            if isinstance(partitions, dict):
                for partition, offset in partitions.items():
                    out[(str(topic), int(partition))] = int(offset)
    return out


def lag_metrics(
    ends: Mapping[str, Mapping[tuple[str, int], int]],
    latest: Callable[[Iterable[tuple[str, int]]], Mapping[tuple[str, int], int]],
) -> dict[MetricName, float]:
    """``records-lag`` per query and input topic-partition, and ``records-lag-max`` per query:
    ``ends`` (query -> where its last batch ended), ``latest`` lists last stable offsets."""
    wanted = {tp for per_query in ends.values() for tp in per_query}
    if not wanted:
        return {}
    last = latest(sorted(wanted))
    out: dict[MetricName, float] = {}
    for name, per_query in ends.items():
        lags = []
        for (topic, partition), end in sorted(per_query.items()):
            lag = max(0, last.get((topic, partition), end) - end)
            lags.append(lag)
            tags = {"client_id": name, "topic": topic, "partition": str(partition)}
            out[MetricName.of("records-lag", FETCH_GROUP, **tags)] = float(lag)
        out[MetricName.of("records-lag-max", FETCH_GROUP, client_id=name)] = float(max(lags, default=0))
    return out
