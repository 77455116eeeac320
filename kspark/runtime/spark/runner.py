"""Driver side of the Spark runner: a topology compiled to Spark Structured Streaming queries.

One streaming query per sub-topology. Sub-topologies are joined by their
repartition topics in Kafka, exactly as Kafka Streams joins them; a query
that has nothing but stateless processors reads its input in the Python
workers and runs them there (:mod:`kspark.runtime.spark.direct_source`; or,
with ``spark.kspark.directRead=false``, in ``mapInArrow`` over Spark's Kafka
source), one with state stores groups its input by task
(:mod:`kspark.runtime.spark.tasks`), a plain ``count()`` is computed by
Spark's own streaming aggregation (:mod:`kspark.runtime.spark.lowering`) and a
windowed count by a stage of its own (:mod:`kspark.runtime.spark.windowed_count`).
The stages write their output to Kafka themselves and each query runs its
micro-batches from ``foreachBatch``, so
a micro-batch is a commit: input offsets (Spark's checkpoint), state
(Spark's state store) and outputs move together, and
``commit.interval.ms`` is the trigger interval.

The driver only plans: records are read, processed and written on
executors; what reaches the driver per batch is one count per Spark task.
"""

from __future__ import annotations

import logging
import math
import os
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kspark.config import StreamsConfig, boolean, positive_int
from kspark.errors import StreamsException
from kspark.runtime.spark.direct_source import DIRECT_READ, SOURCE_NAME, DirectPlan, direct_consumer_settings
from kspark.runtime.spark.direct_source import register as register_direct_source
from kspark.runtime.spark.kafka_io import WRITTEN_DDL, producer_config, read_kafka
from kspark.runtime.spark.lowering import (
    CountTail,
    NativeCount,
    count_plan,
    has_headers,
    native_count,
    store_key,
)
from kspark.runtime.spark.partition_reader import consumer_config
from kspark.runtime.spark.shuffle import task_grouping_key
from kspark.runtime.spark.tasks import TASK_INPUT_COLUMN, StatelessStage, TaskStage, TopologySpec
from kspark.runtime.spark.windowed_count import WindowedCountStage

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from kspark.processor.topology import Topology

__all__ = [
    "SubtopologyPlan",
    "SparkRunner",
    "MissingSourceTopicException",
    "MAX_OFFSETS_PER_TRIGGER",
    "STATEFUL_RECORDS_PER_TASK",
    "micro_batch_cap",
]

MAX_OFFSETS_PER_TRIGGER = "spark.kspark.maxOffsetsPerTrigger"
"""Config key: at most this many input records per micro-batch (Spark's ``maxOffsetsPerTrigger``)."""

STATEFUL_RECORDS_PER_TASK = 2_500_000
"""Default cap of a stateful stage's micro-batch, per task, when :data:`MAX_OFFSETS_PER_TRIGGER`
is not set. Spark hands a ``transformWithStateInPandas`` task its whole micro-batch, which the
stage holds as pandas columns (~150 bytes a record) until it has seen every row, so that it can
process them in offset order: one 50M-record batch of a windowed count took 7.9 GB. Kafka
Streams buffers a bounded number of records per partition too (``buffered.records.per.partition``)."""

_SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"

_log = logging.getLogger(__name__)


def micro_batch_cap(plan: SubtopologyPlan, configured: Any, tasks: int) -> int | None:
    """Spark's ``maxOffsetsPerTrigger`` for a sub-topology's query; None: no cap.

    :data:`MAX_OFFSETS_PER_TRIGGER` when set, else :data:`STATEFUL_RECORDS_PER_TASK` per task
    for a stage that holds its tasks' batches in Python (stateless stages stream their input;
    a native plain count is Spark's own aggregation, which spills). Never for a sub-topology
    that reads several topics: Spark splits the cap over partitions by lag, so a join's small
    table topic would trail its stream, and stream records would miss table rows that Kafka
    Streams (which waits for partitions with known lag, KIP-695) would already have read.
    """
    cap = None if configured is None else positive_int(MAX_OFFSETS_PER_TRIGGER, configured)
    if len(plan.source_topics) != 1:
        return None
    if cap is not None:
        return cap
    spark_aggregates = plan.native is not None and plan.native.windows is None
    if plan.stateful and not spark_aggregates:
        return STATEFUL_RECORDS_PER_TASK * tasks
    return None


class MissingSourceTopicException(StreamsException):
    """A source topic of the topology does not exist on the cluster."""


@dataclass(frozen=True)
class SubtopologyPlan:
    """How one sub-topology runs: its input topics and whether it needs a stateful stage."""

    subtopology: int
    source_topics: tuple[str, ...]
    stateful: bool
    query_name: str
    native: NativeCount | None = None  # a count Spark computes itself (lowering.py)


