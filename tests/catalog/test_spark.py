"""Every catalog scenario on the Spark runner over real Kafka, in every configuration that changes
its physical plan, against the micro-batch reference (the rules: tests/catalog/__init__.py).

One test per case (scenario / configuration / partitions). The cases of a configuration run
together, packed into few applications (tests/catalog/spark.py), the first time a test of that
configuration asks (:class:`SparkOutcomes`); each test then compares its own outputs. A case
that does not run is skipped with the reason: the scenario cannot run on Spark, or another
configuration gives it the same physical plan. Known differences are strict xfails (known.py).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from .known import crashes, known_difference, strict
from .scenarios import CATALOG
from .spark import Case, CatalogRunner, Outcome, SparkConfig, all_cases, check, skip_reason

pytestmark = [pytest.mark.integration, pytest.mark.slow]

_log = logging.getLogger(__name__)

CASES = all_cases(CATALOG)


def xfail_param(case: Case, prefix: str = "") -> Any:
    """``case`` as a test parameter, an xfail when known.py lists it."""
    reason = known_difference(case.id)
    marks = [pytest.mark.xfail(strict=strict(case.id), reason=reason)] if reason else []
    return pytest.param(case, id=prefix + case.id, marks=marks)


class SparkOutcomes:
    """Runs a configuration's cases the first time one of them is asked for, then hands them out.
    A case known to fail its application runs in one of its own."""

    def __init__(self, runner: CatalogRunner) -> None:
        self.runner = runner
        self.outcomes: dict[str, Outcome] = {}
        self.done: set[SparkConfig] = set()

    def get(self, case: Case) -> Outcome:
        if case.config not in self.done:
            self.done.add(case.config)
            runnable = [c for c in CASES if c.config == case.config and skip_reason(c) is None]
            started = time.monotonic()
            self.outcomes.update(self.runner.run([c for c in runnable if not crashes(c.id)]))
            for alone in (c for c in runnable if crashes(c.id)):
                self.outcomes.update(self.runner.run([alone]))
            _log.info(
                "catalog on Spark, %s: %d cases in %.0f s (so far per phase: %s; %s)",
                case.config.id,
                len(runnable),
                time.monotonic() - started,
                {k: round(v) for k, v in self.runner.timings.items()},
                self.runner.queries.summary(),
            )
        return self.outcomes[case.id]


@pytest.fixture(scope="module")
def spark_outcomes(catalog_runner: CatalogRunner) -> SparkOutcomes:
    return SparkOutcomes(catalog_runner)


@pytest.mark.parametrize("case", [xfail_param(c) for c in CASES])
def test_same_as_the_micro_batch_reference(case: Case, request: pytest.FixtureRequest) -> None:
    reason = skip_reason(case)
    if reason is not None:
        pytest.skip(reason)
    wrong = check(case, request.getfixturevalue("spark_outcomes").get(case))
    assert wrong is None, wrong
