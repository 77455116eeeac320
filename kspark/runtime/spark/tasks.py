"""Executor side of the Spark runner: Kafka Streams tasks hosted inside Spark tasks.

A kspark topology is split into sub-topologies exactly as Kafka Streams
splits it; a sub-topology over input partition ``p`` is the task ``<id>_<p>``.
The Spark runner runs the very same engine as the test driver
(:class:`kspark.processor.internals.task.StreamTask`) inside Spark:

* :func:`process_stateless` for a sub-topology without state stores: no
  shuffle, a Kafka topic-partition's records are the task's input, read in
  the worker (:mod:`~kspark.runtime.spark.direct_source`) or handed over by
  Spark's Kafka source (:class:`StatelessStage`, ``mapInArrow``).
* :class:`TaskStage` (``transformWithStateInPandas`` grouped by the task,
  :mod:`kspark.runtime.spark.shuffle`) for a sub-topology with stores. The
  grouping key is the *task*, not the record key, so one call per task per
  micro-batch carries all of its records (per-key Python/JVM round trips
  would dominate: shared/DESIGN.md), processing order and stream time are
  Kafka Streams' per-task ones whatever the batch cuts, and processors may
  touch any key of their stores. The stores write their changelog topics,
  Spark commits the positions the writes reached with the batch, and a task
  that is not already warm in this Python worker is restored from the
  topics up to those positions, its persistent stores from what its
  directory on this machine already holds
  (:mod:`~kspark.runtime.spark.store_restore`), as Kafka Streams restores a
  store from its changelog topic.

A task's micro-batch input reaches its queues (or its fused lines) through
:mod:`~kspark.runtime.spark.task_input`.

Both stages write their tasks' output records to Kafka themselves
(:class:`~kspark.runtime.spark.kafka_io.RecordSender`) and return one
``WRITTEN_DDL`` row per call; they hold only picklable configuration, and
engine objects are built lazily in the worker and kept warm across
micro-batches.
"""

from __future__ import annotations

import copy
import itertools
import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kspark.config import StreamsConfig
from kspark.errors import StreamsException
from kspark.processor.api import Headers
from kspark.processor.internals.fused import FusedChain
from kspark.processor.internals.nodes import ProcessorTopology
from kspark.processor.internals.records import OutputRecord
from kspark.processor.internals.task import StreamTask
from kspark.runtime.spark.batch_input import SpilledInput, held_input
from kspark.runtime.spark.global_state import GlobalStateReplica, global_replica
from kspark.runtime.spark.shuffle import task_of
from kspark.runtime.spark.store_restore import (
    TaskDirectory,
    changelog_ends,
    restore_stores,
    scratch_dir,
    store_root,
    topic_restore_blocker,
)
from kspark.runtime.spark.task_commit import TaskCommit, transactional_id
from kspark.runtime.spark.task_input import (
    Feed,
    kafka_headers,
    next_offsets,
    process_feeds,
    process_input,
    raw_records,
)
from kspark.runtime.spark.task_state import (
    Latest,
    TaskMeta,
    _Entry,
    fold_changelog,
    persist_changelog,
    restored_changelog,
    task_state,
)
from kspark.runtime.spark.versioned_changelog import (
    prune_versions,
    restored_latest,
    restored_versions,
    versioned_entry,
)
from kspark.runtime.spark.warm import (
    WarmTask,
    current_warm,
    drop_earlier_runs,
    evict_warm,
    keep_warm,
    new_task_metrics,
    refresh_wall_clock,
    warm_entry,
    written_batch,
    written_frame,
)
from kspark.state.api import StateStore

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from kspark.processor.topology import Topology
    from kspark.runtime.spark.lowering import NativeCount

__all__ = [
    "TASK_INPUT_COLUMN",
    "warm_stateless_task",
    "process_stateless",
    "process_stateless_feeds",
    "punctuate_stateless",
    "TopologySpec",
    "StatelessStage",
    "TaskStage",
    "TaskGroup",
    "Sender",
    "stateful_processor_base",
]

_log = logging.getLogger(__name__)

TASK_INPUT_COLUMN = "kspark_task"
"""The grouping column of a stateful stage: the input partition, i.e. the task."""


