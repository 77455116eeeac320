"""Low-latency sub-topologies: long-running Spark tasks that process records as they arrive.

A micro-batch puts about one trigger interval under every record: a record
waits for the next batch to be planned, then for the batch to run. Kafka
Streams instead polls, processes and forwards each record as it arrives and
commits its position every ``commit.interval.ms``. With
``spark.kspark.lowLatency=true`` the runner's sub-topologies that read Kafka
directly (:mod:`~kspark.runtime.spark.direct_source`), stateless ones and
stateful ones whose stores restore from their own changelog topics
(:mod:`~kspark.runtime.spark.low_latency_tasks`), run that way inside Spark
(the idea of Spark's own real-time mode, which runs no Python code:
docs/spark-runner.md):

* every micro-batch of the query runs for ``spark.kspark.lowLatencyBatchMs``.
  Its Spark tasks (at most the task slots the runner gives the query, each
  running one or more Kafka Streams tasks) poll one librdkafka consumer for
  their input partitions, run each poll's records through their tasks (the
  same engine or fused chain as a micro-batch) and produce the output at
  once;
* the truth of where a task is, is the ``<application.id>`` consumer group,
  as in Kafka Streams: every ``commit.interval.ms``, and when the batch ends,
  a task waits for its output's delivery, then commits the offsets after the
  records it processed. A task that fails, or a batch that Spark runs again,
  starts from those offsets: at-least-once, as a micro-batch of the direct
  read (no exactly-once here: the plan says so);
* Spark's checkpoint holds the batch's number, where a new query starts
  (``from``: each partition's start before its group commits one, so that a
  quiet partition with ``auto.offset.reset=latest`` never moves), and the
  group's offsets when the batch was planned (``at``: what the lag metrics
  read). Between two batches the consumer stays warm in the Python worker
  and goes on fetching, so a record that arrives meanwhile waits only for
  the next batch's start.

``process_available()`` runs such a query with ``availableNow``: each batch
runs one level of its sub-topologies (upstream first, up to the level the
run is for: the runner runs it between the micro-batch queries of each
level), reading, from the group's offsets, every partition's range up to its
last stable offset, as the direct read does, and commits.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, SupportsTriggerAvailableNow

from kspark.runtime.spark.direct_source import (
    READ_DDL,
    DirectPlan,
    OffsetRange,
    plan_of_options,
    plan_options,
    process_ranges,
    to_headers,
)
from kspark.runtime.spark.kafka_io import OffsetLister, committed_offsets
from kspark.runtime.spark.low_latency_tasks import StatefulTask, is_stateful
from kspark.runtime.spark.warm_pool import WarmPool

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from kspark.config import StreamsConfig
    from kspark.runtime.spark.kafka_io import RecordSender
    from kspark.runtime.spark.plan import PhysicalPlan
    from kspark.runtime.spark.tasks import TopologySpec

__all__ = [
    "SOURCE_NAME",
    "LowLatencyPlan",
    "KafkaTask",
    "KafkaLowLatencySource",
    "control_topic",
    "create_control_topic",
    "GroupPositions",
    "low_latency_stage",
    "request_stop",
    "slots_for",
]

SOURCE_NAME = "kspark_kafka_low_latency"
"""The data source's name in Spark (``spark.readStream.format(SOURCE_NAME)``)."""

POLL_S = 0.005
"""How long one poll waits for records still missing from a full batch: librdkafka's ``consume``
returns when it holds a batch or at this timeout, so it bounds what a record waits in the
consumer once fetched."""

POLL_MOST = 2_000
"""Records one poll takes at most (a chunk through the tasks)."""

_log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
Offsets = dict[str, dict[str, int]]  # topic -> partition (a string: JSON) -> offset


@dataclass(frozen=True)
class KafkaTask:
    """A Kafka Streams task of the query: sub-topology, partition, and its input topics."""

    subtopology: int
    partition: int
    topics: tuple[str, ...]


