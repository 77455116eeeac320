"""The physical plan: what a topology becomes on Spark, decided in one place.

:func:`physical_plan` turns a topology and its config into a
:class:`PhysicalPlan`: per sub-topology its topics, stores, tasks, the stage
that runs it and, for each optimisation, whether it applied and why not;
and the Spark queries the sub-topologies run in. The runner
(:mod:`~kspark.runtime.spark.runner`) executes that object and nothing else
decides: ``kspark describe --spark APP.py`` prints it, and tests assert the
stage each scenario gets, so a lost optimisation fails a test.

Stages (:class:`Stage`):

* a stateless sub-topology reads Kafka in Spark's Python workers
  (``DIRECT_READ``, :mod:`~kspark.runtime.spark.direct_source`) or through
  Spark's Kafka source (``SPARK_SOURCE``); either way it runs as a fused
  chain of closures when it is one line of stateless DSL operators
  (:func:`~kspark.processor.internals.fused.fusion_blocker`);
* with ``spark.kspark.lowLatency``, one that reads directly, stateless or
  with stores that restore from their own changelog topics, runs in
  long-running tasks (``LOW_LATENCY``, :mod:`~kspark.runtime.spark.low_latency`);
* a stateful one runs the engine's tasks, grouped by task, in
  ``transformWithStateInPandas`` (``ENGINE``), unless it is a count, a
  sum/min/max reduce or a tumbling/hopping windowed count that Spark
  computes natively with identical results (``NATIVE_*``,
  :func:`~kspark.runtime.spark.lowering.lower`).

Queries: sub-topologies are joined by Kafka topics, as in Kafka Streams; a
sub-topology's *level* is 0 when it reads only topics nothing in the
topology writes, else one more than the highest level of the sub-topologies
whose output it reads. Sub-topologies of the same level and the same
``DIRECT_READ``, ``SPARK_SOURCE`` or ``ENGINE`` stage share one Spark query
(each Spark task still runs one Kafka Streams task), as a Kafka Streams
thread runs all of its tasks and commits them together; a Spark query costs
seconds of planning per start and its own trigger, whatever it reads. A
native stage has a query of its own (its shape depends on its operation).
``process_available()`` runs the levels upstream first.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kspark.config import StreamsConfig
from kspark.processor.internals.fused import fused_after_blocker, fusion_blocker
from kspark.runtime.spark.lowering import NativeCount, lower
from kspark.runtime.spark.settings import DIRECT_READ, MAX_OFFSETS_PER_TRIGGER, RunnerSettings

if TYPE_CHECKING:
    from kspark.processor.internals.builder import InternalTopologyBuilder
    from kspark.processor.internals.nodes import ProcessorTopology
    from kspark.processor.topology import Topology

__all__ = [
    "Stage",
    "Decision",
    "SubtopologyPlan",
    "QueryPlan",
    "PhysicalPlan",
    "physical_plan",
    "STATEFUL_RECORDS_PER_TASK",
]

STATEFUL_RECORDS_PER_TASK = 2_500_000
"""Default cap of a micro-batch of a stage that holds its tasks' batches in Python, per task, when
``spark.kspark.maxOffsetsPerTrigger`` is not set. Spark hands a ``transformWithStateInPandas``
task its whole micro-batch, which the stage holds (as pandas columns, ~150 bytes a record, or
spilled to disk) until it has seen every row, so that it can process them in offset order. Kafka
Streams buffers a bounded number of records per partition too (``buffered.records.per.partition``)."""


class Stage(enum.Enum):
    """How a sub-topology runs on Spark (see the module docstring)."""

    DIRECT_READ = "direct read"
    LOW_LATENCY = "low-latency read"
    SPARK_SOURCE = "Spark Kafka source"
    ENGINE = "engine tasks"
    NATIVE_COUNT = "native count"
    NATIVE_REDUCE = "native reduce"
    NATIVE_WINDOWED_COUNT = "native windowed count"

    @property
    def stateful(self) -> bool:
        return self not in (Stage.DIRECT_READ, Stage.LOW_LATENCY, Stage.SPARK_SOURCE)

    @property
    def shares_queries(self) -> bool:
        """Whether sub-topologies of this stage (and level) run in one Spark query (a
        low-latency one's of every level: each such query holds task slots for its whole run)."""
        return self in (Stage.DIRECT_READ, Stage.LOW_LATENCY, Stage.SPARK_SOURCE, Stage.ENGINE)

    @property
    def maps_arrow_batches(self) -> bool:
        """Whether its Python code runs as Spark's Arrow map (``mapInArrow``, a Python data
        source's reader) rather than ``transformWithStateInPandas``: Spark starts the two kinds'
        workers from separate Python daemons (their environments differ)."""
        return self in (
            Stage.DIRECT_READ,
            Stage.LOW_LATENCY,
            Stage.SPARK_SOURCE,
            Stage.NATIVE_COUNT,
            Stage.NATIVE_REDUCE,
        )

    @property
    def holds_batches(self) -> bool:
        """Whether its tasks hold a whole micro-batch in Python (so it is capped by default)."""
        return self in (Stage.ENGINE, Stage.NATIVE_WINDOWED_COUNT)


@dataclass(frozen=True)
class Decision:
    """One optimisation considered for a sub-topology: applied or not, and why."""

    optimisation: str
    applied: bool
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.optimisation}: {'yes' if self.applied else 'no'}" + (
            f" ({self.detail})" if self.detail else ""
        )