@dataclass(frozen=True)
class TopologySpec:
    """Everything an executor needs to build the tasks of one sub-topology (picklable)."""

    topology: Topology
    config: Mapping[str, Any]
    subtopology: int
    changelog_topics: Mapping[str, str]  # changelog topic -> store name
    instance: str  # one per KafkaStreams run: warm tasks never outlive the code they were built from
    producer_config: Mapping[str, Any]  # librdkafka settings of the stage's RecordSender
    timers: bool = False  # processing-time timers drive wall-clock punctuation (continuous runs only)
    has_global_stores: bool = False
    fused: bool = False  # the physical plan fused the (stateless) task from its source (plan.py)
    # The sub-topology's input topics and their partition counts (a task's input partitions).
    input_partitions: Mapping[str, int] = field(default_factory=dict)
    # Partition counts of the topics its sinks write, for their partitioners (a foreign-key join's
    # response goes to the partition its left record came from); a topic not known counts as one.
    sink_partitions: Mapping[str, int] = field(default_factory=dict)
    # Versioned stores (KIP-889) -> history retention (ms): their changelog keeps every version
    # the retention still serves, not only the latest record per key (versioned_entry).
    versioned_stores: Mapping[str, int] = field(default_factory=dict)
    # KIP-813 read-only stores: no changelog topic of their own (their source topic is), so their
    # updates are kept in the task's changelog state only, never sent to Kafka (build_task).
    read_only_stores: frozenset[str] = frozenset()
    # A low-latency task's lone count, counted by a CountLine (low_latency_count.py), or None.
    count_line: NativeCount | None = None

    def task_commit(self, partition: int) -> TaskCommit:
        """The writes of task ``partition`` for one micro-batch (task_commit.py): its partition of
        each input topic that has one."""
        inputs = [(t, partition) for t, n in sorted(self.input_partitions.items()) if partition < n]
        txn_id = transactional_id(str(self.config["application.id"]), self.subtopology, partition)
        return TaskCommit(self.config, self.producer_config, txn_id, inputs)

    def global_replica(self) -> GlobalStateReplica | None:
        """This worker's global stores, caught up with their topics (None without global stores)."""
        if not self.has_global_stores:
            return None
        replica = global_replica(self.topology, self.config, self.instance)
        replica.catch_up()
        return replica

    def build_task(
        self,
        partition: int,
        processor_metadata: Mapping[str, int] | None = None,
        state_dir: str | None = None,
    ) -> StreamTask:
        """The task ``<sub-topology>_<partition>``, initialised; its persistent stores open in
        ``state_dir`` (a task directory, store_restore.py), or, for a task whose stores nothing
        restores (a stateless or native stage's, an interactive-query replica's: filled anew
        whenever built), in a scratch directory of this process (never the temporary directory,
        which a Spark worker ended with ``os._exit`` would leave behind)."""
        builder = self.topology.internal_builder
        nodes = builder.node_groups()[self.subtopology]
        topology = builder.build_topology(nodes)
        if state_dir is None and topology.state_store_builders:
            scratch = f"task-{self.instance}-{self.subtopology}_{partition}-{next(_SCRATCH_TASKS)}"
            state_dir = scratch_dir(self.config, scratch)
        task = StreamTask(
            f"{self.subtopology}_{partition}",
            topology,
            StreamsConfig(dict(self.config)),
            partition=partition,
            partitions_for=lambda topic: self.sink_partitions.get(topic, 1),
            wall_clock_ms=int(time.time() * 1000),
            processor_metadata=processor_metadata,
            global_stores=replica.stores if (replica := self.global_replica()) is not None else None,
            stores=self._task_stores(topology),
            state_dir=state_dir,
        )
        task.initialize()
        return task

    def topic_changelogs(self, topology: ProcessorTopology) -> dict[str, str]:
        """The task's stores restored from their own changelog topic (store -> topic): the logged
        ones whose topic keeps every record a restore needs (compacted). The others keep their
        changelog in the task's Spark state (TaskStage): a read-only store or one connected to a
        source topic (whose changelog is that topic), and a store whose topic also deletes by time
        (window and session stores, ``compact,delete`` as Kafka Streams creates them): the broker
        deletes by *record* timestamp, so input whose event times lie further back than the
        store's retention plus a day (a backfill) would lose live windows from the topic."""
        app = str(self.config["application.id"])
        out: dict[str, str] = {}
        for name, store_builder in topology.state_store_builders.items():
            topic = topology.store_to_changelog_topic.get(name) or f"{app}-{name}-changelog"
            read_only = name in self.read_only_stores
            if not topic_restore_blocker(store_builder, topic, read_only, self.input_partitions):
                out[name] = topic
        return out

    def replayed_stores(self) -> set[str]:
        """The task's logged stores restored whole from its Spark state (TaskStage), not from a
        changelog topic: a local copy of one is never reused (it may hold writes of a batch
        Spark did not commit, which no checkpoint of topic positions can tell)."""
        return set(self.changelog_topics.values()) - set(self.topic_changelogs(self.processors()))

    def processors(self) -> ProcessorTopology:
        """A fresh build of the sub-topology's processors and stores (never initialised)."""
        builder = self.topology.internal_builder
        return builder.build_topology(builder.node_groups()[self.subtopology])

    def _task_stores(self, topology: ProcessorTopology) -> dict[str, StateStore] | None:
        """The task's stores, a read-only store's built with logging on under the changelog name
        its sub-topology would give it. Kafka restores a read-only store from its source topic;
        here its writes are logged into the task's changelog state (_split_changelog keeps them
        out of Kafka), so a task rebuilt elsewhere restores what its update processor wrote, as
        part of the same committed micro-batch as the source offsets: no second read of the
        source topic, which might meanwhile hold records past the committed offsets."""
        read_only = self.read_only_stores & set(topology.state_store_builders)
        if not read_only:
            return None
        stores: dict[str, StateStore] = {}
        for name, store_builder in topology.state_store_builders.items():
            if name in read_only:
                store_builder = copy.copy(store_builder).with_logging_enabled({})
                topology.store_to_changelog_topic[name] = read_only_changelog(self.config, name)
            stores[name] = store_builder.build()
        return stores


