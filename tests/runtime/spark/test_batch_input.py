"""A task's batch spilled to disk reads back as the in-memory path takes it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from kspark.runtime.spark import tasks
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
        (topic, [(r.offset, r.timestamp, r.key, r.value, r.headers.to_list()) for c in chunks for r in c])
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
        got = _records(tasks._input_feeds(3, spilled))
    finally:
        spilled.close()
    assert got == _records(tasks._input_feeds(3, frames))
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
        assert [r.offset for _, c in tasks._input_feeds(0, big) for chunk in c for r in chunk] == [1, 2, 3]
    assert not os.path.exists(big.directory)