_PYTHON_ERROR_LINE = re.compile(r"^[\w.]+(?:Error|Exception): .+")


def _first_line(error: BaseException) -> str:
    """The user-facing part of a Spark error: the first Python exception line of the worker's traceback
    (kspark's engine names the task, processor, topic, partition and offset there)."""
    lines = [line.strip() for line in str(error).splitlines()]
    errors = [line for line in lines if _PYTHON_ERROR_LINE.match(line)]
    ours = [line for line in errors if line.startswith("kspark.")]
    users = [line for line in errors if not line.startswith(("pyspark.", "py4j.", "org.", "java.", "scala."))]
    best = ours or users or errors or lines
    return best[0] if best else type(error).__name__


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


class _RunBatch:
    """The ``foreachBatch`` function: run a micro-batch (its stage writes the output) and count the output.

    ``tail``: a ``mapInArrow`` function over the batch's rows that writes the
    output itself (a native count's updated rows go through it).
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
    ) -> None:
        self.on_batch = on_batch
        self.tail = tail
        self.stopping = stopping if stopping is not None else threading.Event()
        self.idle = threading.Event()
        self.idle.set()
        self.last_done = -1  # the last batch id this function returned from
        self.records_read: int | None = None

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        self.idle.clear()
        try:
            if self.tail is not None:
                df = df.mapInArrow(self.tail, WRITTEN_DDL)
            try:
                rows = df.collect()
            except Exception:
                if self.stopping.is_set():
                    raise _StoppedDuringBatch(_STOPPED_MESSAGE.format(batch_id=batch_id)) from None
                raise
            written = sum(int(r["written"]) for r in rows)
            if "records" in df.columns:
                self.records_read = (self.records_read or 0) + sum(int(r["records"]) for r in rows)
            if self.on_batch is not None:
                self.on_batch(batch_id, written)
            self.last_done = batch_id
        finally:
            self.idle.set()


class SparkRunner:
    """Plans, starts and stops the streaming queries of one application."""

    def __init__(self, topology: Topology, config: StreamsConfig, spark: SparkSession) -> None:
        self.topology = topology
        self.config = config
        self.spark = spark
        self.builder = topology.internal_builder
        self.builder.set_application_id(config.application_id())
        self.builder.validate()

        self.queries: list[StreamingQuery] = []
        self._batch_functions: dict[str, _RunBatch] = {}  # by query name
        self._stopping = threading.Event()
        self.records_written = 0
        self.partitions: dict[str, int] = {}
        self.instance = uuid.uuid4().hex

    # ------------------------------------------------------------------ planning
    def plan(self) -> list[SubtopologyPlan]:
        plans = []
        groups = self.builder.node_groups()
        for sub in self.builder.subtopology_ids():
            nodes = groups[sub]
            topics = sorted({self._topic(t) for n in nodes for t in self.builder.source_topics_of(n)})
            stateful = any(self.builder.node_stores(n) for n in nodes)
            native = native_count(self.builder, nodes, self.config) if stateful else None
            plans.append(
                SubtopologyPlan(
                    sub, tuple(topics), stateful, f"{self.config.application_id()}-subtopology-{sub}", native
                )
            )
        return plans

    def _topic(self, name: str) -> str:
        """The topic's name on the cluster: internal topics carry the application id."""
        return self.builder.decorate_topic(name) if self.builder.is_internal_topic(name) else name

    def checkpoint_dir(self, plan: SubtopologyPlan) -> str:
        return os.path.join(
            self.config.state_dir(), self.config.application_id(), "spark", f"subtopology-{plan.subtopology}"
        )

    def _changelog_topics(self) -> dict[str, str]:
        app = self.config.application_id()
        topics = {f"{app}-{store}-changelog": store for store in self.builder.state_store_names()}
        for store, topic in self.builder.source_changelog_topics().items():
            topics[self._topic(topic)] = store
        return topics

    # ------------------------------------------------------------------ topics
    def prepare_topics(self) -> None:
        """Fail on missing source topics; create the repartition topics the topology declares."""
        from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

        admin = AdminClient({"bootstrap.servers": ",".join(self.config.bootstrap_servers())})
        metadata = admin.list_topics(timeout=30)
        existing = {name: len(t.partitions) for name, t in metadata.topics.items()}
        internal = {self._topic(n): p for n, p in self.builder.internal_topics().items()}
        external = [
            self._topic(t) for t in self.builder.source_topic_names() if not self.builder.is_internal_topic(t)
        ]
        missing = sorted(t for t in external if t not in existing)
        if missing:
            raise MissingSourceTopicException(
                f"Source topics {missing} of application '{self.config.application_id()}' do not exist on "
                f"{','.join(self.config.bootstrap_servers())}; create them before starting"
            )
        max_source = max((existing[t] for t in external), default=1)
        to_create = []
        for topic, props in internal.items():
            if props.kind != "repartition" or topic in existing:
                continue
            to_create.append(
                NewTopic(topic, num_partitions=props.partitions or max_source, replication_factor=-1)
            )
        self.partitions = dict(existing)
        for t in to_create:
            self.partitions[t.topic] = t.num_partitions
        if to_create:
            for topic, fut in admin.create_topics(to_create).items():
                try:
                    fut.result()
                except Exception as e:  # an existing topic (a racing instance) is fine
                    if "TOPIC_ALREADY_EXISTS" not in str(e):
                        raise StreamsException(f"Could not create internal topic {topic}: {e}") from e

    # ------------------------------------------------------------------ queries
    def _stage(self, plan: SubtopologyPlan, *, continuous: bool) -> tuple[DataFrame, Any]:
        """The query's streaming DataFrame and the ``foreachBatch`` tail to run over its rows (or None)."""
        from pyspark.sql import functions as F

        consumer = self.config.prefixed("consumer.")
        options = {f"kafka.{k}": str(v) for k, v in consumer.items()}
        max_offsets = self.config.get(MAX_OFFSETS_PER_TRIGGER)
        cap = micro_batch_cap(plan, max_offsets, self.task_count(plan))
        if cap is not None:
            options["maxOffsetsPerTrigger"] = str(cap)
        elif max_offsets is not None:  # a join's: see micro_batch_cap
            _log.warning(
                "%s is ignored for %s: it reads %d topics, and a cap would let one trail the others",
                MAX_OFFSETS_PER_TRIGGER,
                plan.query_name,
                len(plan.source_topics),
            )
        reset = str(self.config.get("auto.offset.reset") or "earliest")
        bootstrap = ",".join(self.config.bootstrap_servers())
        spec = TopologySpec(
            self.topology,
            self.config.originals(),
            plan.subtopology,
            self._changelog_topics(),
            self.instance,
            producer_config(bootstrap, {k: v for k, v in self.config.prefixed("producer.").items()}),
            timers=continuous,
            has_global_stores=bool(self.builder.global_store_names()),
        )
        partitions = {t: self.partitions[t] for t in plan.source_topics}
        starting = "latest" if reset == "latest" else "earliest"
        settings = self.direct_read_settings(plan)
        if settings is not None:
            direct = DirectPlan(bootstrap, partitions, starting, cap, settings, spec)
            register_direct_source(self.spark)
            return self.spark.readStream.format(SOURCE_NAME).options(**direct.options()).load(), None
        source = read_kafka(self.spark, bootstrap, partitions, starting_offsets=starting, options=options)
        if not plan.stateful:
            return source.mapInArrow(StatelessStage(spec), WRITTEN_DDL), None
        # Task p is grouped under a key that Spark's hash places in shuffle partition p (shuffle.py).
        keys = F.array(
            *[F.lit(task_grouping_key(p, self.task_count(plan))) for p in range(self.task_count(plan))]
        )
        task = F.element_at(keys, F.col("partition") + 1)
        if plan.native is not None and plan.native.windows is None:
            return count_plan(source, plan.native), CountTail(spec, plan.native, plan.source_topics[0])
        if plan.native is not None:
            counted = WindowedCountStage(spec, plan.native, plan.source_topics[0])
            stage = (
                source.select(
                    task.alias(TASK_INPUT_COLUMN),
                    store_key(plan.native).alias("key"),
                    "timestamp",
                    "offset",
                    has_headers().alias("has_headers"),  # not the headers: windowed_count.py
                )
                .groupBy(TASK_INPUT_COLUMN)
                .transformWithStateInPandas(counted, WRITTEN_DDL, "Update", "None")
            )
            return stage, None
        stage = (
            source.withColumn(TASK_INPUT_COLUMN, task)
            .groupBy(TASK_INPUT_COLUMN)
            .transformWithStateInPandas(
                # Processing-time timers fire wall-clock punctuations of idle tasks; but with them
                # Spark keeps running no-data batches, so an availableNow query would never end.
                TaskStage(spec),
                WRITTEN_DDL,
                "Update",
                "ProcessingTime" if continuous else "None",
            )
        )
        return stage, None

    def direct_read_settings(self, plan: SubtopologyPlan) -> dict[str, Any] | None:
        """The librdkafka settings with which the Python workers read a stateless sub-topology's
        input (direct_source.py), or None when Spark's Kafka source reads it: a stateful one,
        ``spark.kspark.directRead=false``, or ``consumer.*`` settings librdkafka does not know."""
        enabled = boolean(DIRECT_READ, self.config.get(DIRECT_READ), True)  # checked for every plan
        if plan.stateful or not enabled:
            return None
        settings = direct_consumer_settings(self.config.prefixed("consumer."))
        if settings is None:
            return None
        group = f"{self.config.application_id()}-kspark-reader"
        return consumer_config(",".join(self.config.bootstrap_servers()), group, settings)

    def task_count(self, plan: SubtopologyPlan) -> int:
        """Tasks of a sub-topology: one per partition of its widest input topic, as in Kafka Streams."""
        return max(self.partitions[t] for t in plan.source_topics)

    def _on_batch(self, batch_id: int, written: int) -> None:
        self.records_written += written

    def start_query(self, plan: SubtopologyPlan, *, available_now: bool) -> StreamingQuery:
        stage, tail = self._stage(plan, continuous=not available_now)
        run_batch = _RunBatch(self._on_batch, tail, self._stopping)
        self._batch_functions[plan.query_name] = run_batch
        writer = (
            stage.writeStream.queryName(plan.query_name)
            .foreachBatch(run_batch)
            .option("checkpointLocation", self.checkpoint_dir(plan))
            .outputMode("update")
        )
        if available_now:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=f"{self.config.commit_interval_ms()} milliseconds")
        # A stateful stage runs one Spark task per Kafka Streams task. The query keeps this
        # setting in its checkpoint; the session's own value is put back for other work.
        previous = self.spark.conf.get(_SHUFFLE_PARTITIONS, None)
        if plan.stateful:
            self.spark.conf.set(_SHUFFLE_PARTITIONS, str(self.task_count(plan)))
        try:
            query = writer.start()
        finally:
            if previous is not None:
                self.spark.conf.set(_SHUFFLE_PARTITIONS, previous)
        self.queries.append(query)
        return query

    def process_available(self) -> int:
        """Run each sub-topology over what its topics hold now, upstream first, until nothing moves."""
        self.prepare_topics()
        plans = self.plan()
        total = 0
        for _ in range(max(2, len(plans) + 1)):
            moved = 0
            for plan in plans:
                query = self.start_query(plan, available_now=True)
                try:
                    query.awaitTermination()
                except Exception as e:  # pyspark's StreamingQueryException: re-raised as ours, cause kept
                    raise StreamsException(f"{plan.query_name} failed: {_first_line(e)}") from e
                finally:
                    self.queries.remove(query)
                read = self._batch_functions[plan.query_name].records_read
                rows = sum(int(p["numInputRows"]) for p in query.recentProgress)
                moved += read if read is not None else rows
            total += moved
            if moved == 0 or len(plans) == 1:
                break
        return total

    def start(self) -> list[StreamingQuery]:
        self._stopping.clear()
        self.prepare_topics()
        return [self.start_query(plan, available_now=False) for plan in self.plan()]

    def failure(self) -> BaseException | None:
        for q in self.queries:
            exc = q.exception()
            if exc is not None:
                return exc
        return None

    def stop(self, drain_seconds: float = 0.0) -> bool:
        """Stop every query. With ``drain_seconds`` > 0 (``KafkaStreams.close``), first let the
        micro-batch each query is running finish and commit, as Kafka Streams finishes its
        processing and commits on close; a batch still running after that long is cancelled
        and runs again at the next start. True unless a batch had to be cancelled."""
        self._stopping.set()
        deadline = time.monotonic() + drain_seconds if math.isfinite(drain_seconds) else math.inf
        drained = True
        errors = []
        for q in list(self.queries):
            try:
                if drain_seconds > 0:
                    drained = self._drain(q, deadline) and drained
                q.stop()
            except Exception as e:  # keep stopping the others, then report
                errors.append(e)
        self.queries.clear()
        self._batch_functions.clear()
        if errors:
            raise StreamsException(f"Stopping {len(errors)} queries failed: {errors[0]}") from errors[0]
        return drained

    def _drain(self, query: StreamingQuery, deadline: float) -> bool:
        """Wait until the batch ``query`` is running (if any) is committed; False if not by ``deadline``."""
        run_batch = self._batch_functions.get(query.name)
        if run_batch is None or not query.isActive:
            return True
        if not run_batch.idle.wait(None if deadline == math.inf else max(0.0, deadline - time.monotonic())):
            _log.warning("%s: the running micro-batch did not finish in time; cancelling it", query.name)
            return False
        # The batch's output is written; Spark commits its offsets and state right after.
        done = run_batch.last_done
        while done >= 0 and query.isActive:
            progress = query.lastProgress
            if progress is not None and int(progress["batchId"]) >= done:
                return True
            if time.monotonic() >= deadline:
                _log.warning("%s: micro-batch %d not committed in time; stopping anyway", query.name, done)
                return False
            time.sleep(0.01)
        return True
