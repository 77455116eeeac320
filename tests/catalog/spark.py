"""Catalog scenarios on the Spark runner over real Kafka, many scenarios per application.

A **configuration** (:class:`SparkConfig`) is one setting of what changes the
runner's physical plan: the record cache on (the default, 10 MB) or off, native
lowering on or off, direct read on or off, and low latency (with the other three
on: it changes only how stateless sub-topologies read). A **case** (:class:`Case`) is a
scenario in a configuration with one of its partition counts. A scenario runs
only in the configurations that give it a distinct (physical plan, cache) pair
(:func:`plan_duplicates`, on ``kspark.runtime.spark.plan``); the others are
reported as skipped, naming the configuration whose plan they share.

A Spark query costs seconds of planning, so the cases of a configuration run
together: :func:`applications` packs them into as few applications as it can
(:func:`~tests.catalog.model.combined`), one topology each, run once with
``process_available()``. Cases share an application when their scenarios'
configs are equal, the names they choose do not collide
(:func:`~tests.catalog.model.names_used`), and, for a scenario with a
repartition topic, when its partition count is the application's widest (the
runner creates repartition topics with the partition count of the
application's widest source topic, where Kafka Streams takes the widest input
of the sub-topology writing them). Each case has topics of its own: input
topics are written once per (scenario, partition count, shift) and read by every
application that runs it, output and internal topics are the application's
and deleted once read. :class:`CatalogRunner` runs the applications and hands
back each case's outputs, or the error of its application.

Timestamps: librdkafka writes a timestamp of 0 as "now", so a scenario with an
input at 0 (or whose reference writes one) runs with every input timestamp
moved by :data:`SHIFT`, and so does its reference; :data:`SHIFT` is a multiple
of every window size and advance in the catalog, so windows stay aligned.
"""

from __future__ import annotations

import itertools
import logging
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kspark.dev.kafka import LocalKafka
from kspark.runtime.spark.kafka_io import OffsetLister

from .compare import PerKey, add, difference, project
from .driver import driver_config
from .microbatch import input_records, microbatch_outputs, slices
from .model import IDENTITY, Scenario, Step, Topics, combined, names_used, serde

__all__ = [
    "SparkConfig",
    "CONFIGS",
    "DEFAULT",
    "Case",
    "Outcome",
    "SHIFT",
    "CACHE_ON_BYTES",
    "reference_config",
    "plan_summary",
    "plan_duplicates",
    "shift_of",
    "has_repartition",
    "applications",
    "CatalogRunner",
    "register_by_value",
    "skip_reason",
    "all_cases",
    "compared",
    "expected_outputs",
    "check",
    "MAX_OFFSETS_PER_TRIGGER",
]

_log = logging.getLogger(__name__)

CACHE_ON_BYTES = 10 * 1024 * 1024
"""``statestore.cache.max.bytes`` with the cache on: Kafka Streams' default."""

SHIFT = 1000 * 7 * 86_400_000
"""Timestamp shift of runs with a timestamp 0 (1000 weeks: a multiple of every window size and
advance the catalog uses, 5 ms to a day)."""

NATIVE_LOWERING = "spark.kspark.nativeLowering"
MAX_OFFSETS_PER_TRIGGER = "spark.kspark.maxOffsetsPerTrigger"
DIRECT_READ = "spark.kspark.directRead"
LOW_LATENCY = "spark.kspark.lowLatency"
EMIT_DEFAULTS = {
    # the TopologyTestDriver's defaults (Kafka's driver sets them too): emit what a record closes
    # while it is processed, not when the wall clock allows
    "__emit.interval.ms.kstreams.outer.join.spurious.results.fix__": 0,
    "__emit.interval.ms.kstreams.windowed.aggregation__": 0,
}


def _on(flag: bool) -> str:
    return "on" if flag else "off"


@dataclass(frozen=True)
class SparkConfig:
    """One configuration of the runner (see the module docstring)."""

    cache: bool
    native: bool
    direct: bool
    low_latency: bool = False  # only with the direct read (it needs it), cache and native on

    @property
    def id(self) -> str:
        low = "+low-latency" if self.low_latency else ""
        return f"cache-{_on(self.cache)}+native-{_on(self.native)}+direct-{_on(self.direct)}{low}"

    def settings(self) -> dict[str, str]:
        return {
            "statestore.cache.max.bytes": str(CACHE_ON_BYTES if self.cache else 0),
            NATIVE_LOWERING: str(self.native).lower(),
            DIRECT_READ: str(self.direct).lower(),
            **({LOW_LATENCY: "true"} if self.low_latency else {}),
        }


