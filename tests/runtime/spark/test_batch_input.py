"""A task's batch spilled to disk reads back as the in-memory path takes it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from kspark.runtime.spark import batch_input, task_input
from kspark.runtime.spark.batch_input import SpilledInput, held_input


def _frame(topic: str, offsets: list[int], headers: Any = None) -> Any:
    import pandas as pd

    return pd.DataFrame(
        {
            "topic": [topic] * len(offsets),
            "partition": [0] * len(offsets),
            "offset": offsets,
            "timestamp": [o * 10 for o in offsets],
            "key": [None if o % 5 == 0 else b"k%d" % o for o in offsets],
            "value": [None if o % 7 == 0 else str(o).encode() for o in offsets],
            "headers": [headers if o % 2 else None for o in offsets],
        }
    )


def _records(feeds: Any) -> list[tuple[str, list[tuple[Any, ...]]]]:
    return [
        (
            topic,
            [
                (r.topic, r.partition, r.offset, r.timestamp, r.key, r.value, r.headers.to_list())
                for c in chunks
                for r in c.records()
            ],
        )
        for topic, chunks in feeds
    ]


FRAMES = [
    [_frame("a", [1, 2, 3]), _frame("a", [4, 5])],  # in order
    [_frame("a", [4, 5]), _frame("a", [1, 2, 3])],  # out of order across frames
    [_frame("b", [9, 7, 8]), _frame("a", [4, 1]), _frame("b", [10])],  # two topics, out of order
]


@pytest.mark.parametrize("frames", FRAMES)
def test_a_spilled_batch_gives_the_records_of_the_batch_in_memory(frames: list[Any], tmp_path: Path) -> None:
    headers = [{"key": "h", "value": b"v"}, {"key": "z", "value": None}]
    frames = [f.assign(headers=[headers if o % 2 else None for o in f["offset"]]) for f in frames]
    spilled = SpilledInput(str(tmp_path))
    for f in frames:
        spilled.add(f)
    try:
        got = _records(task_input.input_feeds(3, spilled))
    finally:
        spilled.close()
    assert got == _records(task_input.input_feeds(3, frames))
    assert any(h for _, recs in got for *_, h in recs)  # headers survived the round trip
    assert not os.path.exists(spilled.directory)


def test_held_input_spills_past_its_bound_and_removes_the_files(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("SPARK_LOCAL_DIRS", f"{tmp_path},/nonexistent")
    frames = [_frame("a", [1, 2]), _frame("a", []), _frame("a", [3])]
    with held_input(iter(frames), spill_rows=5) as small:
        assert isinstance(small, list) and len(small) == 2  # the empty frame is dropped
    with held_input(iter(frames), spill_rows=2) as big:
        assert isinstance(big, SpilledInput) and big.rows == 3
        assert Path(big.directory).parent == tmp_path
        assert [
            r.offset for _, c in task_input.input_feeds(0, big) for chunk in c for r in chunk.records()
        ] == [
            1,
            2,
            3,
        ]
    assert not os.path.exists(big.directory)


HEADERS = [{"key": "h", "value": b"v"}, {"key": "z", "value": None}]


def _shuffled(kind: str, rows: int, seed: int) -> list[int]:
    """``rows`` distinct offsets (not consecutive) in an order Spark may hand them over in."""
    import numpy as np

    rng = np.random.default_rng(seed)
    offsets = 1000 + 3 * np.arange(rows)
    if kind == "permutation":
        return [int(o) for o in rng.permutation(offsets)]
    # A merged sort: each of 5 runs in offset order, the runs interleaved at random.
    run_of = rng.integers(0, 5, rows)
    runs = [list(offsets[run_of == r]) for r in range(5)]
    picks = rng.permutation(np.repeat(np.arange(5), [len(r) for r in runs]))
    heads = [0] * 5
    merged = []
    for r in picks:
        merged.append(int(runs[r][heads[r]]))
        heads[r] += 1
    return merged


def _frames(topic: str, offsets: list[int], seed: int) -> list[Any]:
    """The offsets as frames of 1 to 40 rows, every odd offset with headers."""
    import numpy as np

    rng = np.random.default_rng(seed)
    frames, start = [], 0
    while start < len(offsets):
        size = int(rng.integers(1, 41))
        frames.append(_frame(topic, offsets[start : start + size], HEADERS))
        start += size
    return frames


class _Reads:
    """Rows of every batch or table read from an Arrow IPC file (``pa.ipc.open_file``)."""

    def __init__(self, monkeypatch: Any) -> None:
        import pyarrow as pa

        self.batches: list[int] = []
        self.tables: list[int] = []
        open_file = pa.ipc.open_file
        reads = self

        class Reader:
            def __init__(self, source: Any) -> None:
                self._reader = open_file(source)
                self.num_record_batches = self._reader.num_record_batches

            def get_batch(self, i: int) -> Any:
                batch = self._reader.get_batch(i)
                reads.batches.append(batch.num_rows)
                return batch

            def read_all(self) -> Any:
                table = self._reader.read_all()
                reads.tables.append(table.num_rows)
                return table

        monkeypatch.setattr(pa.ipc, "open_file", Reader)


def _spill(frames: list[Any], path: Path, bucket_rows: int) -> SpilledInput:
    spilled = SpilledInput(str(path), bucket_rows=bucket_rows)
    for f in frames:
        spilled.add(f)
    return spilled


@pytest.mark.parametrize("kind", ["merged runs", "permutation"])
def test_a_batch_spilled_out_of_order_reads_back_sorted_one_bucket_at_a_time(
    kind: str, tmp_path: Path, monkeypatch: Any
) -> None:
    frames = _frames("a", _shuffled(kind, 500, seed=1), seed=2)
    frames += _frames("b", sorted(_shuffled(kind, 60, seed=3)), seed=4)  # in order: read as added
    monkeypatch.setattr(task_input, "_SPILLED_CHUNK", 7)
    reads = _Reads(monkeypatch)
    spilled = _spill(frames, tmp_path, bucket_rows=50)  # 56 rows: a multiple of the step, 7
    try:
        chunks = {topic: list(c) for topic, c in spilled.topics(7)}
        got = _records(task_input.input_feeds(3, spilled))
        assert sorted(os.listdir(spilled.directory)) == ["0.arrow", "1.arrow"]  # the buckets are gone
    finally:
        spilled.close()
    assert reads.tables.count(56) == 2 * 8 and reads.tables.count(500 - 8 * 56) == 2  # 9 buckets, twice
    assert [len(c["offset"]) for c in chunks["a"]] == [7] * (500 // 7) + [500 % 7]
    assert [o for c in chunks["a"] for o in c["offset"]] == sorted(_shuffled(kind, 500, seed=1))
    expected = _records(task_input.input_feeds(3, frames))
    assert got == expected
    recs = [r for _, rs in got for r in rs]
    assert any(r[4] is None for r in recs) and any(r[5] is None for r in recs)  # null keys, values
    assert any(r[6] == [("h", b"v"), ("z", None)] for r in recs) and any(r[6] == [] for r in recs)
    assert not os.path.exists(spilled.directory)


def test_a_batch_spilled_out_of_order_holds_one_bucket_of_rows_at_a_time(
    tmp_path: Path, monkeypatch: Any
) -> None:
    offsets = _shuffled("merged runs", 3000, seed=5)
    frames = _frames("a", offsets, seed=6)
    reads = _Reads(monkeypatch)
    spilled = _spill(frames, tmp_path, bucket_rows=100)
    try:
        got = [o for _, chunks in spilled.topics(10) for c in chunks for o in c["offset"]]
    finally:
        spilled.close()
    assert got == sorted(offsets)
    assert len(reads.tables) == 30  # every bucket read whole once, each of 100 rows
    assert max(reads.tables + reads.batches) <= 100  # never the topic's 3,000 rows at once


def test_a_batch_spilled_out_of_order_is_split_into_a_bounded_number_of_buckets(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setattr(batch_input, "_MAX_BUCKETS", 4)
    offsets = _shuffled("permutation", 1000, seed=7)
    reads = _Reads(monkeypatch)
    spilled = _spill(_frames("a", offsets, seed=8), tmp_path, bucket_rows=10)
    try:
        got = [o for _, chunks in spilled.topics(10) for c in chunks for o in c["offset"]]
    finally:
        spilled.close()
    assert got == sorted(offsets)
    assert reads.tables == [250] * 4  # 1,000 rows in 4 buckets, not 100 of 10 rows
