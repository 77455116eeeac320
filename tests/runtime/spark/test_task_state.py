"""A stateful stage's changelog state: one row per batch, compacted to the latest record per key."""

from __future__ import annotations

import pickle
from typing import Any

from state_fakes import ListStateLike

from kspark.runtime.spark import tasks
from kspark.runtime.spark.tasks import COMPACT_AFTER_ROWS, fold_changelog, persist_changelog


def _persist(state: ListStateLike, rows: int, live: Any, entries: list[Any]) -> int:
    """What a stage does with a batch's changelog entries: fold them into its live state, persist."""
    fold_changelog(live, entries)
    return persist_changelog(state, rows, live, entries)


def _restored(state: ListStateLike) -> dict[str, dict[bytes, tuple[bytes, int]]]:
    latest: dict[str, dict[bytes, tuple[bytes, int]]] = {}
    for (blob,) in state.get():
        fold_changelog(latest, pickle.loads(blob))
    return latest


def test_fold_keeps_the_latest_record_and_applies_tombstones() -> None:
    latest: dict[str, dict[bytes, tuple[bytes, int]]] = {}
    fold_changelog(latest, [("s", b"a", b"1", 1), ("s", b"b", b"2", 2), ("t", b"a", b"x", 3)])
    fold_changelog(latest, [("s", b"a", b"3", 4), ("s", b"b", None, 5)])
    assert latest == {"s": {b"a": (b"3", 4)}, "t": {b"a": (b"x", 3)}}


def test_one_state_call_per_batch_and_restore_equals_the_live_state(monkeypatch: Any) -> None:
    monkeypatch.setattr(tasks, "_SNAPSHOT_CHUNK", 3)
    state = ListStateLike()
    live: dict[str, dict[bytes, tuple[bytes, int]]] = {}
    rows = 0
    for batch in range(3 * COMPACT_AFTER_ROWS):
        entries: list[tuple[str, bytes, bytes | None, int]] = [
            ("s", f"k{(batch * 7 + i) % 11}".encode(), str(batch).encode(), batch) for i in range(4)
        ]
        if batch % 5 == 4:
            entries.append(("s", b"k3", None, batch))  # a delete
        before = state.calls
        rows = _persist(state, rows, live, entries)
        assert state.calls - before == 1
        assert rows == len(state.rows) <= COMPACT_AFTER_ROWS
        assert _restored(state) == live
    # compaction happened: fewer rows than batches, chunked by _SNAPSHOT_CHUNK entries
    assert len(state.rows) < 3 * COMPACT_AFTER_ROWS


def test_a_batch_without_changelog_writes_nothing() -> None:
    state = ListStateLike()
    assert _persist(state, 4, {}, []) == 4
    assert state.calls == 0


def test_compacting_an_empty_state_clears_the_list() -> None:
    state = ListStateLike()
    state.rows = [(pickle.dumps([("s", b"a", b"1", 1)]),)] * (COMPACT_AFTER_ROWS - 1)
    live: dict[str, dict[bytes, tuple[bytes, int]]] = {"s": {b"a": (b"1", 1)}}
    rows = _persist(state, COMPACT_AFTER_ROWS - 1, live, [("s", b"a", None, 2)])
    assert rows == 0 and state.rows == []


def _frame(topic: str, offsets: list[int]) -> Any:
    import pandas as pd

    return pd.DataFrame(
        {
            "topic": [topic] * len(offsets),
            "offset": offsets,
            "timestamp": [o * 10 for o in offsets],
            "key": [b"k"] * len(offsets),
            "value": [str(o).encode() for o in offsets],
            "headers": [None] * len(offsets),
        }
    )


def _shape(chunks: Any) -> list[list[tuple[str, list[int]]]]:
    return [[(topic, [r.offset for r in records]) for topic, records in chunk] for chunk in chunks]


def test_input_in_offset_order_is_processed_one_arrow_batch_at_a_time() -> None:
    chunks = tasks._input_chunks(3, [_frame("a", [1, 2]), _frame("a", [5, 9])])
    assert _shape(chunks) == [[("a", [1, 2])], [("a", [5, 9])]]


def test_input_out_of_order_or_from_several_topics_is_one_sorted_chunk() -> None:
    assert _shape(tasks._input_chunks(0, [_frame("a", [5, 9]), _frame("a", [1, 2])])) == [
        [("a", [1, 2, 5, 9])]
    ]
    assert _shape(tasks._input_chunks(0, [_frame("a", [2, 1])])) == [[("a", [1, 2])]]
    mixed = [_frame("b", [7, 3]), _frame("a", [4])]
    assert _shape(tasks._input_chunks(0, mixed)) == [[("a", [4]), ("b", [3, 7])]]
    records = next(iter(tasks._input_chunks(6, [_frame("a", [4])])))[0][1]
    assert (records[0].partition, records[0].timestamp, records[0].value) == (6, 40, b"4")


def test_no_input_is_no_chunk() -> None:
    assert list(tasks._input_chunks(0, [])) == []