@dataclass(frozen=True)
class LowLatencyPlan:
    """What a low-latency query needs on the driver and in the workers (picklable)."""

    direct: DirectPlan  # topics, their sub-topologies, the readers' settings, the specs
    group: str  # application.id: the group that holds the tasks' positions
    slots: int  # Spark tasks a batch runs (they run at once, for the whole batch)
    batch_ms: int
    commit_ms: int
    # librdkafka settings of the group's offset reader on the driver
    group_consumer: Mapping[str, Any]
    control: str  # the application's control topic (control_topic()), one partition
    control_from: int  # its end when this run of the query started: a record from here ends a batch
    # Each sub-topology's level (plan.py): under availableNow a batch runs one level's tasks,
    # the levels in order, up to ``up_to_level`` (None: all).
    levels: Mapping[int, int] = field(default_factory=dict)
    up_to_level: int | None = None

    def options(self) -> dict[str, str]:
        """Data source options carrying this plan (Spark passes options as strings)."""
        return plan_options(self)

    @staticmethod
    def of_options(options: Mapping[str, str]) -> LowLatencyPlan:
        return plan_of_options(options, LowLatencyPlan)

    def kafka_tasks(self) -> list[KafkaTask]:
        """The query's Kafka Streams tasks: one per sub-topology and partition of its widest input
        topic, reading that partition of each of its topics that has one."""
        by_sub: dict[int, list[str]] = {}
        for topic, sub in self.direct.subtopologies.items():
            by_sub.setdefault(sub, []).append(topic)
        tasks = []
        for sub, topics in sorted(by_sub.items()):
            widest = max(self.direct.partitions[t] for t in topics)
            for p in range(widest):
                tasks.append(
                    KafkaTask(sub, p, tuple(sorted(t for t in topics if p < self.direct.partitions[t])))
                )
        return tasks

    def input_partitions(self) -> list[TopicPartition]:
        return [(t, p) for t, n in sorted(self.direct.partitions.items()) for p in range(n)]


class SparkTaskInput(InputPartition):
    """One Spark task of a batch: its Kafka Streams tasks, where each partition starts before its
    group commits one, and either when the batch ends (a wall-clock time) or, under
    ``availableNow``, the offsets it reads up to."""

    def __init__(
        self, tasks: tuple[KafkaTask, ...], start: Offsets, until: Offsets | None, deadline: float
    ) -> None:
        super().__init__(tasks)
        self.tasks = tasks
        self.start = start
        self.until = until
        self.deadline = deadline


def _open_group_consumer(settings: Mapping[str, Any], group: str) -> Any:
    from confluent_kafka import Consumer

    return Consumer(
        {
            **dict(settings),
            "group.id": group,
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "logger": _log,
        }
    )


