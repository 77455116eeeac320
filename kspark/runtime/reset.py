"""``kspark reset``: start an application over, as Kafka's application reset tool does.

Kafka Streams' ``kafka-streams-application-reset`` sets the application's
consumer group offsets of its input topics (to the earliest offset by
default, or the latest, a time, an offset, a duration back from now) and
deletes its internal topics (``<application.id>-...-repartition`` and
``-changelog``); the instance's local state is deleted with
``KafkaStreams.cleanUp()``. kspark's progress lives in Spark's checkpoints
(``state.dir/<application.id>/``), so a reset deletes them too: the next
start plans every query afresh, and a query without a checkpoint starts from
the group's committed offsets (runner.py, ``_committed_start``), as a new
Kafka Streams instance does.

Stop every instance of the application first: a running one keeps its
checkpoints open. :func:`plan_reset` only reads; :func:`execute` changes
Kafka and the state directory, in the order that a failure half-way can be
retried (group offsets first, then topics, then checkpoints).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from kspark.config import StreamsConfig
from kspark.errors import ConfigException, StreamsException
from kspark.processor.topology import Topology
from kspark.runtime.kafka_clients import cluster_metadata, librdkafka_client, librdkafka_security

__all__ = ["Position", "ResetPlan", "plan_reset", "execute", "parse_duration", "parse_datetime"]

INTERNAL_SUFFIXES = ("-repartition", "-changelog", "-kspark-control")  # the last: low_latency.py


@dataclass(frozen=True)
class Position:
    """Where the input topics start again: ``earliest``, ``latest``, ``offset`` (``value``: the
    offset, kept inside each partition's log), or ``time`` (``value``: epoch ms; the first record
    at or after it, else the end)."""

    kind: str
    value: int = 0

    def __str__(self) -> str:
        if self.kind == "offset":
            return f"offset {self.value}"
        if self.kind == "time":
            when = datetime.fromtimestamp(self.value / 1000, UTC).isoformat(timespec="milliseconds")
            return f"the first record at or after {when}"
        return self.kind


@dataclass
class ResetPlan:
    """What a reset changes (see the module docstring)."""

    application_id: str
    position: Position
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)  # input topic-partition -> offset
    topics: list[str] = field(default_factory=list)  # internal topics to delete
    state: str | None = None  # the local state directory to delete, if there is one

    def describe(self) -> str:
        lines = [f"Reset of application {self.application_id} (input topics to {self.position}):"]
        lines += [f"  commit {t}[{p}] offset {o}" for (t, p), o in sorted(self.offsets.items())]
        lines += [f"  delete topic {t}" for t in self.topics] or ["  no internal topics to delete"]
        lines.append(f"  delete local state {self.state}" if self.state else "  no local state")
        return "\n".join(lines)


_DURATION = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?")


def parse_duration(text: str) -> timedelta:
    """An ISO 8601 duration ``PnDTnHnMnS`` (Kafka's ``--by-duration``)."""
    match = _DURATION.fullmatch(text.strip().upper())
    if match is None or text.strip().upper() in ("P", "PT"):
        raise ConfigException(f"--by-duration {text!r} is not a duration like P1DT2H30M or PT15M")
    days, hours, minutes, seconds = match.groups()
    return timedelta(
        days=int(days or 0), hours=int(hours or 0), minutes=int(minutes or 0), seconds=float(seconds or 0)
    )


def parse_datetime(text: str) -> int:
    """Epoch ms of an ISO 8601 time (``2026-11-26T10:00:00``, a zone or ``Z`` optional: UTC if none)."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ConfigException(f"--to-datetime {text!r} is not a time like 2026-11-26T10:00:00.000") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


def _input_topics(topology: Topology) -> list[str]:
    builder = topology.internal_builder
    return [t for t in builder.source_topic_names() if not builder.is_internal_topic(t)]


def plan_reset(topology: Topology, config: Mapping[str, Any], position: Position) -> ResetPlan:
    """What resetting the application of ``topology`` and ``config`` to ``position`` changes."""
    from confluent_kafka import Consumer, TopicPartition

    from kspark.runtime.spark.kafka_io import OffsetLister

    streams_config = config if isinstance(config, StreamsConfig) else StreamsConfig(config)
    originals = streams_config.originals()
    app = streams_config.application_id()
    admin = librdkafka_client(originals, "admin")
    metadata = cluster_metadata(admin)
    existing = {name: len(t.partitions) for name, t in metadata.topics.items()}
    inputs = _input_topics(topology)
    missing = [t for t in inputs if t not in existing]
    if missing:
        raise StreamsException(
            f"Input topics {missing} of application {app} do not exist on {admin['bootstrap.servers']}"
        )
    partitions = [(t, p) for t in inputs for p in range(existing[t])]
    lister = OffsetLister(admin["bootstrap.servers"], settings=librdkafka_security(originals, "admin"))
    first = lister.offsets(partitions, latest=False)
    last = lister.offsets(partitions, latest=True)
    if position.kind == "earliest":
        offsets = dict(first)
    elif position.kind == "latest":
        offsets = dict(last)
    elif position.kind == "offset":
        offsets = {tp: min(max(position.value, first[tp]), last[tp]) for tp in partitions}
    elif position.kind == "time":
        consumer = Consumer(
            {**librdkafka_client(originals, "consumer"), "group.id": app, "enable.auto.commit": False}
        )
        try:
            found = consumer.offsets_for_times(
                [TopicPartition(t, p, position.value) for t, p in partitions], timeout=60
            )
        finally:
            consumer.close()
        # No record at or after the time: the partition's end, as Kafka's tool does.
        offsets = {
            (tp.topic, tp.partition): tp.offset if tp.offset >= 0 else last[(tp.topic, tp.partition)]
            for tp in found
        }
    else:
        raise ConfigException(f"unknown reset position {position.kind!r}")
    topics = sorted(t for t in existing if t.startswith(f"{app}-") and t.endswith(INTERNAL_SUFFIXES))
    state = os.path.join(streams_config.state_dir(), app)
    return ResetPlan(app, position, offsets, topics, state if os.path.isdir(state) else None)


def execute(plan: ResetPlan, config: Mapping[str, Any]) -> None:
    """Carry ``plan`` out (see the module docstring for the order)."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient

    originals = config.originals() if isinstance(config, StreamsConfig) else dict(config)
    consumer = Consumer(
        {
            **librdkafka_client(originals, "consumer"),
            "group.id": plan.application_id,
            "enable.auto.commit": False,
        }
    )
    try:
        if plan.offsets:
            consumer.commit(
                offsets=[TopicPartition(t, p, o) for (t, p), o in sorted(plan.offsets.items())],
                asynchronous=False,
            )
    except KafkaException as e:
        raise StreamsException(
            f"Committing the reset offsets of group {plan.application_id} failed: {e}"
        ) from e
    finally:
        consumer.close()
    if plan.topics:
        admin = AdminClient(librdkafka_client(originals, "admin"))
        for topic, future in admin.delete_topics(plan.topics, operation_timeout=60).items():
            try:
                future.result()
            except KafkaException as e:
                if "UNKNOWN_TOPIC" not in str(e):  # deleted already (a retried reset)
                    raise StreamsException(f"Deleting internal topic {topic} failed: {e}") from e
        _wait_gone(admin, plan.topics)
    if plan.state is not None:
        shutil.rmtree(plan.state)


def _wait_gone(admin: Any, topics: list[str], timeout: float = 60.0) -> None:
    """Topic deletion completes asynchronously; the next start must not find the old topics."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not set(topics) & set(admin.list_topics(timeout=10).topics):
            return
        time.sleep(0.5)
    raise StreamsException(f"Internal topics {topics} were still there {timeout:.0f} s after their deletion")
