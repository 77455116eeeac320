"""The changelog of a versioned store (KIP-889) in a task's Spark state.

A task's changelog state (:mod:`kspark.runtime.spark.tasks`) folds to the
latest record per store and key, as a compacted changelog topic holds them.
A versioned store needs more: every version its history retention still
serves, as Kafka Streams keeps them by giving a versioned store's changelog
topic a compaction lag of the history retention (plus a day). Here a
versioned store's record is folded per (key, timestamp), its value boxed so
that a tombstone (a delete at that time, itself a version) stays; a restore
replays the versions oldest first, and before a changelog snapshot the
versions no read can reach any more are dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["versioned_entry", "restored_latest", "restored_versions", "prune_versions"]

Records = dict[Any, tuple[Any, int]]
"""One store's folded changelog: entry key -> (value, timestamp)."""


def versioned_entry(store: str, key: bytes, value: bytes | None, timestamp: int) -> tuple[str, Any, Any, int]:
    """A versioned store's changelog record as a folded entry: one per (key, timestamp), the value
    boxed so that a tombstone (a delete at that time, itself a version) is kept, not folded away."""
    return (store, (key, timestamp), (value,), timestamp)


def restored_latest(records: Records) -> list[tuple[Any, Any, int]]:
    """A store's restore records: the latest record per key."""
    return [(k, v, ts) for k, (v, ts) in records.items()]


def restored_versions(records: Records) -> list[tuple[Any, Any, int]]:
    """A versioned store's restore records: every version kept, oldest first."""
    versions = [(key, boxed[0], ts) for (key, _), (boxed, ts) in records.items()]
    versions.sort(key=lambda r: r[2])
    return versions


def prune_versions(latest: Mapping[str, Records], history_retention: Mapping[str, int]) -> None:
    """Drop the versions no read can reach any more, before a changelog snapshot: those older than
    the store's newest timestamp minus its history retention, except each key's newest such
    version (the one valid at that horizon), as a versioned changelog's compaction lag keeps them."""
    for store, retention in history_retention.items():
        records = latest.get(store)
        if not records:
            continue
        horizon = max(ts for _, ts in records.values()) - retention
        valid_at_horizon: Records = {}
        for entry_key, (_, ts) in records.items():
            if ts < horizon:
                seen = valid_at_horizon.get(entry_key[0])
                if seen is None or ts > seen[1]:
                    valid_at_horizon[entry_key[0]] = (entry_key, ts)
        keep = {entry_key for entry_key, _ in valid_at_horizon.values()}
        for entry_key, (_, ts) in list(records.items()):
            if ts < horizon and entry_key not in keep:
                del records[entry_key]
