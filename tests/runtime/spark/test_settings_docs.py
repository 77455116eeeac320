"""docs/spark-runner.md's settings table says what kspark/runtime/spark/settings.py defines."""

from __future__ import annotations

import re
from pathlib import Path

from kspark.runtime.spark.settings import SETTINGS

DOC = Path(__file__).resolve().parents[3] / "docs" / "spark-runner.md"


def _rows() -> dict[str, tuple[str, str]]:
    """setting -> (type, default) as the table has them."""
    rows = {}
    for line in DOC.read_text().splitlines():
        m = re.match(r"\| `(spark\.kspark\.[A-Za-z]+)` \| ([^|]+) \| ([^|]+) \|", line)
        if m:
            rows[m.group(1)] = (m.group(2).strip(), m.group(3).strip().strip("`"))
    return rows


def _default(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:,}" if isinstance(value, int) else str(value)


def test_the_table_lists_every_setting_with_its_type_and_default() -> None:
    assert _rows() == {s.key: (s.type, _default(s.default)) for s in SETTINGS}
