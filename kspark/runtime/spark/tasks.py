"""Executor side of the Spark runner: Kafka Streams tasks hosted inside Spark tasks.

A kspark topology is split into sub-topologies exactly as Kafka Streams
splits it; a sub-topology over input partition ``p`` is the task ``<id>_<p>``.
The Spark runner runs the very same engine as the test driver
(:class:`kspark.processor.internals.task.StreamTask`) inside Spark:

* :class:`StatelessStage` (``mapInArrow``) for a sub-topology without state
  stores or punctuation: no shuffle, Spark's partition of a Kafka
  topic-partition is the task's input.
* :class:`TaskStage` (``transformWithStateInPandas`` grouped by the task's
  partition number) for a sub-topology with stores. The grouping key is the
  *task*, not the record key, so one call per task per micro-batch carries
  all of its records (per-key Python/JVM round trips would dominate:
  shared/DESIGN.md), processing order and stream time are Kafka Streams'
  per-task ones whatever the batch cuts, and processors may touch any key
  of their stores. Each store's changelog lives in a Spark ``MapState``
  (key bytes -> value bytes and timestamp): the engine's changelog records
  are applied to it at the end of every batch, and a task that is not
  already warm in this Python worker is restored from it, as Kafka Streams
  restores a store from its changelog topic.

Both stages emit ``OUTPUT_DDL`` rows (a serialized output record each) and
hold only picklable configuration; engine objects are built lazily in the
worker and kept warm across micro-batches.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kspark.config import StreamsConfig
from kspark.processor.api import Headers
from kspark.processor.internals.records import OutputRecord, RawRecord
from kspark.processor.internals.task import StreamTask
from kspark.runtime.spark.global_state import GlobalStateReplica, global_replica
from kspark.runtime.spark.kafka_io import encode_headers

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from kspark.processor.topology import Topology

__all__ = [
    "TASK_INPUT_COLUMN",
    "TopologySpec",
    "StatelessStage",
    "TaskStage",
]

TASK_INPUT_COLUMN = "kspark_task"
"""The grouping column of a stateful stage: the input partition, i.e. the task."""


def _kafka_headers(raw: Any) -> Headers:
    """Headers as Spark's Kafka source gives them (list of {key, value}) to engine Headers."""
    if raw is None or len(raw) == 0:
        return Headers()
    return Headers([(h["key"], h["value"]) for h in raw])


@dataclass(frozen=True)
class TopologySpec:
    """Everything an executor needs to build the tasks of one sub-topology (picklable)."""

    topology: Topology
    config: Mapping[str, Any]
    subtopology: int
    changelog_topics: Mapping[str, str]  # changelog topic -> store name
    instance: str  # one per KafkaStreams run: warm tasks never outlive the code they were built from
    timers: bool = False  # processing-time timers drive wall-clock punctuation (continuous runs only)
    has_global_stores: bool = False

    def global_replica(self) -> GlobalStateReplica | None:
        """This worker's global stores, caught up with their topics (None without global stores)."""
        if not self.has_global_stores:
            return None
        replica = global_replica(self.topology, self.config, self.instance)
        replica.catch_up()
        return replica

    def build_task(self, partition: int, processor_metadata: Mapping[str, int] | None = None) -> StreamTask:
        builder = self.topology.internal_builder
        nodes = builder.node_groups()[self.subtopology]
        task = StreamTask(
            f"{self.subtopology}_{partition}",
            builder.build_topology(nodes),
            StreamsConfig(dict(self.config)),
            partition=partition,
            wall_clock_ms=int(time.time() * 1000),
            processor_metadata=processor_metadata,
            global_stores=replica.stores if (replica := self.global_replica()) is not None else None,
        )
        task.initialize()
        return task


# Tasks stay warm in a Python worker between micro-batches: Spark reuses workers.
# Keyed by (application.id, run instance, sub-topology, partition).
_WARM: dict[tuple[str, str, int, int], tuple[int, StreamTask]] = {}
_WARM_LOCK = threading.Lock()


def _warm_key(spec: TopologySpec, partition: int) -> tuple[str, str, int, int]:
    return (str(spec.config.get("application.id")), spec.instance, spec.subtopology, partition)


