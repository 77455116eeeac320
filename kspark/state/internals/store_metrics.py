"""State-store metrics at Kafka Streams' ``DEBUG`` recording level (group ``stream-state-metrics``).

With ``metrics.recording.level`` ``DEBUG`` (or ``TRACE``) Kafka Streams
times every call a processor makes on a store's typed layer: per operation
``<op>-rate``, ``<op>-latency-avg`` and ``<op>-latency-max`` (nanoseconds),
tagged ``thread-id``, ``task-id`` and ``<scope>-state-id`` (the store's
name; the scope is its supplier's ``metrics_scope``, e.g. ``rocksdb``,
``in-memory-window``). At ``INFO``, the default, nothing is timed and the
stores run untouched.

:func:`instrument` replaces a typed store's operations on that one
instance by timed ones, each operation's calls summed in a
:class:`~kspark.processor.internals.latency.LatencyStats` that a runner
takes per micro-batch (Spark) or reads (``TopologyTestDriver``). An
operation that returns an iterator (``range``, ``all``, ``fetch``...) is
timed until the iterator is made; Kafka Streams times it until it is closed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from kspark.processor.internals.latency import LatencyStats

__all__ = ["STATE_GROUP", "instrument", "recording_debug"]

STATE_GROUP = "stream-state-metrics"


def recording_debug(app_config: Mapping[str, Any]) -> bool:
    """Whether ``metrics.recording.level`` asks for the ``DEBUG`` metrics (``TRACE`` includes them)."""
    return str(app_config.get("metrics.recording.level", "INFO")).upper() in ("DEBUG", "TRACE")


def instrument(store: Any, operations: Mapping[str, str]) -> dict[str, LatencyStats]:
    """Time ``store``'s methods named in ``operations`` (method -> Kafka Streams' operation name,
    several methods may share one) on this instance; returns the stats per operation."""
    stats: dict[str, LatencyStats] = {}
    for method, operation in operations.items():
        timed = _timed(getattr(store, method), stats.setdefault(operation, LatencyStats()))
        setattr(store, method, timed)
    return stats


def _timed(call: Callable[..., Any], stats: LatencyStats) -> Callable[..., Any]:
    clock = time.perf_counter_ns
    record = stats.record

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = clock()
        try:
            return call(*args, **kwargs)
        finally:  # as Kafka's maybeMeasureLatency: a call that raises is timed too
            record(clock() - start)

    return timed
