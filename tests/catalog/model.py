"""The catalog's data model: a scenario is a topology, its serdes and its input steps, written once.

A :class:`Scenario` names

* ``build``: the kspark topology, written against a :class:`Topics` map
  (logical topic name -> the real one), so the same scenario runs on the
  TopologyTestDriver (logical names) and on Spark over a shared broker
  (unique names). A DSL scenario adds to a ``StreamsBuilder`` it is given; a
  Processor API scenario (``papi=True``) adds to a ``Topology``. Either way
  several scenarios can be built into one application (:func:`combined`),
  which is how the Spark runs stay within CI's budget.
* ``java``: the name of the same topology in
  ``jvm/reference-harness/src/main/java/io/kspark/reference/`` (written call
  for call, so Kafka's generated names agree), or ``None`` with the reason in
  ``java_skip``.
* ``inputs`` / ``outputs``: per logical topic, the (key, value) serde kinds
  (:func:`serde`), understood by both sides.
* ``steps``: records piped in order (:func:`P`) and advances of the driver's
  wall clock (:func:`W`), JSON-serialisable so that the Java harness runs
  exactly the same records.

Everything that decides how and where a scenario runs on Spark (partition
counts, what is compared with several partitions, why it cannot run) is a
field here too, so the scenario says it once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kspark import StreamsBuilder, Topology
from kspark.serde import Serdes

__all__ = [
    "Scenario",
    "COMPARE_MODES",
    "Topics",
    "IDENTITY",
    "P",
    "W",
    "Step",
    "serde",
    "standalone",
    "combined",
    "names_used",
]

COMPARE_MODES = ("exact", "multiset", "final")
"""What a Spark run is compared on, per output topic and key: the whole (value, timestamp)
sequence; its pairs in any order; the last pair (a tombstone counting as absent)."""

Step = dict[str, Any]
"""``{"pipe": topic, "key": k, "value": v, "ts": ms}`` or ``{"wall": ms}``."""


def P(topic: str, key: Any, value: Any, ts: int) -> Step:
    """Pipe one record into ``topic`` (logical name) with timestamp ``ts``."""
    return {"pipe": topic, "key": key, "value": value, "ts": ts}


def W(ms: int) -> Step:
    """Advance the driver's wall clock by ``ms`` (fires wall-clock punctuations)."""
    return {"wall": ms}


class Topics(dict[str, str]):
    """Logical topic name -> real topic name; a name not mapped is its own real name."""

    def __missing__(self, key: str) -> str:
        return key


IDENTITY = Topics()


def serde(kind: str) -> Any:
    """The kspark serde of a serde kind: ``string``, ``long``, ``json``, ``window:<size>:string``,
    ``session:string`` (the Java harness knows the same kinds)."""
    if kind == "string":
        return Serdes.String()
    if kind == "long":
        return Serdes.Long()
    if kind == "json":
        return Serdes.JSON()
    if kind == "session:string":
        return Serdes.session_windowed(Serdes.String())
    if kind.startswith("window:"):
        _, size, inner = kind.split(":")
        if inner != "string":
            raise ValueError(f"unknown windowed inner kind in {kind!r}")
        return Serdes.time_windowed(Serdes.String(), int(size))
    raise ValueError(f"unknown serde kind {kind!r}")


Build = Callable[[Any, Topics], None]
"""``build(builder_or_topology, topics)``: adds the scenario's operations (see :class:`Scenario`)."""


@dataclass(frozen=True)
class Scenario:
    """One catalog scenario; see the module docstring."""

    name: str
    build: Build
    inputs: Mapping[str, tuple[str, str]]
    outputs: Mapping[str, tuple[str, str]]
    steps: Sequence[Step]
    java: str | None = None
    java_skip: str | None = None  # why Java cannot run it (required when java is None)
    papi: bool = False  # build adds to a Topology (Processor API) instead of a StreamsBuilder
    config: Mapping[str, str | int] = field(default_factory=dict)
    doc: str = ""  # what it checks; a ported scenario names its Kafka Streams test (class.method)
    # Spark: why the scenario cannot run there (None: it runs), the partition counts it runs
    # with, and the topics read whole by every task (GlobalKTable / global store topics).
    spark_skip: str | None = None
    partitions: tuple[int, ...] = (1, 2)
    global_topics: frozenset[str] = frozenset()
    # Spark, several partitions: what is defined where Kafka Streams gives no order across
    # upstream tasks (a repartition topic or an output key fed by several tasks; records with a
    # null key, placed at random): one of COMPARE_MODES (tests/catalog/__init__.py states them).
    spark_compare: str = "exact"

    def __post_init__(self) -> None:
        if self.spark_compare not in COMPARE_MODES:
            raise ValueError(f"scenario {self.name}: spark_compare must be one of {COMPARE_MODES}")
        if self.java is None and not self.java_skip:
            raise ValueError(f"scenario {self.name}: no Java topology and no reason (java_skip)")
        unknown = {s["pipe"] for s in self.steps if "pipe" in s} - set(self.inputs)
        if unknown:
            raise ValueError(f"scenario {self.name}: steps pipe into undeclared topics {sorted(unknown)}")

    def topology(self, topics: Topics = IDENTITY) -> Topology:
        """The scenario's own topology (generated names numbered as Java numbers them)."""
        return standalone(self, topics)

    def to_json(self) -> dict[str, Any]:
        """What the Java harness reads (tests/catalog/java.py)."""
        return {
            "name": self.name,
            "topology": self.java,
            "inputs": {k: list(v) for k, v in self.inputs.items()},
            "outputs": {k: list(v) for k, v in self.outputs.items()},
            "steps": list(self.steps),
            "config": {k: str(v) for k, v in self.config.items()},
        }


def standalone(scenario: Scenario, topics: Topics = IDENTITY) -> Topology:
    """``scenario`` built on its own."""
    return combined([(scenario, topics)])


def combined(parts: Iterable[tuple[Scenario, Topics]]) -> Topology:
    """Several scenarios built into one topology: the DSL ones into one ``StreamsBuilder`` (their
    generated names then never collide), then the Processor API ones into its ``Topology``.
    Names a scenario chooses itself must not collide (:func:`names_used`)."""
    parts = list(parts)
    builder = StreamsBuilder()
    for scenario, topics in parts:
        if not scenario.papi:
            scenario.build(builder, topics)
    topology = builder.build()
    for scenario, topics in parts:
        if scenario.papi:
            scenario.build(topology, topics)
    return topology


# "-STATE-STORE-": a source table's generated store is named after its topic, so it is unique
# in an application whose scenarios have topics of their own
_GENERATED = ("KSTREAM-", "KTABLE-", "KSTREAM_", "KTABLE_", "-STATE-STORE-")


def names_used(scenario: Scenario) -> frozenset[str]:
    """The node, store and internal-topic names a scenario chooses itself (not generated ones):
    two scenarios whose sets intersect cannot share an application."""
    builder = scenario.topology().internal_builder
    names: set[str] = set(builder.node_names())
    names.update(builder.state_store_names())
    names.update(builder.global_store_names())
    names.update(builder.internal_topics())
    return frozenset(n for n in names if not any(g in n for g in _GENERATED))