@dataclass(frozen=True)
class SubtopologyPlan:
    """How one sub-topology runs. ``tasks`` is None when the partition counts are not known."""

    subtopology: int
    source_topics: tuple[str, ...]  # real names (internal topics carry the application id)
    sink_topics: tuple[str, ...]  # fixed sink topics; a topic extractor's are not known ahead
    stores: tuple[str, ...]
    tasks: int | None
    stage: Stage
    fused: bool  # stateless: the whole task; native: what follows the aggregation
    level: int
    decisions: tuple[Decision, ...]
    # The count Spark computes (NATIVE_*), or a low-latency task's count line (low_latency_count.py).
    native: NativeCount | None = field(default=None, compare=False)
    # librdkafka settings of a direct read's consumers (None unless DIRECT_READ)
    consumer: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    chooses_topics: bool = False  # a sink picks its topic per record (a topic extractor)
    # An engine task of it may schedule WALL_CLOCK_TIME punctuation (it runs Processor API code):
    # its query keeps processing-time timers, and Spark then runs a micro-batch every trigger.
    wall_clock: bool = False

    @property
    def stateful(self) -> bool:
        return self.stage.stateful or bool(self.stores)  # a low-latency task may hold stores

    @property
    def lowered(self) -> bool:
        """Whether Spark's own aggregation computes the sub-topology's count or reduce."""
        return self.native is not None and self.stage is not Stage.LOW_LATENCY

    def summary(self) -> str:
        fused = ", fused" if self.fused else ", count line" if self.native and not self.lowered else ""
        return f"{self.subtopology}: {self.stage.value}{fused}"


@dataclass(frozen=True)
class QueryPlan:
    """One Spark streaming query and the sub-topologies it runs (a task per Spark task)."""

    name: str  # the Spark query's name
    checkpoint: str  # its checkpoint directory under <state.dir>/<application.id>/spark/
    stage: Stage
    level: int
    subtopologies: tuple[SubtopologyPlan, ...]
    max_offsets_per_trigger: int | None  # Spark's maxOffsetsPerTrigger; None: no cap
    cap: str  # why that cap, in words

    @property
    def source_topics(self) -> tuple[str, ...]:
        return tuple(sorted({t for s in self.subtopologies for t in s.source_topics}))

    @property
    def tasks(self) -> int | None:
        counts = [s.tasks for s in self.subtopologies]
        return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)

    def task_bases(self) -> dict[int, int]:
        """Sub-topology -> the query-wide number of its task 0: sub-topology ``s``'s task ``p`` is
        Spark task ``base[s] + p`` (one shuffle partition each)."""
        bases: dict[int, int] = {}
        n = 0
        for s in self.subtopologies:
            if s.tasks is None:
                raise ValueError(f"{self.name}: the task counts are not known")
            bases[s.subtopology] = n
            n += s.tasks
        return bases


