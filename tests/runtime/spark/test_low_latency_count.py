"""A low-latency task's count line (low_latency_count.py) against the engine's own path: the same
records, committed at the same points, give the same output, changelog and store, for a count
and for the reduces it runs (sum, min, max of Long or Integer values)."""

from __future__ import annotations

import contextlib
import operator
from typing import Any

import pytest

from kspark import Consumed, Produced, StreamsBuilder, Topology
from kspark.errors import StreamsException
from kspark.processor.internals.records import OutputRecord
from kspark.processor.internals.task import StreamTask
from kspark.runtime.spark.direct_source import to_headers
from kspark.runtime.spark.low_latency_count import CountLine
from kspark.runtime.spark.plan import Stage, physical_plan
from kspark.runtime.spark.task_input import FeedChunk
from kspark.runtime.spark.tasks import TopologySpec
from kspark.serde import Serdes

S, B = Serdes.String(), Serdes.ByteArray()
LOW = {"spark.kspark.lowLatency": "true"}


def _count(key_serde: Any = S, with_tail: bool = False) -> Topology:
    b = StreamsBuilder()
    counts = b.stream("in", Consumed.with_(key_serde, S)).group_by_key().count().to_stream()
    if with_tail:
        counts = counts.filter(lambda k, v: v != 3).map(lambda k, v: (k, v * 10))
    counts.to("out", Produced.with_(key_serde, Serdes.Long()))
    return b.build()


def _reduce(reducer: Any, values: Any) -> Topology:
    b = StreamsBuilder()
    table = b.stream("in", Consumed.with_(S, values)).group_by_key().reduce(reducer)
    table.to_stream().to("out", Produced.with_(S, values))
    return b.build()


def _config(**extra: Any) -> dict[str, Any]:
    return {"application.id": "cl", "bootstrap.servers": "unused:9092", **LOW, **extra}


def _tasks(topology: Topology, config: dict[str, Any]) -> tuple[StreamTask, StreamTask, CountLine]:
    plan = physical_plan(topology, config, {"in": 1, "out": 1})
    (sub,) = plan.subtopologies
    assert sub.stage is Stage.LOW_LATENCY and sub.native is not None and not sub.lowered
    spec = TopologySpec(topology, config, 0, {}, "cl", {}, count_line=sub.native)
    engine, counted = spec.build_task(0), spec.build_task(0)
    return engine, counted, CountLine(counted, sub.native, "in", 0)


def _both(topology: Topology, config: dict[str, Any], commits: list[list[FeedChunk]]) -> None:
    """Run every commit's chunks both ways; the output of each commit must be the same."""
    engine, counted, line = _tasks(topology, config)
    try:
        for chunks in commits:
            for chunk in chunks:
                engine.add_records("in", 0, chunk.records())
                while engine.process():
                    engine.maybe_punctuate_stream_time()
                line.process(chunk)
            engine.commit()
            line.flush()
            counted.commit()
            want: list[OutputRecord] = engine.drain_output()
            # Each topic's records in the same order (the line writes the changelog's first).
            assert _by_topic(counted.drain_output()) == _by_topic(want)
            assert want  # every commit here changes some count
            assert counted.stream_time() == engine.stream_time()
            assert counted.dropped_records_total == engine.dropped_records_total
    finally:
        engine.close()
        counted.close()


def _by_topic(records: list[OutputRecord]) -> dict[str, list[OutputRecord]]:
    out: dict[str, list[OutputRecord]] = {}
    for r in records:
        out.setdefault(r.topic, []).append(r)
    return out


def _chunk(first: int, rows: list[tuple[Any, Any, int]], headers: list[Any] | None = None) -> FeedChunk:
    n = len(rows)
    return FeedChunk(
        "in",
        0,
        list(range(first, first + n)),
        [ts for _, _, ts in rows],
        [k for k, _, _ in rows],
        [v for _, v, _ in rows],
        headers if headers is not None else [None] * n,
        to_headers,
    )


def test_counts_forwarded_at_each_commit_are_the_engines_in_its_order() -> None:
    # Keys updated again move to the end of the flush (the cache's dirty order), timestamps out
    # of order keep the largest, a null key or value is dropped and counted, headers follow the
    # latest record of a key, and the second commit reads the first's counts from the store.
    rows = [(b"a", b"1", 5), (b"b", b"1", 3), (None, b"x", 9), (b"a", b"2", 2), (b"c", None, 4)]
    first = _chunk(
        0,
        [*rows, (b"b", b"2", 7)],
        [None, [("h", b"1")], None, [("h", b"2")], None, None],
    )
    second = _chunk(6, [(b"c", b"1", 1), (b"a", b"3", 1), (b"d", b"1", 20)])
    third = _chunk(9, [(b"a", b"4", 30), (b"c", b"2", 2)])
    _both(_count(), _config(), [[first], [second, third], [_chunk(11, [(b"a", b"5", 31)])]])


def test_a_tail_after_the_count_and_bytes_keys_and_invalid_utf8_are_the_engines() -> None:
    rows = [(b"\xff", b"1", 1), (b"\xfe", b"1", 2), (b"ok", b"1", 3), (b"\xff", b"1", 4)]
    # String keys: two invalid keys are one U+FFFD key to the store, as the engine stores them.
    _both(_count(with_tail=True), _config(), [[_chunk(0, rows)], [_chunk(4, rows)]])
    _both(_count(key_serde=B), _config(), [[_chunk(0, rows)], [_chunk(4, rows)]])


