"""A catalog scenario on kspark's TopologyTestDriver, as the Java harness reports it.

:func:`run_on_driver` prints what ``jvm/reference-harness`` prints for the
same scenario on Java Kafka Streams' driver: the ``describe()`` text, every
output record read after each step (topic, key, value, timestamp, step), and
the dropped-records total, so the two compare line for line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kspark.kstream.windowed import Windowed
from kspark.processor.internals.partitioning import default_partition
from kspark.testing import TopologyTestDriver

from .model import Scenario, serde

if TYPE_CHECKING:
    from .compare import PerKey

__all__ = ["run_on_driver", "per_task_outputs", "driver_config", "render", "CACHE_OFF"]

CACHE_OFF: Mapping[str, str] = {"statestore.cache.max.bytes": "0"}
"""The config that turns the record cache off (Java's scenarios run with and without it)."""


def render(x: Any) -> Any:
    """A key or value as both harnesses print it (a windowed key as ``key@start/end``)."""
    if isinstance(x, Windowed):
        return f"{x.key}@{x.window.start}/{x.window.end}"
    return x


def driver_config(scenario: Scenario, extra: Mapping[str, str | int] | None = None) -> dict[str, Any]:
    """The config both drivers run ``scenario`` with (digit strings as ints on the kspark side)."""
    config: dict[str, Any] = {
        "application.id": "ref",
        "bootstrap.servers": "dummy:1234",
        "default.key.serde": "string",
        "default.value.serde": "string",
    }
    for key, value in {**scenario.config, **(extra or {})}.items():
        config[key] = int(value) if isinstance(value, str) and value.isdigit() else value
    return config


def run_on_driver(scenario: Scenario, extra: Mapping[str, str | int] | None = None) -> list[dict[str, Any]]:
    """The scenario's describe() text, output records after each step, and dropped-records total."""
    name = scenario.name
    topology = scenario.topology()
    lines: list[dict[str, Any]] = [{"scenario": name, "describe": str(topology.describe())}]
    with TopologyTestDriver(topology, driver_config(scenario, extra), initial_wall_clock_time=0) as driver:
        inputs = {
            topic: driver.create_input_topic(topic, serde(k), serde(v))
            for topic, (k, v) in scenario.inputs.items()
        }
        outputs = {
            topic: driver.create_output_topic(topic, serde(k), serde(v))
            for topic, (k, v) in scenario.outputs.items()
        }
        for step, s in enumerate(scenario.steps):
            if "wall" in s:
                driver.advance_wall_clock_time(s["wall"])
            else:
                inputs[s["pipe"]].pipe_input(s["key"], s["value"], timestamp=s["ts"])
            for topic, out in outputs.items():
                for r in out.read_records_to_list():
                    lines.append(
                        {
                            "scenario": name,
                            "step": step,
                            "topic": topic,
                            "key": render(r.key),
                            "value": render(r.value),
                            "timestamp": r.timestamp,
                        }
                    )
        lines.append({"scenario": name, "dropped": float(driver.dropped_records_total())})
    return lines


def per_task_outputs(
    scenario: Scenario, config: Mapping[str, Any], partitions: int, shift: int = 0
) -> PerKey:
    """The scenario's outputs on the per-record driver, one driver per task (input partition) as a
    Kafka Streams application over ``partitions`` partitions computes them when its tasks are
    independent (no repartition topic): each driver gets its partition's records (a null key's go
    to partition 0, as the Spark harness writes them) in pipe order, global topics whole.
    Wall-clock steps are skipped, as on Spark."""
    from .compare import add

    out: PerKey = {topic: {} for topic in scenario.outputs}
    for partition in range(partitions):
        with TopologyTestDriver(scenario.topology(), dict(config), initial_wall_clock_time=0) as driver:
            inputs = {
                topic: driver.create_input_topic(topic, serde(k), serde(v))
                for topic, (k, v) in scenario.inputs.items()
            }
            for s in scenario.steps:
                if "pipe" not in s:
                    continue
                key_kind = scenario.inputs[s["pipe"]][0]
                key = serde(key_kind).serializer().serialize(s["pipe"], s["key"])
                mine = 0 if key is None else default_partition(key, partitions)
                if mine == partition or s["pipe"] in scenario.global_topics:
                    inputs[s["pipe"]].pipe_input(s["key"], s["value"], timestamp=s["ts"] + shift)
            for topic, (k, v) in scenario.outputs.items():
                for r in driver.create_output_topic(topic, serde(k), serde(v)).read_records_to_list():
                    add(out, topic, r.key, r.value, r.timestamp)
    return out