_SCRATCH_TASKS = itertools.count()
"""Numbers the scratch directories of this process's tasks (two builds never share one)."""


def _run(task: StreamTask) -> list[OutputRecord]:
    """Process everything queued, punctuate, commit: one micro-batch is one Kafka Streams commit."""
    task.process_buffered()
    task.maybe_punctuate_system_time(int(time.time() * 1000))
    task.commit()
    return task.drain_output()


class Sender(Protocol):
    """Where a task's output records go: a :class:`TaskCommit` (or anything with its ``send``)."""

    def send(self, records: Iterable[OutputRecord]) -> None: ...


def warm_stateless_task(spec: TopologySpec, partition: int) -> WarmTask:
    """This worker's task for ``partition`` of a sub-topology whose state is not the engine's to keep."""
    warm = warm_entry(spec, partition)
    if warm is None:
        task = spec.build_task(partition)
        fused = FusedChain.of(task) if spec.fused else None
        if spec.fused and fused is None:
            raise StreamsException(
                f"the plan fused sub-topology {spec.subtopology}, but its task {task.task_id} cannot be fused"
            )
        if fused is None:
            _fuse_sources(task)
        warm = WarmTask(0, task, fused=fused)
        keep_warm(spec, partition, warm)
    return warm


def _fuse_sources(task: StreamTask) -> None:
    """Run the task's fusable lines from a source as closures (``StreamTask.fuse_sources``): a
    stream-table join and the stateless operators around it, one record at a time in the task's
    order, as the TopologyTestDriver's nodes would run them."""
    fused = task.fuse_sources()
    if fused:
        _log.debug("task %s runs the lines from %s fused", task.task_id, ", ".join(fused))


class StatelessStage:
    """``mapInArrow`` body for sub-topologies without stores: one Kafka topic-partition per call.

    ``specs``: the sub-topology of each input topic (a query may run several, plan.py)."""

    def __init__(self, specs: Mapping[str, TopologySpec]) -> None:
        self.specs = dict(specs)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # One commit per input topic-partition: Spark's Kafka source gives a Spark task one, and a
        # sub-topology of this stage reads one topic (plan.py: several make engine tasks).
        commits: dict[tuple[str, int], TaskCommit] = {}
        ends: dict[tuple[str, int], int] = {}
        try:
            for batch in batches:
                for (topic, partition), cols in _by_topic_partition(batch):
                    spec = self.specs[topic]
                    commit = commits.get((topic, partition))
                    if commit is None:
                        commit = commits[(topic, partition)] = spec.task_commit(partition)
                        commit.begin()
                    ends[(topic, partition)] = cols["offset"][-1] + 1
                    if commit.replay:
                        continue  # Kafka committed this batch's output already
                    spec.global_replica()
                    columns = (cols["offset"], cols["timestamp"], cols["key"], cols["value"], cols["headers"])
                    process_stateless(spec, commit, topic, partition, *columns, kafka_headers)
            written = sum(c.commit({tp: ends[tp]}) for tp, c in commits.items())
        except BaseException:
            for commit in commits.values():
                commit.abort()
            raise
        yield written_batch(written, new_task_metrics(warm_entry(self.specs[t], p) for t, p in commits))