@dataclass(frozen=True)
class PhysicalPlan:
    """What a topology becomes on Spark; ``queries`` upstream levels first."""

    application_id: str
    settings: RunnerSettings
    queries: tuple[QueryPlan, ...]
    partitions: Mapping[str, int] | None = field(default=None, compare=False)
    guarantee: str = "at_least_once"  # processing.guarantee: how each task's output commits

    @property
    def subtopologies(self) -> tuple[SubtopologyPlan, ...]:
        return tuple(sorted((s for q in self.queries for s in q.subtopologies), key=lambda s: s.subtopology))

    def subtopology(self, subtopology: int) -> SubtopologyPlan:
        return next(s for s in self.subtopologies if s.subtopology == subtopology)

    def query_of(self, subtopology: int) -> QueryPlan:
        return next(q for q in self.queries if any(s.subtopology == subtopology for s in q.subtopologies))

    def levels(self) -> list[list[QueryPlan]]:
        """The queries by level, upstream first."""
        out: dict[int, list[QueryPlan]] = {}
        for q in self.queries:
            out.setdefault(q.level, []).append(q)
        return [out[level] for level in sorted(out)]

    def summary(self) -> str:
        """One line per sub-topology: its stage and whether it is fused (what tests compare)."""
        return "\n".join(s.summary() for s in self.subtopologies)

    def __str__(self) -> str:
        commits = (
            "one Kafka transaction per task and micro-batch, with its input offsets"
            if self.guarantee == "exactly_once_v2"
            else "idempotent writes, each task waits for every delivery; a replayed batch writes again"
        )
        lines = [f"Spark plan of {self.application_id}:", f"  {self.guarantee}: {commits}"]
        if self.partitions is None:
            lines.append("  (partition counts not known here: tasks are one per input partition)")
        for q in self.queries:
            members = ", ".join(str(s.subtopology) for s in q.subtopologies)
            tasks = "" if q.tasks is None else f", {q.tasks} Spark tasks"
            lines.append(
                f"  Query {q.name} [{q.stage.value}], level {q.level}: sub-topologies {members}{tasks}"
            )
            lines.append(f"    micro-batch cap: {q.cap}")
            if q.stage is Stage.LOW_LATENCY:
                batch = f"{self.settings.low_latency_batch_ms:,} ms"
                lines.append(
                    f"    long-running tasks: each micro-batch runs {batch}; every commit.interval.ms a "
                    "task flushes its stores, waits for its output's delivery, then commits its input "
                    f"offsets to the {self.application_id} group"
                )
            for s in q.subtopologies:
                tasks_s = "?" if s.tasks is None else str(s.tasks)
                lines.append(f"    Sub-topology {s.subtopology}: {s.stage.value}, {tasks_s} tasks")
                lines.append(f"      reads {', '.join(s.source_topics) or 'nothing'}")
                if s.sink_topics:
                    lines.append(f"      writes {', '.join(s.sink_topics)}")
                if s.chooses_topics:
                    lines.append("      writes topics its topic extractor chooses per record")
                if s.stores:
                    lines.append(f"      stores {', '.join(s.stores)}")
                lines.extend(f"      {d}" for d in s.decisions)
        given = self.settings.given()
        if given:
            lines.append("  Settings: " + ", ".join(f"{k}={v}" for k, v in given.items()))
        return "\n".join(lines)


