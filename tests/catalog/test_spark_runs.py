"""What the old conformance suite checked beyond one run per case: a restart mid-stream continues
exactly, results do not depend on the micro-batch cuts, and the catalog passes on a multi-process
cluster. Compared as test_spark.py compares (tests/catalog/__init__.py)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kspark.dev.kafka import LocalKafka

from .local_cluster import RESTARTED as RESTARTED_PREFIX
from .local_cluster import RESTARTS
from .scenarios import BY_NAME, conformance
from .spark import (
    CONFIGS,
    DEFAULT,
    MAX_OFFSETS_PER_TRIGGER,
    Case,
    CatalogRunner,
    Outcome,
    all_cases,
    check,
    plan_summary,
    skip_reason,
)
from .test_spark import xfail_param

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
CACHE_OFF = next(c for c in CONFIGS if not c.cache and c.native and c.direct)

# ----------------------------------------------------------------------------- restarts

NEWER = (
    # Kafka Streams 4.x operations: restarted, and on a cluster too
    "ptv_counting_store",  # a transform_values store
    "ppv_process_values_store",  # a process_values store
    "pcg_repartition_store",  # a cogroup store behind repartition topics
    "pcg_session",  # a session-windowed cogroup
    "pfk_churn_cached_left",  # a foreign-key join's subscription store, round trips between tasks
    "pv_papi_store",  # every version of a versioned store, read as of older timestamps
    "pv_st_join_grace",  # a versioned table and the grace buffer of a stream-table join
    "pst_read_only_store",  # a read-only store (KIP-813): kept in the task's state, no changelog topic
)
RESTARTED = (
    "count",  # with the cache on: a native count
    "group_by_repartition",
    "tumbling_window_count",  # with the cache on: a native windowed count
    "hopping_window_count",
    "suppress_final_counts",
    "stream_stream_joins",
    "session_window_count",
    *NEWER,
)
RESTART_CASES = [
    Case(BY_NAME[n], c, max(BY_NAME[n].partitions)) for c in (DEFAULT, CACHE_OFF) for n in RESTARTED
]


@pytest.fixture(scope="module")
def restarted(catalog_runner: CatalogRunner) -> dict[str, Outcome]:
    """Each case's outputs after its inputs came in three slices, the application restarted after each."""
    return catalog_runner.run(RESTART_CASES, restarts=RESTARTS)


def test_the_restarted_cases_include_native_counts_with_the_cache_on() -> None:
    count = plan_summary(BY_NAME["count"], DEFAULT)
    windowed = plan_summary(BY_NAME["tumbling_window_count"], DEFAULT)
    if count is None or windowed is None:
        pytest.skip("the runner has no typed physical plan yet")
    assert "native count" in count
    assert "native windowed count" in windowed


@pytest.mark.parametrize("case", [xfail_param(c, "restarted/") for c in RESTART_CASES])
def test_a_restart_mid_stream_continues_exactly(case: Case, restarted: dict[str, Outcome]) -> None:
    wrong = check(case, restarted[case.id], restarts=RESTARTS)
    assert wrong is None, wrong


# ----------------------------------------------------------------------------- micro-batch cuts

CUT = (
    "tumbling_window_count",
    "suppress_final_counts",
    "stream_table_joins",
    "stateless_chain",
    "ptv_counting_store",
    "pcg_two_shared",
    "pv_papi_store",
)