def test_a_record_with_a_negative_timestamp_goes_the_engines_way_with_its_extractor() -> None:
    rows = [(b"a", b"1", 5), (b"b", b"1", 6), (b"a", b"1", -1), (b"b", b"1", 8)]
    later = [(b"a", b"1", 9)]
    skip = _config(**{"default.timestamp.extractor": "LogAndSkipOnInvalidTimestamp"})
    # The count line writes what it counted before the record, the engine flushes its cache
    # after: an early flush, as a full cache makes one. Compared at the end of each commit.
    engine, counted, line = _tasks(_count(), skip)
    try:
        for chunk in (_chunk(0, rows), _chunk(4, later)):
            engine.add_records("in", 0, chunk.records())
            while engine.process():
                pass
            line.process(chunk)
        engine.commit()
        line.flush()
        counted.commit()
        latest = {r.key: r.value for r in engine.drain_output() if r.topic == "out"}
        got = counted.drain_output()
        assert (
            {r.key: r.value for r in got if r.topic == "out"}
            == latest
            == {
                b"a": (2).to_bytes(8, "big"),  # its record at -1 skipped
                b"b": (2).to_bytes(8, "big"),
            }
        )
        assert counted.dropped_records_total == engine.dropped_records_total == 1
        assert counted.stream_time() == engine.stream_time() == 9
    finally:
        engine.close()
        counted.close()
    # The default extractor fails on it, with the engine's error.
    _, counted, line = _tasks(_count(), _config())
    try:
        with pytest.raises(StreamsException, match=r"has invalid \(negative\) timestamp"):
            line.process(_chunk(0, rows))
    finally:
        counted.close()


def test_the_plan_says_which_low_latency_counts_run_as_count_lines() -> None:
    plan = physical_plan(_count(), _config(), {"in": 1, "out": 1})
    assert "count line: yes" in str(plan)
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, S)).map_values(str.upper).group_by_key().count().to_stream().to("out")
    other = physical_plan(b.build(), _config(), {"in": 1, "out": 1})
    assert "count line: no (" in str(other)
    assert other.subtopologies[0].native is None
    uncached = physical_plan(_count(), _config(**{"statestore.cache.max.bytes": 0}), {"in": 1, "out": 1})
    assert "count line: no (the record cache is off" in str(uncached)


def _ints(values: list[int | None], size: int) -> list[bytes | None]:
    return [None if v is None else v.to_bytes(size, "big", signed=True) for v in values]


@pytest.mark.parametrize(("reducer", "function"), [(operator.add, "sum"), (min, "min"), (max, "max")])
@pytest.mark.parametrize(("values", "size"), [(Serdes.Long(), 8), (Serdes.Integer(), 4)])
def test_a_reduce_spark_would_lower_runs_as_a_count_line_with_the_engines_output(
    reducer: Any, function: str, values: Any, size: int
) -> None:
    topology = _reduce(reducer, values)
    plan = physical_plan(topology, _config(), {"in": 1, "out": 1})
    assert plan.subtopologies[0].native is not None and "count line: yes" in str(plan)
    keys = [b"a", b"b", b"a", b"c", b"b", b"a"]
    first = _ints([5, -3, 7, None, 2, -9], size)
    second = _ints([4, 1, -2, 8, 3, 6], size)
    rows = lambda vs, t: [(k, v, t + i) for i, (k, v) in enumerate(zip(keys, vs, strict=True))]  # noqa: E731
    _both(topology, _config(), [[_chunk(0, rows(first, 10))], [_chunk(6, rows(second, 1))]])


def test_a_reduce_fails_as_the_engine_does_on_a_value_of_another_size_and_a_sum_out_of_range() -> None:
    big = (1 << 63) - 2
    for values, _size, rows, error in (
        (Serdes.Long(), 8, [(b"a", _ints([1], 8)[0], 1), (b"a", b"\x00\x01", 2)], "LongDeserializer"),
        # A null key does not spare a value of another size: the source deserializes it first.
        (Serdes.Long(), 8, [(b"a", _ints([1], 8)[0], 1), (None, b"\x00\x01", 2)], "LongDeserializer"),
        (Serdes.Long(), 8, [(b"a", _ints([big], 8)[0], 1), (b"a", _ints([5], 8)[0], 2)], "LongSerializer"),
        (Serdes.Integer(), 4, [(b"a", _ints([2**31 - 1], 4)[0], 1), (b"a", _ints([1], 4)[0], 2)], "Integer"),
    ):
        topology = _reduce(operator.add, values)
        engine, counted, line = _tasks(topology, _config())
        try:
            engine.add_records("in", 0, _chunk(0, rows).records())
            with pytest.raises(StreamsException) as want:
                while engine.process():
                    pass
            with pytest.raises(StreamsException) as got:
                line.process(_chunk(0, rows))
            assert error in str(got.value)
            assert str(got.value) == str(want.value)
            # What it counted before the failing record was written and forwarded first.
            assert [r.value for r in counted.drain_output() if r.topic == "out"] == [rows[0][1]]
        finally:
            # The failed engine task's cache still holds its first record, and closing flushes it
            # into closed nodes: a runner logs that and discards the task (WarmTask.close).
            with contextlib.suppress(StreamsException):
                engine.close()
            counted.close()