def physical_plan(
    topology: Topology,
    config: Mapping[str, Any] | StreamsConfig,
    partitions: Mapping[str, int] | None = None,
) -> PhysicalPlan:
    """The plan of ``topology`` under ``config``. ``partitions``: topic (real name) -> partition
    count, as the cluster has them (internal topics not created yet count as the largest source
    topic, as the runner creates them); None when not known (``describe``), and then task counts
    and the default caps are unknown."""
    cfg = config if isinstance(config, StreamsConfig) else StreamsConfig(config)
    settings = RunnerSettings.of(cfg)
    builder = topology.internal_builder
    builder.set_application_id(cfg.application_id())
    builder.validate()
    groups = builder.node_groups()
    ids = builder.subtopology_ids()
    sources = {
        i: _real_topics(builder, [t for n in groups[i] for t in builder.source_topics_of(n)]) for i in ids
    }
    sinks = {i: _real_topics(builder, [t for n in groups[i] if (t := builder.sink_topic_of(n))]) for i in ids}
    levels = _levels(ids, sources, sinks)
    subs = [
        _subtopology(builder, i, groups[i], sources[i], sinks[i], levels[i], cfg, settings, partitions)
        for i in ids
    ]
    queries = _queries(cfg.application_id(), subs, settings)
    return PhysicalPlan(cfg.application_id(), settings, queries, partitions, cfg.processing_guarantee())


def _real_topics(builder: InternalTopologyBuilder, topics: list[str]) -> tuple[str, ...]:
    return tuple(sorted({builder.decorate_topic(t) if builder.is_internal_topic(t) else t for t in topics}))


def _levels(
    ids: list[int], sources: Mapping[int, tuple[str, ...]], sinks: Mapping[int, tuple[str, ...]]
) -> dict[int, int]:
    """Each sub-topology's level (module docstring): the longest chain of topics leading to it. A
    cycle through topics (a sink topic read back upstream) is broken at its edges into lower
    sub-topology ids, as Kafka Streams numbers sub-topologies in the order their sources were added."""
    edges = [(i, j) for i in ids for j in ids if i != j and set(sinks[i]) & set(sources[j])]
    for allowed in (edges, [(i, j) for i, j in edges if j > i]):
        level = dict.fromkeys(ids, 0)
        for _ in range(len(ids) + 1):
            changed = False
            for i, j in allowed:
                if level[j] < level[i] + 1:
                    level[j] = level[i] + 1
                    changed = True
            if not changed:
                return level
    raise AssertionError("edges into higher ids only cannot form a cycle")