def process_stateless(
    spec: TopologySpec,
    sender: Sender,
    topic: str,
    partition: int,
    offsets: list[int],
    timestamps: list[int],
    keys: list[Any],
    values: list[Any],
    headers: list[Any],
    to_headers: Callable[[Any], Headers],
) -> None:
    """Records of one topic-partition, in offset order, through a stateless sub-topology's task
    (fused when it is a chain), and its output to ``sender``. ``headers`` holds each record's
    headers as the reader has them, ``to_headers`` makes ``Headers`` of one (None included)."""
    warm = warm_stateless_task(spec, partition)
    refresh_wall_clock(warm.task)
    if warm.fused is not None:
        warm.fused.process(topic, partition, offsets, timestamps, keys, values, headers, to_headers)
    else:
        records = raw_records(topic, partition, offsets, timestamps, keys, values, headers, to_headers)
        warm.task.add_records(topic, partition, records)
    sender.send(_run(warm.task))


def punctuate_stateless(spec: TopologySpec, partition: int) -> list[OutputRecord]:
    """What a stateless sub-topology's task forwards from wall-clock punctuation due now (a
    low-latency task calls it between polls, input or not)."""
    task = warm_stateless_task(spec, partition).task
    refresh_wall_clock(task)
    return _run(task)


def process_stateless_feeds(spec: TopologySpec, sender: Sender, partition: int, feeds: list[Feed]) -> None:
    """Records of several input topics of a stateless sub-topology's task (a merge), taken across
    the topics by smallest head timestamp as a Kafka Streams task takes them
    (:func:`process_feeds`), and the output to ``sender``. Never fused as a whole (a fused chain
    takes one topic-partition's records in the order given); its lines from each source may be."""
    task = warm_stateless_task(spec, partition).task
    refresh_wall_clock(task)
    process_feeds(task, partition, feeds, lambda: sender.send(task.drain_output()))
    sender.send(_run(task))


def _by_topic_partition(batch: pa.RecordBatch) -> list[tuple[tuple[str, int], dict[str, list[Any]]]]:
    """A source batch's columns as lists, per topic-partition in order of first appearance.

    Spark's Kafka source gives a Spark partition one Kafka topic-partition, so
    there is normally one group, built without looking at rows one by one.
    """
    cols = batch.to_pydict()
    topics, partitions = cols["topic"], cols["partition"]
    if not topics:
        return []
    if topics.count(topics[0]) == len(topics) and partitions.count(partitions[0]) == len(partitions):
        return [((topics[0], partitions[0]), cols)]
    rows: dict[tuple[str, int], list[int]] = {}
    for i, tp in enumerate(zip(topics, partitions, strict=True)):
        rows.setdefault(tp, []).append(i)
    return [
        ((tp[0], tp[1]), {name: [col[i] for i in idx] for name, col in cols.items()})
        for tp, idx in rows.items()
    ]


def stateful_processor_base() -> type:
    """PySpark's ``StatefulProcessor``, imported only where a stage is defined (workers, driver)."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    return StatefulProcessor


@dataclass(frozen=True)
class TaskGroup:
    """The tasks of one query's sub-topologies, numbered query-wide: ``specs[i]``'s task ``p`` is
    number ``bases[i] + p`` (:meth:`~kspark.runtime.spark.plan.QueryPlan.task_bases`), which is
    its Spark shuffle partition and the grouping key's task (:mod:`~kspark.runtime.spark.shuffle`)."""

    specs: tuple[TopologySpec, ...]
    bases: tuple[int, ...]
    tasks: tuple[int, ...]

    def locate(self, number: int) -> tuple[TopologySpec, int]:
        """The sub-topology and partition of the query's task ``number``."""
        for spec, base, n in zip(self.specs, self.bases, self.tasks, strict=True):
            if base <= number < base + n:
                return spec, number - base
        raise StreamsException(f"task number {number} is outside this query's {sum(self.tasks)} tasks")


