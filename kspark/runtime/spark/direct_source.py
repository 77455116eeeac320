"""Stateless sub-topologies read Kafka in the Python worker: a Spark streaming source of offset ranges.

A sub-topology without state stores needs no shuffle, no state store and
nothing of Spark's SQL engine between Kafka and its Python task. Through
Spark's Kafka source every record was still read by the JVM's Kafka
consumer, made a Spark row, then an Arrow row, and handed to Python: ~4 µs
of JVM CPU a record on this project's machine, more than the task's own
Python work for a filter-and-map (bench/results/history.md, "Direct read"). So
such a sub-topology runs as a Spark streaming query over this module's
Python data source (Spark's ``pyspark.sql.datasource`` API):

* the driver plans each micro-batch as Spark's Kafka source does: the
  offset range of every input topic-partition up to its last stable offset
  (``read_committed``), from where the last batch ended; with
  ``spark.kspark.maxOffsetsPerTrigger`` capped and split over partitions by
  lag as Spark splits it; Spark checkpoints the ranges, so a restart goes on
  from the last committed batch and a failed batch is read again;
* one Spark task per Kafka Streams task (its partition of each input topic
  with records in the batch; one range, unless the sub-topology reads
  several topics) reads its ranges with librdkafka consumers kept warm in the
  Python worker
  (:mod:`~kspark.runtime.spark.partition_reader`: read_committed, records
  gone from Kafka fail the query as with Spark's ``failOnDataLoss``), runs
  the task over them (``process_stateless``: the same engine or fused chain
  as the mapInArrow stage; several topics' ranges through the engine's
  task, which takes records across them by head timestamp) and writes the
  output with the warm producer;
* each Spark task returns one row, ``(records, written, task_metrics)``.

Spark's own metrics see those rows: ``numInputRows`` of such a query counts
the tasks read per batch, not records; ``KafkaStreams.process_available()``
counts records from the rows. ``spark.kspark.directRead=false`` reads through
Spark's Kafka source instead (as do applications whose ``consumer.*``
settings librdkafka does not know, see :func:`direct_consumer_settings`).
"""

from __future__ import annotations

import base64
import logging
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from kspark.errors import StreamsException
from kspark.processor.api import Headers  # imported by kafka_io anyway
from kspark.runtime.spark.kafka_io import OffsetLister

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kspark.runtime.spark.low_latency_tasks import StatefulTask
    from kspark.runtime.spark.task_input import FeedChunk
    from kspark.runtime.spark.tasks import Sender, TopologySpec

# Spark plans a micro-batch of this source in Python processes of its own on the driver (creating
# the source, the streaming source runner, the read's planning), each a new interpreter that
# unpickles the plan. They need the offsets and the tasks only: what runs the tasks (the engine,
# the topology's specs) is imported and unpickled in the workers, by read() (0.16 s of imports
# and the application's topology less in each of those processes).

__all__ = [
    "SOURCE_NAME",
    "DirectPlan",
    "KafkaDirectSource",
    "OffsetRange",
    "TaskRanges",
    "direct_consumer_settings",
    "plan_of_options",
    "plan_options",
    "process_ranges",
    "rate_limit",
    "to_headers",
    "register",
]

SOURCE_NAME = "kspark_kafka"
"""The data source's name in Spark (``spark.readStream.format(SOURCE_NAME)``)."""

READ_DDL = "records long, written long, task_metrics string"
"""A direct-read Spark task's row: records read, output records written, what its tasks
report (``WRITTEN_DDL``)."""

Offsets = dict[str, dict[str, int]]
"""A batch boundary as Spark checkpoints it: topic -> partition (as a string: JSON) -> offset."""

_log = logging.getLogger(__name__)