def _subtopology(
    builder: InternalTopologyBuilder,
    subtopology: int,
    nodes: list[str],
    sources: tuple[str, ...],
    sinks: tuple[str, ...],
    level: int,
    config: StreamsConfig,
    settings: RunnerSettings,
    partitions: Mapping[str, int] | None,
) -> SubtopologyPlan:
    stores = tuple(sorted({s for n in nodes for s in builder.node_stores(n)}))
    tasks = _task_count(builder, sources, partitions)
    decisions: list[Decision] = []
    built = builder.build_topology(nodes)  # fresh processors, as a task gets them; nothing runs
    native: NativeCount | None = None
    consumer = None
    low_latency = ""
    if stores and settings.low_latency:
        consumer, low_latency = _direct_read(config, settings)
        low_latency = (
            "it needs the direct read"
            if consumer is None
            else _low_latency_blocker(config) or _stores_blocker(builder, built, stores, sources, config)
        )
        decisions.append(Decision("low latency", not low_latency, low_latency))
        if low_latency:
            consumer = None
    if stores and settings.low_latency and not low_latency:
        # The engine's tasks, their stores restored from their changelog topics as Kafka Streams
        # restores them: what the user asked for wins over lowering a count into Spark's own
        # aggregation, which only runs in micro-batches.
        stage, fused = Stage.LOW_LATENCY, False
        native = _count_line(builder, built, nodes, config, settings, decisions)
    elif stores:
        lowered = lower(builder, nodes, config, settings)
        if isinstance(lowered, str):
            decisions.append(Decision("native lowering", False, lowered))
            stage, fused = Stage.ENGINE, False
        else:
            native, blocker = _with_fused_tail(built, lowered)
            stage = (
                Stage.NATIVE_WINDOWED_COUNT
                if lowered.windows is not None
                else Stage.NATIVE_COUNT
                if lowered.reduce is None
                else Stage.NATIVE_REDUCE
            )
            operation = (
                stage.value if lowered.reduce is None else f"{stage.value} ({lowered.reduce.function})"
            )
            decisions.append(Decision("native lowering", True, operation))
            fused = blocker is None
            decisions.append(Decision("fused tail", fused, blocker or ""))
    else:
        consumer, why_not = _direct_read(config, settings)
        decisions.append(Decision("direct read", consumer is not None, why_not))
        if consumer is None and settings.low_latency:
            decisions.append(Decision("low latency", False, "it needs the direct read"))
        if consumer is not None:
            stage = Stage.DIRECT_READ
            if settings.low_latency:
                why_not_ll = _low_latency_blocker(config)
                decisions.append(Decision("low latency", not why_not_ll, why_not_ll))
                if not why_not_ll:
                    stage = Stage.LOW_LATENCY
        elif len(sources) > 1:
            # Spark's Kafka source gives each Spark task one topic-partition; a Kafka Streams task
            # takes the records of all its topics by head timestamp, so its rows are grouped by task.
            stage = Stage.ENGINE
            decisions.append(
                Decision("engine tasks", True, f"reads {len(sources)} topics through Spark's source")
            )
        else:
            stage = Stage.SPARK_SOURCE
        blocker = (
            f"reads {len(sources)} topics (taken by head timestamp)"
            if len(sources) > 1
            else fusion_blocker(built, config.default_timestamp_extractor())
        )
        fused = blocker is None
        decisions.append(Decision("fused chain", fused, blocker or ""))
    chooses = any(builder.chooses_topic_per_record(n) for n in nodes)
    user_code = sorted(set(nodes) & builder.user_code_processors())
    wall_clock = stage in (Stage.ENGINE, Stage.LOW_LATENCY) and bool(user_code)
    if stage is Stage.ENGINE:
        decisions.append(
            Decision(
                "wall-clock punctuation",
                wall_clock,
                f"{', '.join(user_code)} may schedule it: a micro-batch every trigger, input or not"
                if wall_clock
                else "no Processor API code: a micro-batch runs only when there is input",
            )
        )
    elif wall_clock:
        decisions.append(
            Decision("wall-clock punctuation", True, f"{', '.join(user_code)} may schedule it: between polls")
        )
    return SubtopologyPlan(
        subtopology,
        sources,
        sinks,
        stores,
        tasks,
        stage,
        fused,
        level,
        tuple(decisions),
        native,
        consumer,
        chooses_topics=chooses,
        wall_clock=wall_clock,
    )


def _count_line(
    builder: InternalTopologyBuilder,
    built: ProcessorTopology,
    nodes: list[str],
    config: StreamsConfig,
    settings: RunnerSettings,
    decisions: list[Decision],
) -> NativeCount | None:
    """A low-latency sub-topology's count or reduce as a count line (low_latency_count.py): what
    lowers to Spark's count or reduce in micro-batches, with its fused tail when that is fusable."""
    lowered = lower(builder, nodes, config, settings)
    if not isinstance(lowered, str) and lowered.windows is not None:
        lowered = "a windowed count"  # its window store keeps the sub-topology in micro-batches
    if isinstance(lowered, str):
        decisions.append(Decision("count line", False, lowered))
        return None
    decisions.append(Decision("count line", True))
    return _with_fused_tail(built, lowered)[0]