class _Reader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans the batches on the driver and runs a Spark task's Kafka Streams tasks in a worker.
    Holds no client when pickled."""

    def __init__(self, plan: LowLatencyPlan) -> None:
        self.plan = plan
        self._lister = OffsetLister(plan.direct.bootstrap_servers, settings=plan.direct.admin)
        self._available_now: Offsets | None = None
        self._run_level = -1
        self._group_reader: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_group_reader": None}

    # ---------------------------------------------------------------- driver side
    def _listed(self, latest: bool) -> Offsets:
        listed = self._lister.offsets(self.plan.input_partitions(), latest=latest)
        out: Offsets = {t: {} for t in self.plan.direct.partitions}
        for (t, p), offset in listed.items():
            out[t][str(p)] = offset
        return out

    def _committed(self) -> Offsets:
        """The group's committed offsets (partitions without one are left out)."""
        if self._group_reader is None:
            self._group_reader = _open_group_consumer(self.plan.group_consumer, self.plan.group)
        out: Offsets = {}
        for tp in committed_offsets(self._group_reader, self.plan.input_partitions(), 60.0):
            if tp.offset >= 0:
                out.setdefault(tp.topic, {})[str(tp.partition)] = tp.offset
        return out

    def initialOffset(self) -> dict[str, Any]:
        start = self._listed(latest=self.plan.direct.starting == "latest")
        for topic, starts in self.plan.direct.start_at.items():
            start[topic].update(starts)
        return {"epoch": 0, "from": start, "until": None}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = self._listed(latest=True)
        self._run_level = -1  # the level this run's last batch ran

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        control = self._lister.offsets([(self.plan.control, 0)], latest=True)[(self.plan.control, 0)]
        if control > self.plan.control_from:
            return start  # KafkaStreams.close() asked this run to stop: no batch after the one it ended
        if self._available_now is None:
            return {"epoch": int(start["epoch"]) + 1, "from": start["from"], "until": None}
        # A batch runs one level's tasks, the levels in order, as the micro-batch queries run
        # levels upstream first: a task that reads topics sub-topologies of this query write finds
        # them written before it takes records across them by timestamp. A later level reads up to
        # where its topics end after the levels before it ran; what a level writes to a level
        # before it (a foreign-key join's responses) waits for process_available()'s next run.
        until = self._available_now if self._run_level < 0 else self._listed(latest=True)
        committed = self._committed()
        # Where each partition is: its group offset, else where the query started it.
        behind = [
            level
            for t, ends in until.items()
            for p, end in ends.items()
            if self._run_level < (level := self.plan.levels.get(self.plan.direct.subtopologies[t], 0))
            and (self.plan.up_to_level is None or level <= self.plan.up_to_level)
            and committed.get(t, {}).get(p, start["from"][t][p]) < end
        ]
        if not behind:
            return start  # nothing to read: availableNow ends
        self._run_level = min(behind)
        return {
            "epoch": int(start["epoch"]) + 1,
            "from": start["from"],
            "until": until,
            "level": self._run_level,
        }

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        """The query's Kafka Streams tasks spread over its Spark tasks, round robin: each Spark task
        runs for the whole batch, so there are never more than the slots the query was given.
        Under ``availableNow`` a task ends when it has read its ranges: one Spark task each."""
        tasks = self.plan.kafka_tasks()
        deadline = time.time() + self.plan.batch_ms / 1000
        until = end.get("until")
        if until is not None:
            level = end.get("level", 0)
            return [
                SparkTaskInput((task,), end["from"], until, deadline)
                for task in tasks
                if self.plan.levels.get(task.subtopology, 0) == level
            ]
        n = max(1, min(self.plan.slots, len(tasks)))
        return [SparkTaskInput(tuple(tasks[i::n]), end["from"], None, deadline) for i in range(n)]

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: the tasks committed their offsets to the group themselves."""

    def stop(self) -> None:
        if self._group_reader is not None:
            self._group_reader.close()
            self._group_reader = None

    # ---------------------------------------------------------------- worker side
    def read(self, partition: InputPartition) -> Iterator[tuple[int, int, str]]:
        from kspark.runtime.spark.warm import new_task_metrics, warm_entry

        assert isinstance(partition, SparkTaskInput)
        specs = self.plan.direct.topology_specs()
        by_sub = {spec.subtopology: spec for spec in specs.values()}
        run = _TaskRun(self.plan, partition, by_sub)
        records, written = run.available_now() if partition.until is not None else run.until_deadline()
        warms = [warm_entry(by_sub[t.subtopology], t.partition) for t in partition.tasks]
        yield records, written, new_task_metrics(warms)


class _GroupConsumer:
    """A worker's consumer of a low-latency query's input, in the application's group (which it
    commits to; it never subscribes), kept warm between batches with where it has read to."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer({**conf, "logger": logging.getLogger("kspark.consumer")})
        self.assigned: tuple[TopicPartition, ...] = ()
        self.positions: dict[TopicPartition, int] = {}  # next offset the consumer hands out

    def assign(self, starts: Mapping[TopicPartition, int]) -> None:
        """Read ``starts`` on: where the consumer already is, it goes on with what it has fetched."""
        from confluent_kafka import TopicPartition as KafkaTopicPartition

        wanted = tuple(sorted(starts))
        if wanted == self.assigned and all(self.positions.get(tp) == o for tp, o in starts.items()):
            return
        self.consumer.assign([KafkaTopicPartition(t, p, o) for (t, p), o in sorted(starts.items())])
        self.assigned = wanted
        self.positions = dict(starts)

    def close(self) -> None:
        self.consumer.close()


GROUP_CONSUMERS: WarmPool[_GroupConsumer] = WarmPool(60.0, _GroupConsumer.close, max_idle=2)
"""This worker's idle low-latency consumers, by configuration (reassigned per Spark task)."""


