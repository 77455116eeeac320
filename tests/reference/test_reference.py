"""kspark's TopologyTestDriver against Java Kafka Streams 4.1.1's, scenario by scenario.

Both run the scenarios of :mod:`tests.reference.scenarios` (the Java side in
``jvm/reference-harness``, all scenarios in one JVM); for each we compare the
``describe()`` text, every output record (topic, key, value, timestamp, and
the input step after which it was read, so order and emission time count),
and the dropped-records total.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.reference.harness import run_harness
from tests.reference.run_kspark import run_kspark
from tests.reference.scenarios import SCENARIOS, Scenario

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def java_results() -> dict[str, list[dict[str, Any]]]:
    return run_harness([s.to_json() for s in SCENARIOS])


def _split(lines: list[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]], Any]:
    describe = next((x["describe"] for x in lines if "describe" in x), None)
    records = [x for x in lines if "topic" in x]
    dropped = next((x["dropped"] for x in lines if "dropped" in x), None)
    return describe, records, dropped


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_same_as_java(scenario: Scenario, java_results: dict[str, list[dict[str, Any]]]) -> None:
    java = java_results.get(scenario.name)
    assert java, f"the Java harness printed nothing for {scenario.name}"
    errors = [x["error"] for x in java if "error" in x]
    assert not errors, f"the Java harness failed on {scenario.name}: {errors}"
    java_describe, java_records, java_dropped = _split(java)
    ours_describe, ours_records, ours_dropped = _split(run_kspark(scenario))
    assert ours_describe == java_describe
    assert ours_records == java_records
    assert ours_dropped == java_dropped
