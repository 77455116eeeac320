"""The micro-batch reference (microbatch.py) checked on its own, without Spark.

* With the cache off it equals the per-record driver, one driver per task, per output key,
  whenever the per-record driver computes what Kafka Streams' tasks compute: the input's pipe
  order agrees with its timestamps across topics (a task takes the smallest head timestamp
  first), global-table records come before the stream's, no wall-clock step, and with several
  partitions no repartition topic (one driver per partition cannot send records to the others),
  and no round trip through internal topics (a foreign-key join: see ``has_round_trip``).
* What a scenario declares comparable with several partitions (``spark_compare``) is defined:
  the reference gives it under every interleaving of upstream tasks it tries.
* A scenario with wall-clock steps (not replayed on Spark) either has a ``spark_skip`` or gives
  the same result without them.
"""

from __future__ import annotations

from typing import Any

import pytest

from .compare import difference, project
from .driver import CACHE_OFF, per_task_outputs
from .microbatch import CANONICAL, input_records, interleavings, microbatch_outputs
from .model import Scenario
from .scenarios import CATALOG, conformance
from .spark import CONFIGS, has_repartition, reference_config

_PAIRS = [(s, p) for s in CATALOG for p in s.partitions]
_IDS = [f"{s.name}/p{p}" for s, p in _PAIRS]


def has_round_trip(scenario: Scenario) -> bool:
    """Whether records can flow from a sub-topology through internal topics back into it."""
    builder = scenario.topology().internal_builder
    groups = builder.node_groups()
    reads = {g: {t for n in nodes for t in builder.source_topics_of(n)} for g, nodes in groups.items()}
    writes = {g: {builder.sink_topic_of(n) for n in nodes} - {None} for g, nodes in groups.items()}
    feeds = {g: {h for h in groups if writes[g] & reads[h]} for g in groups}
    for start in groups:
        seen, todo = set(), list(feeds[start])
        while todo:
            g = todo.pop()
            if g == start:
                return True
            if g not in seen:
                seen.add(g)
                todo.extend(feeds[g])
    return False


def per_record_driver_differs(scenario: Scenario, partitions: int) -> str | None:
    """Why one per-record driver per task would not compute what Kafka Streams' tasks compute for
    this input, or None when it does (see the module docstring)."""
    if any("wall" in s for s in scenario.steps):
        return "it has wall-clock steps (the micro-batch reference, as Spark, does not replay them)"
    if has_round_trip(scenario):
        return (
            "a sub-topology reads back what it made another one write (a foreign-key join's "
            "subscriptions and responses): the per-record driver completes each record's round trip "
            "before the next, a micro-batch after the whole batch, and drops the responses that a later "
            "record of the batch made stale (KIP-213)"
        )
    if partitions > 1 and has_repartition(scenario):
        return "several partitions and a repartition topic (one driver per partition cannot repartition)"
    steps = [s for s in scenario.steps if "pipe" in s]
    stream = [i for i, s in enumerate(steps) if s["pipe"] not in scenario.global_topics]
    if any(s["pipe"] in scenario.global_topics for s in steps[stream[0] if stream else len(steps) :]):
        return "global-table records come after stream records (Spark reads global tables first)"
    records = input_records(scenario, partitions, steps)
    for partition in range(partitions):
        mine = [r for r in records if r.partition == partition and r.topic not in scenario.global_topics]
        for i, r in enumerate(mine):
            later = {}
            for other in mine[i + 1 :]:
                later.setdefault(other.topic, other)
            heads = [h for topic, h in later.items() if topic != r.topic]
            if any(h.timestamp <= r.timestamp for h in heads):
                return (
                    f"pipe order disagrees with timestamps across topics in partition {partition} "
                    f"(a task takes the smallest head timestamp first): {r.topic}@{r.timestamp} is piped "
                    f"before {[f'{h.topic}@{h.timestamp}' for h in heads if h.timestamp <= r.timestamp]}"
                )
    return None


def _config(scenario: Scenario, cache: bool) -> dict[str, Any]:
    return reference_config(scenario, next(c for c in CONFIGS if c.cache == cache))


@pytest.mark.parametrize(("scenario", "partitions"), _PAIRS, ids=_IDS)
def test_cache_off_equals_the_per_record_driver(scenario: Scenario, partitions: int) -> None:
    reason = per_record_driver_differs(scenario, partitions)
    if reason is not None:
        pytest.skip(f"the per-record driver is no reference here: {reason}")
    config = {**_config(scenario, cache=False), **CACHE_OFF}
    got = project(microbatch_outputs(scenario, config, partitions), "exact", partitions)
    want = project(per_task_outputs(scenario, config, partitions), "exact", partitions)
    assert got == want, difference(got, want)