def _keep_warm(key: tuple[str, str, int, int], entry: tuple[int, StreamTask]) -> None:
    """Remember a warm task; tasks of an earlier run of the same application are dropped."""
    with _WARM_LOCK:
        for old in [k for k in _WARM if k[0] == key[0] and k[1] != key[1]]:
            _WARM.pop(old)[1].close()
        _WARM[key] = entry


def _run(task: StreamTask) -> list[OutputRecord]:
    """Process everything queued, punctuate, commit: one micro-batch is one Kafka Streams commit."""
    while task.process():
        task.maybe_punctuate_stream_time()
    task.maybe_punctuate_system_time(int(time.time() * 1000))
    task.commit()
    return task.drain_output()


def _output_batch(records: list[OutputRecord]) -> pa.RecordBatch:
    import pyarrow as pa

    return pa.RecordBatch.from_pydict(
        {
            "topic": [r.topic for r in records],
            "partition": [r.partition for r in records],
            "timestamp": [r.timestamp for r in records],
            "key": [r.key for r in records],
            "value": [r.value for r in records],
            "headers": [encode_headers(r.headers) for r in records],
        },
        schema=_output_schema(),
    )


def _output_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("timestamp", pa.int64()),
            ("key", pa.binary()),
            ("value", pa.binary()),
            ("headers", pa.binary()),
        ]
    )


class StatelessStage:
    """``mapInArrow`` body for a sub-topology without stores: one Kafka topic-partition per call."""

    def __init__(self, spec: TopologySpec) -> None:
        self.spec = spec

    def _task(self, partition: int) -> StreamTask:
        key = _warm_key(self.spec, partition)
        with _WARM_LOCK:
            warm = _WARM.get(key)
        if warm is None:
            warm = (0, self.spec.build_task(partition))
            _keep_warm(key, warm)
        return warm[1]

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            cols = batch.to_pydict()
            by_tp: dict[tuple[str, int], list[RawRecord]] = {}
            for topic, partition, offset, ts, key, value, headers in zip(
                cols["topic"],
                cols["partition"],
                cols["offset"],
                cols["timestamp"],
                cols["key"],
                cols["value"],
                cols["headers"],
                strict=True,
            ):
                by_tp.setdefault((topic, partition), []).append(
                    RawRecord(topic, partition, offset, ts, key, value, _kafka_headers(headers))
                )
            self.spec.global_replica()
            out: list[OutputRecord] = []
            for (topic, partition), records in by_tp.items():
                task = self._task(partition)
                task.add_records(topic, partition, records)
                out.extend(_run(task))
            yield _output_batch(out)


def _stateful_processor_base() -> type:
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    return StatefulProcessor


