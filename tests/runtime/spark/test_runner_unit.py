"""The Spark runner's driver-side pieces that need no Spark: the foreachBatch function around a stop,
which queries process_available() runs again, and the size check of a transformWithState processor."""

from __future__ import annotations

import re
import threading
import traceback
from typing import Any

import pytest

from kspark.runtime.spark.batch_function import RunBatch

# Spark's StreamExecution.PROXY_ERROR, which decides whether a failed foreachBatch was
# "interrupted by stop()" (quiet) or a query failure (logged with its stack).
_SPARK_PROXY_ERROR = re.compile(
    r"py4j.protocol.Py4JJavaError: An error occurred while calling(.*)"
    r"(java\.lang\.InterruptedException|java\.io\.InterruptedIOException"
    r"|java\.nio\.channels\.ClosedByInterruptException)",
    re.S,
)


class _Batch:
    def __init__(self, rows: list[dict[str, int]] | None = None, error: Exception | None = None) -> None:
        self.rows = rows or []
        self.error = error
        self.columns = list(self.rows[0]) if self.rows else ["written"]

    def collect(self) -> list[dict[str, int]]:
        if self.error is not None:
            raise self.error
        return self.rows


def _traceback_of(call: Any) -> str:
    try:
        call()
    except Exception as e:
        return "".join(traceback.format_exception(e))
    raise AssertionError("expected the call to raise")


def test_a_batch_counts_its_output_and_reports_it() -> None:
    seen: list[tuple[int, int]] = []
    run = RunBatch(lambda batch, written: seen.append((batch, written)))
    run(_Batch([{"written": 2}, {"written": 3}]), 7)  # type: ignore[arg-type]
    assert seen == [(7, 5)] and run.last_done == 7 and run.idle.is_set()
    assert run.records_read is None  # Spark's progress counts these batches' input


def test_a_direct_reads_batches_count_the_records_read() -> None:
    run = RunBatch(None)
    run(_Batch([{"records": 10, "written": 2}, {"records": 5, "written": 0}]), 0)  # type: ignore[arg-type]
    run(_Batch([{"records": 1, "written": 1}]), 1)  # type: ignore[arg-type]
    assert run.records_read == 16


def test_a_query_is_asked_for_its_columns_once() -> None:
    """Every batch of a query has its stage's schema; asking a DataFrame for it is a JVM call."""

    class _Counted(_Batch):
        asked = 0

        @property  # type: ignore[override]
        def columns(self) -> list[str]:
            _Counted.asked += 1
            return ["records", "written"]

        @columns.setter
        def columns(self, value: list[str]) -> None:
            pass

    run = RunBatch(None)
    for batch_id in range(3):
        run(_Counted([{"records": 4, "written": 1}]), batch_id)  # type: ignore[arg-type]
    assert _Counted.asked == 1 and run.records_read == 12


def test_a_failure_while_running_is_the_failure_itself() -> None:
    run = RunBatch(None)
    with pytest.raises(ValueError, match="boom"):
        run(_Batch(error=ValueError("boom")), 1)  # type: ignore[arg-type]
    assert run.idle.is_set() and run.last_done == -1


def test_a_batch_cancelled_by_stop_fails_short_and_in_the_shape_spark_reads_as_a_stop() -> None:
    stopping = threading.Event()
    run = RunBatch(None, stopping=stopping)
    stopping.set()
    # What a cancelled job looks like from Python: a Py4J error carrying Java stack traces.
    cancelled = RuntimeError("[SPARK_JOB_CANCELLED] Job 2 cancelled\n" + "\tat org.apache.spark.Foo\n" * 5000)
    text = _traceback_of(lambda: run(_Batch(error=cancelled), 3))  # type: ignore[arg-type]
    assert "_StoppedDuringBatch" in text and "micro-batch 3 was cancelled by stop()" in text
    assert _SPARK_PROXY_ERROR.search(text)
    # No chained cause: Spark's regex recurses per character of this text.
    assert "SPARK_JOB_CANCELLED" not in text and len(text) < 2_000
    assert run.idle.is_set() and run.last_done == -1


