"""A versioned store's changelog in a task's Spark state keeps every version its history
retention serves (kspark/runtime/spark/versioned_changelog.py): folded, restored, pruned."""

from __future__ import annotations

from kspark.runtime.spark.task_state import fold_changelog
from kspark.runtime.spark.versioned_changelog import (
    prune_versions,
    restored_latest,
    restored_versions,
    versioned_entry,
)


def test_every_version_and_tombstone_is_kept_and_restored_oldest_first() -> None:
    latest: dict = {}
    fold_changelog(
        latest,
        [
            versioned_entry("prices", b"k", b"v20", 20),
            versioned_entry("prices", b"k", b"v10", 10),
            versioned_entry("prices", b"k", None, 30),  # a delete at 30 is a version too
            versioned_entry("prices", b"k", b"v20b", 20),  # the same version written again
            ("plain", b"k", b"1", 5),
            ("plain", b"k", b"2", 6),
        ],
    )
    assert restored_versions(latest["prices"]) == [(b"k", b"v10", 10), (b"k", b"v20b", 20), (b"k", None, 30)]
    assert restored_latest(latest["plain"]) == [(b"k", b"2", 6)]


def test_pruning_keeps_what_the_history_retention_serves() -> None:
    latest: dict = {}
    fold_changelog(
        latest,
        [versioned_entry("s", b"a", f"a{ts}".encode(), ts) for ts in (1, 5, 8, 20, 30)]
        + [versioned_entry("s", b"b", b"b2", 2)],
    )
    prune_versions(latest, {"s": 15})  # newest 30: reads reach back to 15
    # a@8 is the version valid at 15; a@1 and a@5 are unreachable; b@2 is b's version at 15
    assert restored_versions(latest["s"]) == [
        (b"b", b"b2", 2),
        (b"a", b"a8", 8),
        (b"a", b"a20", 20),
        (b"a", b"a30", 30),
    ]
