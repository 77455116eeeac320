"""The physical plan the Spark runner chooses for every catalog scenario in every configuration,
as text, and the reviewed copy of it in ``plans.txt`` (checked by ``test_plans.py``).

A lost optimisation (a count no longer lowered, a chain no longer fused, a direct read no
longer taken) changes this text and fails the test. After a deliberate change, regenerate and
review the diff::

    .venv/bin/python -m tests.catalog.plans --write
"""

from __future__ import annotations

import sys
from pathlib import Path

from .scenarios import CATALOG
from .spark import CONFIGS, plan_summary

__all__ = ["GOLDEN", "plans_text", "main"]

GOLDEN = Path(__file__).with_name("plans.txt")

HEADER = """\
# The Spark runner's physical plan of every catalog scenario, per configuration: for each
# sub-topology the stage it runs in (and ", fused" when it runs as a fused chain), from
# kspark.runtime.spark.plan.physical_plan(...).summary(). Reviewed expectations: checked by
# tests/catalog/test_plans.py. After a deliberate change, regenerate and review the diff:
#     .venv/bin/python -m tests.catalog.plans --write
"""


def plans_text() -> str:
    """Every scenario's plan in every configuration (a scenario that cannot run on Spark included:
    its plan is still the runner's choice)."""
    lines = [HEADER]
    for scenario in sorted(CATALOG, key=lambda s: s.name):
        lines.append(scenario.name)
        for config in CONFIGS:
            summary = plan_summary(scenario, config)
            if summary is None:
                raise RuntimeError("the runner has no typed physical plan (kspark/runtime/spark/plan.py)")
            lines.append(f"  {config.id:30} {'; '.join(summary.splitlines())}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print(__doc__)
        return 2
    GOLDEN.write_text(plans_text())
    print(f"wrote {GOLDEN}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