def test_only_known_transient_failures_are_restarted() -> None:
    from kspark.runtime.spark.failures import transient

    assert transient(RuntimeError("org.apache.spark.SparkException: Python worker failed to connect back."))
    assert not transient(RuntimeError("kspark.errors.StreamsException: processor failed"))
    assert not transient(None)


def _runs_of(topology: Any, moved: dict[str, list[int]]) -> list[str]:
    """The queries ``process_available`` runs, in order, when each run of a query (by the topics
    it reads) reads the next of its ``moved`` counts (0 once they run out)."""
    from kspark.config import StreamsConfig
    from kspark.runtime.spark.plan import physical_plan
    from kspark.runtime.spark.runner import SparkRunner

    config = StreamsConfig({"application.id": "unit", "bootstrap.servers": "unused:9092"})
    runner = SparkRunner(topology, config, spark=None)  # type: ignore[arg-type]  # no query starts
    plan = physical_plan(topology, config, {"a": 1, "b": 1, "c": 1, "d": 1})
    runs: list[str] = []

    def run(query: Any, up_to_level: int | None = None) -> int:
        reads = ",".join(query.source_topics)
        runs.append(reads)
        left = moved.get(reads, [])
        return left.pop(0) if left else 0

    runner.prepare_topics = lambda: plan  # type: ignore[method-assign]
    runner._run_available = run  # type: ignore[method-assign]
    runner.process_available()
    return runs


def test_process_available_runs_a_query_again_only_when_its_input_may_have_grown() -> None:
    from kspark import StreamsBuilder

    b = StreamsBuilder()
    b.stream("a").to("b")
    b.stream("b").filter(lambda k, v: True).to("d")
    b.stream("c").group_by_key().count()
    # a -> b -> d is a chain of two levels; c's count feeds nothing: each runs once
    assert _runs_of(b.build(), {"a": [3], "b": [3], "c": [2]}) == ["a", "c", "b"]


def test_process_available_follows_a_cycle_through_topics_until_nothing_moves() -> None:
    from kspark import StreamsBuilder

    b = StreamsBuilder()
    b.stream("a").filter(lambda k, v: v != "stop").to("b")
    b.stream("b").map_values(lambda v: "stop").to("a")
    # b writes back to a: a runs again after b moved records, and once more finds nothing new for b
    assert _runs_of(b.build(), {"a": [3, 3], "b": [3]}) == ["a", "b", "a", "b"]


def test_process_available_runs_everything_again_after_a_topic_extractor_wrote() -> None:
    from kspark import StreamsBuilder

    b = StreamsBuilder()
    b.stream("a").to(lambda k, v, ctx: "b")
    b.stream("c").to("d")
    assert _runs_of(b.build(), {"a,c": [1]}) == ["a,c", "a,c"]


def test_a_processor_spark_would_send_as_a_broadcast_is_refused_before_the_query_starts() -> None:
    from types import SimpleNamespace

    from kspark import StreamsBuilder
    from kspark.config import StreamsConfig
    from kspark.errors import StreamsException
    from kspark.runtime.spark.plan import physical_plan
    from kspark.runtime.spark.runner import SparkRunner

    b = StreamsBuilder()
    table = {str(i): f"{i:0100d}" for i in range(200)}  # ~20 KB captured by the topology
    b.stream("a").map_values(lambda v: table.get(v)).group_by_key().count()
    topology = b.build()
    config = StreamsConfig({"application.id": "unit", "bootstrap.servers": "unused:9092"})

    def session(threshold: int) -> Any:
        jvm = SimpleNamespace(PythonUtils=SimpleNamespace(getBroadcastThreshold=lambda jsc: threshold))
        return SimpleNamespace(sparkContext=SimpleNamespace(_jvm=jvm, _jsc=None))

    query = physical_plan(topology, config, {"a": 1}).queries[0]
    SparkRunner(topology, config, session(1 << 30))._check_pickled_size(query, topology)
    with pytest.raises(StreamsException, match=r"spark.broadcast.UDFCompressionThreshold \(10,000\)"):
        SparkRunner(topology, config, session(10_000))._check_pickled_size(query, topology)