@settings(
    max_examples=3,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(batch=st.integers(min_value=1, max_value=9))
def test_results_do_not_depend_on_micro_batch_cuts(batch: int, catalog_runner: CatalogRunner) -> None:
    """With the cache off every update is forwarded, so however ``maxOffsetsPerTrigger`` cuts the
    input into micro-batches the outputs are the reference's."""
    cases = [Case(BY_NAME[n], CACHE_OFF, max(BY_NAME[n].partitions)) for n in CUT]
    outcomes = catalog_runner.run(cases, extra_config={MAX_OFFSETS_PER_TRIGGER: batch})
    wrong = {c.id: w for c in cases if (w := check(c, outcomes[c.id])) is not None}
    assert not wrong, f"{MAX_OFFSETS_PER_TRIGGER}={batch}:\n" + "\n".join(
        f"{k}: {v}" for k, v in wrong.items()
    )


# ----------------------------------------------------------------------------- a multi-process cluster

# The runner conformance scenarios (every kind of operation, over longer and messier inputs than
# the rest): what this run checks is the runner's processes (nothing may rely on the driver's
# memory or on one process), not each scenario's semantics again, and a local cluster costs CI
# about 2 s per case.
CLUSTER_CASES = [
    c
    for c in all_cases([*conformance.SCENARIOS, *(BY_NAME[n] for n in NEWER)], [DEFAULT])
    if c.partitions == max(c.scenario.partitions)
]
CLUSTER_RESTARTED = [
    c
    for c in RESTART_CASES
    if c.config == DEFAULT and "native" in (plan_summary(c.scenario, DEFAULT) or "native")
]


@pytest.fixture(scope="module")
def on_a_cluster(kafka: LocalKafka, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every runnable default-configuration case, run by ``local_cluster.py`` in a process of its own."""
    tmp = tmp_path_factory.mktemp("catalog-cluster")
    out = tmp / "outcomes.pickle"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    ids = [c.id for c in CLUSTER_CASES if skip_reason(c) is None]
    ids += [RESTARTED_PREFIX + c.id for c in CLUSTER_RESTARTED]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.catalog.local_cluster",
            kafka.bootstrap_servers,
            str(tmp),
            str(out),
            *ids,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if proc.returncode != 0 or not out.exists():
        return {
            "error": f"local_cluster.py exited {proc.returncode}:\n{proc.stdout[-2000:]}{proc.stderr[-4000:]}"
        }
    return {"outcomes": pickle.loads(out.read_bytes())}


@pytest.mark.parametrize("case", [xfail_param(c, "cluster/") for c in CLUSTER_CASES])
def test_the_catalog_passes_on_a_multi_process_cluster(case: Case, on_a_cluster: dict[str, Any]) -> None:
    reason = skip_reason(case)
    if reason is not None:
        pytest.skip(reason)
    if "error" in on_a_cluster:
        pytest.fail(on_a_cluster["error"])
    outcome = Outcome(**on_a_cluster["outcomes"][case.id])
    wrong = check(case, outcome)
    assert wrong is None, wrong


@pytest.mark.parametrize("case", [xfail_param(c, "cluster/restarted/") for c in CLUSTER_RESTARTED])
def test_native_counts_restart_on_a_multi_process_cluster(case: Case, on_a_cluster: dict[str, Any]) -> None:
    if "error" in on_a_cluster:
        pytest.fail(on_a_cluster["error"])
    outcome = Outcome(**on_a_cluster["outcomes"][RESTARTED_PREFIX + case.id])
    wrong = check(case, outcome, restarts=RESTARTS)
    assert wrong is None, wrong


# ----------------------------------------------------------------------------- many sub-topologies


def test_an_application_of_a_hundred_independent_sub_topologies_runs(
    catalog_runner: CatalogRunner, kafka: LocalKafka, spark: Any, tmp_path: Path
) -> None:
    """The runner shares a query among sub-topologies of the same stage and level; its name, and its
    checkpoint directory's, stays short however many share it (a file name holds 255 bytes)."""
    from kspark import Consumed, KafkaStreams, Produced, StreamsBuilder
    from kspark.serde import Serdes

    s = Serdes.String()

    tag = uuid.uuid4().hex[:6]
    inputs = [f"many-{tag}-in-{i}" for i in range(100)]
    catalog_runner.create_topics({t: 1 for t in [*inputs, f"many-{tag}-out"]})
    builder = StreamsBuilder()
    for topic in inputs:
        builder.stream(topic, Consumed.with_(s, s)).filter(lambda k, v: v is not None).to(
            f"many-{tag}-out", Produced.with_(s, s)
        )
    config = {
        "application.id": f"many-{tag}",
        "bootstrap.servers": kafka.bootstrap_servers,
        "state.dir": str(tmp_path),
    }
    some = (0, 57, 99)  # a Spark task per input partition with records: a few keep the test quick
    for i in some:
        kafka.produce(inputs[i], [(b"k", str(i).encode(), 1_000 + i)])
    app = KafkaStreams(builder.build(), config, spark=spark)
    try:
        (query,) = app.physical_plan().queries
        assert len(query.subtopologies) == 100 and len(query.checkpoint) < 100, query.checkpoint
        app.process_available()
    finally:
        app.close()
    assert sorted(int(r.value) for r in kafka.consume_all(f"many-{tag}-out")) == list(some)