CONFIGS = (
    *(SparkConfig(c, n, d) for c in (True, False) for n in (True, False) for d in (True, False)),
    # Low latency changes only how stateless sub-topologies read: with the others' defaults.
    SparkConfig(True, True, True, low_latency=True),
)
"""Every configuration, the default (all on) first within each cache setting."""

DEFAULT = CONFIGS[0]


@dataclass(frozen=True)
class Case:
    """A scenario in a configuration with one of its partition counts."""

    scenario: Scenario
    config: SparkConfig
    partitions: int

    @property
    def id(self) -> str:
        return f"{self.scenario.name}/{self.config.id}/p{self.partitions}"


@dataclass
class Outcome:
    """What a case's application gave: the case's outputs (timestamps as written), or its error."""

    outputs: PerKey | None
    error: str | None = None
    application: str = ""  # its application.id
    seconds: float = 0.0
    topics: Mapping[str, str] = field(default_factory=dict)  # logical -> real topic names


def reference_config(scenario: Scenario, config: SparkConfig, **extra: Any) -> dict[str, Any]:
    """The config a case runs with, on Spark (plus its application's id, broker and state dir) and
    on the micro-batch reference alike."""
    return {**EMIT_DEFAULTS, **driver_config(scenario, {**config.settings(), **extra})}


# ----------------------------------------------------------------------------- plans


def plan_summary(scenario: Scenario, config: SparkConfig) -> str | None:
    """One line per sub-topology: the stage the runner chooses and whether it is fused; None while
    the runner has no typed physical plan (``kspark/runtime/spark/plan.py``)."""
    try:
        from kspark.runtime.spark.plan import physical_plan
    except ImportError:
        return None
    return physical_plan(scenario.topology(), reference_config(scenario, config)).summary()


def plan_duplicates(scenario: Scenario) -> dict[SparkConfig, SparkConfig | None]:
    """Per configuration, None when it runs, else the earlier configuration (same cache setting,
    or any for a topology without stores) with the same physical plan. Without a typed plan
    every configuration runs."""
    known = _DUPLICATES.get(scenario.name)
    if known is not None:
        return known
    out: dict[SparkConfig, SparkConfig | None] = {}
    seen: dict[tuple[bool | None, str], SparkConfig] = {}
    # The record cache is a layer of stores: without any, cache on and off run the same tasks.
    builder = scenario.topology().internal_builder
    cached = bool(builder.state_store_names() or builder.global_store_names())
    for config in CONFIGS:
        summary = plan_summary(scenario, config)
        if summary is None:
            out[config] = None
            continue
        key = (config.cache if cached else None, summary)
        out[config] = seen.get(key)
        seen.setdefault(key, config)
    _DUPLICATES[scenario.name] = out
    return out


_DUPLICATES: dict[str, dict[SparkConfig, SparkConfig | None]] = {}
_SHIFTS: dict[tuple[str, int], int] = {}


# ----------------------------------------------------------------------------- topics


def _topics_of(scenario: Scenario) -> tuple[frozenset[str], frozenset[str]]:
    """(input topics, the other topics) by logical name: inputs are piped and never written by the
    topology, so every application that runs the scenario can read the same ones."""
    builder = scenario.topology().internal_builder
    internal = set(builder.internal_topics())
    sinks = {t for n in builder.node_names() if (t := builder.sink_topic_of(n)) is not None} - internal
    sources = {t for t in builder.source_topic_names() if t not in internal} | set(builder.global_topics())
    inputs = frozenset(set(scenario.inputs) - sinks)
    return inputs, frozenset((sources | sinks | set(scenario.outputs)) - inputs)


def has_repartition(scenario: Scenario) -> bool:
    """Whether the scenario's topology has a repartition topic."""
    return any(
        p.kind == "repartition" for p in scenario.topology().internal_builder.internal_topics().values()
    )


def shift_of(scenario: Scenario, partitions: int) -> int:
    """:data:`SHIFT` when an input timestamp or a reference output timestamp is 0, else 0."""
    key = (scenario.name, partitions)
    if key not in _SHIFTS:
        _SHIFTS[key] = _shift(scenario, partitions)
    return _SHIFTS[key]