def direct_consumer_settings(consumer: Mapping[str, Any]) -> dict[str, Any] | None:
    """An application's ``consumer.*`` settings for librdkafka, or None if librdkafka does not know
    one of them (they are the Java client's names too; such an application reads through Spark's
    Kafka source, which takes the Java names)."""
    from confluent_kafka import Consumer, KafkaException

    settings = dict(consumer)
    try:
        # Creating a consumer checks every name and value; it connects to nothing until used.
        Consumer({"group.id": "kspark-settings-check", **settings}).close()
    except (KafkaException, ValueError, TypeError) as e:
        _log.info("consumer settings %s are not librdkafka's (%s): Spark's Kafka source reads", settings, e)
        return None
    return settings


@dataclass(frozen=True)
class DirectPlan:
    """What a direct-read query needs on the driver and in the workers (picklable)."""

    bootstrap_servers: str
    partitions: Mapping[str, int]  # topic -> partition count, assigned as the JVM source is
    starting: str  # "earliest" or "latest": where a new query starts
    max_offsets: int | None  # records per micro-batch, over all partitions
    consumer: Mapping[str, Any]  # librdkafka settings of the range readers
    subtopologies: Mapping[str, int]  # the sub-topology reading each topic
    specs: bytes = field(repr=False)  # {topic: TopologySpec}, pickled (topology_specs())
    admin: Mapping[str, Any] = field(default_factory=dict, repr=False)  # the offset lister's connection
    start_at: Offsets = field(default_factory=dict)  # a new query's start where its group committed one

    @staticmethod
    def of(
        bootstrap_servers: str,
        partitions: Mapping[str, int],
        starting: str,
        max_offsets: int | None,
        consumer: Mapping[str, Any],
        specs: Mapping[str, TopologySpec],
        admin: Mapping[str, Any],
        start_at: Offsets,
    ) -> DirectPlan:
        """The plan of a query whose topics are read by the sub-topologies ``specs`` (by topic)."""
        from pyspark import cloudpickle

        pickled: bytes = cloudpickle.dumps(dict(specs))  # type: ignore[no-untyped-call]
        subtopologies = {t: s.subtopology for t, s in specs.items()}
        return DirectPlan(
            bootstrap_servers,
            partitions,
            starting,
            max_offsets,
            consumer,
            subtopologies,
            pickled,
            admin,
            start_at,
        )

    def topology_specs(self) -> dict[str, TopologySpec]:
        """The sub-topology reading each topic (unpickled anew: a worker's read calls it once)."""
        import pickle

        specs: dict[str, TopologySpec] = pickle.loads(self.specs)
        return specs

    def options(self) -> dict[str, str]:
        """Data source options carrying this plan (Spark passes options as strings)."""
        return plan_options(self)

    @staticmethod
    def of_options(options: Mapping[str, str]) -> DirectPlan:
        return plan_of_options(options, DirectPlan)


P = TypeVar("P")


def plan_options(plan: object) -> dict[str, str]:
    """A data source's options carrying ``plan``, pickled (Spark passes options as strings)."""
    from pyspark import cloudpickle

    pickled: bytes = cloudpickle.dumps(plan)  # type: ignore[no-untyped-call]
    return {"plan": base64.b64encode(pickled).decode("ascii")}


def plan_of_options(options: Mapping[str, str], kind: type[P]) -> P:
    """The plan :func:`plan_options` put in ``options``, checked to be a ``kind``."""
    import pickle

    plan = pickle.loads(base64.b64decode(options["plan"]))
    if not isinstance(plan, kind):
        raise StreamsException(f"the data source's plan is a {type(plan).__name__}, not a {kind.__name__}")
    return plan


@dataclass(frozen=True)
class OffsetRange:
    """``topic[partition]`` from ``start`` (inclusive) to ``end``."""

    topic: str
    partition: int
    start: int
    end: int


class TaskRanges(InputPartition):
    """One Spark task's input: the ranges of one Kafka Streams task, one per input topic with
    records in the batch (the same partition of each of its sub-topology's topics)."""

    def __init__(self, ranges: tuple[OffsetRange, ...]) -> None:
        super().__init__(ranges)
        self.ranges = ranges
        self.partition = ranges[0].partition


