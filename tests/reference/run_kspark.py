"""Run a reference scenario on kspark's TopologyTestDriver, producing the Java harness's JSON lines."""

from __future__ import annotations

from typing import Any

from kspark.kstream.windowed import Windowed
from kspark.serde import Serdes
from kspark.testing import TopologyTestDriver
from tests.reference.scenarios import TOPOLOGIES, Scenario

__all__ = ["run_kspark"]


def _serde(kind: str) -> Any:
    if kind == "string":
        return Serdes.String()
    if kind == "long":
        return Serdes.Long()
    if kind == "session:string":
        return Serdes.session_windowed(Serdes.String())
    if kind.startswith("window:"):
        return Serdes.time_windowed(Serdes.String(), int(kind.split(":")[1]))
    raise ValueError(f"unknown serde kind {kind!r}")


def _render(x: Any) -> Any:
    if isinstance(x, Windowed):
        return f"{x.key}@{x.window.start}/{x.window.end}"
    return x


def _config(scenario: Scenario) -> dict[str, Any]:
    config: dict[str, Any] = {
        "application.id": "ref",
        "bootstrap.servers": "dummy:1234",
        "default.key.serde": "string",
        "default.value.serde": "string",
    }
    for key, value in scenario.config.items():
        config[key] = int(value) if value.isdigit() else value
    return config


def run_kspark(scenario: Scenario) -> list[dict[str, Any]]:
    """The scenario's describe() text, output records after each step, and dropped-records total."""
    name = scenario.name
    topology = TOPOLOGIES[scenario.topology]()
    lines: list[dict[str, Any]] = [{"scenario": name, "describe": str(topology.describe())}]
    with TopologyTestDriver(topology, _config(scenario), initial_wall_clock_time=0) as driver:
        inputs = {
            topic: driver.create_input_topic(topic, _serde(k), _serde(v))
            for topic, (k, v) in scenario.inputs.items()
        }
        outputs = {
            topic: driver.create_output_topic(topic, _serde(k), _serde(v))
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
                            "key": _render(r.key),
                            "value": _render(r.value),
                            "timestamp": r.timestamp,
                        }
                    )
        lines.append({"scenario": name, "dropped": float(driver.dropped_records_total())})
    return lines