class _TaskRun:
    """One Spark task's run of its Kafka Streams tasks in a low-latency batch."""

    def __init__(
        self, plan: LowLatencyPlan, spark_task: SparkTaskInput, specs: Mapping[int, TopologySpec]
    ) -> None:
        self.plan = plan
        self.spark_task = spark_task
        self.specs = specs
        # No end-of-partition events: a caught-up partition would report one after every record.
        self.conf = {
            **plan.direct.consumer,
            "group.id": plan.group,
            "enable.partition.eof": False,
        }
        self.key = json.dumps(self.conf, sort_keys=True, default=str)
        self.partitions = [(t, k.partition) for k in spark_task.tasks for t in k.topics]
        self.committed: dict[TopicPartition, int] = {}
        self.metadata: dict[TopicPartition, str | None] = {}  # committed with the offsets
        self.stateful: dict[KafkaTask, StatefulTask | None] = {}  # by task: None if it has no stores
        self.records = 0
        self.written = 0

    def _starts(self, consumer: Any) -> dict[TopicPartition, int]:
        """Each partition's group offset, or where the query started it before it had one."""
        listed = committed_offsets(consumer, self.partitions, 60.0)
        got = {(tp.topic, tp.partition): tp.offset for tp in listed}
        self.metadata = {(tp.topic, tp.partition): tp.metadata for tp in listed}
        start = self.spark_task.start
        self.committed = {tp: o for tp, o in got.items() if o >= 0}
        return {tp: self.committed.get(tp, start[tp[0]][str(tp[1])]) for tp in self.partitions}

    def _stateful_task(self, task: KafkaTask) -> StatefulTask | None:
        """The task's stores and what commits them, restored on first use (None: it has none)."""
        if task not in self.stateful:
            spec = self.specs[task.subtopology]
            self.stateful[task] = (
                StatefulTask(
                    spec, task.partition, [self.metadata.get((t, task.partition)) for t in task.topics]
                )
                if is_stateful(spec)
                else None
            )
        return self.stateful[task]

    def _flush(self, senders: dict[int, RecordSender]) -> None:
        """The first half of a commit of the stateful tasks that changed: their stores flushed."""
        for stateful in self.stateful.values():
            if stateful is not None and stateful.dirty:
                stateful.flush(_sender(senders, stateful.spec))

    def _commit(self, consumer: Any, positions: Mapping[TopicPartition, int]) -> None:
        """The group's offsets of the partitions that moved (their output was delivered first),
        with each stateful task's metadata once its changelog writes were delivered too."""
        from confluent_kafka import TopicPartition as KafkaTopicPartition

        for task, stateful in self.stateful.items():
            if stateful is not None and stateful.dirty:
                metadata = stateful.committed()
                for t in task.topics:
                    self.metadata[(t, task.partition)] = metadata
        moved = {tp: o for tp, o in positions.items() if self.committed.get(tp) != o}
        if moved:
            consumer.commit(
                offsets=[
                    KafkaTopicPartition(t, p, o, metadata=m)
                    if (m := self.metadata.get((t, p)))
                    else KafkaTopicPartition(t, p, o)
                    for (t, p), o in sorted(moved.items())
                ],
                asynchronous=False,
            )
            self.committed.update(moved)

    def _discard(self) -> None:
        """The run failed: its stateful tasks' stores may hold writes past their last commit."""
        for stateful in self.stateful.values():
            if stateful is not None:
                stateful.discard()

    def available_now(self) -> tuple[int, int]:
        """Every partition from its group offset to the batch's end, as the direct read reads a range."""
        from kspark.runtime.spark.kafka_io import RecordSender

        until = self.spark_task.until
        assert until is not None
        warm = GROUP_CONSUMERS.borrow(self.key, lambda: _GroupConsumer(self.conf))
        try:
            starts = self._starts(warm.consumer)
            for task in self.spark_task.tasks:
                spec = self.specs[task.subtopology]
                ranges = tuple(
                    OffsetRange(t, task.partition, starts[(t, task.partition)], until[t][str(task.partition)])
                    for t in task.topics
                    if starts[(t, task.partition)] < until[t][str(task.partition)]
                )
                if not ranges:
                    continue
                sender = RecordSender(spec.producer_config)
                stateful = self._stateful_task(task)
                self.records += process_ranges(self.plan.direct.consumer, spec, sender, ranges, stateful)
                if stateful is not None:
                    stateful.flush(sender)
                self.written += sender.close()
                self._commit(warm.consumer, {(r.topic, r.partition): r.end for r in ranges})
        except BaseException:
            self._discard()
            warm.close()
            raise
        GROUP_CONSUMERS.give_back(self.key, warm)
        return self.records, self.written

    def until_deadline(self) -> tuple[int, int]:
        """Poll, process and produce until the batch's deadline, committing every commit interval."""
        warm = GROUP_CONSUMERS.borrow(self.key, lambda: _GroupConsumer(self.conf))
        senders: dict[int, RecordSender] = {}
        control = (self.plan.control, 0)
        try:
            warm.assign({**self._starts(warm.consumer), control: self.plan.control_from})
            tasks = {(t, k.partition): k for k in self.spark_task.tasks for t in k.topics}
            commit_s = self.plan.commit_ms / 1000
            next_commit = time.monotonic() + commit_s
            while True:
                polled = _by_partition(warm.consumer.consume(POLL_MOST, POLL_S))
                stop = polled.pop(control, None) is not None  # KafkaStreams.close(): end the batch now
                for task in {tasks[tp] for tp in polled}:
                    spec = self.specs[task.subtopology]
                    self.records += _process(
                        spec, _sender(senders, spec), task, polled, self._stateful_task(task)
                    )
                for tp, messages in polled.items():
                    warm.positions[tp] = messages[-1].offset() + 1
                self._process_held(warm, senders)
                self._punctuate(senders)
                now = time.monotonic()
                last = stop or time.time() >= self.spark_task.deadline
                if last or now >= next_commit:
                    self._flush(senders)
                    for sender in senders.values():
                        self.written += sender.close()  # every record delivered, then the offsets
                    senders.clear()
                    positions = {tp: warm.positions[tp] for tp in self.partitions}
                    for stateful in self.stateful.values():
                        if stateful is not None:
                            positions.update(stateful.held())  # buffered, not processed yet
                    self._commit(warm.consumer, positions)
                    next_commit = now + commit_s
                    if last:
                        for stateful in self.stateful.values():
                            if stateful is not None:
                                stateful.drop_held()  # the next batch reads them again
                                stateful.hand_over()
                        break
        except BaseException:
            self._discard()
            warm.close()  # its position is the group's again at the next start
            raise
        GROUP_CONSUMERS.give_back(self.key, warm)
        return self.records, self.written

    def _process_held(self, warm: _GroupConsumer, senders: dict[int, RecordSender]) -> None:
        """Run the stateful tasks that read several topics as far as their buffered records allow
        (StatefulTask.process_ready): a partition without records buffered holds its task back
        until it is read to its end (its last stable offset, as of the consumer's last fetch)."""
        from confluent_kafka import TopicPartition as KafkaTopicPartition

        consumer = warm.consumer
        for task, stateful in self.stateful.items():
            if stateful is None or len(task.topics) < 2 or not stateful.held():
                continue

            def caught_up(topic: str, partition: int = task.partition) -> bool:
                tp = KafkaTopicPartition(topic, partition)
                _, end = consumer.get_watermark_offsets(tp, cached=True)
                # The consumer's position passes transaction markers; before its first record
                # it may not know one, and the start it was assigned is where it is.
                (position,) = consumer.position([tp])
                at = max(position.offset, warm.positions.get((topic, partition), -1))
                return bool(end >= 0 and at >= end)

            stateful.process_ready(task.topics, caught_up, _sender(senders, stateful.spec))

    def _punctuate(self, senders: dict[int, RecordSender]) -> None:
        """Wall-clock punctuation of the tasks that run Processor API code (``spec.timers``): due
        now, input or not, as on a Kafka Streams thread."""
        from kspark.runtime.spark.tasks import punctuate_stateless

        for task in self.spark_task.tasks:
            spec = self.specs[task.subtopology]
            if not spec.timers:
                continue
            stateful = self._stateful_task(task)
            if stateful is not None:
                stateful.punctuate(_sender(senders, spec))
                continue
            out = punctuate_stateless(spec, task.partition)
            if out:
                _sender(senders, spec).send(out)