def rate_limit(start: Offsets, latest: Offsets, max_records: int) -> Offsets:
    """``latest`` cut to about ``max_records`` records after ``start``, split over the partitions in
    proportion to what each has to read, as Spark's Kafka source splits ``maxOffsetsPerTrigger``
    (a share under one record rounds up, so no partition with records waits forever)."""
    lags = {(t, p): end - start[t][p] for t, ends in latest.items() for p, end in ends.items()}
    total = sum(lag for lag in lags.values() if lag > 0)
    if total <= max_records:
        return latest
    out: Offsets = {t: {} for t in latest}
    for (t, p), lag in lags.items():
        if lag <= 0:
            out[t][p] = latest[t][p]
            continue
        share = max_records * lag / total
        out[t][p] = min(latest[t][p], start[t][p] + int(share if share >= 1 else 1))
    return out


class _Reader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans offset ranges on the driver (Spark's Python streaming source runner) and reads one in
    a worker. Holds no client when pickled: the admin client is opened on first use."""

    def __init__(self, plan: DirectPlan) -> None:
        self.plan = plan
        self._lister = OffsetLister(plan.bootstrap_servers, settings=plan.admin)
        self._available_now: Offsets | None = None

    # ---------------------------------------------------------------- driver side
    def _offsets(self, latest: bool) -> Offsets:
        """Each partition's first offset, or its last stable offset (read_committed's end); errors
        that clear by themselves are retried (:class:`OffsetLister`)."""
        listed = self._lister.offsets(
            ((t, p) for t, n in sorted(self.plan.partitions.items()) for p in range(n)), latest=latest
        )
        out: Offsets = {t: {} for t in self.plan.partitions}
        for (t, p), offset in listed.items():
            out[t][str(p)] = offset
        return out

    def initialOffset(self) -> Offsets:
        offsets = self._offsets(latest=self.plan.starting == "latest")
        for topic, starts in self.plan.start_at.items():
            offsets[topic].update(starts)
        return offsets

    def getDefaultReadLimit(self) -> ReadLimit:
        max_offsets = self.plan.max_offsets
        return ReadMaxRows(max_offsets) if max_offsets is not None else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = self._offsets(latest=True)

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        latest = self._available_now if self._available_now is not None else self._offsets(latest=True)
        for t, ends in latest.items():
            for p, end in ends.items():
                if end < start[t][p]:
                    raise StreamsException(
                        f"{t}[{p}] ends at offset {end}, before {start[t][p]} where the last "
                        "micro-batch ended: the topic was deleted and created again, or truncated. "
                        "Records may be lost; the query stops, as with Spark's Kafka source"
                    )
        if isinstance(limit, ReadMaxRows):
            return rate_limit(start, latest, limit.max_rows)
        return latest

    def partitions(self, start: Offsets, end: Offsets) -> list[InputPartition]:
        """A Spark task per Kafka Streams task with records to read: a task of a sub-topology
        that reads several topics (a merge) takes records across them by head timestamp, so it
        reads all of its ranges in one Spark task."""
        tasks: dict[tuple[int, int], list[OffsetRange]] = {}
        for t, ends in sorted(end.items()):
            for p, stop in sorted(ends.items(), key=lambda item: int(item[0])):
                if stop > start[t][p]:
                    key = (self.plan.subtopologies[t], int(p))
                    tasks.setdefault(key, []).append(OffsetRange(t, int(p), start[t][p], stop))
        return [TaskRanges(tuple(ranges)) for _, ranges in sorted(tasks.items())]

    def commit(self, end: Offsets) -> None:
        """Nothing to do: Spark's checkpoint holds the offsets, and no consumer group is used."""

    # ---------------------------------------------------------------- worker side
    def read(self, partition: InputPartition) -> Iterator[tuple[int, int, str]]:
        from kspark.runtime.spark.warm import new_task_metrics, warm_entry

        assert isinstance(partition, TaskRanges)
        ranges, p = partition.ranges, partition.partition
        spec = self.plan.topology_specs()[ranges[0].topic]
        commit = spec.task_commit(p)
        if not commit.begin({(r.topic, p): r.end for r in ranges}):
            yield 0, 0, ""  # a replay of a batch whose output Kafka committed already
            return
        try:
            counted = process_ranges(self.plan.consumer, spec, commit, ranges)
            written = commit.commit()
        except BaseException:
            commit.abort()
            raise
        yield counted, written, new_task_metrics([warm_entry(spec, p)])