def _shift(scenario: Scenario, partitions: int) -> int:
    if any(s.get("ts") == 0 for s in scenario.steps):
        return SHIFT
    for config in (DEFAULT, SparkConfig(False, True, True)):
        try:
            outputs = microbatch_outputs(scenario, reference_config(scenario, config), partitions)
        except Exception:  # the reference's failure is the test's to report
            return 0
        if any(ts == 0 for per_key in outputs.values() for seq in per_key.values() for _, ts in seq):
            return SHIFT
    return 0


# ----------------------------------------------------------------------------- packing


MAX_SHARED = 50
"""Sub-topologies of one application at most in one shared Spark query (same level and stage,
``plan.py``). Few applications: a query's start and a micro-batch's fixed costs are paid per
application, not per case; but not huge ones, whose cost grows faster than their cases (every
task is sent, and groups the nodes of, the whole combined topology). Measured on the
cache-on+native-on+direct-on configuration (481 cases): 383 s at 200 (two applications held
most cases; on a loaded machine one of 251 took 408 s, one of 165 77 s), 312 s at 50 (ten
applications). Smaller is not faster: 336 s at 25 against 301 s at 50, one after the other
(``pytest tests/catalog/test_spark.py -k "cache-on and native-on and direct-on"``)."""


def _shared_queries(case: Case) -> Counter[tuple[int, str]]:
    """Per (level, stage) of the queries the runner shares among sub-topologies, how many of the
    case's sub-topologies join it (nothing without a typed plan: a query per sub-topology)."""
    try:
        from kspark.runtime.spark.plan import physical_plan
    except ImportError:
        return Counter()
    plan = physical_plan(case.scenario.topology(), reference_config(case.scenario, case.config))
    return Counter((s.level, s.stage.name) for s in plan.subtopologies if s.stage.shares_queries)


@dataclass
class _App:
    config_key: frozenset[tuple[str, Any]]
    widest: int
    names: set[str] = field(default_factory=set)
    cases: list[Case] = field(default_factory=list)
    shared: Counter[tuple[int, str]] = field(default_factory=Counter)


def applications(cases: Iterable[Case]) -> list[list[Case]]:
    """``cases`` packed into applications (see the module docstring), first fit, widest first."""
    apps: list[_App] = []
    for case in sorted(cases, key=lambda c: -c.partitions):
        key = frozenset(reference_config(case.scenario, case.config).items())
        names = names_used(case.scenario)
        repartition = has_repartition(case.scenario)
        shared = _shared_queries(case)
        for app in apps:
            if app.config_key != key or app.names & names:
                continue
            if (repartition and app.widest != case.partitions) or case.partitions > app.widest:
                continue
            if any(app.shared[q] + n > MAX_SHARED for q, n in shared.items()):
                continue
            break
        else:
            app = _App(key, case.partitions)
            apps.append(app)
        app.names |= names
        app.cases.append(case)
        app.shared.update(shared)
    return [app.cases for app in apps]


# ----------------------------------------------------------------------------- running


def register_by_value() -> None:
    """Spark's Python workers cannot import test modules: send the catalog's functions by value."""
    from pyspark import cloudpickle

    package = __name__.rpartition(".")[0]  # "catalog" or "tests.catalog", as pytest imported it
    for name, module in list(sys.modules.items()):
        if name == package or name.startswith(package + "."):
            cloudpickle.register_pickle_by_value(module)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in name)


class _QueryTimes:
    """Wall time of every Spark streaming query run of the session (start to end), and the parts of
    their micro-batches' ``durationMs`` (planning, ``addBatch``...) summed over all of them."""

    def __init__(self) -> None:
        self.started: dict[str, float] = {}
        self.runs = 0
        self.seconds = 0.0
        self.batch_ms: dict[str, int] = {}

    @classmethod
    def attach(cls, spark: Any) -> _QueryTimes:
        from pyspark.sql.streaming import StreamingQueryListener

        times = cls()

        class Listener(StreamingQueryListener):  # type: ignore[misc]
            def onQueryStarted(self, event: Any) -> None:
                times.started[str(event.id)] = time.monotonic()

            def onQueryProgress(self, event: Any) -> None:
                for part, ms in (event.progress.durationMs or {}).items():
                    times.batch_ms[part] = times.batch_ms.get(part, 0) + int(ms)

            def onQueryIdle(self, event: Any) -> None:
                pass

            def onQueryTerminated(self, event: Any) -> None:
                begun = times.started.pop(str(event.id), None)
                if begun is not None:
                    times.runs += 1
                    times.seconds += time.monotonic() - begun

        try:
            spark.streams.addListener(Listener())
        except Exception as e:  # a session that takes no Python listener: no query times
            _log.info("no streaming query listener: %s", e)
        return times

    def summary(self) -> str:
        parts = ", ".join(
            f"{k} {v / 1000:.0f} s" for k, v in sorted(self.batch_ms.items(), key=lambda kv: -kv[1])
        )
        return f"{self.runs} query runs, {self.seconds:.0f} s from start to end; micro-batches: {parts}"


