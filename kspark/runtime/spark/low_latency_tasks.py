"""Stateful tasks of a low-latency query: Kafka Streams' own commit, inside a long-running Spark task.

A low-latency query (:mod:`~kspark.runtime.spark.low_latency`) runs a
stateful sub-topology the way a Kafka Streams thread runs its tasks under
at-least-once, since no micro-batch commits its state:

* the task's stores live in its task directory on this machine
  (:class:`~kspark.runtime.spark.store_restore.TaskDirectory`) and write their
  changelog topics as they go; the plan lets in only stores that their own
  compacted changelog topic restores exactly (``plan._stores_blocker``);
* every ``commit.interval.ms`` (and when the Spark batch ends) the task
  flushes its stores (the record cache forwards, the changelog is written),
  waits for every output and changelog record's delivery, writes its
  directory's checkpoint (where its changelogs end), then commits its input
  offsets to the ``<application.id>`` group with the task's stream time and
  processor metadata as the offsets' metadata, as Kafka Streams keeps
  partition time there;
* a task not warm in this worker, or warm but with changelogs that moved
  since its last commit (another worker ran it), is rebuilt: its stores are
  restored from their changelog topics up to where they end now (from its
  directory's checkpoint on, when that is not ahead of them), its stream
  time and metadata read from the group. Records processed after the last
  offset commit are processed again: their changelog writes are restored
  *and* repeated, as in Kafka Streams under at-least-once (a count may count
  a record twice after a failure; never a record lost);
* when a batch ends, a task whose stores are all on disk closes them and lets
  go of its directory (:meth:`StatefulTask.hand_over`): Spark may run the
  partition in another worker next, which then reopens the directory at its
  checkpoint instead of restoring the changelog.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from kspark.runtime.spark.low_latency_count import CountLine
from kspark.runtime.spark.store_restore import (
    TaskDirectory,
    changelog_ends,
    on_disk,
    restore_stores,
    store_root,
)
from kspark.runtime.spark.task_input import Feed, FeedChunk, process_feeds
from kspark.runtime.spark.warm import (
    WarmTask,
    drop_earlier_runs,
    evict_warm,
    keep_warm,
    refresh_wall_clock,
    warm_entry,
)

if TYPE_CHECKING:
    from kspark.processor.internals.task import StreamTask
    from kspark.runtime.spark.tasks import Sender, TopologySpec

__all__ = ["is_stateful", "task_metadata", "StatefulTask"]

_METADATA_VERSION = 1

_EMIT_EVERY = 2_000
"""Records :meth:`StatefulTask.process_ready` processes between two hand-overs to its sender."""


def is_stateful(spec: TopologySpec) -> bool:
    """Whether the sub-topology of ``spec`` has stores (its tasks commit through :class:`StatefulTask`)."""
    return bool(spec.processors().state_store_builders)


def task_metadata(task: StreamTask) -> str:
    """The committed offsets' metadata of a task's input partitions: its stream time and processor
    metadata (Kafka Streams commits partition time in the same place)."""
    return json.dumps(
        {"kspark": _METADATA_VERSION, "stream_time": task.stream_time(), "meta": task.processor_metadata},
        separators=(",", ":"),
    )


def _parse_metadata(metadata: Iterable[str | None]) -> tuple[int, dict[str, int] | None]:
    """The stream time and processor metadata committed for a task's partitions (-1, None: none)."""
    stream_time, meta = -1, None
    for raw in metadata:
        if not raw or not raw.startswith('{"kspark"'):
            continue
        parsed = json.loads(raw)
        if int(parsed["stream_time"]) >= stream_time:
            stream_time, meta = int(parsed["stream_time"]), parsed.get("meta")
    return stream_time, meta


