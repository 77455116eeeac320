"""One conformance suite, two runners (Beam's runner-conformance tests are the model).

``ConformanceSuite`` holds the checks; a subclass per runner says how to run
a scenario. The reference (the ``TopologyTestDriver``, one per task) must
exercise every output of every scenario; the Spark runner must reproduce
the reference per output key exactly with caching off, also when the input
is cut into different micro-batches and when the application restarts
mid-stream; with caching on, its final value per key must be the
reference's and each value it emits one the reference emitted.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kspark.dev.kafka import LocalKafka
from kspark.runtime.spark.runner import MAX_OFFSETS_PER_TRIGGER

from . import harness, scenarios
from .harness import PerKey, Scenario, cached_difference, difference, reference_outputs, spark_outputs
from .scenarios import BY_NAME, SCENARIOS

_IDS = [s.name for s in SCENARIOS]


def _config(scenario: Scenario, tmp: Path | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "application.id": f"conf-{scenario.name}-{uuid.uuid4().hex[:6]}",
        "bootstrap.servers": "127.0.0.1:9",  # replaced for Spark runs
        "state.dir": str(tmp or Path("/tmp")),
        "statestore.cache.max.bytes": 0,
        **scenario.config,
        **extra,
    }


class _Identity(dict[str, str]):
    """Logical topic names as the real ones (for building a scenario's topology without topics)."""

    def __missing__(self, key: str) -> str:
        return key


class ConformanceSuite:
    """The checks; subclasses provide ``run(scenario, config) -> PerKey``."""

    def run(self, scenario: Scenario, config: dict[str, Any]) -> PerKey:
        raise NotImplementedError

    @pytest.mark.parametrize("name", _IDS)
    def test_matches_the_reference_with_caching_off(self, name: str, tmp_path: Path) -> None:
        scenario = BY_NAME[name]
        config = _config(scenario, tmp_path)
        expected = reference_outputs(scenario, config)
        # A scenario that emits nothing on some output would make the comparison vacuous.
        assert set(expected) == set(scenario.output_serdes)
        assert all(expected.values())
        got = self.run(scenario, config)
        assert got == expected, difference(got, expected)


class TestReferenceInterpreter(ConformanceSuite):
    def run(self, scenario: Scenario, config: dict[str, Any]) -> PerKey:
        return reference_outputs(scenario, config)


@pytest.mark.integration
@pytest.mark.slow
class TestSparkRunner(ConformanceSuite):
    @pytest.fixture(autouse=True)
    def _spark_parts(self, kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str]) -> None:
        # Spark's workers cannot import test modules: send the scenarios' functions by value.
        cloudpickle = pytest.importorskip("pyspark.cloudpickle")
        for module in (scenarios, harness, sys.modules[__name__]):
            cloudpickle.register_pickle_by_value(module)
        self.kafka, self.spark, self.topic_factory = kafka, spark, topic_factory

    def run(self, scenario: Scenario, config: dict[str, Any], *, runs: int = 1) -> PerKey:
        config = {**config, "bootstrap.servers": self.kafka.bootstrap_servers}
        return spark_outputs(scenario, config, self.kafka, self.spark, self.topic_factory, runs=runs)

    @pytest.mark.parametrize(
        "name", ["count", "suppress_final_counts", "stream_stream_joins", "session_window_count"]
    )
    def test_restart_mid_stream_continues_exactly(self, name: str, tmp_path: Path) -> None:
        scenario = BY_NAME[name]
        config = _config(scenario, tmp_path)
        got, expected = self.run(scenario, config, runs=3), reference_outputs(scenario, config)
        assert got == expected, difference(got, expected)

    @pytest.mark.parametrize(
        "name",
        [
            "count",
            "group_by_repartition",
            "tumbling_window_count",
            "hopping_window_count",
            "table_table_joins",
        ],
    )
    def test_caching_on_keeps_final_values_and_emits_only_reference_values(
        self, name: str, tmp_path: Path
    ) -> None:
        self._check_caching_on(name, tmp_path, runs=1)

    @pytest.mark.parametrize(
        "name", ["count", "group_by_repartition", "tumbling_window_count", "hopping_window_count"]
    )
    def test_native_count_restarts_mid_stream_and_keeps_final_values(self, name: str, tmp_path: Path) -> None:
        from kspark.config import StreamsConfig
        from kspark.runtime.spark.lowering import native_count

        builder = BY_NAME[name].build(_Identity()).internal_builder.set_application_id("app")
        config = StreamsConfig({"application.id": "app", "bootstrap.servers": "x:1"})
        assert any(native_count(builder, nodes, config) for nodes in builder.node_groups().values())
        self._check_caching_on(name, tmp_path, runs=3)

    def _check_caching_on(self, name: str, tmp_path: Path, *, runs: int) -> None:
        scenario = BY_NAME[name]
        config = _config(scenario, tmp_path, **{"statestore.cache.max.bytes": 10 * 1024 * 1024})
        expected = reference_outputs(scenario, config)
        got = self.run(scenario, config, runs=runs)
        wrong = cached_difference(got, expected)
        assert not wrong, wrong

    @settings(
        max_examples=3,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(
        batch=st.integers(min_value=1, max_value=9),
        name=st.sampled_from(["tumbling_window_count", "suppress_final_counts"]),
    )
    def test_results_do_not_depend_on_micro_batch_cuts(self, batch: int, name: str, tmp_path: Path) -> None:
        scenario = BY_NAME[name]
        config = _config(scenario, tmp_path / uuid.uuid4().hex, **{MAX_OFFSETS_PER_TRIGGER: batch})
        got, expected = self.run(scenario, config), reference_outputs(scenario, config)
        assert got == expected, difference(got, expected)
