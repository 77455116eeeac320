"""Driver side of the Spark runner: a topology executed as Spark Structured Streaming queries.

The runner executes the topology's physical plan (:mod:`kspark.runtime.spark.plan`,
which decides everything: stages, queries, caps). Sub-topologies are joined
by their repartition topics in Kafka, exactly as Kafka Streams joins them;
each query runs one or more sub-topologies of one stage: stateless ones
read their input in the Python workers and run there
(:mod:`kspark.runtime.spark.direct_source`; or in ``mapInArrow`` over
Spark's Kafka source), stateful ones group their input by task
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

import dataclasses
import json
import logging
import math
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kspark.config import StreamsConfig
from kspark.errors import StreamsException
from kspark.metrics import MetricName
from kspark.runtime.kafka_clients import (
    cluster_metadata,
    create_topics,
    librdkafka_client,
    librdkafka_security,
    offset_reset,
    spark_source_options,
)
from kspark.runtime.spark.batch_function import RunBatch
from kspark.runtime.spark.direct_source import SOURCE_NAME, DirectPlan
from kspark.runtime.spark.direct_source import register as register_direct_source
from kspark.runtime.spark.failures import TRANSIENT_RESTARTS, explained, first_line, transient
from kspark.runtime.spark.kafka_io import (
    WRITTEN_DDL,
    OffsetLister,
    group_start,
    producer_config,
    read_kafka,
)
from kspark.runtime.spark.low_latency import (
    GroupPositions,
    create_control_topic,
    low_latency_stage,
    request_stop,
    slots_for,
)
from kspark.runtime.spark.lowering import CountTail, count_plan, has_headers, store_key
from kspark.runtime.spark.metrics import (
    CLIENT_GROUP,
    BatchCounts,
    ProgressListener,
    TaskReports,
    lag_metrics,
    thread_metrics,
)
from kspark.runtime.spark.plan import PhysicalPlan, QueryPlan, Stage, physical_plan
from kspark.runtime.spark.purge import RepartitionPurger
from kspark.runtime.spark.pyfiles import shipped_python_path
from kspark.runtime.spark.replica import StoreReplicas, create_changelog_topics, store_homes
from kspark.runtime.spark.session import use_local_checkpoint_files
from kspark.runtime.spark.settings import RunnerSettings
from kspark.runtime.spark.shuffle import task_grouping_key
from kspark.runtime.spark.tasks import (
    TASK_INPUT_COLUMN,
    StatelessStage,
    TaskGroup,
    TaskStage,
    TopologySpec,
)
from kspark.runtime.spark.time_mode import query_time_mode
from kspark.runtime.spark.windowed_count import WindowedCountStage
from kspark.runtime.spark.worker_start import start_python_workers
from kspark.state.internals.versioned import VersionedKeyValueStoreBuilder

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from kspark.processor.topology import Topology

__all__ = [
    "SparkRunner",
    "MissingSourceTopicException",
    "PlanChangedException",
]

_SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
# Kafka Streams' repartition topic settings that still apply (its RepartitionTopicConfig): segments
# of 50 MB, so that the broker frees what a purge (purge.py) deleted soon; the retention stays the
# broker's (Kafka Streams' is infinite), as a low-latency query's input is not purged.
REPARTITION_TOPIC_CONFIG = {"cleanup.policy": "delete", "segment.bytes": str(50 * 1024 * 1024)}
_PLAN_FILE = "plan.json"

_log = logging.getLogger(__name__)


class MissingSourceTopicException(StreamsException):
    """A source topic of the topology does not exist on the cluster."""


class PlanChangedException(StreamsException):
    """The application's checkpoints were written by a different physical plan."""


def _feeds(writer: QueryPlan, reader: QueryPlan, global_topics: frozenset[str]) -> bool:
    """Whether records ``writer`` wrote may be input of ``reader``: a topic ``writer`` writes is one
    ``reader`` reads, or a global table's (every task reads those), or ``writer`` chooses its
    topics per record."""
    if any(s.chooses_topics for s in writer.subtopologies):
        return True
    written = {t for s in writer.subtopologies for t in s.sink_topics}
    return bool(written & (set(reader.source_topics) | global_topics))


