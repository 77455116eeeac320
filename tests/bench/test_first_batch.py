"""bench.first_batch reads Spark's event log into per-job stage sums."""

from __future__ import annotations

import json
from pathlib import Path

from bench.first_batch import events, jobs, progress


def _task(stage: int, run: int, cpu_ns: int, records: int, shuffle: int) -> dict[str, object]:
    return {
        "Event": "SparkListenerTaskEnd",
        "Stage ID": stage,
        "Task Metrics": {
            "Executor Run Time": run,
            "Executor CPU Time": cpu_ns,
            "JVM GC Time": 1,
            "Input Metrics": {"Records Read": records},
            "Shuffle Read Metrics": {"Total Records Read": shuffle},
        },
    }


def test_jobs_sum_each_stages_tasks(tmp_path: Path) -> None:
    log = [
        {
            "Event": "SparkListenerJobStart",
            "Job ID": 0,
            "Submission Time": 1_000,
            "Stage Infos": [{"Stage ID": 0}, {"Stage ID": 1}],
        },
        _task(0, 300, 100_000_000, 500, 0),
        _task(0, 200, 50_000_000, 400, 0),
        {
            "Event": "SparkListenerStageCompleted",
            "Stage Info": {
                "Stage ID": 0,
                "Stage Name": "start at X",
                "Submission Time": 1_010,
                "Completion Time": 1_400,
            },
        },
        _task(1, 50, 10_000_000, 0, 7),
        {
            "Event": "SparkListenerStageCompleted",
            "Stage Info": {
                "Stage ID": 1,
                "Stage Name": "call at Y",
                "Submission Time": 1_400,
                "Completion Time": 1_460,
            },
        },
        {"Event": "SparkListenerJobEnd", "Job ID": 0, "Completion Time": 1_470},
        {
            "Event": "org.apache.spark.sql.streaming.StreamingQueryListener$QueryProgressEvent",
            "progress": {"batchId": 0, "durationMs": {"addBatch": 470}},
        },
    ]
    path = tmp_path / "events_1_local"
    path.write_text("\n".join(json.dumps(e) for e in log) + "\n")
    evs = events(tmp_path)
    [job] = jobs(evs)
    assert (job["start"], job["end"]) == (1_000, 1_470)
    first, second = job["stages"]
    assert first == {
        "stage": 0,
        "name": "start",
        "wall_ms": 390,
        "tasks": 2,
        "run_ms": 500,
        "cpu_ms": 150.0,
        "gc_ms": 2,
        "records": 900,
    }
    assert (second["name"], second["records"], second["wall_ms"]) == ("call", 7, 60)
    assert [p["durationMs"] for p in progress(evs)] == [{"addBatch": 470}]