class TaskStage(_stateful_processor_base()):  # type: ignore[misc]
    """``transformWithStateInPandas`` body: one Kafka Streams task per grouping key.

    State per task: ``meta`` (epoch, stream time) and one ``MapState`` per
    store holding its changelog. The epoch says whether the warm task in
    this worker saw every batch so far; if not (another worker ran the task,
    or the application restarted), the task is rebuilt and its stores are
    restored from the MapStates.
    """

    def __init__(self, spec: TopologySpec) -> None:
        self.spec = spec

    def init(self, handle: Any) -> None:
        from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType

        self._handle = handle
        self._meta = handle.getValueState(
            "meta",
            StructType(
                [
                    StructField("epoch", LongType()),
                    StructField("stream_time", LongType()),
                    # Kafka commits processor metadata with the offsets; here it is task state (JSON).
                    StructField("processor_metadata", StringType()),
                    # The processing-time timer set for the next wall-clock punctuation (-1: none).
                    StructField("timer", LongType()),
                ]
            ),
        )
        key_schema = StructType([StructField("k", BinaryType())])
        value_schema = StructType([StructField("v", BinaryType()), StructField("ts", LongType())])
        builder = self.spec.topology.internal_builder
        stores = builder.node_groups()[self.spec.subtopology]
        names = sorted({s for n in stores for s in builder.node_stores(n)})
        self._stores = {name: handle.getMapState(f"store_{name}", key_schema, value_schema) for name in names}

    def _warm_task(self, partition: int) -> tuple[int, int, StreamTask]:
        """(epoch, timer, task): the task warm from the last batch, or rebuilt and restored."""
        meta = self._meta.get() if self._meta.exists() else None
        epoch = int(meta[0]) if meta else 0
        timer = int(meta[3]) if meta and meta[3] is not None else -1
        with _WARM_LOCK:
            warm = _WARM.get(_warm_key(self.spec, partition))
        if warm is not None and warm[0] == epoch:
            return epoch, timer, warm[1]
        if warm is not None:
            warm[1].close()
        task = self.spec.build_task(partition, json.loads(meta[2]) if meta and meta[2] else None)
        callbacks = task.context.restore_callbacks
        for name, state in self._stores.items():
            restore = callbacks.get(name)
            if restore is None:
                continue
            restore([(k[0], v[0], int(v[1])) for k, v in state.iterator()])
        if meta:
            # Kafka Streams restores partition time from committed offset metadata;
            # here it is part of the task's state.
            task.partition_group.stream_time = int(meta[1])
        return epoch, timer, task

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any
    ) -> Iterator[pd.DataFrame]:
        import pandas as pd

        frames = [f for f in rows if len(f)]
        data = None
        if frames:
            data = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        yield self._step(int(key[0]), data)

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:
        """A wall-clock punctuation is due and the task got no records this batch."""
        yield self._step(int(key[0]), None)

    def _step(self, partition: int, data: pd.DataFrame | None) -> pd.DataFrame:
        """One commit of the task: queue the batch's records, process, punctuate, persist."""
        epoch, timer, task = self._warm_task(partition)
        try:
            return self._commit(partition, epoch, timer, task, data)
        except BaseException:
            # The task's memory may hold part of an uncommitted batch: never reuse it. A retry
            # restores the task from the state Spark committed.
            with _WARM_LOCK:
                _WARM.pop(_warm_key(self.spec, partition), None)
            raise

    def _commit(
        self, partition: int, epoch: int, timer: int, task: StreamTask, data: pd.DataFrame | None
    ) -> pd.DataFrame:
        self.spec.global_replica()
        if data is not None:
            data = data.sort_values(["topic", "offset"], kind="stable")
            for topic, group in data.groupby("topic", sort=True):
                task.add_records(
                    str(topic),
                    partition,
                    [
                        RawRecord(str(topic), partition, int(o), int(t), k, v, _kafka_headers(h))
                        for o, t, k, v, h in zip(
                            group["offset"],
                            group["timestamp"],
                            group["key"],
                            group["value"],
                            group["headers"],
                            strict=True,
                        )
                    ],
                )
        outputs = _run(task)
        emitted = self._apply_changelog(outputs)
        timer = self._set_timer(timer, task)
        self._meta.update((epoch + 1, task.stream_time(), json.dumps(task.processor_metadata), timer))
        _keep_warm(_warm_key(self.spec, partition), (epoch + 1, task))
        return _output_batch(emitted).to_pandas()

    def _set_timer(self, current: int, task: StreamTask) -> int:
        """Keep one processing-time timer at the task's next wall-clock punctuation; -1: none."""
        if not self.spec.timers:
            return -1
        due = task.next_wall_clock_punctuation()
        wanted = -1 if due is None else due
        if wanted != current:
            if current >= 0:
                self._handle.deleteTimer(current)
            if wanted >= 0:
                self._handle.registerTimer(wanted)
        return wanted

    def _apply_changelog(self, outputs: list[OutputRecord]) -> list[OutputRecord]:
        """Write changelog records to the MapStates; return the records meant for Kafka."""
        emitted: list[OutputRecord] = []
        for rec in outputs:
            store = self.spec.changelog_topics.get(rec.topic)
            if store is None:
                emitted.append(rec)
                continue
            state = self._stores[store]
            if rec.value is None:
                state.removeKey((rec.key,))
            else:
                state.updateValue((rec.key,), (rec.value, rec.timestamp))
        return emitted

    def close(self) -> None:
        pass
