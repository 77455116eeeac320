"""The micro-batch reference: what Kafka Streams computes when it commits where the Spark runner's
micro-batches end.

Kafka Streams flushes the record cache at every commit, and on Spark a
micro-batch is a commit; so with the cache on the expected output of a Spark
run is that of the driver committing where the micro-batches end. For input
preloaded into Kafka and ``process_available()`` (``kspark/runtime/spark/
runner.py``), that is:

* one task per (sub-topology, input partition), the engine's own
  :class:`~kspark.processor.internals.task.StreamTask`, built as the runner's
  executors build it (``TopologySpec.build_task``);
* rounds until nothing moves; in a round each sub-topology in id order
  (upstream first) runs one micro-batch: each of its tasks takes everything
  its input partitions hold past what it has read, processes it (across its
  partitions by smallest head timestamp, stream-time punctuation after each
  record), then commits (the cache forwards what it absorbed);
* what a batch writes to a topic the topology reads (repartition topics) is
  appended to that topic's partition (murmur2 of the key, as the runner's
  producer) and is the next batch's input;
* global tables are read to their end before a task processes a batch.

Input is written in pipe order, a keyed record to its key's partition and
a record with a null key to partition 0. Where Kafka gives no order, an
:class:`Interleaving` says which one to take: how the records that several
tasks of one batch write to the same partition interleave, and where a record
with a null key written by a task goes (the producer places it at random).
The canonical one takes the tasks in partition order and sends null keys to
partition 0; seeded ones shuffle both, to find out whether a result depends
on them (tests/catalog/__init__.py).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kspark.config import StreamsConfig
from kspark.processor.internals.global_task import GlobalStateTask
from kspark.processor.internals.partitioning import default_partition
from kspark.processor.internals.records import OutputRecord, RawRecord
from kspark.processor.internals.task import StreamTask

from .compare import PerKey, add
from .model import IDENTITY, Scenario, Step, Topics, serde

__all__ = [
    "Interleaving",
    "CANONICAL",
    "interleavings",
    "InputRecord",
    "input_records",
    "slices",
    "MicroBatchReference",
    "microbatch_outputs",
]


@dataclass(frozen=True)
class Interleaving:
    """Where Kafka gives no order: ``seed`` None takes tasks in partition order and sends null keys
    to partition 0; a seed merges the tasks' writes and places null keys at random."""

    seed: int | None = None


CANONICAL = Interleaving()


def interleavings(n: int = 4) -> list[Interleaving]:
    """The canonical interleaving and ``n`` seeded ones."""
    return [CANONICAL, *(Interleaving(seed) for seed in range(1, n + 1))]


@dataclass(frozen=True)
class InputRecord:
    """One input record as it is written to Kafka: logical topic, partition, serialized key/value."""

    topic: str
    partition: int
    key: bytes | None
    value: bytes | None
    timestamp: int


def input_records(
    scenario: Scenario, partitions: int, steps: Sequence[Step], shift: int = 0
) -> list[InputRecord]:
    """The piped records of ``steps`` (wall-clock steps skipped), serialized, with their partitions
    (``partitions`` per topic) and timestamps moved by ``shift``."""
    out = []
    for s in steps:
        if "pipe" not in s:
            continue
        topic = s["pipe"]
        key_kind, value_kind = scenario.inputs[topic]
        key = serde(key_kind).serializer().serialize(topic, s["key"])
        value = serde(value_kind).serializer().serialize(topic, s["value"])
        partition = 0 if key is None else default_partition(key, partitions)
        out.append(InputRecord(topic, partition, key, value, s["ts"] + shift))
    return out


