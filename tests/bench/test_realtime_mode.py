"""bench.realtime_mode's summary of the latencies it measured."""

from __future__ import annotations

from bench.realtime_mode import percentiles


def test_percentiles_are_the_median_the_99th_and_the_slowest() -> None:
    latencies = [float(ms) for ms in range(200, 0, -1)]  # 200 values, out of order
    assert percentiles(latencies) == (101.0, 199.0, 200.0)