def _with_fused_tail(built: ProcessorTopology, lowered: NativeCount) -> tuple[NativeCount, str | None]:
    """``lowered`` with its tail fused when what follows the aggregation is fusable, and why not."""
    blocker = fused_after_blocker(built, lowered.to_stream or lowered.aggregate)
    return replace(lowered, fused_tail=blocker is None), blocker


def _task_count(
    builder: InternalTopologyBuilder, sources: tuple[str, ...], partitions: Mapping[str, int] | None
) -> int | None:
    """One task per partition of the widest input topic, as in Kafka Streams. Internal topics the
    runner has not created yet get their fixed count or the largest external source topic's."""
    if partitions is None:
        return None
    external = [n for t, n in partitions.items() if t in _external_sources(builder)]
    widest_external = max(external, default=1)
    counts = []
    for topic in sources:
        if topic in partitions:
            counts.append(partitions[topic])
            continue
        fixed = next(
            (
                p.partitions
                for name, p in builder.internal_topics().items()
                if builder.decorate_topic(name) == topic and p.partitions is not None
            ),
            None,
        )
        counts.append(fixed or widest_external)
    return max(counts, default=1)


def _external_sources(builder: InternalTopologyBuilder) -> set[str]:
    return {t for t in builder.source_topic_names() if not builder.is_internal_topic(t)}


def _direct_read(config: StreamsConfig, settings: RunnerSettings) -> tuple[dict[str, Any] | None, str]:
    """The librdkafka settings of a direct read, or None and why not."""
    from kspark.runtime.kafka_clients import librdkafka_security, prefixed_settings
    from kspark.runtime.spark.direct_source import direct_consumer_settings
    from kspark.runtime.spark.partition_reader import consumer_config

    if not settings.direct_read:
        return None, f"{DIRECT_READ} is false"
    consumer = prefixed_settings(config.originals(), "consumer")
    settings_ok = direct_consumer_settings(consumer)
    if settings_ok is None:
        return None, f"consumer settings librdkafka does not know ({', '.join(sorted(consumer))})"
    group = f"{config.application_id()}-kspark-reader"
    connection = librdkafka_security(config.originals(), "consumer")
    return consumer_config(",".join(config.bootstrap_servers()), group, {**settings_ok, **connection}), ""


def _low_latency_blocker(config: StreamsConfig) -> str:
    """Why a directly read sub-topology cannot run in long-running tasks ("" if it can)."""
    if config.processing_guarantee() == "exactly_once_v2":
        # Each in-task commit would be a transaction of its own, with no micro-batch to name it:
        # not built. Output is visible only at a commit under exactly-once in any case.
        return "not under exactly_once_v2 (its output is visible only at each commit)"
    return ""


def _stores_blocker(
    builder: InternalTopologyBuilder,
    built: ProcessorTopology,
    stores: tuple[str, ...],
    sources: tuple[str, ...],
    config: StreamsConfig,
) -> str:
    """Why a stateful sub-topology's stores keep it out of long-running tasks ("" if they do not).
    Such a task commits as a Kafka Streams thread does (its input offsets to the group, its state
    to its changelog topics) and restores its stores from those topics alone, so every store must
    be one that its own compacted changelog topic restores exactly."""
    from kspark.runtime.spark.store_restore import topic_restore_blocker
    from kspark.state.internals.versioned import VersionedKeyValueStoreBuilder

    read_only = set(builder.read_only_store_names())
    for store in stores:
        store_builder = builder.store_builder(store)
        if isinstance(store_builder, VersionedKeyValueStoreBuilder):
            return f"store {store} is a versioned store (its history is kept in Spark's state)"
        topic = built.store_to_changelog_topic.get(store) or f"{config.application_id()}-{store}-changelog"
        why = topic_restore_blocker(store_builder, topic, store in read_only, sources)
        if why:
            return f"store {store}: {why}, and a long-running task restores only from a changelog topic"
    return ""