def _sender(senders: dict[int, RecordSender], spec: TopologySpec) -> RecordSender:
    """The run's producer of ``spec``'s sub-topology until the next commit (made on first use)."""
    from kspark.runtime.spark.kafka_io import RecordSender

    sender = senders.get(spec.subtopology)
    if sender is None:
        sender = senders[spec.subtopology] = RecordSender(spec.producer_config)
    return sender


def _by_partition(messages: Sequence[Any]) -> dict[TopicPartition, list[Any]]:
    """A poll's records by topic-partition, in offset order; the end of a partition is no record,
    and an error after which a partition cannot be read raises (partition_reader.py)."""
    from confluent_kafka import KafkaError

    from kspark.runtime.spark.partition_reader import check_read_error

    out: dict[TopicPartition, list[Any]] = {}
    for m in messages:
        error = m.error()
        if error is not None:
            if error.code() != KafkaError._PARTITION_EOF:
                check_read_error(error, f"{m.topic()}[{m.partition()}]")
            continue
        tp = (m.topic(), m.partition())
        got = out.get(tp)
        if got is None:
            out[tp] = [m]
        else:
            got.append(m)
    return out


def _process(
    spec: TopologySpec,
    sender: RecordSender,
    task: KafkaTask,
    polled: Mapping[TopicPartition, list[Any]],
    stateful: StatefulTask | None,
) -> int:
    """One poll's records of ``task`` through it (a merge's topics across by head timestamp)."""
    from kspark.runtime.spark.task_input import FeedChunk
    from kspark.runtime.spark.tasks import process_stateless, process_stateless_feeds

    spec.global_replica()
    columns = {
        topic: (
            [m.offset() for m in ms],
            [m.timestamp()[1] for m in ms],
            [m.key() for m in ms],
            [m.value() for m in ms],
            [m.headers() for m in ms],
        )
        for topic in task.topics
        if (ms := polled.get((topic, task.partition)))
    }
    if len(task.topics) == 1 and stateful is None:
        ((topic, (offsets, timestamps, keys, values, headers)),) = columns.items()
        process_stateless(
            spec, sender, topic, task.partition, offsets, timestamps, keys, values, headers, to_headers
        )
        return len(offsets)
    feeds = [
        (topic, iter([FeedChunk(topic, task.partition, *cols, to_headers)]))
        for topic, cols in columns.items()
    ]
    if stateful is not None and len(task.topics) > 1:
        for _, chunks in feeds:
            for chunk in chunks:
                stateful.offer(chunk)  # processed when the task's partitions allow (_process_held)
    elif stateful is not None:
        stateful.process(feeds, sender)
    else:
        process_stateless_feeds(spec, sender, task.partition, feeds)
    return sum(len(cols[0]) for cols in columns.values())


