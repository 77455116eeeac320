"""The Spark runner's own settings (``spark.kspark.*``), parsed and validated once.

An application's config carries Kafka Streams settings, Spark settings under
their own ``spark.*`` names, and the runner's settings under
``spark.kspark.*``. :meth:`RunnerSettings.of` reads every ``spark.kspark.*``
key of a config into one typed, immutable object before anything starts: an
unknown key is a ``ConfigException`` naming the closest known one, a value
of the wrong type names the key and the value. Everything in the runner
reads its settings from that object, never from the config's strings.

:data:`SETTINGS` describes each setting (name, type, default, what it does);
docs/spark-runner.md lists them and a test keeps the two in step.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kspark.errors import ConfigException

__all__ = [
    "PREFIX",
    "MAX_OFFSETS_PER_TRIGGER",
    "NATIVE_LOWERING",
    "DIRECT_READ",
    "LOW_LATENCY",
    "LOW_LATENCY_BATCH_MS",
    "SPILL_ROWS",
    "PROMETHEUS_PORT",
    "CLASS_DATA_SHARING",
    "Setting",
    "SETTINGS",
    "RunnerSettings",
]

PREFIX = "spark.kspark."

MAX_OFFSETS_PER_TRIGGER = "spark.kspark.maxOffsetsPerTrigger"
NATIVE_LOWERING = "spark.kspark.nativeLowering"
DIRECT_READ = "spark.kspark.directRead"
SPILL_ROWS = "spark.kspark.spillRows"
PROMETHEUS_PORT = "spark.kspark.prometheusPort"
CLASS_DATA_SHARING = "spark.kspark.classDataSharing"
QUERY_SERVER_PROCESS = "spark.kspark.queryServerProcess"
PROCESSING_NICE = "spark.kspark.processingNice"
LOW_LATENCY = "spark.kspark.lowLatency"
LOW_LATENCY_BATCH_MS = "spark.kspark.lowLatencyBatchMs"

DEFAULT_LOW_LATENCY_BATCH_MS = 60_000
"""How long a low-latency query's micro-batch (its long-running tasks) lasts by default."""

DEFAULT_SPILL_ROWS = 1_000_000
"""Rows of one task's batch held as pandas frames (~150 MB) before the batch goes to disk."""


def _positive_int(key: str, value: Any) -> int:
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit() or int(text) < 1:
        raise ConfigException(f"{key} must be a positive integer, got {value!r}")
    return int(text)


def _nice(key: str, value: Any) -> int:
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit() or not 1 <= int(text) <= 19:
        raise ConfigException(f"{key} must be a nice value from 1 to 19, got {value!r}")
    return int(text)