class CatalogRunner:
    """Runs cases on Spark: inputs written once per (scenario, partitions, shift), applications
    packed by :func:`applications`. ``spark`` is a SparkSession (the tests' shared one, or a
    ``local-cluster`` one in a process of its own). ``timings`` accumulates seconds per phase."""

    def __init__(self, kafka: LocalKafka, spark: Any, state_dir: Path, tag: str | None = None) -> None:
        self.kafka = kafka
        self.spark = spark
        self.state_dir = state_dir
        self.tag = tag or uuid.uuid4().hex[:6]
        self._inputs: dict[tuple[str, int, int], Topics] = {}
        self._apps = itertools.count()
        self.timings: dict[str, float] = {}
        self.queries = _QueryTimes.attach(spark)
        register_by_value()

    def _timed(self, phase: str, started: float) -> None:
        self.timings[phase] = self.timings.get(phase, 0.0) + time.monotonic() - started

    # ------------------------------------------------------------------ topics
    def create_topics(self, topics: Mapping[str, int]) -> None:
        """Create topics (name -> partitions) in one request and wait until each has its leaders."""
        from confluent_kafka.admin import NewTopic

        if not topics:
            return
        started = time.monotonic()
        admin = self.kafka.admin()
        futures = admin.create_topics(
            [NewTopic(t, num_partitions=n, replication_factor=1) for t, n in topics.items()],
            operation_timeout=60,
            request_timeout=60,
        )
        for future in futures.values():
            future.result(timeout=60)
        deadline = time.monotonic() + 60
        while True:
            md = admin.list_topics(timeout=30).topics
            if all(
                t in md
                and md[t].error is None
                and len(md[t].partitions) == n
                and all(p.leader >= 0 for p in md[t].partitions.values())
                for t, n in topics.items()
            ):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"topics without leaders after 60 s: {sorted(topics)}")
            time.sleep(0.05)
        self._timed("create topics", started)

    def _delete(self, prefix: str) -> None:
        started = time.monotonic()
        admin = self.kafka.admin()
        doomed = [t for t in admin.list_topics(timeout=30).topics if t.startswith(prefix)]
        if doomed:
            for future in admin.delete_topics(doomed, operation_timeout=60).values():
                try:
                    future.result(timeout=60)
                except Exception as e:  # a leftover topic costs disk, not correctness
                    _log.warning("could not delete a catalog topic: %s", e)
        self._timed("delete topics", started)

    def _produce(self, parts: Iterable[tuple[Scenario, Topics, int, Sequence[Step], int]]) -> None:
        """Write the inputs of (scenario, topics, partitions, steps, shift) with one producer, each
        topic-partition in pipe order (idempotent: retries do not reorder)."""
        from confluent_kafka import Producer

        started = time.monotonic()
        producer = Producer(
            {"bootstrap.servers": self.kafka.bootstrap_servers, "enable.idempotence": True, "linger.ms": 5}
        )
        errors: list[str] = []

        def delivered(err: Any, _msg: Any) -> None:
            if err is not None:
                errors.append(str(err))

        for scenario, topics, partitions, steps, shift in parts:
            for r in input_records(scenario, partitions, steps, shift):
                while True:
                    try:
                        producer.produce(
                            topics[r.topic],
                            value=r.value,
                            key=r.key,
                            partition=r.partition,
                            timestamp=r.timestamp,
                            on_delivery=delivered,
                        )
                        break
                    except BufferError:
                        producer.poll(0.1)
        if producer.flush(60) or errors:
            raise RuntimeError(f"writing catalog inputs failed: {errors[:3] or 'not all delivered in 60 s'}")
        self._timed("write inputs", started)

    def _read(self, topics: Sequence[str]) -> dict[str, list[tuple[bytes | None, bytes | None, int]]]:
        """Every record of ``topics`` as (key, value, timestamp), per topic in (partition, offset)
        order, read with one consumer."""
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        started = time.monotonic()
        out: dict[str, list[tuple[int, int, bytes | None, bytes | None, int]]] = {t: [] for t in topics}
        consumer = Consumer(
            {
                "bootstrap.servers": self.kafka.bootstrap_servers,
                "group.id": f"kspark-catalog-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
            }
        )
        try:
            metadata = consumer.list_topics(timeout=30).topics
            ends = OffsetLister(self.kafka.bootstrap_servers).offsets(
                [(topic, p) for topic in topics for p in metadata[topic].partitions], latest=True
            )
            wanted = [TopicPartition(topic, p, 0) for (topic, p), end in ends.items() if end > 0]
            left = {(tp.topic, tp.partition) for tp in wanted}
            if wanted:
                consumer.assign(wanted)
            deadline = time.monotonic() + 60
            while left:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"catalog outputs not read to their end in 60 s: {sorted(left)}")
                for msg in consumer.consume(10_000, timeout=0.5):
                    err = msg.error()
                    if err is not None:
                        if err.code() != KafkaError._PARTITION_EOF:
                            raise RuntimeError(f"reading catalog outputs: {err}")
                        left.discard((msg.topic(), msg.partition()))
                        continue
                    out[msg.topic()].append(
                        (msg.partition(), msg.offset(), msg.key(), msg.value(), msg.timestamp()[1])
                    )
        finally:
            consumer.close()
        self._timed("read outputs", started)
        return {
            t: [(k, v, ts) for _, _, k, v, ts in sorted(rs, key=lambda r: r[:2])] for t, rs in out.items()
        }

    def _input_topics(self, case: Case, shift: int) -> Topics:
        inputs, _ = _topics_of(case.scenario)
        stem = f"cat-{self.tag}-in-{_safe(case.scenario.name)}-p{case.partitions}-s{int(shift > 0)}"
        return Topics({t: f"{stem}-{_safe(t)}" for t in inputs})

    def prepare_inputs(self, cases: Iterable[Case]) -> None:
        """Create and write the shared inputs of ``cases`` not written yet, all at once."""
        todo: dict[tuple[str, int, int], tuple[Case, int, Topics]] = {}
        for case in cases:
            shift = shift_of(case.scenario, case.partitions)
            key = (case.scenario.name, case.partitions, shift)
            if key not in self._inputs and key not in todo:
                todo[key] = (case, shift, self._input_topics(case, shift))
        self.create_topics({real: c.partitions for c, _, topics in todo.values() for real in topics.values()})
        self._produce(
            [(c.scenario, t, c.partitions, c.scenario.steps, shift) for c, shift, t in todo.values()]
        )
        self._inputs.update({key: topics for key, (_, _, topics) in todo.items()})

    # ------------------------------------------------------------------ applications
    def run(
        self,
        cases: Sequence[Case],
        *,
        extra_config: Mapping[str, Any] | None = None,
        restarts: int = 0,
    ) -> dict[str, Outcome]:
        """Every case's outcome by case id. ``restarts`` > 0: the inputs are the application's own,
        written in ``restarts + 1`` slices with the application restarted after each."""
        if not restarts:
            self.prepare_inputs(cases)
        out: dict[str, Outcome] = {}
        for app_cases in applications(cases):
            out.update(self._run_app(app_cases, extra_config or {}, restarts))
        return out

    def _run_app(self, cases: list[Case], extra: Mapping[str, Any], restarts: int) -> dict[str, Outcome]:
        from kspark import KafkaStreams

        app_id = f"cat-{self.tag}-app{next(self._apps)}"
        started = time.monotonic()
        parts: list[tuple[Case, Topics, int]] = []
        own: dict[str, int] = {}
        for i, case in enumerate(cases):
            shift = shift_of(case.scenario, case.partitions)
            inputs, others = _topics_of(case.scenario)
            stem = f"{app_id}-{i}-{_safe(case.scenario.name)}"
            mine = inputs | others if restarts else others
            shared = {} if restarts else self._inputs[(case.scenario.name, case.partitions, shift)]
            topics = Topics({**shared, **{t: f"{stem}-{_safe(t)}" for t in mine}})
            own.update({topics[t]: case.partitions for t in mine})
            parts.append((case, topics, shift))
        try:
            self.create_topics(own)
            config = {
                **reference_config(cases[0].scenario, cases[0].config, **extra),
                "application.id": app_id,
                "bootstrap.servers": self.kafka.bootstrap_servers,
                "state.dir": str(self.state_dir / app_id),
            }
            for k in range(restarts + 1):
                if restarts:
                    cut = [
                        (c.scenario, t, c.partitions, slices(c.scenario.steps, restarts + 1)[k], s)
                        for c, t, s in parts
                    ]
                    self._produce(cut)
                topology = combined([(case.scenario, topics) for case, topics, _ in parts])
                running = time.monotonic()
                app = KafkaStreams(topology, config, spark=self.spark)
                try:
                    app.process_available()
                finally:
                    app.close()
                    self._timed("process_available", running)
            written = self._read(
                sorted({topics[t] for case, topics, _ in parts for t in case.scenario.outputs})
            )
            seconds = time.monotonic() - started
            result = {
                case.id: Outcome(
                    _outputs(case.scenario, topics, written), None, app_id, seconds, dict(topics)
                )
                for case, topics, _ in parts
            }
        except Exception as e:
            seconds = time.monotonic() - started
            error = f"{type(e).__name__}: {e}"
            _log.warning("catalog application %s (%d cases) failed: %s", app_id, len(cases), error)
            result = {
                case.id: Outcome(None, error, app_id, seconds, dict(topics)) for case, topics, _ in parts
            }
        finally:
            self._delete(f"{app_id}-")
        _log.info("catalog application %s: %d cases in %.1f s", app_id, len(cases), seconds)
        return result


