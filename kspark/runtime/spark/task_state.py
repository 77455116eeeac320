"""A Spark-hosted task's state in Spark's state store: its ``meta`` row and its ``changelog`` list.

``meta`` (:class:`TaskMeta`) is what a task rebuilt anywhere needs besides its
stores: the batches it committed (its epoch), stream time, processor
metadata, wall-clock punctuation schedules, and the positions its changelog
topics reached (store_restore.py). ``changelog`` is a ``ListState`` of
pickled changelog records for the stores not restored from their topic
(read-only stores, whose changelog is their source topic; window and
session stores, whose topic deletes by time: TopologySpec.topic_changelogs)
and for the native windowed count's windows, compacted to the latest record
per key every :data:`COMPACT_AFTER_ROWS` rows.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Latest",
    "COMPACT_AFTER_ROWS",
    "ROW_BYTES",
    "TaskMeta",
    "fold_changelog",
    "task_state",
    "restored_changelog",
    "persist_changelog",
    "pickled_rows",
]

Latest = dict[Any, dict[Any, tuple[Any, int]]]
"""The latest changelog record per store and key, as a compacted changelog topic holds them: for
:class:`TaskStage` store name -> key bytes -> (value bytes, timestamp); for the windowed count
(:mod:`~kspark.runtime.spark.windowed_count`) window start -> key bytes -> (count, timestamp)."""


_Entry = tuple[str, Any, Any, int]
"""A changelog record: (store name, key, value or None for a tombstone, timestamp); a versioned
store's key and value are boxed (versioned_changelog.py)."""

COMPACT_AFTER_ROWS = 32
"""A task's changelog state is compacted to the latest record per key when it reaches this many rows."""

ROW_BYTES = 4 << 20
"""Largest changelog row (pickled entries) a stage writes. Each row is one message to Spark's
state server, which holds it whole on the JVM heap: one row for a 10M-record batch (~200 MB)
ran a 1 GB driver out of memory."""


def fold_changelog(latest: Latest, entries: list[Any]) -> None:
    """Apply changelog entries ``(store, key, value, timestamp)`` in order: the latest record per
    store and key; a None value (tombstone) deletes."""
    for store, key, value, ts in entries:
        records = latest.get(store)
        if records is None:
            records = latest[store] = {}
        if value is None:
            records.pop(key, None)
        else:
            records[key] = (value, ts)


def task_state(handle: Any) -> tuple[Any, Any]:
    """A task's ``meta`` ``ValueState`` (see :class:`TaskMeta`) and ``changelog`` ``ListState``."""
    from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType

    meta = handle.getValueState(
        "meta",
        StructType(
            [
                StructField("epoch", LongType()),
                StructField("stream_time", LongType()),
                # Kafka commits processor metadata with the offsets; here it is task state (JSON).
                StructField("processor_metadata", StringType()),
                # The processing-time timer set for the next wall-clock punctuation (-1: none).
                StructField("timer", LongType()),
                # Rows in `changelog` (compaction is due when it reaches COMPACT_AFTER_ROWS).
                StructField("changelog_rows", LongType()),
                # Next due time of each wall-clock punctuation (JSON), for a rebuilt task.
                StructField("wall_clock_schedules", StringType()),
                # The committed changelog positions (JSON {topic: offset}): a restore stops there.
                StructField("positions", StringType()),
            ]
        ),
    )
    return meta, handle.getListState("changelog", StructType([StructField("entries", BinaryType())]))


def restored_changelog(changelog: Any, meta: TaskMeta) -> Latest:
    """The latest record per store and key that a task's ``changelog`` state holds."""
    latest: Latest = {}
    if meta.changelog_rows:
        for (blob,) in changelog.get():
            fold_changelog(latest, pickle.loads(blob))
    return latest


def persist_changelog(
    changelog: Any,
    rows: int,
    latest: Latest,
    entries: list[Any],
    prune: Callable[[Latest], None] | None = None,
) -> int:
    """Write a batch's changelog ``entries`` (already folded into ``latest``) to the ``changelog``
    state, which holds ``rows`` rows; returns how many it holds now.

    A batch's entries are one row (more if they pickle to over :data:`ROW_BYTES`),
    one state call each. When the state would reach :data:`COMPACT_AFTER_ROWS`
    rows it is replaced by ``latest``, the whole of it (after ``prune`` drops what
    no restore needs)."""
    if not entries:
        return rows
    blobs = pickled_rows(entries)
    if rows + len(blobs) < COMPACT_AFTER_ROWS:
        for blob in blobs:
            changelog.appendValue((blob,))
        return rows + len(blobs)
    if prune is not None:
        prune(latest)
    snapshot = pickled_rows(
        [(store, k, v, ts) for store, records in latest.items() for k, (v, ts) in records.items()]
    )
    if not snapshot:
        changelog.clear()
        return 0
    changelog.put([(snapshot[0],)])
    for blob in snapshot[1:]:
        changelog.appendValue((blob,))
    return len(snapshot)


def pickled_rows(entries: list[Any]) -> list[bytes]:
    """``entries`` pickled in order, as few rows as keep each within :data:`ROW_BYTES`
    (a single entry larger than that is a row of its own)."""
    out: list[bytes] = []
    sample = pickle.dumps(entries[:1000], protocol=pickle.HIGHEST_PROTOCOL)
    per_entry = max(1, len(sample) // max(1, min(len(entries), 1000)))
    size = max(1, ROW_BYTES * 9 // 10 // per_entry)
    i = 0
    while i < len(entries):
        blob = pickle.dumps(entries[i : i + size], protocol=pickle.HIGHEST_PROTOCOL)
        if len(blob) > ROW_BYTES and size > 1:
            size //= 2
            continue
        out.append(blob)
        i += size
    return out


@dataclass(frozen=True)
class TaskMeta:
    """A task's ``meta`` state row, with defaults for a task that has none yet."""

    epoch: int = 0
    stream_time: int = -1
    processor_metadata: dict[str, int] | None = None
    timer: int = -1
    changelog_rows: int = 0
    wall_clock_schedules: list[tuple[str, int, int]] = field(default_factory=list)
    # Per changelog topic (the task's partition of it), the offset its committed state reaches.
    positions: dict[str, int] = field(default_factory=dict)

    @staticmethod
    def of(row: Any) -> TaskMeta:
        if not row:
            return TaskMeta()
        return TaskMeta(
            int(row[0]),
            int(row[1]),
            json.loads(row[2]) if row[2] else None,
            int(row[3]) if row[3] is not None else -1,
            int(row[4]) if row[4] is not None else 0,
            [(str(n), int(i), int(d)) for n, i, d in json.loads(row[5])] if row[5] else [],
            {str(t): int(o) for t, o in json.loads(row[6]).items()} if len(row) > 6 and row[6] else {},
        )