def _boolean(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise ConfigException(f"{key} must be true or false, got {value!r}")
    return text == "true"


@dataclass(frozen=True)
class Setting:
    """One ``spark.kspark.*`` setting: its key, the field of :class:`RunnerSettings` it sets, its
    type, default and what it does (docs/spark-runner.md shows this text)."""

    key: str
    field: str
    type: str  # "positive integer" | "boolean" | "nice value"
    default: Any
    doc: str

    def parse(self, value: Any) -> Any:
        parse: Callable[[str, Any], Any] = {"positive integer": _positive_int, "nice value": _nice}.get(
            self.type, _boolean
        )
        return parse(self.key, value)


SETTINGS: tuple[Setting, ...] = (
    Setting(
        MAX_OFFSETS_PER_TRIGGER,
        "max_offsets_per_trigger",
        "positive integer",
        None,
        "At most this many input records per micro-batch of a query (Spark's maxOffsetsPerTrigger), "
        "split over its partitions by lag. Unset: stages that hold their tasks' batches in Python "
        "are capped at 2,500,000 records per task, others not at all. Never applied to a query "
        "with a sub-topology that reads several topics (a join's table would trail its stream).",
    ),
    Setting(
        NATIVE_LOWERING,
        "native_lowering",
        "boolean",
        True,
        "Compute plain counts, sum/min/max reduces of Long and Integer values and tumbling or "
        "hopping windowed counts natively (where the results are identical; record cache on). "
        "false runs them in the engine. Plans keep different state: switching needs a new "
        "application.id or a reset.",
    ),
    Setting(
        DIRECT_READ,
        "direct_read",
        "boolean",
        True,
        "Stateless sub-topologies read Kafka in Spark's Python workers; false reads them "
        "through Spark's Kafka source.",
    ),
    Setting(
        LOW_LATENCY,
        "low_latency",
        "boolean",
        False,
        "Sub-topologies read directly under at_least_once (stateless ones, and stateful ones whose "
        "stores all restore from their own changelog topic) run in long-running Spark tasks that "
        "process each record as it arrives and commit their state and input offsets (to the "
        "application.id consumer group) every commit.interval.ms, as a Kafka Streams thread does, "
        "instead of in a micro-batch per trigger. The query holds its task slots for its whole "
        "run. The plan says where it cannot apply and why.",
    ),
    Setting(
        LOW_LATENCY_BATCH_MS,
        "low_latency_batch_ms",
        "positive integer",
        DEFAULT_LOW_LATENCY_BATCH_MS,
        "How long each micro-batch of a low-latency query runs its tasks (ms). Between two, the "
        "records that arrive wait for the next batch's tasks, about 0.2 s; Spark records the "
        "query's progress, and metrics() its counts, once a batch. KafkaStreams.close() ends the "
        "running batch at once.",
    ),
    Setting(
        SPILL_ROWS,
        "spill_rows",
        "positive integer",
        DEFAULT_SPILL_ROWS,
        "Rows of one task's micro-batch an engine stage holds in memory before it spills the "
        "batch to Spark's local directory. Results do not depend on it.",
    ),
    Setting(
        PROMETHEUS_PORT,
        "prometheus_port",
        "positive integer",
        None,
        "Serve KafkaStreams.metrics() in Prometheus' text format on this port of the application "
        "process (all interfaces), from start() or process_available() to close(). Unset: no "
        "endpoint.",
    ),
    Setting(
        CLASS_DATA_SHARING,
        "class_data_sharing",
        "boolean",
        True,
        "With a local master and kspark's default spark.driver.extraJavaOptions, the driver JVM "
        "maps Spark's classes from a class-data sharing archive under $KSPARK_HOME/cds, written "
        "at the exit of the first run that lacks it (a start 2-4 s sooner). false starts "
        "without one. Read when kspark creates the session.",
    ),
    Setting(
        QUERY_SERVER_PROCESS,
        "query_server_process",
        "boolean",
        True,
        "Serve application.server from a process of its own, with read replicas of its own fed "
        "the same committed micro-batches, so that HTTP reads do not wait for the application "
        "process's interpreter lock (docs/interactive-queries.md). false serves it from a thread "
        "of the application process, from the replicas KafkaStreams.store() reads.",
    ),
    Setting(
        PROCESSING_NICE,
        "processing_nice",
        "nice value",
        None,
        "With a local master, on Linux: start Spark's JVM (which runs every task) and so its "
        "Python workers at this nice value (1-19), below the application process and the HTTP "
        "endpoint's serving process, which then get a core first when the tasks fill them. The JVM "
        "runs in a session of its own, whose scheduling group (Linux's autogroup, where it is on) "
        "gets the nice value too; it still ends with the application. Unset: the JVM runs at the "
        "application's own. Read when kspark creates the session.",
    ),
)

_BY_KEY = {s.key: s for s in SETTINGS}


@dataclass(frozen=True)
class RunnerSettings:
    """Every ``spark.kspark.*`` setting of an application, typed (see :data:`SETTINGS`)."""

    max_offsets_per_trigger: int | None = None
    native_lowering: bool = True
    direct_read: bool = True
    low_latency: bool = False
    low_latency_batch_ms: int = DEFAULT_LOW_LATENCY_BATCH_MS
    spill_rows: int = DEFAULT_SPILL_ROWS
    prometheus_port: int | None = None
    class_data_sharing: bool = True
    query_server_process: bool = True
    processing_nice: int | None = None

    @staticmethod
    def of(config: Mapping[str, Any]) -> RunnerSettings:
        """The settings of ``config`` (a config dict or ``StreamsConfig``); raises
        ``ConfigException`` for an unknown ``spark.kspark.*`` key or a bad value."""
        keys = config.originals() if hasattr(config, "originals") else dict(config)
        values: dict[str, Any] = {}
        for key, value in keys.items():
            if not key.startswith(PREFIX):
                continue
            setting = _BY_KEY.get(key)
            if setting is None:
                raise ConfigException(_unknown(key))
            if value is not None:
                values[setting.field] = setting.parse(value)
        return RunnerSettings(**values)

    def given(self) -> dict[str, Any]:
        """The settings that differ from their defaults, by key (for ``describe``)."""
        return {s.key: getattr(self, s.field) for s in SETTINGS if getattr(self, s.field) != s.default}


def _unknown(key: str) -> str:
    close = difflib.get_close_matches(key, list(_BY_KEY), n=1, cutoff=0.8)
    if not close:  # the other usual mistake: the case of a letter
        close = [k for k in _BY_KEY if k.lower() == key.lower()]
    hint = f"; did you mean {close[0]}?" if close else ""
    known = ", ".join(sorted(_BY_KEY))
    return f"Unknown kspark setting {key!r}{hint} (known: {known})"