def _outputs(
    scenario: Scenario, topics: Topics, written: Mapping[str, list[tuple[bytes | None, bytes | None, int]]]
) -> PerKey:
    """A scenario's outputs (logical topic names) from what its application wrote."""
    out: PerKey = {}
    for logical, (key_kind, value_kind) in scenario.outputs.items():
        out[logical] = {}
        real = topics[logical]
        keys, values = serde(key_kind).deserializer(), serde(value_kind).deserializer()
        for key, value, ts in written[real]:
            add(out, logical, keys.deserialize(real, key), values.deserialize(real, value), ts)
    return out


# ----------------------------------------------------------------------------- cases


def skip_reason(case: Case) -> str | None:
    """Why ``case`` does not run on Spark, or None: the scenario cannot run there, or an earlier
    configuration with the same cache setting (any, for a topology without stores) has the same
    physical plan."""
    if case.scenario.spark_skip:
        return f"cannot run on Spark: {case.scenario.spark_skip}"
    same = plan_duplicates(case.scenario)[case.config]
    if same is not None:
        return f"same physical plan as {same.id}"
    return None


def all_cases(scenarios: Iterable[Scenario], configs: Iterable[SparkConfig] = CONFIGS) -> list[Case]:
    """Every case of ``scenarios``, grouped by configuration."""
    scenarios = list(scenarios)
    return [Case(s, c, p) for c in configs for s in scenarios for p in s.partitions]


