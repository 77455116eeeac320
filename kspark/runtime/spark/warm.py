"""Tasks kept warm in a Python worker between micro-batches, and what a stage reports of them.

Spark reuses its Python workers, so a task built for one micro-batch is
kept for the next (:class:`WarmTask`, keyed by application, run, sub-topology
and partition): a stateful stage checks its ``epoch`` against the state
Spark committed (:func:`current_warm`) and rebuilds from the changelogs when
they differ. Every stage's Spark task returns one row (``WRITTEN_DDL``): the
records it wrote and, as JSON, what its Kafka Streams tasks report since
they last did (:func:`new_task_metrics`): records dropped, end-to-end
latencies, store operations.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kspark.processor.internals.fused import FusedChain
from kspark.processor.internals.task import StreamTask
from kspark.runtime.spark.store_restore import TaskDirectory
from kspark.runtime.spark.task_state import Latest, TaskMeta

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from kspark.runtime.spark.tasks import TopologySpec

__all__ = [
    "WarmTask",
    "warm_entry",
    "current_warm",
    "keep_warm",
    "drop_earlier_runs",
    "evict_warm",
    "refresh_wall_clock",
    "new_task_metrics",
    "written_batch",
    "written_frame",
]

_log = logging.getLogger(__name__)


@dataclass
class WarmTask:
    """A task kept in this Python worker between micro-batches, with what its state needs."""

    epoch: int  # batches the task has committed; a stateful stage checks it against its state
    task: StreamTask
    # Stateful stages: the latest changelog record per store and key (what a compacted changelog
    # topic holds), written back as the task's whole state when its changelog is compacted.
    latest: Latest = field(default_factory=dict)
    # Stateless stages: the task as closures when it is a fusable chain (processor/internals/fused.py).
    fused: FusedChain | None = None
    # Stateful stages: the task's directory on this machine, held while its stores are open.
    directory: TaskDirectory | None = None
    # The task's dropped-records-total already sent to the driver in a stage row (new_task_metrics).
    drops_reported: int = 0
    # Low-latency stateful tasks: where their changelog topics ended at their last commit (the
    # warm task is current while they still end there: low_latency_tasks.py).
    positions: dict[str, int] | None = None

    def close(self) -> None:
        """Close the task's stores and let go of its directory. A task is closed when it is
        discarded (stale, superseded, or failed mid-batch): a store that fails to close is
        logged, never raised into the batch that discards it; its directory has no checkpoint
        (removed before every batch), so whoever takes the task next restores it."""
        try:
            self.task.close()
        except Exception:
            _log.warning("closing discarded task %s failed", self.task.task_id, exc_info=True)
        finally:
            if self.directory is not None:
                self.directory.release()


# Tasks stay warm in a Python worker between micro-batches: Spark reuses workers.
# Keyed by (application.id, run instance, sub-topology, partition).
_WARM: dict[tuple[str, str, int, int], WarmTask] = {}
_WARM_LOCK = threading.Lock()


def _warm_key(spec: TopologySpec, partition: int) -> tuple[str, str, int, int]:
    return (str(spec.config.get("application.id")), spec.instance, spec.subtopology, partition)


def warm_entry(spec: TopologySpec, partition: int) -> WarmTask | None:
    """The task of ``partition`` this worker kept warm, if any."""
    with _WARM_LOCK:
        return _WARM.get(_warm_key(spec, partition))


def current_warm(spec: TopologySpec, partition: int, meta_state: Any) -> tuple[TaskMeta, WarmTask | None]:
    """A stateful task's committed ``meta`` and its warm task if that saw every batch so far
    (its epoch matches); a stale warm task is closed and None returned: the caller restores."""
    meta = TaskMeta.of(meta_state.get() if meta_state.exists() else None)
    warm = warm_entry(spec, partition)
    if warm is not None and warm.epoch == meta.epoch:
        return meta, warm
    if warm is not None:
        evict_warm(spec, partition)
    return meta, None


def keep_warm(spec: TopologySpec, partition: int, entry: WarmTask) -> None:
    """Remember a warm task; tasks of an earlier run of the same application are dropped."""
    drop_earlier_runs(spec)
    with _WARM_LOCK:
        _WARM[_warm_key(spec, partition)] = entry


def drop_earlier_runs(spec: TopologySpec) -> None:
    """Close this worker's tasks of earlier runs of the application: they will not be used again,
    and they hold their task directories (a new run's task takes them over)."""
    app, instance, _, _ = _warm_key(spec, 0)
    with _WARM_LOCK:
        old = [_WARM.pop(k) for k in list(_WARM) if k[0] == app and k[1] != instance]
    for stale in old:
        stale.close()


def evict_warm(spec: TopologySpec, partition: int) -> None:
    """Forget and close a warm task: its stores may hold part of an uncommitted batch (a task
    directory's checkpoint is removed before a batch writes, so its next user restores)."""
    with _WARM_LOCK:
        warm = _WARM.pop(_warm_key(spec, partition), None)
    if warm is not None:
        warm.close()


def new_task_metrics(warms: Iterable[WarmTask | None]) -> str:
    """What these tasks report since this worker last said, for a stage row's ``task_metrics``
    column (``WRITTEN_DDL``): JSON ``{"dropped": {task id: records}, "e2e": {task id: {node:
    [count, sum, min, max]}}, "stores": {task id: {store: {"scope": ..., "ops": {operation:
    [count, sum, min, max] (ns)}}}}}`` (``""`` when nothing; stores only at the DEBUG level).
    The driver sums the drops into ``dropped-records-total`` per task and keeps the latencies
    over its sample window (metrics.py). A task rebuilt elsewhere counts from 0 again, and so
    does its report."""
    drops: dict[str, int] = {}
    e2e: dict[str, dict[str, list[float]]] = {}
    stores: dict[str, dict[str, dict[str, Any]]] = {}  # task -> store -> its scope and timed operations
    for warm in warms:
        if warm is None:
            continue
        task = warm.task
        total = task.dropped_records_total
        if total > warm.drops_reported:
            drops[str(task.task_id)] = total - warm.drops_reported
            warm.drops_reported = total
        for node, stats in task.e2e.items():
            taken = stats.take()
            if taken is not None:
                e2e.setdefault(str(task.task_id), {})[node] = taken.to_list()
        for name, store in task.stores.items():
            for operation, stats in getattr(store, "op_stats", {}).items():
                taken = stats.take()
                if taken is not None:
                    per_store = stores.setdefault(str(task.task_id), {}).setdefault(name, {})
                    per_store.setdefault("scope", getattr(store, "metrics_scope", "unknown"))
                    per_store.setdefault("ops", {})[operation] = taken.to_list()
    report: dict[str, Any] = {}
    if drops:
        report["dropped"] = drops
    if e2e:
        report["e2e"] = e2e
    if stores:
        report["stores"] = stores
    return json.dumps(report) if report else ""


def written_batch(n: int, task_metrics: str = "") -> pa.RecordBatch:
    """A stage's row: the records it wrote and what its tasks report (``new_task_metrics``)."""
    import pyarrow as pa

    return pa.RecordBatch.from_pydict(
        {"written": [n], "task_metrics": [task_metrics]},
        schema=pa.schema([("written", pa.int64()), ("task_metrics", pa.string())]),
    )


def written_frame(n: int, task_metrics: str = "") -> pd.DataFrame:
    """:func:`written_batch` as the pandas frame a stateful stage returns."""
    import pandas as pd

    return pd.DataFrame({"written": pd.Series([n], dtype="int64"), "task_metrics": [task_metrics]})


def refresh_wall_clock(task: StreamTask) -> None:
    """Set ``task``'s wall clock to now, as a micro-batch or a chunk of one (~10,000 records)
    starts: what its processors' ``current_system_time_ms()`` return and its
    ``record-e2e-latency`` is measured against. A Kafka Streams thread, likewise, reads the
    clock once per loop, not per record."""
    task.set_wall_clock(int(time.time() * 1000))
