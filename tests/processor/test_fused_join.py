"""A stateful task's lines fused from their source (``StreamTask.fuse_sources``) against the engine.

A stream-table join with stateless operators before and after it, over a
table and a stream whose records interleave by timestamp, with null keys,
tombstones, undeserializable values and a joiner that fails on some values,
under both processing handlers, the cache on and off: each case runs once
through the task's nodes and once with the stream's line fused, and every
observable (outputs, drops, handler calls, failures, stream time, end-to-end
latencies) must match. Versioned tables and grace periods are not fused.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kspark import Consumed, Joined, Materialized, Produced, StreamsBuilder
from kspark.config import StreamsConfig
from kspark.errors import StreamsException
from kspark.processor.api import Headers, PunctuationType
from kspark.processor.internals.records import RawRecord
from kspark.processor.internals.task import StreamTask
from kspark.serde import Serdes
from kspark.state import Stores

TABLE, STREAM, OUT = "tbl", "in", "out"
BAD_JSON = b"{not json"
S = Serdes.String()


class Boom(Exception):
    pass


def _num(value: Any) -> int:
    return value if isinstance(value, int) else 0


def _topology(left: bool, before: str, after: str, fail_on: int, versioned: bool = False) -> Any:
    builder = StreamsBuilder()
    materialized = (
        Materialized.as_(Stores.persistent_versioned_key_value_store("users", 1_000))
        if versioned
        else Materialized.as_("users")
    )
    table = builder.table(TABLE, Consumed.with_(S, Serdes.JSON()), materialized)
    stream = builder.stream(STREAM, Consumed.with_(S, Serdes.JSON()))
    if before == "filter":
        stream = stream.filter(lambda k, v: _num(v) % 5 != 4)
    elif before == "map_values":
        stream = stream.map_values(lambda v: _num(v) + 100 if v is not None else None)

    def joiner(key: Any, value: Any, table_value: Any) -> Any:
        if value == fail_on or value == fail_on + 100:
            raise Boom(f"joiner refuses {value}")
        return [key, value, table_value]

    joined = (stream.left_join if left else stream.join)(
        table, joiner, Joined.with_(S, Serdes.JSON(), Serdes.JSON())
    )
    if after == "map":
        joined = joined.map(lambda k, v: (f"{k}!", v))
    elif after == "flat_map_values":
        joined = joined.flat_map_values(lambda v: [v, v])
    joined.to(OUT, Produced.with_(S, Serdes.JSON()))
    return builder.build()


def _task(topology: Any, processing: str, cache: bool, calls: list[Any], **extra: Any) -> StreamTask:
    def handler(ctx: Any, record: Any, error: Exception) -> str:
        calls.append((ctx.topic, ctx.offset, ctx.processor_node_id, record.key, record.value, str(error)))
        return "continue" if processing == "log_and_continue" else "fail"

    config = {
        "application.id": "app",
        "bootstrap.servers": "x:1",
        "processing.exception.handler": handler,
        "deserialization.exception.handler": "log_and_continue",
        "statestore.cache.max.bytes": 10_000_000 if cache else 0,
        **extra,
    }
    builder = topology.internal_builder
    task = StreamTask(
        "0_1", builder.build_topology(builder.node_groups()[0]), StreamsConfig(config), partition=1
    )
    task.initialize()
    return task


def _raw(topic: str, offset: int, key: str | None, value: Any, ts: int) -> RawRecord:
    data = BAD_JSON if value == "bad" else None if value is None else str(value).encode()
    headers = Headers([("h", str(offset).encode())]) if offset % 3 == 0 else Headers()
    return RawRecord(topic, 1, offset, ts, None if key is None else key.encode(), data, headers)


def _run(
    task: StreamTask, batches: list[list[RawRecord]], calls: list[Any], mode: str = "records"
) -> tuple[Any, ...]:
    """Every observable of ``task`` after ``batches``, each processed by ``process`` a record at a
    time (``records``), by ``process_buffered`` (``buffered``: a fused queue in one call once it
    is the only one with records), or (``columns``) also offering the stream's records as
    columns to ``process_columns`` first (taken only when nothing is buffered)."""
    try:
        for batch in batches:
            for topic in (TABLE, STREAM):
                records = [r for r in batch if r.topic == topic]
                if topic == STREAM and mode == "columns" and records:
                    columns = [
                        [getattr(r, f) for r in records] for f in ("offset", "timestamp", "key", "value")
                    ]
                    headers = [r.headers for r in records]
                    if task.process_columns(STREAM, 1, *columns, headers, Headers.copy):
                        continue
                task.add_records(topic, 1, records)
            if mode != "records":
                task.process_buffered()
            else:
                while task.process():
                    task.maybe_punctuate_stream_time()
            task.commit()
        failure = None
    except StreamsException as e:
        failure = (str(e), type(e.__cause__).__name__, str(e.__cause__))
    outputs = [
        (o.topic, o.partition, o.key, o.value, o.timestamp, list(o.headers))
        for o in task.drain_output()
        if o.topic == OUT
    ]
    e2e = None if failure else {n: s.to_list() for n, s in task.e2e.items()}
    return outputs, failure, task.dropped_records_total, task.stream_time(), list(calls), e2e


entries = st.lists(
    st.tuples(
        st.sampled_from([TABLE, STREAM]),
        st.one_of(st.none(), st.sampled_from(["a", "b", "c"])),
        st.one_of(st.integers(0, 9), st.just(None), st.just("bad")),
        st.integers(0, 40),
    ),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(
    inputs=entries,
    left=st.booleans(),
    before=st.sampled_from(["none", "filter", "map_values"]),
    after=st.sampled_from(["none", "map", "flat_map_values"]),
    fail_on=st.integers(0, 12),
    processing=st.sampled_from(["log_and_fail", "log_and_continue"]),
    cache=st.booleans(),
    split=st.integers(0, 30),
)
def test_a_join_fused_from_its_stream_does_what_the_engine_does(
    inputs: list[tuple[str, str | None, Any, int]],
    left: bool,
    before: str,
    after: str,
    fail_on: int,
    processing: str,
    cache: bool,
    split: int,
) -> None:
    offsets = {TABLE: 0, STREAM: 0}
    raws = []
    for topic, key, value, ts in inputs:
        raws.append(_raw(topic, offsets[topic], key, value, ts))
        offsets[topic] += 1
    batches = [raws[:split], raws[split:]]  # two micro-batches, a commit after each

    engine_calls: list[Any] = []
    engine = _task(_topology(left, before, after, fail_on), processing, cache, engine_calls)
    expected = _run(engine, batches, engine_calls)

    for mode in ("records", "buffered", "columns"):
        fused_calls: list[Any] = []
        task = _task(_topology(left, before, after, fail_on), processing, cache, fused_calls)
        assert task.fuse_sources() == [task.topology.source(STREAM).name]
        assert _run(task, batches, fused_calls, mode) == expected


def test_a_fused_queue_alone_with_records_is_processed_in_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """``process_buffered`` hands the stream's queue to its fused line in one call once the
    table's queue is empty, with the engine's results; not while a stream-time punctuation is
    scheduled (it could fall due between two records)."""
    from kspark.processor.internals.fused import FusedChain

    calls: list[int] = []
    original = FusedChain.process

    def counted(self: FusedChain, topic: str, partition: int, offsets: Any, *rest: Any, **kw: Any) -> None:
        calls.append(len(offsets))
        original(self, topic, partition, offsets, *rest, **kw)

    monkeypatch.setattr(FusedChain, "process", counted)
    table = [_raw(TABLE, i, k, i, 1) for i, k in enumerate("abc")]
    stream = [_raw(STREAM, i, "abcd"[i % 4], "bad" if i == 7 else i, 10 + i) for i in range(20)]
    batches = [table, stream]

    engine = _task(_topology(True, "filter", "map", 5), "log_and_continue", True, [])
    expected = _run(engine, batches, [])
    task = _task(_topology(True, "filter", "map", 5), "log_and_continue", True, [])
    task.fuse_sources()
    assert _run(task, batches, [], "buffered") == expected
    # all twenty in one call (from the undeserializable one on, the call takes the task's path)
    assert calls == [20]

    calls.clear()
    punctuated = _task(_topology(True, "filter", "map", 5), "log_and_continue", True, [])
    punctuated.fuse_sources()
    node = punctuated.topology.source(STREAM)
    punctuated.schedule(node, 1_000, PunctuationType.STREAM_TIME, lambda ts: None)
    assert _run(punctuated, batches, [], "buffered") == expected
    assert _run(punctuated, [[], stream], [], "columns")[0]  # it had output: the records were taken
    assert calls == []

    # columns go straight to the line only when nothing is buffered
    task = _task(_topology(True, "filter", "map", 5), "log_and_continue", True, [])
    task.fuse_sources()
    assert _run(task, batches, [], "columns") == expected
    assert calls == [20]


def test_versioned_tables_and_grace_periods_are_not_fused() -> None:
    versioned = _task(_topology(False, "none", "none", 99, versioned=True), "log_and_fail", True, [])
    assert versioned.fuse_sources() == []
    builder = StreamsBuilder()
    table = builder.table(
        TABLE, Consumed.with_(S, S), Materialized.as_(Stores.persistent_versioned_key_value_store("v", 100))
    )
    builder.stream(STREAM, Consumed.with_(S, S)).join(
        table, lambda a, b: a, Joined.with_(S, S, S).with_grace_period(10)
    ).to(OUT, Produced.with_(S, S))
    serdes = {"default.key.serde": "string", "default.value.serde": "string"}
    graced = _task(builder.build(), "log_and_fail", True, [], **serdes)
    assert graced.fuse_sources() == []


def test_sources_are_fused_only_once_the_task_is_initialized() -> None:
    topology = _topology(False, "none", "none", 99)
    builder = topology.internal_builder
    config = StreamsConfig({"application.id": "app", "bootstrap.servers": "x:1"})
    task = StreamTask("0_1", builder.build_topology(builder.node_groups()[0]), config, partition=1)
    with pytest.raises(AssertionError, match="after initialize"):
        task.fuse_sources()
