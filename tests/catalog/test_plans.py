"""The plan the Spark runner chooses for each catalog scenario and configuration is the reviewed one
in ``plans.txt``: a lost optimisation fails here (regenerate: see :mod:`tests.catalog.plans`)."""

from __future__ import annotations

import difflib

import pytest

from .plans import GOLDEN, plans_text


def test_plans_are_the_reviewed_ones() -> None:
    pytest.importorskip("kspark.runtime.spark.plan")
    got = plans_text()
    want = GOLDEN.read_text() if GOLDEN.exists() else ""
    diff = "".join(
        difflib.unified_diff(want.splitlines(True), got.splitlines(True), "plans.txt (reviewed)", "plans now")
    )
    assert got == want, (
        "the Spark plans differ from the reviewed ones; if the change is deliberate, run "
        f"`.venv/bin/python -m tests.catalog.plans --write` and review the diff:\n{diff}"
    )


def test_every_known_difference_names_cases_that_exist() -> None:
    """A pattern in known.py that matches no case is stale (a renamed scenario, a fixed cause)."""
    from fnmatch import fnmatchcase

    from .known import BY_CHANCE, CRASHES, KNOWN
    from .scenarios import CATALOG
    from .spark import all_cases

    ids = [c.id for c in all_cases(CATALOG)]
    stale = [p for p in [*KNOWN, *BY_CHANCE, *CRASHES] if not any(fnmatchcase(i, p) for i in ids)]
    assert not stale, f"known.py patterns that match no case: {stale}"
