"""Random small topologies and inputs: the driver never fails on them, and Spark gives its results.

Hypothesis draws a *recipe*: up to three stateless DSL operations (filters,
value mappers, a flat-map, a key change), then an ending (a sink, a count, a
reduce, a tumbling windowed count with grace), and up to 25 records with keys
from a small set or null, values short strings or null, timestamps out of
order and late. A recipe is a catalog :class:`~tests.catalog.model.Scenario`,
so it runs where the catalog's scenarios run:

* on kspark's TopologyTestDriver (many recipes): a well-formed topology with
  any input processes every record without an error (records the DSL drops,
  null keys into an aggregation, late records, are dropped and counted, as in
  Kafka Streams);
* on the Spark runner (a few applications of several recipes each, in a
  configuration hypothesis picks): the outputs equal the micro-batch
  reference's, as for every catalog case (tests/catalog/__init__.py).

CI runs the same recipes every time (``derandomize``: a failure is
reproducible). To explore, ``KSPARK_FUZZ_EXPLORE=1`` draws new ones and
``KSPARK_FUZZ_EXAMPLES=N`` runs N Spark applications instead of 5.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kspark import Consumed, Produced, StreamsBuilder, TimeWindows
from kspark.serde import Serdes

from .driver import run_on_driver
from .model import P, Scenario, Topics
from .spark import CONFIGS, Case, CatalogRunner, check, register_by_value

S, L = Serdes.String(), Serdes.Long()
WINDOW = 10_000
TW_KIND = (f"window:{WINDOW}:string", "long")


# Operations by name: plain module functions, so Spark's workers get them by value. Each takes
# null values, as any function over a stream must.
def _keep_even_length(_key: Any, value: str | None) -> bool:
    return value is None or len(value) % 2 == 0


def _keep_without_x(_key: Any, value: str | None) -> bool:
    return value is None or "x" not in value


def _upper(value: str | None) -> str | None:
    return None if value is None else value.upper()


def _tag(value: str | None) -> str | None:
    return None if value is None else value + "!"


def _split(value: str | None) -> list[str | None]:
    return [None] if value is None else [part for part in value.split("-") if part]


def _key_from_value(key: str | None, value: str | None) -> str | None:
    return value[:1] if value else key


def _merge(a: str, b: str) -> str:
    """The sorted union of comma-separated parts: commutative and associative, so a key's final
    value does not depend on the order its records arrive in (from several upstream tasks, a
    repartition topic interleaves them in no defined order)."""
    return ",".join(sorted([*a.split(","), *b.split(",")]))


OPERATIONS = ("filter_even", "filter_x", "upper", "tag", "split", "select_key")
ENDINGS = ("to", "count", "reduce", "windowed_count")
KEYS = ("a", "b", "c", "d", None)


def _apply(stream: Any, operation: str) -> Any:
    if operation == "filter_even":
        return stream.filter(_keep_even_length)
    if operation == "filter_x":
        return stream.filter_not(lambda k, v: not _keep_without_x(k, v))
    if operation == "upper":
        return stream.map_values(_upper)
    if operation == "tag":
        return stream.map_values(_tag)
    if operation == "split":
        return stream.flat_map_values(_split)
    if operation == "select_key":
        return stream.select_key(_key_from_value)
    raise AssertionError(operation)


def _builder(operations: tuple[str, ...], ending: str) -> Callable[[StreamsBuilder, Topics], None]:
    def build(b: StreamsBuilder, t: Topics) -> None:
        stream = b.stream(t["in"], Consumed.with_(S, S))
        for operation in operations:
            stream = _apply(stream, operation)
        if ending == "to":
            stream.to(t["out"], Produced.with_(S, S))
        elif ending == "count":
            stream.group_by_key().count().to_stream().to(t["out"], Produced.with_(S, L))
        elif ending == "reduce":
            stream.group_by_key().reduce(_merge).to_stream().to(t["out"], Produced.with_(S, S))
        else:
            windows = TimeWindows(size=WINDOW, grace=3_000)
            counts = stream.group_by_key().windowed_by(windows).count()
            counts.to_stream().to(t["out"], Produced.with_(Serdes.time_windowed(S, WINDOW), L))

    return build


Record = tuple[str | None, str | None, int]

RECIPES = st.tuples(
    st.lists(st.sampled_from(OPERATIONS), max_size=3).map(tuple),
    st.sampled_from(ENDINGS),
    st.lists(
        st.tuples(
            st.sampled_from(KEYS),
            st.one_of(st.none(), st.text(alphabet="ab-x", max_size=5)),
            st.integers(min_value=-4_000, max_value=6_000),  # timestamp step: out of order, late
        ),
        min_size=1,
        max_size=25,
    ),
)


def scenario(recipe: tuple[tuple[str, ...], str, list[Record]]) -> Scenario:
    """The catalog scenario of a recipe (named by its content, so equal recipes share a name)."""
    operations, ending, records = recipe
    ts, steps = 1_000_000, []
    for key, value, step in records:
        ts = max(1, ts + step)
        steps.append(P("in", key, value, ts))
    aggregates = ending != "to"
    rekeyed = "select_key" in operations
    null_keys = any(key is None for key, _, _ in records)
    # With two partitions, what Kafka Streams defines: per key in one task, exact; records a
    # key change moves between tasks, in any order; an order-insensitive aggregate over them, its
    # final value. A windowed count over them is not one: which records come too late depends on
    # how the repartition topic interleaves the tasks' records, so it runs on one partition.
    compare = (
        "final"
        if aggregates and rekeyed
        else "multiset"
        if rekeyed or (null_keys and not aggregates)
        else "exact"
    )
    partitions = (1,) if rekeyed and ending == "windowed_count" else (1, 2)
    digest = hashlib.sha1(json.dumps(recipe).encode()).hexdigest()[:10]
    out = {"to": ("string", "string"), "count": ("string", "long"), "reduce": ("string", "string")}
    return Scenario(
        name=f"fuzz-{ending}-{digest}",
        build=_builder(operations, ending),
        inputs={"in": ("string", "string")},
        outputs={"out": out.get(ending, TW_KIND)},
        steps=steps,
        java_skip="generated by hypothesis (tests/catalog/test_fuzz.py)",
        spark_compare=compare,
        partitions=partitions,
        doc=f"{' -> '.join(operations) or 'source'} -> {ending}",
    )


@settings(max_examples=300, deadline=None, derandomize=True)
@given(RECIPES)
def test_the_driver_processes_any_generated_topology_and_input(
    recipe: tuple[tuple[str, ...], str, list[Record]],
) -> None:
    lines = run_on_driver(scenario(recipe))
    assert lines[0]["describe"].startswith("Topologies")
    assert "dropped" in lines[-1]


@pytest.mark.integration
@pytest.mark.slow
@settings(
    max_examples=int(os.environ.get("KSPARK_FUZZ_EXAMPLES", "5")),
    deadline=None,
    derandomize="KSPARK_FUZZ_EXPLORE" not in os.environ,
    # Each example is a Spark application (~5-10 s): a failure is reported as found, not shrunk.
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    recipes=st.lists(RECIPES, min_size=8, max_size=8),
    config=st.sampled_from(CONFIGS),
    partitions=st.sampled_from((1, 2)),
)
def test_the_spark_runner_gives_the_references_results_for_generated_topologies(
    recipes: list[tuple[tuple[str, ...], str, list[Record]]],
    config: Any,
    partitions: int,
    catalog_runner: CatalogRunner,
) -> None:
    register_by_value()
    scenarios = {s.name: s for s in map(scenario, recipes)}  # equal recipes once
    cases = [Case(s, config, min(partitions, max(s.partitions))) for s in scenarios.values()]
    outcomes = catalog_runner.run(cases)
    wrong = {c.id: w for c in cases if (w := check(c, outcomes[c.id])) is not None}
    assert not wrong, "\n".join(f"{k} ({scenarios[k.split('/')[0]].doc}): {v}" for k, v in wrong.items())