_MODE_CASES = [(s, p, cache) for s, p in _PAIRS if not s.spark_skip for cache in (True, False)]


@pytest.mark.parametrize(
    ("scenario", "partitions", "cache"),
    _MODE_CASES,
    ids=[f"{s.name}/p{p}/cache-{'on' if c else 'off'}" for s, p, c in _MODE_CASES],
)
def test_what_is_compared_is_defined(scenario: Scenario, partitions: int, cache: bool) -> None:
    config = _config(scenario, cache)
    mode = "exact" if partitions == 1 else scenario.spark_compare
    canonical = project(microbatch_outputs(scenario, config, partitions), mode, partitions)
    for interleaving in interleavings()[1:]:
        chose: list[bool] = []
        outputs = microbatch_outputs(scenario, config, partitions, interleaving=interleaving, chose=chose)
        other = project(outputs, mode, partitions)
        weaker = "multiset" if mode == "exact" else "final"
        assert other == canonical, (
            f"the result depends on how upstream tasks interleave ({interleaving} against {CANONICAL}, "
            f"compared {mode}): Kafka Streams defines no single result here; declare "
            f"spark_compare={weaker!r} (or weaker) on the scenario\n{difference(other, canonical)}"
        )
        if not chose[0]:
            break  # nothing was left to chance: the other seeds take the same, canonical, way


@pytest.mark.parametrize(
    ("scenario", "partitions", "cache"),
    _MODE_CASES,
    ids=[f"{s.name}/p{p}/cache-{'on' if c else 'off'}" for s, p, c in _MODE_CASES],
)
def test_lines_fused_from_a_source_give_the_engines_results(
    scenario: Scenario, partitions: int, cache: bool
) -> None:
    # The Spark runner's executors run each task's fusable lines from a source as closures
    # (StreamTask.fuse_sources): a stream-table join and the stateless operators around it.
    config = _config(scenario, cache)
    fused: dict[str, list[str]] = {}
    got = project(microbatch_outputs(scenario, config, partitions, fused=fused), "exact", partitions)
    if not any(fused.values()):
        pytest.skip("no task has a fusable line from a source")
    want = project(microbatch_outputs(scenario, config, partitions), "exact", partitions)
    assert got == want, difference(got, want)


_WALL = [s for s in CATALOG if any("wall" in step for step in s.steps) and not s.spark_skip]


@pytest.mark.parametrize("scenario", _WALL, ids=[s.name for s in _WALL])
def test_wall_clock_steps_do_not_change_the_result_of_a_scenario_spark_runs(scenario: Scenario) -> None:
    from kspark.testing import TopologyTestDriver

    from .compare import add
    from .model import serde

    config = {**_config(scenario, cache=False), **CACHE_OFF}
    with_wall: dict[str, Any] = {t: {} for t in scenario.outputs}
    with TopologyTestDriver(scenario.topology(), config, initial_wall_clock_time=0) as driver:
        inputs = {
            t: driver.create_input_topic(t, serde(k), serde(v)) for t, (k, v) in scenario.inputs.items()
        }
        for s in scenario.steps:
            if "wall" in s:
                driver.advance_wall_clock_time(s["wall"])
            else:
                inputs[s["pipe"]].pipe_input(s["key"], s["value"], timestamp=s["ts"])
        for t, (k, v) in scenario.outputs.items():
            for r in driver.create_output_topic(t, serde(k), serde(v)).read_records_to_list():
                add(with_wall, t, r.key, r.value, r.timestamp)
    without = per_task_outputs(scenario, config, 1)
    assert without == with_wall, (
        "the result depends on wall-clock steps, which Spark does not replay: give the scenario a "
        f"spark_skip\n{difference(without, with_wall)}"
    )


@pytest.mark.parametrize("scenario", conformance.SCENARIOS, ids=[s.name for s in conformance.SCENARIOS])
def test_the_conformance_scenarios_exercise_every_output(scenario: Scenario) -> None:
    """A comparison of empty outputs proves nothing: every output topic of the runner conformance
    scenarios gets records from the reference with the cache off, on one partition and several.
    (With the cache on one may stay empty: suppress_until_time_limit's table updates reach the
    suppression only at the commit, all within its time limit.)"""
    for partitions in scenario.partitions:
        outputs = microbatch_outputs(scenario, _config(scenario, False), partitions)
        assert all(outputs.values()), f"p{partitions}: empty outputs {outputs}"
