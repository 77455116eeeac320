"""End-to-end latency of records at a task's source and terminal nodes (Kafka Streams'
``record-e2e-latency-avg/min/max``, group ``stream-processor-node-metrics``).

Kafka Streams records, for each source node when it takes a record and for
each terminal node (one without children) once it has processed one, the
wall-clock time minus the record's timestamp. A task keeps one
:class:`LatencyStats` per such node; a runner reads them (``TopologyTestDriver``
over all records, the Spark runner per micro-batch through
:meth:`LatencyStats.take`, which it sums over its metrics' sample window).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["LatencyStats", "E2E_GROUP"]

E2E_GROUP = "stream-processor-node-metrics"


@dataclass
class LatencyStats:
    """Count, sum, min and max of latencies (ms) since the last :meth:`take`."""

    count: int = 0
    total: float = 0.0
    min: float = float("inf")
    max: float = float("-inf")

    def record(self, latency_ms: float) -> None:
        self.count += 1
        self.total += latency_ms
        if latency_ms < self.min:
            self.min = latency_ms
        if latency_ms > self.max:
            self.max = latency_ms

    def record_timestamps(self, now_ms: int, timestamps: Sequence[int]) -> None:
        """Record ``now_ms - t`` for every ``t`` (a runner's batch at once)."""
        if timestamps:
            self.record_tally(now_ms, len(timestamps), sum(timestamps), min(timestamps), max(timestamps))

    def record_tally(self, now_ms: int, count: int, ts_sum: int, ts_min: int, ts_max: int) -> None:
        """Record ``now_ms - t`` for ``count`` timestamps ``t`` given by their sum, min and max."""
        if count:
            self.count += count
            self.total += now_ms * count - ts_sum
            self.min = min(self.min, now_ms - ts_max)
            self.max = max(self.max, now_ms - ts_min)

    def merge(self, other: LatencyStats) -> None:
        self.count += other.count
        self.total += other.total
        self.min = min(self.min, other.min)
        self.max = max(self.max, other.max)

    def take(self) -> LatencyStats | None:
        """What was recorded since the last take (None: nothing), and start again."""
        if not self.count:
            return None
        taken = LatencyStats(self.count, self.total, self.min, self.max)
        self.count, self.total, self.min, self.max = 0, 0.0, float("inf"), float("-inf")
        return taken

    def to_list(self) -> list[float]:
        return [self.count, self.total, self.min, self.max]

    @staticmethod
    def of(values: Iterable[float]) -> LatencyStats:
        """From :meth:`to_list`'s ``[count, sum, min, max]``."""
        count, total, lo, hi = values
        return LatencyStats(int(count), float(total), float(lo), float(hi))

    def avg(self) -> float:
        return self.total / self.count if self.count else float("nan")

    def minimum(self) -> float:
        return float(self.min) if self.count else float("nan")

    def maximum(self) -> float:
        return float(self.max) if self.count else float("nan")