def _steps(plan: PhysicalPlan) -> list[tuple[QueryPlan, int | None]]:
    """The runs of one pass of ``process_available()``, levels upstream first: each query at its
    level, and a low-latency query (which runs sub-topologies of several levels) at each of its
    levels, running its levels up to that one, so that it reads what the queries of the levels
    before wrote, as a micro-batch query of that level would."""
    at: dict[int, list[tuple[QueryPlan, int | None]]] = {}
    for q in plan.queries:
        if q.stage is Stage.LOW_LATENCY:
            for level in sorted({s.level for s in q.subtopologies}):
                at.setdefault(level, []).append((q, level))
        else:
            at.setdefault(q.level, []).append((q, None))
    return [step for level in sorted(at) for step in at[level]]


def _has_batches(checkpoint: str) -> bool:
    """Whether a query's checkpoint holds a planned micro-batch (Spark's ``offsets`` log)."""
    offsets = os.path.join(checkpoint, "offsets")
    return os.path.isdir(offsets) and any(name.isdigit() for name in os.listdir(offsets))


class SparkRunner:
    """Plans, starts and stops the streaming queries of one application."""

    def __init__(self, topology: Topology, config: StreamsConfig, spark: SparkSession) -> None:
        self.topology = topology
        self.config = config
        self.settings = RunnerSettings.of(config)
        self.spark = spark
        self.builder = topology.internal_builder
        self.builder.set_application_id(config.application_id())
        self.builder.validate()
        if config.exactly_once() and str(spark.conf.get("spark.speculation", "false")).lower() == "true":
            raise StreamsException(
                "spark.speculation=true would break processing.guarantee=exactly_once_v2: two attempts "
                "of one task would fence each other's transactions; turn it off for this application"
            )

        self.queries: list[StreamingQuery] = []
        self._batch_functions: dict[str, RunBatch] = {}  # by query name
        self._stopping = threading.Event()
        self.records_written = 0
        self.partitions: dict[str, int] = {}
        # partition counts a sink's partitioner is told: the topics above and existing sink topics
        self.sink_partitions: dict[str, int] = {}
        self.physical: PhysicalPlan | None = None
        self.instance = uuid.uuid4().hex
        self._restarts: dict[str, int] = {}  # transient failures restarted, by query
        # Kafka's sample window: metrics.num.samples windows of metrics.sample.window.ms.
        window_s = int(config["metrics.sample.window.ms"]) * int(config["metrics.num.samples"]) / 1000
        self._lag_lister: OffsetLister | None = None
        self._group_positions = GroupPositions(config)  # a low-latency query's ends
        self.progress = ProgressListener(
            lambda name: name in self._batch_functions, self._records_of, window_s
        )
        # Interactive queries (replica.py): made with the plan (then on_replicas called), used on demand.
        self.replicas: StoreReplicas | None = None
        self.on_replicas: list[Callable[[StoreReplicas], None]] = []
        # Repartition topics' committed records are deleted (purge.py): made with the plan.
        self._purger: RepartitionPurger | None = None
        self.progress.on_commit = self._on_commit

    # ------------------------------------------------------------------ metrics
    def _records_of(self, query: str, batch_id: int) -> BatchCounts:
        """A batch's input records where its rows say (else None: Spark's count), its output, and
        the records its tasks dropped."""
        run_batch = self._batch_functions.get(query)
        if run_batch is None:
            return BatchCounts(None, 0)
        return BatchCounts(
            run_batch.batch_records.get(batch_id),
            run_batch.batch_written.get(batch_id, 0),
            run_batch.batch_reports.get(batch_id, TaskReports()),
        )

    def metrics(self) -> dict[MetricName, float]:
        """Kafka Streams' metrics of this application's queries (kspark/runtime/spark/metrics.py)."""
        queries = self.progress.snapshot()
        out = thread_metrics(queries, self.progress.window_s)
        if self._lag_lister is None:  # one admin client for every call (a status line asks often)
            self._lag_lister = OffsetLister(
                ",".join(self.config.bootstrap_servers()),
                settings=librdkafka_security(self.config.originals(), "admin"),
            )
        lister = self._lag_lister
        ends = {name: m.ends for name, m in queries.items() if m.ends}
        if self.queries and self.physical is not None:
            ends.update(self._group_positions.ends(self.physical, self.partitions))
        out.update(lag_metrics(ends, lambda tps: lister.offsets(tps, latest=True)))
        alive = sum(1 for q in list(self.queries) if q.isActive)
        out[MetricName.of("alive-stream-threads", CLIENT_GROUP, client_id=self.config.application_id())] = (
            float(alive)
        )
        return out

    # ------------------------------------------------------------------ planning
    def plan(self) -> PhysicalPlan:
        """The physical plan over the partition counts :meth:`prepare_topics` found."""
        if self.physical is None:
            self.physical = physical_plan(self.topology, self.config, self.partitions or None)
        return self.physical

    def _topic(self, name: str) -> str:
        """The topic's name on the cluster: internal topics carry the application id."""
        return self.builder.decorate_topic(name) if self.builder.is_internal_topic(name) else name

    def _spark_dir(self) -> str:
        return os.path.join(self.config.state_dir(), self.config.application_id(), "spark")

    def checkpoint_dir(self, query: QueryPlan) -> str:
        return os.path.join(self._spark_dir(), query.checkpoint)

    def _changelog_topics(self) -> dict[str, str]:
        app = self.config.application_id()
        topics = {f"{app}-{store}-changelog": store for store in self.builder.state_store_names()}
        read_only = set(self.builder.read_only_store_names())
        for store, topic in self.builder.source_changelog_topics().items():
            # a read-only store's source topic is not written for it: its updates are logged
            # under its own changelog name, inside the task only (TopologySpec.read_only_stores)
            if store not in read_only:
                topics[self._topic(topic)] = store
        return topics

    # ------------------------------------------------------------------ topics
    def prepare_topics(self) -> PhysicalPlan:
        """Fail on missing source topics; create the repartition topics the topology declares;
        plan over the partition counts found, and check the checkpoints are this plan's."""
        from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

        settings = librdkafka_client(self.config.originals(), "admin")
        metadata = cluster_metadata(settings)
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
                NewTopic(
                    topic,
                    num_partitions=props.partitions or max_source,
                    replication_factor=-1,
                    config=REPARTITION_TOPIC_CONFIG,
                )
            )
        wanted = {*external, *(t for t, p in internal.items() if p.kind == "repartition")}
        self.partitions = {t: n for t, n in existing.items() if t in wanted}
        for t in to_create:
            self.partitions[t.topic] = t.num_partitions
        sinks = {self._topic(s) for n in self.builder.node_names() if (s := self.builder.sink_topic_of(n))}
        self.sink_partitions = {**{s: n for s, n in existing.items() if s in sinks}, **self.partitions}
        create_topics(settings, to_create, "internal")
        if self._purger is None:
            # A topic that is also a store's changelog (its source table's) is read again by restores.
            changelogs = {self._topic(t) for t in self.builder.source_changelog_topics().values()}
            self._purger = RepartitionPurger(
                (t for t, p in internal.items() if p.kind == "repartition" and t not in changelogs),
                int(self.config["repartition.purge.interval.ms"]) / 1000,
                # its log lines through Python logging (confluent-kafka takes a logging.Logger here)
                lambda: AdminClient({**settings, "logger": _log}),  # type: ignore[dict-item]
            )
        self.physical = None
        plan = self.plan()
        if any(q.stage is Stage.LOW_LATENCY for q in plan.queries):
            create_control_topic(self.config)
        self._check_checkpoints(plan)
        homes, refused, logged = store_homes(plan, self.builder, self.config.application_id())
        create_changelog_topics(
            settings,
            logged,
            self.builder,
            existing,
            int(self.config["windowstore.changelog.additional.retention.ms"]),
        )
        if self.replicas is None:
            self.replicas = StoreReplicas(
                homes,
                refused,
                lambda subtopology, partition: self.replica_spec(subtopology).build_task(partition),
                librdkafka_client(self.config.originals(), "consumer"),
                OffsetLister(
                    ",".join(self.config.bootstrap_servers()),
                    settings=librdkafka_security(self.config.originals(), "admin"),
                ),
                # Beside the checkpoints, not among them (_check_checkpoints); cleanup() deletes it.
                os.path.join(self.config.state_dir(), self.config.application_id(), "store-replicas.json"),
            )
            for hook in self.on_replicas:
                hook(self.replicas)
        return plan

    def _check_checkpoints(self, plan: PhysicalPlan) -> None:
        """Refuse checkpoints written by another plan, rather than start some queries afresh.

        Each query keeps its offsets and state in its own checkpoint, under a name
        given by the sub-topologies it runs; a changed plan (another grouping, a
        stage switched by a setting, a changed topology) would find none for some
        queries and read their input again from the start, beside orphaned state.
        """
        directory = self._spark_dir()
        described = {
            q.checkpoint: {
                "stage": q.stage.name,
                "subtopologies": [s.subtopology for s in q.subtopologies],
                "topics": list(q.source_topics),
            }
            for q in plan.queries
        }
        path = os.path.join(directory, _PLAN_FILE)
        on_disk = {d for d in os.listdir(directory) if d != _PLAN_FILE} if os.path.isdir(directory) else set()
        recorded: dict[str, Any] = {}
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                recorded = json.load(fh)
        changed = sorted(
            name
            for name in on_disk
            if name not in described or (name in recorded and recorded[name] != described[name])
        )
        if changed:
            raise PlanChangedException(
                f"The checkpoints of application '{self.config.application_id()}' in {directory} were "
                f"written by another physical plan (checkpoints {changed}; this plan's queries: "
                f"{sorted(described)}): the topology or a spark.kspark.* setting changed. Reset the "
                "application (delete that directory and its internal topics) or use a new application.id"
            )
        os.makedirs(directory, exist_ok=True)
        with open(path + ".tmp", "w", encoding="utf-8") as fh:
            json.dump(described, fh, indent=1, sort_keys=True)
        os.replace(path + ".tmp", path)

    # ------------------------------------------------------------------ queries
    def _spec(self, subtopology: int, fused: bool, continuous: bool) -> TopologySpec:
        plan = self.plan().subtopology(subtopology)
        return TopologySpec(
            self.topology,
            self.config.originals(),
            subtopology,
            self._changelog_topics(),
            self.instance,
            producer_config(
                ",".join(self.config.bootstrap_servers()),
                librdkafka_client(self.config.originals(), "producer", prefixed=True),
            ),
            timers=continuous and plan.wall_clock,  # only Processor API code punctuates on the wall clock
            has_global_stores=bool(self.builder.global_store_names()),
            fused=fused,
            input_partitions={t: self.partitions[t] for t in plan.source_topics},
            sink_partitions=dict(self.sink_partitions),
            versioned_stores={
                name: store.history_retention()
                for name in self.builder.state_store_names()
                if isinstance(store := self.builder.store_builder(name), VersionedKeyValueStoreBuilder)
            },
            read_only_stores=frozenset(self.builder.read_only_store_names()),
            count_line=plan.native if plan.stage is Stage.LOW_LATENCY else None,
        )

    def _committed_start(self, query: QueryPlan, partitions: Mapping[str, int]) -> dict[str, dict[str, int]]:
        """Where a query without a checkpoint starts (kafka_io.group_start); one with a checkpoint
        goes on from it."""
        if _has_batches(self.checkpoint_dir(query)):
            return {}
        start = group_start(self.config, partitions)
        if start:
            _log.info("%s starts from the offsets its group committed: %s", query.name, start)
        return start

    def _stage(
        self, query: QueryPlan, *, continuous: bool, up_to_level: int | None = None
    ) -> tuple[DataFrame, Any]:
        """The query's streaming DataFrame and the ``foreachBatch`` tail to run over its rows (or None)."""

        specs = {
            s.subtopology: self._spec(s.subtopology, s.fused and not s.stateful, continuous)
            for s in query.subtopologies
        }
        by_topic = {t: specs[s.subtopology] for s in query.subtopologies for t in s.source_topics}
        partitions = {t: self.partitions[t] for t in query.source_topics}
        starting = offset_reset(self.config.originals())
        bootstrap = ",".join(self.config.bootstrap_servers())
        cap = query.max_offsets_per_trigger
        start_at = self._committed_start(query, partitions)
        if query.stage in (Stage.DIRECT_READ, Stage.LOW_LATENCY):
            consumer = query.subtopologies[0].consumer
            assert consumer is not None
            admin = librdkafka_security(self.config.originals(), "admin")
            direct = DirectPlan.of(bootstrap, partitions, starting, cap, consumer, by_topic, admin, start_at)
            if query.stage is Stage.LOW_LATENCY:
                slots = slots_for(self.spark, self.plan())
                levels = {s.subtopology: s.level for s in query.subtopologies}
                batch_ms = self.settings.low_latency_batch_ms
                stage = low_latency_stage(
                    self.spark, direct, self.config, batch_ms, slots, levels, up_to_level
                )
                return stage, None
            register_direct_source(self.spark)
            return self.spark.readStream.format(SOURCE_NAME).options(**direct.options()).load(), None
        options = spark_source_options(self.config.originals())
        if cap is not None:
            options["maxOffsetsPerTrigger"] = str(cap)
        if start_at:
            # Spark takes a specific start for every assigned partition: -2 earliest, -1 latest.
            default = -1 if starting == "latest" else -2
            starting = json.dumps(
                {
                    t: {str(p): start_at.get(t, {}).get(str(p), default) for p in range(n)}
                    for t, n in partitions.items()
                }
            )
        source = read_kafka(self.spark, bootstrap, partitions, starting_offsets=starting, options=options)
        if query.stage is Stage.SPARK_SOURCE:
            return source.mapInArrow(StatelessStage(by_topic), WRITTEN_DDL), None
        first = query.subtopologies[0]
        native = first.native
        if query.stage in (Stage.NATIVE_COUNT, Stage.NATIVE_REDUCE):
            assert native is not None
            tail = CountTail(specs[first.subtopology], native, first.source_topics[0])
            tasks = first.tasks
            assert tasks is not None
            return count_plan(source, native), lambda counts: tail.apply(counts, tasks)
        task = self._task_column(query)
        if query.stage is Stage.NATIVE_WINDOWED_COUNT:
            assert native is not None
            counted = WindowedCountStage(specs[first.subtopology], native, first.source_topics[0])
            self._check_pickled_size(query, counted)
            stage = (
                source.select(
                    task.alias(TASK_INPUT_COLUMN),
                    store_key(native).alias("key"),
                    "timestamp",
                    "offset",
                    has_headers().alias("has_headers"),  # not the headers: windowed_count.py
                )
                .groupBy(TASK_INPUT_COLUMN)
                .transformWithStateInPandas(counted, WRITTEN_DDL, "Update", "None")
            )
            return stage, None
        bases = query.task_bases()
        group = TaskGroup(
            tuple(specs[s.subtopology] for s in query.subtopologies),
            tuple(bases[s.subtopology] for s in query.subtopologies),
            tuple(s.tasks or 0 for s in query.subtopologies),
        )
        processor = TaskStage(group, self.settings.spill_rows)
        self._check_pickled_size(query, processor)
        stage = (
            source.withColumn(TASK_INPUT_COLUMN, task)
            .groupBy(TASK_INPUT_COLUMN)
            .transformWithStateInPandas(
                processor,
                WRITTEN_DDL,
                "Update",
                # Processing-time timers (wall-clock punctuation of idle tasks) only where a task
                # may schedule one: with them Spark runs a batch every trigger (time_mode.py).
                query_time_mode(
                    query.name,
                    self.checkpoint_dir(query),
                    [str(s.subtopology) for s in query.subtopologies if s.wall_clock],
                    continuous,
                ),
            )
        )
        return stage, None

    def _check_pickled_size(self, query: QueryPlan, processor: Any) -> None:
        """Refuse, before the query starts, a transformWithState processor that PySpark would send
        as a broadcast variable: Spark 4.0's transformWithStateInPandas workers never load one
        (BROADCAST_VARIABLE_NOT_LOADED at the first batch). PySpark does so above the session's
        ``spark.broadcast.UDFCompressionThreshold`` (1 MB by default; kspark's own sessions set
        1g). The processor carries the topology, so a large one (big constants in closures,
        hundreds of sub-topologies) gets there."""
        from pyspark import cloudpickle

        jvm = self.spark.sparkContext._jvm
        if jvm is None:  # no py4j gateway to read the threshold through
            return
        threshold = int(jvm.PythonUtils.getBroadcastThreshold(self.spark.sparkContext._jsc))
        size = len(cloudpickle.dumps(processor))  # type: ignore[no-untyped-call]
        if size > threshold:
            raise StreamsException(
                f"{query.name}: its tasks (the topology and its functions) pickle to {size:,} bytes, "
                f"more than this SparkSession's spark.broadcast.UDFCompressionThreshold ({threshold:,}); "
                "Spark would send them as a broadcast variable, which transformWithStateInPandas does "
                "not load. Create the session with spark.broadcast.UDFCompressionThreshold=1g "
                "(kspark.runtime.spark.session.create_spark_session does) or make the topology smaller"
            )

    def _task_column(self, query: QueryPlan) -> Column:
        """Each record's grouping key: its task's query-wide number (``QueryPlan.task_bases``) as a
        key that Spark's hash places in that shuffle partition (shuffle.py)."""
        from pyspark.sql import functions as F

        tasks = query.tasks
        assert tasks is not None
        bases = query.task_bases()
        base_of = {t: bases[s.subtopology] for s in query.subtopologies for t in s.source_topics}
        keys = F.array(*[F.lit(task_grouping_key(n, tasks)) for n in range(tasks)])
        if set(base_of.values()) == {0}:
            number = F.col("partition")
        else:
            pairs = [c for t, b in sorted(base_of.items()) for c in (F.lit(t), F.lit(b))]
            number = F.element_at(F.create_map(*pairs), F.col("topic")) + F.col("partition")
        return F.element_at(keys, number + 1)

    def _on_batch(self, batch_id: int, written: int) -> None:
        self.records_written += written

    # ------------------------------------------------------------------ interactive queries
    def _on_commit(self, query: str, batch_id: int, ends: dict[tuple[str, int], int]) -> None:
        if self.replicas is not None:
            self.replicas.on_progress(query, batch_id, ends)
        if self._purger is not None:
            self._purger.committed(ends)

    def replica_spec(self, subtopology: int) -> TopologySpec:
        """What builds the tasks whose stores a replica fills: never run, and without record caches
        (a cache would keep what a read pulled through it, and miss the restores below it)."""
        spec = self._spec(subtopology, False, False)
        return dataclasses.replace(spec, config={**spec.config, "statestore.cache.max.bytes": 0})

    def await_replicas(self, timeout_s: float = 30.0) -> None:
        """Wait until Spark's progress of every batch run so far reached the replicas (its events
        come on Spark's listener thread, after ``process_available``'s queries ended)."""
        replicas = self.replicas
        if replicas is None or not self.progress.attached:
            return  # no progress events come (a session without Python listeners): nothing to wait for
        done = {name: f.last_done for name, f in self._batch_functions.items() if f.last_done >= 0}
        replicas.await_committed(done, timeout_s)

    def close_replicas(self) -> None:
        if self.replicas is not None:
            self.replicas.close()

    def start_query(
        self, query: QueryPlan, *, available_now: bool, up_to_level: int | None = None
    ) -> StreamingQuery:
        if self.settings.max_offsets_per_trigger is not None and query.max_offsets_per_trigger is None:
            _log.warning("spark.kspark.maxOffsetsPerTrigger is ignored for %s: %s", query.name, query.cap)
        with shipped_python_path(self.spark):  # for the Python workers Spark starts on the driver
            stage, tail = self._stage(query, continuous=not available_now, up_to_level=up_to_level)
        try:
            self.progress.attach(self.spark)
        except Exception as e:  # a session without Python listeners: the application runs, unmeasured
            _log.warning("no streaming query listener, so metrics() reports no batches: %s", e)
        after = self.replicas.after_batch(query.name) if self.replicas is not None else None
        run_batch = RunBatch(self._on_batch, tail, self._stopping, after)
        replaced = self._batch_functions.get(query.name)
        if replaced is not None:
            replaced.release()  # its query has ended (an availableNow run, a failed query)
        self._batch_functions[query.name] = run_batch
        writer = (
            stage.writeStream.queryName(query.name)
            .foreachBatch(run_batch)
            .option("checkpointLocation", self.checkpoint_dir(query))
            .outputMode("update")
        )
        if available_now:
            writer = writer.trigger(availableNow=True)
        elif query.stage is Stage.LOW_LATENCY:
            writer = writer.trigger(processingTime="0 seconds")  # each batch lasts its tasks' run
        else:
            writer = writer.trigger(processingTime=f"{self.config.commit_interval_ms()} milliseconds")
        use_local_checkpoint_files(self.spark, self.config.state_dir())
        # A stateful stage runs one Spark task per Kafka Streams task. The query keeps this
        # setting in its checkpoint; the session's own value is put back for other work.
        previous = self.spark.conf.get(_SHUFFLE_PARTITIONS, None)
        if query.stage.stateful and query.tasks is not None:
            self.spark.conf.set(_SHUFFLE_PARTITIONS, str(query.tasks))
        try:
            started = writer.start()
        finally:
            if previous is not None:
                self.spark.conf.set(_SHUFFLE_PARTITIONS, previous)
        self.queries.append(started)
        return started

    def process_available(self) -> int:
        """Run each query over what its topics hold now, levels upstream first, until nothing moves.

        Every query runs once; after that a query runs again only when a query that read records
        since its last run may have written to a topic it reads (:func:`_feeds`). Starting a query
        costs seconds even when it finds nothing, so a query is not run just to find nothing."""
        plan = self.prepare_topics()
        steps = _steps(plan)
        global_topics = frozenset(self.builder.global_topics())
        due = set(range(len(steps)))
        total = 0
        for _ in range(len(steps) + 1):  # a cycle through topics moves records for a bounded time
            for i, (query_plan, up_to) in enumerate(steps):
                if i not in due:
                    continue
                due.discard(i)
                moved = self._run_available(query_plan, up_to)
                total += moved
                if moved:
                    due |= {j for j, (q, _) in enumerate(steps) if _feeds(query_plan, q, global_topics)}
            if not due:
                break
        self.await_replicas()
        return total

    def _run_available(self, query_plan: QueryPlan, up_to_level: int | None = None) -> int:
        """One ``availableNow`` run of a query (a low-latency one's levels up to ``up_to_level``);
        the input records it read. A run that fails for a transient reason (:func:`transient`) runs
        again from the checkpoint, a few times."""
        for attempt in range(TRANSIENT_RESTARTS + 1):
            query = self.start_query(query_plan, available_now=True, up_to_level=up_to_level)
            try:
                query.awaitTermination()
                break
            except Exception as e:  # pyspark's StreamingQueryException: re-raised as ours, cause kept
                if attempt < TRANSIENT_RESTARTS and transient(e):
                    _log.warning(
                        "%s failed (%s); running it again from its checkpoint",
                        query_plan.name,
                        first_line(e),
                    )
                    continue
                plain = self._explained(query_plan.name, e)
                if plain is not e:
                    raise plain from e
                raise StreamsException(f"{query_plan.name} failed: {first_line(e)}") from e
            finally:
                self.queries.remove(query)
        read = self._batch_functions[query_plan.name].records_read
        rows = sum(int(p["numInputRows"]) for p in query.recentProgress)
        return read if read is not None else rows

    def start(self) -> list[StreamingQuery]:
        self._stopping.clear()
        plan = self.prepare_topics()
        start_python_workers(self.spark, [q.stage for q in plan.queries])  # beside the first planning
        # All at once: each query sets itself up (its first planning, the Python processes of a
        # direct read's offset planner or transformWithState's schema check) in a thread of its
        # own, and they overlap. A query whose driver-side Python process was too slow to connect
        # back on a saturated machine is restarted by restart_transient_failures().
        return [self.start_query(q, available_now=False) for q in plan.queries]

    def restart_transient_failures(self) -> bool:
        """Restart every query that failed for a transient reason (:func:`transient`) from its
        checkpoint, at most :data:`TRANSIENT_RESTARTS` times each; False when a failure is not
        one of those (the application then fails, or its exception handler decides)."""
        from py4j.protocol import Py4JError

        plans = {q.name: q for q in self.plan().queries}
        try:
            failed = [q for q in list(self.queries) if q.exception() is not None]
        except Py4JError:
            return False  # the JVM is gone: nothing to restart (failure() says so)
        if not failed or any(
            not transient(q.exception()) or self._restarts.get(q.name, 0) >= TRANSIENT_RESTARTS
            for q in failed
        ):
            return False
        for query in failed:
            self._restarts[query.name] = self._restarts.get(query.name, 0) + 1
            _log.warning(
                "%s failed (%s); restarting it from its checkpoint (%d of %d)",
                query.name,
                first_line(query.exception() or StreamsException("unknown")),
                self._restarts[query.name],
                TRANSIENT_RESTARTS,
            )
            self.queries.remove(query)
            self.start_query(plans[query.name], available_now=False)
        return True

    def failure(self) -> BaseException | None:
        """The first running query's failure, if any. A query that stopped without one while
        kspark did not stop it (Spark's context stopped under it), or a py4j call that fails
        because the JVM does not answer, is a failure too: the application goes to ERROR rather
        than wait on queries that are gone (tests/runtime/spark/test_faults.py covers the first;
        a signalled spark-submit JVM still leaves the Python driver waiting, docs/cluster.md)."""
        from py4j.protocol import Py4JError

        try:
            for q in list(self.queries):
                exc = q.exception()
                if exc is not None:
                    return self._explained(q.name, exc)
                if not q.isActive and not self._stopping.is_set():
                    return StreamsException(
                        f"{q.name} stopped without an error while the application ran: Spark's "
                        "context was stopped under it (was spark-submit's JVM signalled?)"
                    )
        except Py4JError as e:
            if self._stopping.is_set():
                return None
            return StreamsException(
                f"Spark's driver JVM no longer answers ({first_line(e)}): it exited under the "
                "application (was spark-submit's JVM signalled or killed?)"
            )
        return None

    def _explained(self, query: str, error: BaseException) -> BaseException:
        """``error`` of ``query``, said plainly where the cause is a known one (:func:`explained`)."""
        plan = next((q for q in self.plan().queries if q.name == query), None)
        return explained(query, error, plan.source_topics if plan else (), self.config.originals())

    def stop(self, drain_seconds: float = 0.0) -> bool:
        """Stop every query. With ``drain_seconds`` > 0 (``KafkaStreams.close``), first let the
        micro-batch each query is running finish and commit, as Kafka Streams finishes its
        processing and commits on close; a batch still running after that long is cancelled
        and runs again at the next start. True unless a batch had to be cancelled."""
        self._stopping.set()
        deadline = time.monotonic() + drain_seconds if math.isfinite(drain_seconds) else math.inf
        drained = True
        errors = []
        low_latency = (
            [q for q in self.plan().queries if q.stage is Stage.LOW_LATENCY] if self.physical else []
        )
        if drain_seconds > 0 and low_latency and any(q.isActive for q in self.queries):
            request_stop(self.config)  # its running batch ends now rather than at its deadline
        for q in list(self.queries):
            try:
                if drain_seconds > 0:
                    drained = self._drain(q, deadline) and drained
                q.stop()
            except Exception as e:  # keep stopping the others, then report
                errors.append(e)
        self.queries.clear()
        for run_batch in self._batch_functions.values():
            run_batch.release()
        self._batch_functions.clear()
        self._lag_lister = None  # its admin client goes with it, before the cluster may
        self._group_positions.close()
        if self._purger is not None:
            self._purger.close()
        try:
            self.progress.detach(self.spark)
        except Exception as e:  # the session may be gone already; nothing listens any more either way
            _log.info("removing the metrics listener: %s", e)
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
