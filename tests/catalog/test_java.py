"""kspark's TopologyTestDriver against Java Kafka Streams 4.1.1's, scenario by scenario (see __init__)."""

from __future__ import annotations

from typing import Any

import pytest

from .driver import CACHE_OFF, run_on_driver
from .java import run_harness
from .model import Scenario
from .scenarios import CATALOG

pytestmark = [pytest.mark.integration, pytest.mark.slow]

_CACHE = {"cache": {}, "nocache": CACHE_OFF}
_CASES = [(s, c) for s in CATALOG for c in _CACHE]


def _java_json(scenario: Scenario, cache: str) -> dict[str, Any]:
    return {
        **scenario.to_json(),
        "name": f"{scenario.name}/{cache}",
        "config": {**scenario.to_json()["config"], **_CACHE[cache]},
    }


@pytest.fixture(scope="module")
def java_results() -> dict[str, list[dict[str, Any]]]:
    return run_harness([_java_json(s, c) for s, c in _CASES if s.java is not None])


def _split(lines: list[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]], Any]:
    describe = next((x["describe"] for x in lines if "describe" in x), None)
    records = [{k: v for k, v in x.items() if k != "scenario"} for x in lines if "topic" in x]
    dropped = next((x["dropped"] for x in lines if "dropped" in x), None)
    return describe, records, dropped


@pytest.mark.parametrize(("scenario", "cache"), _CASES, ids=[f"{s.name}/{c}" for s, c in _CASES])
def test_same_as_java(scenario: Scenario, cache: str, java_results: dict[str, list[dict[str, Any]]]) -> None:
    if scenario.java is None:
        pytest.skip(f"not expressible on Java Kafka Streams: {scenario.java_skip}")
    java = java_results.get(f"{scenario.name}/{cache}")
    assert java, f"the Java harness printed nothing for {scenario.name}/{cache}"
    errors = [x["error"] for x in java if "error" in x]
    assert not errors, f"the Java harness failed on {scenario.name}/{cache}: {errors}"
    java_describe, java_records, java_dropped = _split(java)
    ours_describe, ours_records, ours_dropped = _split(run_on_driver(scenario, _CACHE[cache]))
    assert ours_describe == java_describe
    assert ours_records == java_records
    assert ours_dropped == java_dropped