class StatefulTask:
    """One stateful Kafka Streams task in a low-latency Spark task's run."""

    def __init__(self, spec: TopologySpec, partition: int, committed_metadata: Iterable[str | None]) -> None:
        self.spec = spec
        self.partition = partition
        # Every store of the sub-topology restores from its changelog topic (plan.py).
        self.topics = sorted(spec.topic_changelogs(spec.processors()).values())
        self.dirty = False
        ends = changelog_ends(spec.config, self.topics, partition)
        warm = warm_entry(spec, partition)
        if warm is not None and warm.positions == ends:
            self.warm = warm  # nobody wrote its changelogs since it committed: it is current
        else:
            if warm is not None:
                evict_warm(spec, partition)
            self.warm = self._restored(ends, *_parse_metadata(committed_metadata))
            keep_warm(spec, partition, self.warm)
        self.count_line: CountLine | None = None
        if spec.count_line is not None:
            (topic,) = spec.input_partitions  # a count line's sub-topology reads one topic
            self.count_line = CountLine(self.task, spec.count_line, topic, partition)

    @property
    def task(self) -> StreamTask:
        return self.warm.task

    def _restored(self, ends: Mapping[str, int], stream_time: int, meta: dict[str, int] | None) -> WarmTask:
        spec, partition = self.spec, self.partition
        drop_earlier_runs(spec)
        directory = TaskDirectory.claim(store_root(spec.config), f"{spec.subtopology}_{partition}")
        task = None
        try:
            local = directory.checkpoint()
            if local is None or any(offset > ends.get(t, 0) for t, offset in local.items()):
                directory.wipe()  # killed mid-write, or ahead of the topics (they were recreated)
                local = {}
            directory.mark_dirty()
            self.dirty = True
            task = spec.build_task(partition, meta, state_dir=directory.path)
            restore_stores(
                spec.config,
                spec.topic_changelogs(task.topology),
                task.stores,
                task.context.restore_callbacks,
                partition,
                ends,
                local,
            )
            if stream_time >= 0:
                task.partition_group.stream_time = stream_time
            task.fuse_sources()  # its fusable lines from a source run as closures (tasks._fuse_sources)
        except BaseException:
            if task is not None:
                task.close()
            directory.release()
            raise
        return WarmTask(0, task, directory=directory, positions=dict(ends))

    def _writing(self) -> None:
        """The task is about to change its stores: its directory's checkpoint no longer holds."""
        if not self.dirty:
            assert self.warm.directory is not None
            self.warm.directory.mark_dirty()
            self.dirty = True

    def process(self, feeds: list[Feed], sender: Sender) -> None:
        """Records of the task's input topics (taken across them by head timestamp), their output
        to ``sender``; the record cache holds what it holds until :meth:`flush`."""
        self._writing()
        task = self.task
        refresh_wall_clock(task)
        line = self.count_line
        if line is None:
            process_feeds(task, self.partition, feeds, lambda: sender.send(task.drain_output()))
            return
        for _, chunks in feeds:
            for chunk in chunks:
                line.process(chunk)
        sender.send(task.drain_output())  # only what a record with a negative timestamp let out

    def offer(self, chunk: FeedChunk) -> None:
        """Buffer records of one of the task's input partitions, for :meth:`process_ready`."""
        self.task.add_records(chunk.topic, self.partition, chunk.records())

    def process_ready(self, topics: Iterable[str], caught_up: Callable[[str], bool], sender: Sender) -> None:
        """Process the buffered records by head timestamp for as long as each of the task's input
        ``topics`` either has records buffered or is ``caught_up`` (read to its end), as a Kafka
        Streams task does with ``max.task.idle.ms=0`` (KIP-695): a stream-table join's stream
        records wait while its table partition still has records to fetch."""
        self._writing()
        task = self.task
        refresh_wall_clock(task)
        queues = [task.input_queue(t, self.partition) for t in topics]
        done = 0
        while not any(q.is_empty() and not caught_up(q.topic) for q in queues):
            holding = [q for q in queues if not q.is_empty()]
            if len(holding) == 1:
                # The others are read to their end: this one's records go on at once, through its
                # fused line as one chunk when it has one (the steady state of a stream-table join).
                task.process_until_empty(holding[0])
                break
            if not task.process():
                break
            task.maybe_punctuate_stream_time()
            done += 1
            if done % _EMIT_EVERY == 0:
                sender.send(task.drain_output())
        sender.send(task.drain_output())

    def held(self) -> dict[tuple[str, int], int]:
        """Where each input partition with buffered records stands (its first such record): what
        its committed offset must not pass."""
        out = {}
        for (topic, partition), queue in self.task.partition_group.queues.items():
            head = queue.head_offset()
            if head is not None:
                out[(topic, partition)] = head
        return out

    def drop_held(self) -> None:
        """Forget the buffered records (the batch ends; the next one reads them again from the
        committed offsets)."""
        for queue in self.task.partition_group.queues.values():
            queue.take_all()

    def punctuate(self, sender: Sender) -> None:
        """Wall-clock punctuation due now (between polls, input or not)."""
        self._writing()
        task = self.task
        refresh_wall_clock(task)
        task.maybe_punctuate_system_time(int(time.time() * 1000))
        sender.send(task.drain_output())

    def flush(self, sender: Sender) -> None:
        """The first half of a commit: the stores flushed, their writes handed to ``sender``."""
        task = self.task
        task.maybe_punctuate_system_time(int(time.time() * 1000))
        if self.count_line is not None:
            self.count_line.flush()  # the counts into the store and on, as the record cache would
        task.commit()
        sender.send(task.drain_output())

    def committed(self) -> str:
        """The second half, once ``sender`` delivered everything: the directory's checkpoint at
        where the changelogs end now; returns the metadata to commit the input offsets with."""
        ends = changelog_ends(self.spec.config, self.topics, self.partition)
        assert self.warm.directory is not None
        self.warm.directory.write_checkpoint(ends)
        self.warm.positions = ends
        self.dirty = False
        return task_metadata(self.task)

    def hand_over(self) -> None:
        """The batch ended, committed: let the next batch's run of this task, in whichever Python
        worker of this machine Spark gives it, open the stores where they are. Spark hands a
        query's tasks to its idle workers in no fixed order, so the next batch often runs this
        partition in another worker: while this one kept the stores open (and their directory
        locked), that worker claimed a directory of its own and restored it from the changelog
        (seconds for a store that grew over a batch). With every store on disk, the task closes
        here (the directory's checkpoint says where its changelogs end) and whoever takes it next
        reopens the directory with nothing to restore. A task with a store in memory stays warm:
        a worker that did not run it has to restore that store either way."""
        if not self.dirty and all(on_disk(store) for store in self.task.stores.values()):
            evict_warm(self.spec, self.partition)

    def discard(self) -> None:
        """The run failed: the task's stores may hold writes past its last commit."""
        evict_warm(self.spec, self.partition)
