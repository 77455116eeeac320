"""bench.batch_floor's summary of Spark's progress reports."""

from __future__ import annotations

from bench.batch_floor import phases


def test_phases_are_summarised_over_the_batches_given() -> None:
    progress = [{"durationMs": {"addBatch": ms, "walCommit": 40}} for ms in range(100, 200, 10)]
    progress.append({"numInputRows": 0})  # a report without the breakdown adds nothing
    summary = phases(progress)
    assert summary == {"addBatch": (150, 190, 190), "walCommit": (40, 40, 40)}
