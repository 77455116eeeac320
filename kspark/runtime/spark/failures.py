"""How the Spark runner reads a failed query: the line of a Spark error a user reads, which
failures a restart from the checkpoint gets past, and known causes said plainly.

A query's error reaches the driver as Spark's whole report (the JVM's stack, the Python
worker's traceback inside it); :func:`first_line` picks the Python exception a user raised
or kspark's engine named (task, processor, topic, partition, offset).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from kspark.errors import StreamsException
from kspark.runtime.kafka_clients import cluster_metadata, librdkafka_client

__all__ = ["TRANSIENT_RESTARTS", "explained", "first_line", "transient"]

TRANSIENT_RESTARTS = 3
"""Times a query that failed for a transient reason is restarted from its checkpoint."""

_TRANSIENT_ERRORS = (
    # Spark gives a driver-side Python process (a direct read's offset planner, transformWithState's
    # schema check) 10 s to connect back; on a saturated machine one can take longer. The query
    # has committed nothing of the batch it was planning.
    "Python worker failed to connect back",
)

_PYTHON_ERROR_LINE = re.compile(r"^[\w.]+(?:Error|Exception): .+")


def first_line(error: BaseException) -> str:
    """The user-facing part of a Spark error: the first Python exception line of the worker's traceback
    (kspark's engine names the task, processor, topic, partition and offset there)."""
    lines = [line.strip() for line in str(error).splitlines()]
    errors = [line for line in lines if _PYTHON_ERROR_LINE.match(line)]
    ours = [line for line in errors if line.startswith("kspark.")]
    users = [line for line in errors if not line.startswith(("pyspark.", "py4j.", "org.", "java.", "scala."))]
    best = ours or users or errors or lines
    return best[0] if best else type(error).__name__


def transient(error: BaseException | None) -> bool:
    """Whether a query failed for a reason that a restart from its checkpoint gets past."""
    return error is not None and any(m in str(error) for m in _TRANSIENT_ERRORS)


def explained(
    query: str, error: BaseException, source_topics: Iterable[str], config: Mapping[str, Any]
) -> BaseException:
    """``error`` of ``query`` (which reads ``source_topics``), said plainly where the cause is a
    known one: input topics deleted under the running application (Spark's Kafka consumer says
    only "This server does not host this topic-partition"). ``config`` is the application's
    (its Kafka clients' settings)."""
    text = str(error)
    if "UnknownTopicOrPartition" not in text and "UNKNOWN_TOPIC_OR_PART" not in text:
        return error
    try:
        existing = set(cluster_metadata(librdkafka_client(config, "admin")).topics)
    except StreamsException:
        return error  # Kafka itself is away: the error as it is says more
    missing = sorted(t for t in source_topics if t not in existing)
    if not missing:
        return error
    plain = StreamsException(
        f"{query} failed: its input topics {missing} no longer exist (deleted while the application "
        f"ran?): {first_line(error)}"
    )
    plain.__cause__ = error
    return plain