def compared(case: Case) -> str:
    """The comparison mode of ``case``: exact with one partition, else what the scenario declares."""
    return "exact" if case.partitions == 1 else case.scenario.spark_compare


def expected_outputs(
    case: Case, outcome: Outcome | None = None, *, restarts: int = 0, **extra: Any
) -> PerKey:
    """The micro-batch reference's outputs for ``case``: its timestamps shifted as the run's and,
    given the run's ``outcome``, with the run's application id and topic names."""
    config = reference_config(case.scenario, case.config, **extra)
    topics = IDENTITY
    if outcome is not None and outcome.application:
        config["application.id"] = outcome.application
        topics = Topics(outcome.topics)
    return microbatch_outputs(
        case.scenario,
        config,
        case.partitions,
        restarts=restarts,
        shift=shift_of(case.scenario, case.partitions),
        topics=topics,
    )


def check(case: Case, outcome: Outcome, *, restarts: int = 0, **extra: Any) -> str | None:
    """Where ``outcome`` breaks the rules for ``case`` (tests/catalog/__init__.py), or None."""
    if outcome.error is not None:
        return f"application {outcome.application} (run with this case) failed: {outcome.error}"
    assert outcome.outputs is not None
    mode = compared(case)
    got = project(outcome.outputs, mode, case.partitions)
    want = project(expected_outputs(case, outcome, restarts=restarts, **extra), mode, case.partitions)
    return None if got == want else f"compared: {mode}\n{difference(got, want)}"