class TaskStage(stateful_processor_base()):  # type: ignore[misc]
    """``transformWithStateInPandas`` body: one Kafka Streams task per grouping key.

    State per task: ``meta`` (epoch, stream time, processor metadata, timer,
    changelog positions) and ``changelog``, a ``ListState`` for the stores
    not restored from their topic (TopologySpec.topic_changelogs: read-only,
    window and session stores): one row per micro-batch holding every
    changelog record the batch wrote for them, appended with one call to
    Spark's state server (per-record state calls are JVM round trips,
    ~0.1-0.5 ms each), replaced by the latest record per key every
    ``COMPACT_AFTER_ROWS`` batches (task_state.py). Every other logged
    store's changelog is its topic; ``meta`` holds where the task's writes
    to it reached when the batch committed (store_restore.py).

    The epoch says whether the warm task in this worker saw every batch so
    far; if not (another worker ran the task, or the application restarted),
    the task is rebuilt and its stores are restored up to the committed
    positions, as Kafka Streams restores a store from its changelog topic.
    """

    def __init__(self, group: TaskGroup, spill_rows: int) -> None:
        self.group = group
        self.spill_rows = spill_rows

    def init(self, handle: Any) -> None:
        self._handle = handle
        self._meta, self._changelog = task_state(handle)

    def _warm_task(self, spec: TopologySpec, partition: int) -> tuple[TaskMeta, WarmTask]:
        """The task warm from the last batch, or rebuilt and restored from its changelogs."""
        meta, warm = current_warm(spec, partition, self._meta)
        if warm is not None:
            return meta, warm
        drop_earlier_runs(spec)
        directory = TaskDirectory.claim(store_root(spec.config), f"{spec.subtopology}_{partition}")
        try:
            task, latest = self._rebuilt(spec, partition, meta, directory)
        except BaseException:
            directory.release()
            raise
        return meta, WarmTask(meta.epoch, task, latest, directory=directory)

    def _rebuilt(
        self, spec: TopologySpec, partition: int, meta: TaskMeta, directory: TaskDirectory
    ) -> tuple[StreamTask, Latest]:
        """The task with its stores restored to the committed state (store_restore.py): the on-disk
        stores from their directory's checkpoint on, when that is at or before the committed
        positions, everything else from the start of its changelog."""
        local = directory.checkpoint()
        if local is None or any(offset > meta.positions.get(t, 0) for t, offset in local.items()):
            directory.wipe()
            local = {}
        else:
            directory.wipe(spec.replayed_stores())
        directory.mark_dirty()
        task = spec.build_task(partition, meta.processor_metadata, state_dir=directory.path)
        callbacks = task.context.restore_callbacks
        try:
            if meta.epoch:
                restore_stores(
                    spec.config,
                    spec.topic_changelogs(task.topology),
                    task.stores,
                    callbacks,
                    partition,
                    meta.positions,
                    local,
                )
            latest = restored_changelog(self._changelog, meta)
            for name, records in latest.items():
                restore = callbacks.get(name)
                if restore is not None:
                    restore(
                        restored_versions(records)
                        if name in spec.versioned_stores
                        else restored_latest(records)
                    )
        except BaseException:
            task.close()
            raise
        if meta.epoch:
            # Kafka Streams restores partition time from committed offset metadata;
            # here it is part of the task's state.
            task.partition_group.stream_time = meta.stream_time
            task.restore_wall_clock_schedules(meta.wall_clock_schedules)
        _fuse_sources(task)
        return task, latest

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any
    ) -> Iterator[pd.DataFrame]:
        # Past spark.kspark.spillRows rows the batch waits on local disk, not as pandas frames
        # (batch_input.py).
        with held_input(rows, self.spill_rows) as frames:
            result = self._step(task_of(int(key[0])), frames)
        yield result

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:
        """A wall-clock punctuation is due and the task got no records this batch."""
        yield self._step(task_of(int(key[0])), [])

    def _step(self, number: int, frames: list[pd.DataFrame] | SpilledInput) -> pd.DataFrame:
        """One commit of the query's task ``number``: queue the batch's records, process,
        punctuate, persist."""
        spec, partition = self.group.locate(number)
        meta, warm = self._warm_task(spec, partition)
        try:
            return self._commit(spec, partition, meta, warm, frames)
        except BaseException:
            # The task's memory may hold part of an uncommitted batch: never reuse it. A retry
            # restores the task from the state Spark committed.
            evict_warm(spec, partition)
            raise

    def _commit(
        self,
        spec: TopologySpec,
        partition: int,
        meta: TaskMeta,
        warm: WarmTask,
        frames: list[pd.DataFrame] | SpilledInput,
    ) -> pd.DataFrame:

        spec.global_replica()
        task = warm.task
        refresh_wall_clock(task)
        # Spark commits the task's state only with the whole micro-batch. At-least-once: output
        # written before a failure is written again by the retry. Exactly-once: the output is one
        # transaction, and a batch Kafka committed already only rebuilds the state (task_commit.py).
        commit = spec.task_commit(partition)
        if warm.directory is not None:
            warm.directory.mark_dirty()
        commit.begin(next_offsets(frames, partition))
        changelog: list[_Entry] = []
        changelogs = set(spec.topic_changelogs(task.topology).values())
        written_changelogs: set[str] = set()

        def emit() -> None:
            emitted, entries = _split_changelog(spec, task.drain_output(), changelogs, written_changelogs)
            commit.send(emitted)
            changelog.extend(entries)
            refresh_wall_clock(task)  # the next chunk's records are taken from now on

        try:
            process_input(task, partition, frames, emit)
            task.maybe_punctuate_system_time(int(time.time() * 1000))
            task.commit()
            emit()
            written = commit.commit()
        except BaseException:
            commit.abort()
            raise
        fold_changelog(warm.latest, changelog)
        rows = persist_changelog(
            self._changelog,
            meta.changelog_rows,
            warm.latest,
            changelog,
            prune=lambda latest: prune_versions(latest, spec.versioned_stores),
        )
        # Where the batch's changelog writes end (a replay: where the transaction Kafka committed
        # for it ended); Spark commits these positions with the batch (store_restore.py).
        positions = dict(meta.positions)
        positions.update(
            changelog_ends(spec.config, changelogs if commit.replay else written_changelogs, partition)
        )
        if warm.directory is not None:
            warm.directory.write_checkpoint({t: positions.get(t, 0) for t in changelogs})
        timer = self._set_timer(spec, meta.timer, task)
        epoch = meta.epoch + 1
        self._meta.update(
            (
                epoch,
                task.stream_time(),
                json.dumps(task.processor_metadata),
                timer,
                rows,
                json.dumps(task.wall_clock_schedules()),
                json.dumps(positions),
            )
        )
        warm.epoch = epoch
        keep_warm(spec, partition, warm)
        return written_frame(written, new_task_metrics([warm]))

    def _set_timer(self, spec: TopologySpec, current: int, task: StreamTask) -> int:
        """Keep one processing-time timer at the task's next wall-clock punctuation; -1: none."""
        if not spec.timers:
            return -1
        due = task.next_wall_clock_punctuation()
        wanted = -1 if due is None else due
        if wanted != current:
            if current >= 0:
                self._handle.deleteTimer(current)
            if wanted >= 0:
                self._handle.registerTimer(wanted)
        return wanted

    def close(self) -> None:
        pass


