"""When a Spark streaming query began processing input: the start of its first non-empty batch."""

from __future__ import annotations

from datetime import datetime
from typing import Any

__all__ = ["first_input_ms", "batches", "PROGRESS_RETENTION"]

PROGRESS_RETENTION = {"spark.sql.streaming.numRecentProgressUpdates": "100000"}
"""Session settings for a benchmark app: Spark keeps only the last 100 progress reports by
default, and a run of more micro-batches would report a late batch as its first."""


def _ms(stamp: str) -> int:
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


def first_input_ms(queries: list[Any]) -> int:
    starts = [
        _ms(p["timestamp"]) for q in queries for p in q.recentProgress if int(p.get("numInputRows", 0)) > 0
    ]
    return min(starts) if starts else 0


def batches(queries: list[Any]) -> list[dict[str, Any]]:
    """Per non-empty batch: rows and the duration breakdown Spark reports (for the notes)."""
    return [
        {"query": q.name, "rows": int(p["numInputRows"]), "ms": p.get("durationMs", {})}
        for q in queries
        for p in q.recentProgress
        if int(p.get("numInputRows", 0)) > 0
    ]