def _queries(
    application_id: str, subs: list[SubtopologyPlan], settings: RunnerSettings
) -> tuple[QueryPlan, ...]:
    """Sub-topologies grouped into queries (module docstring), upstream levels first."""
    grouped: dict[tuple[int, Stage], list[SubtopologyPlan]] = {}
    alone: list[list[SubtopologyPlan]] = []
    for s in subs:
        if s.stage is Stage.LOW_LATENCY:
            grouped.setdefault((-1, s.stage), []).append(s)  # one query (Stage.shares_queries)
        elif s.stage.shares_queries:
            grouped.setdefault((s.level, s.stage), []).append(s)
        else:
            alone.append([s])
    members = [*grouped.values(), *alone]
    members.sort(key=lambda m: (min(s.level for s in m), m[0].subtopology))
    return tuple(_query(application_id, m, settings) for m in members)


_MAX_SUFFIX = 120


def _query(application_id: str, members: list[SubtopologyPlan], settings: RunnerSettings) -> QueryPlan:
    ids = [s.subtopology for s in members]
    # A query of one sub-topology keeps the name (and checkpoint) it always had.
    suffix = f"subtopology-{ids[0]}" if len(ids) == 1 else "subtopologies-" + "-".join(map(str, ids))
    if len(suffix) > _MAX_SUFFIX:
        # The suffix names the query's checkpoint directory, and a file name holds at most 255
        # bytes: a long list of ids becomes its range and count with a digest, as stable as it.
        digest = hashlib.sha256(suffix.encode()).hexdigest()[:12]
        suffix = f"subtopologies-{ids[0]}-to-{ids[-1]}-{len(ids)}-{digest}"
    stage = members[0].stage
    cap, why = _cap(members, stage, settings)
    if stage is Stage.LOW_LATENCY:
        # Its checkpoint holds another kind of offsets than a micro-batch query's of the same
        # sub-topologies: a switch of the setting is a changed plan (runner._check_checkpoints).
        suffix += "-low-latency"
    level = min(s.level for s in members)
    return QueryPlan(f"{application_id}-{suffix}", suffix, stage, level, tuple(members), cap, why)


def _cap(members: list[SubtopologyPlan], stage: Stage, settings: RunnerSettings) -> tuple[int | None, str]:
    """Spark's ``maxOffsetsPerTrigger`` for a query: see :data:`STATEFUL_RECORDS_PER_TASK` and
    :data:`~kspark.runtime.spark.settings.SETTINGS`."""
    if stage is Stage.LOW_LATENCY:
        return None, "none: its long-running tasks take records as they arrive"
    several = [s.subtopology for s in members if len(s.source_topics) > 1]
    if several:
        # Spark splits a cap over partitions by lag: a join's small table topic would trail its
        # stream, and stream records would miss table rows that Kafka Streams, which waits for
        # partitions with known lag (KIP-695), would already have read.
        return None, f"none: sub-topology {several[0]} reads several topics (a cap would let one trail)"
    if settings.max_offsets_per_trigger is not None:
        return (
            settings.max_offsets_per_trigger,
            f"{settings.max_offsets_per_trigger:,} records ({MAX_OFFSETS_PER_TRIGGER})",
        )
    if not stage.holds_batches:
        return (
            None,
            "none: the stage streams its input" if not stage.stateful else "none: Spark aggregates it",
        )
    tasks = [s.tasks for s in members]
    if any(t is None for t in tasks):
        return None, f"{STATEFUL_RECORDS_PER_TASK:,} records per task"
    total = STATEFUL_RECORDS_PER_TASK * sum(t for t in tasks if t is not None)
    return total, f"{total:,} records ({STATEFUL_RECORDS_PER_TASK:,} per task)"
