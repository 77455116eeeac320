"""The time mode of an engine query: processing-time timers only where Processor API code may need
them, and a checkpoint's recorded time mode kept or refused (kspark/runtime/spark/time_mode.py).

No Spark here: the operator metadata is written as Spark 4 writes it (checked against a real
checkpoint in tests/runtime/spark/test_runner.py's idle-query test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kspark.errors import StreamsException
from kspark.runtime.spark.time_mode import NO_TIME, PROCESSING_TIME, checkpoint_time_mode, query_time_mode


def _checkpoint(tmp_path: Path, time_mode: str | None, batches: tuple[int, ...] = (0,)) -> str:
    """A query checkpoint whose transformWithState operator recorded ``time_mode`` (Spark's name)."""
    directory = tmp_path / "ckpt" / "state" / "0" / "_metadata" / "v2"
    directory.mkdir(parents=True)
    for batch in batches:
        properties = {"timeMode": time_mode, "outputMode": "Update", "stateVariables": []}
        meta = {
            "operatorInfo": {"operatorId": 0, "operatorName": "transformWithStateInPandasExec"},
            "stateStoreInfo": [],
            "operatorPropertiesJson": json.dumps(properties),
        }
        (directory / str(batch)).write_text("v2\n" + json.dumps(meta))
    (directory / f".{batches[-1]}.crc").write_bytes(b"\0")  # Hadoop's checksum files are skipped
    return str(tmp_path / "ckpt")


def test_a_new_query_gets_timers_only_when_it_runs_on_and_may_need_them(tmp_path: Path) -> None:
    fresh = str(tmp_path / "none-yet")
    assert checkpoint_time_mode(fresh) is None
    assert query_time_mode("q", fresh, ["1"], continuous=True) == PROCESSING_TIME
    assert query_time_mode("q", fresh, [], continuous=True) == NO_TIME
    assert query_time_mode("q", fresh, ["1"], continuous=False) == NO_TIME  # availableNow ends


def test_the_last_batch_s_operator_metadata_tells_the_recorded_time_mode(tmp_path: Path) -> None:
    assert checkpoint_time_mode(_checkpoint(tmp_path, "ProcessingTime", (0, 7))) == PROCESSING_TIME
    assert checkpoint_time_mode(_checkpoint(tmp_path / "b", "NoTime")) == NO_TIME


def test_a_checkpoint_with_timers_keeps_them_where_none_are_needed_now(tmp_path: Path) -> None:
    # Written by a kspark that gave every continuous engine query timers: Spark cannot drop them.
    checkpoint = _checkpoint(tmp_path, "ProcessingTime")
    assert query_time_mode("q", checkpoint, [], continuous=True) == PROCESSING_TIME
    with pytest.raises(StreamsException, match=r"Query q: .*processing-time timers.* run it with start\(\)"):
        query_time_mode("q", checkpoint, [], continuous=False)


def test_a_checkpoint_without_timers_is_refused_where_a_task_may_need_them(tmp_path: Path) -> None:
    checkpoint = _checkpoint(tmp_path, "NoTime")
    assert query_time_mode("q", checkpoint, [], continuous=True) == NO_TIME
    assert query_time_mode("q", checkpoint, ["2"], continuous=False) == NO_TIME
    with pytest.raises(StreamsException, match=r"sub-topologies 2, 5 run Processor API code.*kspark reset"):
        query_time_mode("q", checkpoint, ["2", "5"], continuous=True)


def test_unreadable_operator_metadata_is_an_error_naming_the_file(tmp_path: Path) -> None:
    checkpoint = _checkpoint(tmp_path, "ProcessingTime")
    metadata = Path(checkpoint) / "state" / "0" / "_metadata" / "v2" / "0"
    metadata.write_text("v2\n{not json")
    with pytest.raises(StreamsException, match=f"operator metadata of the checkpoint {metadata}"):
        checkpoint_time_mode(checkpoint)
    with pytest.raises(StreamsException, match="unknown time mode 'EventTime'"):
        checkpoint_time_mode(_checkpoint(tmp_path / "e", "EventTime"))