def _split_changelog(
    spec: TopologySpec, outputs: list[OutputRecord], topic_restored: set[str], written: set[str]
) -> tuple[list[OutputRecord], list[_Entry]]:
    """(records for Kafka, changelog entries (store, key, value, timestamp) for the task's Spark
    state). Changelog records go to Kafka, to the stores' changelog topics: the source of truth
    a task rebuilt elsewhere restores from (``topic_restored``; the ones written are added to
    ``written``), and what interactive queries' replicas read (replica.py). The other stores
    (TopologySpec.topic_changelogs) keep their changelog in the task's state too; a read-only
    store's records go nowhere else (its changelog is its source topic)."""
    emitted: list[OutputRecord] = []
    changelog: list[_Entry] = []
    stores = spec.changelog_topics
    for rec in outputs:
        if rec.topic in topic_restored:
            emitted.append(rec)
            written.add(rec.topic)
            continue
        store = stores.get(rec.topic)
        if store is None or store not in spec.read_only_stores:
            emitted.append(rec)
        if store is not None and rec.key is not None:
            if store in spec.versioned_stores:
                changelog.append(versioned_entry(store, rec.key, rec.value, rec.timestamp))
            else:
                changelog.append((store, rec.key, rec.value, rec.timestamp))
    return emitted, changelog


def read_only_changelog(config: Mapping[str, Any], store: str) -> str:
    """The name a read-only store's changelog records carry inside a task: the name a logged
    store's changelog topic would have (TopologySpec.changelog_topics maps it to the store), a
    topic that is never created nor written."""
    return f"{config['application.id']}-{store}-changelog"
