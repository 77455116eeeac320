"""A stateful stage's changelog state: one row per batch, compacted to the latest record per key."""

from __future__ import annotations

import pickle
from typing import Any

from state_fakes import ListStateLike

from kspark.runtime.spark import task_input, task_state
from kspark.runtime.spark.task_state import COMPACT_AFTER_ROWS, fold_changelog, persist_changelog
from kspark.runtime.spark.tasks import TopologySpec


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
    monkeypatch.setattr(task_state, "ROW_BYTES", 120)
    state = ListStateLike()
    live: dict[str, dict[bytes, tuple[bytes, int]]] = {}
    rows = 0
    snapshot_rows = []
    for batch in range(3 * COMPACT_AFTER_ROWS):
        entries: list[tuple[str, bytes, bytes | None, int]] = [
            ("s", f"k{(batch * 7 + i) % 11}".encode(), str(batch).encode(), batch) for i in range(4)
        ]
        if batch % 5 == 4:
            entries.append(("s", b"k3", None, batch))  # a delete
        before, previous = state.calls, rows
        rows = _persist(state, rows, live, entries)
        if rows > previous:  # appended: a small batch is one row, one call
            assert rows == previous + 1 and state.calls - before == 1
        else:  # compacted: one call per row of the snapshot
            assert state.calls - before == rows
            snapshot_rows.append(rows)
        assert rows == len(state.rows) <= COMPACT_AFTER_ROWS
        assert _restored(state) == live
    # compaction happened: fewer rows than batches, each within ROW_BYTES
    assert len(state.rows) < 3 * COMPACT_AFTER_ROWS
    assert all(len(blob) <= 120 for (blob,) in state.rows)
    assert max(snapshot_rows) > 1  # a snapshot over ROW_BYTES was split


def test_a_large_batch_is_written_as_rows_within_the_limit(monkeypatch: Any) -> None:
    """One row per batch would be one state message: a huge batch must not be (JVM heap)."""
    monkeypatch.setattr(task_state, "ROW_BYTES", 4096)
    state = ListStateLike()
    live: dict[str, dict[bytes, tuple[bytes, int]]] = {}
    small = [("s", b"a", b"1", 1)]
    rows = _persist(state, 0, live, small)
    assert rows == 1
    big = [("s", f"key-{i}".encode(), b"v" * (i % 50), i) for i in range(3000)]
    rows = _persist(state, rows, live, big)
    assert rows == len(state.rows) > 2
    assert all(len(blob) <= 4096 for (blob,) in state.rows)
    assert _restored(state) == live
    # the batch that would pass COMPACT_AFTER_ROWS compacts, in rows within the limit as well
    huge = [("s", f"key-{i}".encode(), b"w" * 40, i) for i in range(20_000)]
    rows = _persist(state, rows, live, huge)
    assert rows == len(state.rows)
    assert all(len(blob) <= 4096 for (blob,) in state.rows)
    assert _restored(state) == live


def test_an_entry_over_the_limit_is_a_row_of_its_own(monkeypatch: Any) -> None:
    monkeypatch.setattr(task_state, "ROW_BYTES", 100)
    blobs = task_state.pickled_rows([("s", b"a", b"x" * 500, 1), ("s", b"b", b"y", 2)])
    assert [pickle.loads(b) for b in blobs] == [[("s", b"a", b"x" * 500, 1)], [("s", b"b", b"y", 2)]]


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


def _shape(feeds: Any) -> list[tuple[str, list[list[int]]]]:
    shape = [(topic, [chunk.records() for chunk in chunks]) for topic, chunks in feeds]
    assert all(r.topic == topic for topic, chunks in shape for chunk in chunks for r in chunk)
    return [(topic, [[r.offset for r in chunk] for chunk in chunks]) for topic, chunks in shape]


def test_input_in_offset_order_is_taken_one_arrow_batch_at_a_time() -> None:
    feeds = task_input.input_feeds(3, [_frame("a", [1, 2]), _frame("a", [5, 9])])
    assert _shape(feeds) == [("a", [[1, 2], [5, 9]])]


def test_input_out_of_order_or_from_several_topics_is_sorted_per_topic() -> None:
    assert _shape(task_input.input_feeds(0, [_frame("a", [5, 9]), _frame("a", [1, 2])])) == [
        ("a", [[1, 2], [5, 9]])
    ]
    assert _shape(task_input.input_feeds(0, [_frame("a", [2, 1])])) == [("a", [[1, 2]])]
    mixed = [_frame("b", [7, 3, 8]), _frame("a", [4])]
    assert _shape(task_input.input_feeds(0, mixed)) == [("a", [[4]]), ("b", [[3, 7, 8]])]
    # a batch of several topics: each topic's rows at most the largest frame's worth at a time
    two = [_frame("a", [1, 2]), _frame("b", [5]), _frame("a", [3, 4]), _frame("a", [6, 7])]
    assert _shape(task_input.input_feeds(0, two)) == [("a", [[1, 2], [3, 4], [6, 7]]), ("b", [[5]])]
    ((_, chunks),) = task_input.input_feeds(6, [_frame("a", [4])])
    records = next(chunks).records()
    assert (records[0].partition, records[0].timestamp, records[0].value) == (6, 40, b"4")


def test_no_input_is_no_feed() -> None:
    assert task_input.input_feeds(0, []) == []


def test_chunked_input_is_processed_in_the_order_of_the_whole_batch_buffered() -> None:
    """Two topics fed a chunk at a time: the task takes records in the same order as with
    every record of the batch in its queues (by head timestamp across partitions)."""
    import random

    from kspark import Consumed, StreamsBuilder
    from kspark.serde import Serdes

    def order(chunk: int) -> list[bytes]:
        builder = StreamsBuilder()
        seen: list[bytes] = []
        raw = Consumed.with_(Serdes.ByteArray(), Serdes.ByteArray())
        builder.stream("a", raw).merge(builder.stream("b", raw)).foreach(lambda k, v: seen.append(v))
        spec = TopologySpec(
            builder.build(), {"application.id": "c", "bootstrap.servers": "x:1"}, 0, {}, "i", {}
        )
        task = spec.build_task(0)
        rng = random.Random(7)
        frames = []
        for topic, n in (("a", 95), ("b", 40)):
            offsets = list(range(n))
            frame = _frame(topic, offsets)
            frame["timestamp"] = sorted(rng.randrange(0, 2_000) for _ in offsets)
            frame["value"] = [f"{topic}{o}".encode() for o in offsets]
            frames += [frame.iloc[i : i + chunk] for i in range(0, n, chunk)]
        rng.shuffle(frames)
        task_input.process_input(task, 0, frames, lambda: None)
        return seen

    whole = order(1_000)
    assert len(whole) == 135
    assert order(7) == whole
    assert order(1) == whole