def process_ranges(
    consumer: Mapping[str, Any],
    spec: TopologySpec,
    sender: Sender,
    ranges: tuple[OffsetRange, ...],
    stateful: StatefulTask | None = None,
) -> int:
    """One Kafka Streams task's ranges (one per input topic, the same partition) read with warm
    readers of ``consumer``'s settings and run through the task, its output to ``sender``; returns
    the records read. One topic's range of a stateless task goes a chunk at a time (fused when
    planned); several topics', or a low-latency query's ``stateful`` task's, through the engine's
    task, which takes records across them by head timestamp."""
    from kspark.runtime.spark.tasks import process_stateless_feeds

    counted = [0]
    if len(ranges) == 1 and stateful is None:
        _read_one(consumer, spec, sender, ranges[0], counted)
    else:
        spec.global_replica()
        feeds = [(r.topic, _records(consumer, r, counted)) for r in ranges]
        if stateful is not None:
            stateful.process(feeds, sender)
        else:
            process_stateless_feeds(spec, sender, ranges[0].partition, feeds)
    return counted[0]


def _read_one(
    consumer: Mapping[str, Any], spec: TopologySpec, sender: Sender, r: OffsetRange, counted: list[int]
) -> None:
    from kspark.runtime.spark.partition_reader import read_range
    from kspark.runtime.spark.tasks import process_stateless

    for chunk in read_range(consumer, r.topic, r.partition, r.start, r.end):
        spec.global_replica()
        process_stateless(
            spec,
            sender,
            r.topic,
            r.partition,
            chunk.offsets,
            chunk.timestamps,
            chunk.keys,
            chunk.values,
            chunk.headers,
            to_headers,
        )
        counted[0] += len(chunk.offsets)


def _records(consumer: Mapping[str, Any], r: OffsetRange, counted: list[int]) -> Iterator[FeedChunk]:
    """A range's records a chunk at a time, as the engine's task takes them (counted as read)."""
    from kspark.runtime.spark.partition_reader import read_range
    from kspark.runtime.spark.task_input import FeedChunk

    for chunk in read_range(consumer, r.topic, r.partition, r.start, r.end):
        counted[0] += len(chunk.offsets)
        yield FeedChunk(
            r.topic,
            r.partition,
            chunk.offsets,
            chunk.timestamps,
            chunk.keys,
            chunk.values,
            chunk.headers,
            to_headers,
        )


def to_headers(raw: list[tuple[str, bytes | None]] | None) -> Headers:
    """librdkafka's headers of a record (None for none) as ``Headers``."""
    return Headers(raw) if raw else Headers()


class KafkaDirectSource(DataSource):
    """The data source Spark instantiates from ``format(SOURCE_NAME)`` with a :class:`DirectPlan`."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return READ_DDL

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return _Reader(DirectPlan.of_options(self.options))


_REGISTERED: weakref.WeakKeyDictionary[SparkSession, set[str]] = weakref.WeakKeyDictionary()


def register(spark: SparkSession, source: type[DataSource] = KafkaDirectSource) -> None:
    """Make ``source`` (this module's by default) known to ``spark``, once (Spark warns at every
    replacement)."""
    names = _REGISTERED.setdefault(spark, set())
    if source.name() not in names:
        spark.dataSource.register(source)
        names.add(source.name())