def slices(steps: Sequence[Step], n: int) -> list[list[Step]]:
    """``steps`` cut into ``n`` contiguous slices (the application restarts between them)."""
    return [list(steps[i * len(steps) // n : (i + 1) * len(steps) // n]) for i in range(n)]


class MicroBatchReference:
    """One application over preloaded input: :meth:`feed` a slice, :meth:`run` it to the end."""

    def __init__(
        self,
        scenario: Scenario,
        config: Mapping[str, Any],
        partitions: int,
        interleaving: Interleaving = CANONICAL,
        topics: Topics = IDENTITY,
        fused: bool = False,
    ) -> None:
        self.scenario = scenario
        # Run the tasks' fusable lines from a source as closures (StreamTask.fuse_sources), as the
        # Spark runner's executors do; the sources fused, by task.
        self.fused = fused
        self.fused_sources: dict[str, list[str]] = {}
        self.topics = topics
        self.config = StreamsConfig(dict(config))
        self.rng = random.Random(interleaving.seed) if interleaving.seed is not None else None
        # Whether the rng decided anything (more than one way to go): when it never did, every
        # seed gives the canonical interleaving's result.
        self.chose = False
        self.builder = builder = scenario.topology(topics).internal_builder
        builder.set_application_id(self.config.application_id())
        groups = builder.node_groups()
        self.subtopologies = builder.subtopology_ids()
        self.nodes = {sub: groups[sub] for sub in self.subtopologies}
        self.sources = {
            sub: sorted({self._topic(t) for n in groups[sub] for t in builder.source_topics_of(n)})
            for sub in self.subtopologies
        }
        self.default_partitions = partitions
        self.partitions: dict[str, int] = {}
        for sub in self.subtopologies:
            for topic in self.sources[sub]:
                self.partitions_of(topic)
        global_topology = builder.build_global_state_topology()
        self.global_task: GlobalStateTask | None = None
        self.global_topics: set[str] = set()
        if global_topology is not None:
            self.global_task = GlobalStateTask(global_topology, self.config, lambda: 0)
            self.global_task.initialize()
            self.global_topics = set(global_topology.sources_by_topic)
        self.read_topics = {t for topics in self.sources.values() for t in topics} | self.global_topics
        self.log: dict[tuple[str, int], list[RawRecord]] = {}
        self.position: dict[tuple[int, str, int], int] = {}
        self.global_position: dict[tuple[str, int], int] = {}
        self.tasks: dict[tuple[int, int], StreamTask] = {}
        self.written: dict[tuple[str, int], list[OutputRecord]] = {}
        self.batches = 0

    # ------------------------------------------------------------------ topics
    def _topic(self, name: str) -> str:
        return self.builder.decorate_topic(name) if self.builder.is_internal_topic(name) else name

    def partitions_of(self, topic: str) -> int:
        """A topic's partition count: the run's for external topics; for a repartition topic its
        fixed count, else that of the widest input of the sub-topologies writing it (Kafka Streams)."""
        if topic in self.partitions:
            return self.partitions[topic]
        internal = {self._topic(n): props for n, props in self.builder.internal_topics().items()}
        props = internal.get(topic)
        if props is None or props.kind != "repartition":
            count = self.default_partitions
        elif props.partitions is not None:
            count = props.partitions
        else:
            self.partitions[topic] = self.default_partitions  # a cycle, should there be one
            writers = [
                sub
                for sub, nodes in self.nodes.items()
                if any(
                    (sink := self.builder.sink_topic_of(n)) is not None and self._topic(sink) == topic
                    for n in nodes
                )
            ]
            count = max(
                (self.partitions_of(t) for sub in writers for t in self.sources[sub]),
                default=self.default_partitions,
            )
        self.partitions[topic] = count
        return count

    def _append(
        self, topic: str, partition: int, key: bytes | None, value: bytes | None, ts: int, headers: Any
    ) -> None:
        log = self.log.setdefault((topic, partition), [])
        kwargs = {} if headers is None else {"headers": headers}
        log.append(RawRecord(topic, partition, len(log), ts, key, value, **kwargs))

    # ------------------------------------------------------------------ running
    def feed(self, records: Iterable[InputRecord]) -> None:
        """Write input records (pipe order) to their topics."""
        for r in records:
            self._append(self.topics[r.topic], r.partition, r.key, r.value, r.timestamp, None)

    def run(self) -> int:
        """Rounds of micro-batches until nothing moves; returns the records processed."""
        total = 0
        while True:
            moved = sum(self._batch(sub) for sub in self.subtopologies)
            total += moved
            if moved == 0 or len(self.subtopologies) == 1:
                return total

    def _task(self, sub: int, partition: int) -> StreamTask:
        task = self.tasks.get((sub, partition))
        if task is None:
            task = StreamTask(
                f"{sub}_{partition}",
                self.builder.build_topology(self.nodes[sub]),
                self.config,
                global_stores=self.global_task.stores if self.global_task is not None else None,
                partitions_for=self.partitions_of,
                wall_clock_ms=0,
                partition=partition,
            )
            task.initialize()
            if self.fused:
                self.fused_sources[task.task_id] = task.fuse_sources()
            self.tasks[(sub, partition)] = task
        return task

    def _catch_up_globals(self) -> None:
        if self.global_task is None:
            return
        applied = False
        for (topic, partition), log in sorted(self.log.items()):
            if topic not in self.global_topics:
                continue
            at = self.global_position.get((topic, partition), 0)
            for raw in log[at:]:
                self.global_task.update(raw)
                applied = True
            self.global_position[(topic, partition)] = len(log)
        if applied:
            self.global_task.flush()

    def _batch(self, sub: int) -> int:
        """One micro-batch of ``sub``: every task over what its partitions hold, then a commit."""
        tasks = max(self.partitions_of(t) for t in self.sources[sub])
        moved = 0
        written: list[list[OutputRecord]] = []
        for partition in range(tasks):
            batch = []
            for topic in self.sources[sub]:
                if partition >= self.partitions_of(topic):
                    continue
                log = self.log.get((topic, partition), [])
                at = self.position.get((sub, topic, partition), 0)
                if at < len(log):
                    batch.append((topic, log[at:]))
                    self.position[(sub, topic, partition)] = len(log)
            if not batch:
                continue
            self._catch_up_globals()
            task = self._task(sub, partition)
            for topic, records in batch:
                task.add_records(topic, partition, records)
                moved += len(records)
            if self.fused:  # as the Spark runner's executors process a batch
                task.process_buffered()
            else:
                while task.process():
                    task.maybe_punctuate_stream_time()
            task.commit()
            written.append(task.drain_output())
        self.batches += 1
        self._write(written)
        return moved

    def _write(self, per_task: list[list[OutputRecord]]) -> None:
        """The batch's output, as the tasks' producers leave it in each partition."""
        by_target: dict[tuple[str, int], list[list[OutputRecord]]] = {}
        for records in per_task:
            mine: dict[tuple[str, int], list[OutputRecord]] = {}
            for r in records:
                mine.setdefault((r.topic, self._partition(r)), []).append(r)
            for target, rs in mine.items():
                by_target.setdefault(target, []).append(rs)
        for (topic, partition), lists in by_target.items():
            for r in self._merge(lists):
                self.written.setdefault((topic, partition), []).append(r)
                if topic in self.read_topics:
                    self._append(topic, partition, r.key, r.value, r.timestamp, r.headers)

    def _partition(self, r: OutputRecord) -> int:
        if r.partition is not None:
            return r.partition
        n = self.partitions_of(r.topic)
        if r.key is not None:
            return default_partition(r.key, n)
        if self.rng is None:
            return 0
        self.chose |= n > 1
        return self.rng.randrange(n)

    def _merge(self, lists: list[list[OutputRecord]]) -> list[OutputRecord]:
        if self.rng is None or len(lists) == 1:
            return [r for rs in lists for r in rs]
        out, heads = [], [0] * len(lists)
        while True:
            left = [i for i, rs in enumerate(lists) if heads[i] < len(rs)]
            if not left:
                return out
            self.chose |= len(left) > 1
            i = self.rng.choices(left, weights=[len(lists[i]) - heads[i] for i in left])[0]
            out.append(lists[i][heads[i]])
            heads[i] += 1

    # ------------------------------------------------------------------ results
    def outputs(self) -> PerKey:
        """The scenario's output topics as written, per key (every output topic present)."""
        out: PerKey = {}
        for topic, (key_kind, value_kind) in self.scenario.outputs.items():
            out[topic] = {}
            real = self.topics[topic]
            keys, values = serde(key_kind).deserializer(), serde(value_kind).deserializer()
            for partition in range(self.partitions_of(real)):
                for r in self.written.get((real, partition), []):
                    key, value = keys.deserialize(real, r.key), values.deserialize(real, r.value)
                    add(out, topic, key, value, r.timestamp)
        return out

    def close(self) -> None:
        for task in self.tasks.values():
            task.close()
        if self.global_task is not None:
            self.global_task.close()


def microbatch_outputs(
    scenario: Scenario,
    config: Mapping[str, Any],
    partitions: int,
    *,
    restarts: int = 0,
    interleaving: Interleaving = CANONICAL,
    shift: int = 0,
    topics: Topics = IDENTITY,
    fused: dict[str, list[str]] | None = None,
    chose: list[bool] | None = None,
) -> PerKey:
    """The scenario's outputs on the micro-batch reference: its steps (wall-clock ones skipped) in
    ``restarts + 1`` contiguous slices, each preloaded then run to the end. ``topics``: the real
    topic names (a Spark run's, so that whatever counts a topic name's bytes, such as a
    suppression buffer's size, counts the same). ``fused``: given, the tasks run their fusable
    lines fused, and it receives the sources fused by task. ``chose``: given, it receives whether
    ``interleaving``'s seed decided anything (False: every seed gives the canonical result)."""
    ref = MicroBatchReference(scenario, config, partitions, interleaving, topics, fused is not None)
    try:
        for part in slices(scenario.steps, restarts + 1):
            ref.feed(input_records(scenario, partitions, part, shift))
            ref.run()
        if fused is not None:
            fused.update(ref.fused_sources)
        if chose is not None:
            chose.append(ref.chose)
        return ref.outputs()
    finally:
        ref.close()