class KafkaLowLatencySource(DataSource):
    """The data source Spark instantiates from ``format(SOURCE_NAME)`` with a :class:`LowLatencyPlan`."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return READ_DDL

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return _Reader(LowLatencyPlan.of_options(self.options))


class GroupPositions:
    """Where the ``<application.id>`` group is: a low-latency query's progress, which its tasks
    commit there every ``commit.interval.ms`` (its Spark batches end only once a minute)."""

    def __init__(self, config: StreamsConfig) -> None:
        from kspark.runtime.kafka_clients import librdkafka_client

        self._settings = librdkafka_client(config.originals(), "consumer")
        self._group = config.application_id()
        self._consumer: Any = None

    def ends(self, plan: PhysicalPlan, partitions: Mapping[str, int]) -> dict[str, dict[TopicPartition, int]]:
        """Per low-latency query of ``plan``, its input partitions' committed offsets (the
        partitions without one left out): what its lag metrics count from."""
        from kspark.runtime.spark.plan import Stage

        queries = [q for q in plan.queries if q.stage is Stage.LOW_LATENCY]
        if not queries:
            return {}
        if self._consumer is None:
            self._consumer = _open_group_consumer(self._settings, self._group)
        wanted = [(t, p) for q in queries for t in q.source_topics for p in range(partitions.get(t, 0))]
        got = {(tp.topic, tp.partition): tp.offset for tp in committed_offsets(self._consumer, wanted, 10.0)}
        return {
            q.name: {tp: o for tp, o in got.items() if tp[0] in q.source_topics and o >= 0} for q in queries
        }

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


def slots_for(spark: SparkSession, plan: PhysicalPlan) -> int:
    """The Spark tasks a batch of the plan's low-latency query runs: they hold their task slots
    for the whole batch, so all of the application's (``defaultParallelism``) when it is the only
    query, else half of them (at least one), the rest for the micro-batches of the others."""
    from kspark.errors import StreamsException

    total = int(spark.sparkContext.defaultParallelism)
    others = len(plan.queries) - 1
    if not others:
        return max(1, total)
    if total < 2:
        raise StreamsException(
            f"spark.kspark.lowLatency: the low-latency query of {plan.application_id} holds its task "
            f"slots for its whole run, and its {others} other queries need one too, but Spark has "
            f"{total} (its defaultParallelism): give Spark more cores or set spark.kspark.lowLatency=false"
        )
    return total // 2


def control_topic(application_id: str) -> str:
    """The topic through which ``KafkaStreams.close()`` ends a low-latency query's running batch:
    its tasks read it beside their input, and a record there ends the batch at once."""
    return f"{application_id}-kspark-control"


def create_control_topic(config: StreamsConfig) -> None:
    """Create the application's control topic if it does not exist (one partition, a day), and
    wait until its partition has a leader: the query lists its end as it starts, and a topic just
    created has none for a moment ("No leaders found")."""
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    from kspark.errors import StreamsException
    from kspark.runtime.kafka_clients import cluster_metadata, create_topics, librdkafka_client

    name = control_topic(config.application_id())
    settings = librdkafka_client(config.originals(), "admin")
    topic = NewTopic(name, num_partitions=1, replication_factor=-1, config=_CONTROL)
    create_topics(settings, [topic], "control")
    deadline = time.monotonic() + CONTROL_LEADER_WAIT_S
    while True:
        found = cluster_metadata(settings).topics.get(name)
        partition = found.partitions.get(0) if found is not None and found.error is None else None
        if partition is not None and partition.leader >= 0:
            return
        if time.monotonic() >= deadline:
            raise StreamsException(
                f"the control topic {name} has no leader {CONTROL_LEADER_WAIT_S:.0f} s after it was created"
            )
        time.sleep(0.1)


CONTROL_LEADER_WAIT_S = 30.0
"""How long ``start()`` waits for the control topic it created to have a leader."""

_CONTROL = {"cleanup.policy": "delete", "retention.ms": str(86_400_000)}


def request_stop(config: StreamsConfig) -> None:
    """Ask the running low-latency batch to end now and the query to plan no more (close())."""
    from confluent_kafka import Producer

    from kspark.errors import StreamsException
    from kspark.runtime.kafka_clients import librdkafka_client

    producer = Producer({**librdkafka_client(config.originals(), "producer"), "logger": _log})
    producer.produce(control_topic(config.application_id()), b"stop")
    if producer.flush(30):
        raise StreamsException(
            f"could not write to {control_topic(config.application_id())} within 30 s to end the "
            "low-latency batch"
        )


def low_latency_stage(
    spark: SparkSession,
    direct: DirectPlan,
    config: StreamsConfig,
    batch_ms: int,
    slots: int,
    levels: Mapping[int, int],
    up_to_level: int | None = None,
) -> DataFrame:
    """The streaming DataFrame of a low-latency query over ``direct``'s topics and sub-topologies."""
    from kspark.runtime.kafka_clients import librdkafka_client
    from kspark.runtime.spark.direct_source import register

    control = control_topic(config.application_id())
    lister = OffsetLister(direct.bootstrap_servers, settings=direct.admin)
    plan = LowLatencyPlan(
        direct,
        config.application_id(),
        slots,
        batch_ms,
        config.commit_interval_ms(),
        librdkafka_client(config.originals(), "consumer"),
        control,
        lister.offsets([(control, 0)], latest=True)[(control, 0)],
        levels,
        up_to_level,
    )
    register(spark, KafkaLowLatencySource)
    return spark.readStream.format(SOURCE_NAME).options(**plan.options()).load()
