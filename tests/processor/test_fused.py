"""FusedChain against the engine it replaces: same output, drops, handler calls and failures.

Random lines of stateless DSL operators whose functions fail on some values,
over input with undeserializable values, negative timestamps, null keys and
headers, under every combination of handlers; each case runs once through
``StreamTask`` (queues, nodes) and once through ``FusedChain`` and every
observable must match.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kspark import Consumed, KeyValue, Produced, StreamsBuilder
from kspark.config import StreamsConfig
from kspark.errors import StreamsException
from kspark.processor.api import Headers, Processor, ProcessorContext, Record
from kspark.processor.internals.fused import FusedChain
from kspark.processor.internals.records import ProcessorRecordContext, RawRecord
from kspark.processor.internals.task import StreamTask
from kspark.serde import Serdes

TOPIC, OUT = "in", "out"
BAD_JSON = b"{not json"


class Boom(Exception):
    pass


def _check(op: str, fail_on: int, value: Any) -> None:
    if value == fail_on:
        raise Boom(f"{op} refuses {value}")


def _num(value: Any) -> int:
    return value if isinstance(value, int) else 0


OPS = {
    # Each builds one operator over int (or NaN, after "nan") JSON values; fail_on makes it raise.
    "filter": lambda s, f, log: s.filter(lambda k, v: (_check("filter", f, v), _num(v) % 3 != 0)[1]),
    "filter_not": lambda s, f, log: s.filter_not(
        lambda k, v: (_check("filter_not", f, v), _num(v) % 4 == 0)[1]
    ),
    "map_values": lambda s, f, log: s.map_values(lambda v: (_check("map_values", f, v), _num(v) + 1)[1]),
    "map_values_key": lambda s, f, log: s.map_values(
        lambda k, v: (_check("map_values_key", f, v), _num(v) * 2)[1]
    ),
    "map": lambda s, f, log: s.map(lambda k, v: (_check("map", f, v), KeyValue(f"{k}!", _num(v) - 1))[1]),
    "map_tuple": lambda s, f, log: s.map(lambda k, v: (_check("map", f, v), (None, v))[1]),
    "bad_map": lambda s, f, log: s.map(
        lambda k, v: v if v == f else (k, v)
    ),  # not a KeyValue: StreamsException
    "flat_map_values": lambda s, f, log: s.flat_map_values(
        lambda v: (_check("flat_map_values", f, v), [_num(v)] * (_num(v) % 3))[1]
    ),
    "flat_map": lambda s, f, log: s.flat_map(
        lambda k, v: (_check("flat_map", f, v), [KeyValue(k, _num(v)), (f"{k}+", _num(v) + 7)])[1]
    ),
    "none_flat_map": lambda s, f, log: s.flat_map_values(lambda v: None if v == f else [v]),
    "peek": lambda s, f, log: s.peek(lambda k, v: (log.append(("peek", k, v)), _check("peek", f, v))),
    "nan": lambda s, f, log: s.map_values(
        lambda v: math.nan if v == f else v
    ),  # JSON refuses NaN: sink error
    "merge": lambda s, f, log: s.merge(s.filter(lambda k, v: False)),  # not a line: never fused
}
LINEAR = [op for op in OPS if op != "merge"]
HANDLERS = ["log_and_fail", "log_and_continue"]
EXTRACTORS = ["FailOnInvalidTimestamp", "LogAndSkipOnInvalidTimestamp", "UsePartitionTimeOnInvalidTimestamp"]


def _config(processing: str, production: str, deserialization: str, extractor: str) -> dict[str, Any]:
    return {
        "application.id": "app",
        "bootstrap.servers": "x:1",
        "processing.exception.handler": processing,
        "production.exception.handler": production,
        "deserialization.exception.handler": deserialization,
        "default.timestamp.extractor": extractor,
    }


def _topology(ops: list[tuple[str, int]], log: list[Any], foreach: bool) -> Any:
    builder = StreamsBuilder()
    stream = builder.stream(TOPIC, Consumed.with_(Serdes.String(), Serdes.JSON()))
    for op, fail_on in ops:
        stream = OPS[op](stream, fail_on, log)
    if foreach:
        stream.foreach(lambda k, v: log.append(("foreach", k, v)))
    else:
        stream.to(OUT, Produced.with_(Serdes.String(), Serdes.JSON()))
    return builder.build()


def _task(topology: Any, config: dict[str, Any], calls: list[Any]) -> StreamTask:
    def recording(kind: str, answer: str) -> Any:
        def handler(ctx: Any, record: Any, error: Exception) -> str:
            record_seen = (
                (record.key, record.value, record.timestamp, list(record.headers))
                if isinstance(record, Record)
                else None
            )
            where = (ctx.topic, ctx.partition, ctx.offset, list(ctx.headers), ctx.processor_node_id)
            when = ctx.timestamp
            raw = (ctx.source_raw_key, ctx.source_raw_value)
            calls.append((kind, where, when, raw, record_seen, type(error).__name__, str(error)))
            return answer

        return handler

    conf = dict(config)
    for key in (
        "processing.exception.handler",
        "production.exception.handler",
        "deserialization.exception.handler",
    ):
        conf[key] = recording(key, "continue" if conf[key] == "log_and_continue" else "fail")
    builder = topology.internal_builder
    task = StreamTask(
        "0_1", builder.build_topology(builder.node_groups()[0]), StreamsConfig(conf), partition=1
    )
    task.initialize()
    return task


def _observe(task: StreamTask, run: Any, calls: list[Any], log: list[Any]) -> tuple[Any, ...]:
    try:
        run()
        failure = None
    except StreamsException as e:
        cause = e.__cause__
        failure = (str(e), type(cause).__name__, str(cause))
    outputs = [
        (o.topic, o.partition, o.key, o.value, o.timestamp, list(o.headers)) for o in task.drain_output()
    ]
    # record-e2e-latency of the source and terminal nodes; a failed task's are never read
    # (a runner discards the task), and the closures fold theirs only when a call succeeds.
    e2e = None if failure else {n: s.to_list() for n, s in task.e2e.items()}
    return outputs, failure, task.dropped_records_total, task.stream_time(), list(calls), list(log), e2e


records = st.lists(
    st.tuples(
        st.one_of(st.none(), st.sampled_from(["a", "b"])),
        st.one_of(st.integers(-2, 12), st.just(None), st.just("bad")),
        st.sampled_from([5, 9, 1, -1, 12, 0]),
        st.booleans(),
    ),
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(
    ops=st.lists(st.tuples(st.sampled_from(LINEAR), st.integers(0, 12)), max_size=4),
    foreach=st.booleans(),
    inputs=records,
    processing=st.sampled_from(HANDLERS),
    production=st.sampled_from(HANDLERS),
    deserialization=st.sampled_from(HANDLERS),
    extractor=st.sampled_from(EXTRACTORS),
    split=st.integers(0, 25),
)
def test_a_fused_chain_does_what_the_engine_does(
    ops: list[tuple[str, int]],
    foreach: bool,
    inputs: list[tuple[str | None, Any, int, bool]],
    processing: str,
    production: str,
    deserialization: str,
    extractor: str,
    split: int,
) -> None:
    config = _config(processing, production, deserialization, extractor)
    raws = [
        RawRecord(
            TOPIC,
            1,
            offset,
            ts,
            None if key is None else key.encode(),
            BAD_JSON if value == "bad" else None if value is None else str(value).encode(),
            Headers([("h", str(offset).encode())]) if with_header else Headers(),
        )
        for offset, (key, value, ts, with_header) in enumerate(inputs)
    ]

    engine_calls: list[Any] = []
    engine_log: list[Any] = []
    engine = _task(_topology(ops, engine_log, foreach), config, engine_calls)

    def run_engine() -> None:
        for chunk in (raws[:split], raws[split:]):  # two micro-batches
            engine.add_records(TOPIC, 1, chunk)
            while engine.process():
                engine.maybe_punctuate_stream_time()

    expected = _observe(engine, run_engine, engine_calls, engine_log)

    fused_calls: list[Any] = []
    fused_log: list[Any] = []
    task = _task(_topology(ops, fused_log, foreach), config, fused_calls)
    chain = FusedChain.of(task)
    assert chain is not None

    def run_fused() -> None:
        for chunk in (raws[:split], raws[split:]):
            chain.process(
                TOPIC,
                1,
                [r.offset for r in chunk],
                [r.timestamp for r in chunk],
                [r.key for r in chunk],
                [r.value for r in chunk],
                [r.headers.to_list() for r in chunk],
                Headers,
            )

    assert _observe(task, run_fused, fused_calls, fused_log) == expected


@settings(max_examples=150, deadline=None)
@given(
    ops=st.lists(st.tuples(st.sampled_from(LINEAR), st.integers(0, 12)), max_size=3),
    values=st.lists(st.tuples(st.integers(0, 12), st.booleans()), max_size=10),
    processing=st.sampled_from(HANDLERS),
    production=st.sampled_from(HANDLERS),
)
def test_a_chain_fused_after_a_node_does_what_forward_from_does(
    ops: list[tuple[str, int]], values: list[tuple[int, bool]], processing: str, production: str
) -> None:
    config = _config(processing, production, "log_and_fail", EXTRACTORS[0])
    entry = "KSTREAM-SOURCE-0000000000"

    def feed(forward: Any) -> None:
        for i, (value, with_header) in enumerate(values):
            headers = Headers([("h", b"x")]) if with_header else Headers()
            context = ProcessorRecordContext(100 + i, 40 + i, 1, "upstream", headers)
            forward(Record(f"k{i}", value, 100 + i, headers), context)

    engine_calls: list[Any] = []
    engine_log: list[Any] = []
    engine = _task(_topology(ops, engine_log, False), config, engine_calls)
    expected = _observe(
        engine, lambda: feed(lambda r, c: engine.forward_from(entry, r, c)), engine_calls, engine_log
    )

    fused_calls: list[Any] = []
    fused_log: list[Any] = []
    task = _task(_topology(ops, fused_log, False), config, fused_calls)
    chain = FusedChain.after(task, entry)
    assert chain is not None

    def forward_value(r: Record[Any, Any], c: ProcessorRecordContext) -> None:
        chain.forward_value(r.key, r.value, r.timestamp, c.topic or "", c.partition, c.offset, r.headers)

    assert _observe(task, lambda: feed(forward_value), fused_calls, fused_log) == expected


def test_only_lines_of_fusable_operators_are_fused() -> None:
    config = {"application.id": "app", "bootstrap.servers": "x:1"}
    fusable = _topology([("filter", 0), ("map", 0)], [], False)
    assert FusedChain.of(_task_plain(fusable, config)) is not None
    branching = _topology([("merge", 0)], [], False)
    assert FusedChain.of(_task_plain(branching, config)) is None
    builder = StreamsBuilder()
    serdes = Serdes.String(), Serdes.String()
    builder.stream(TOPIC, Consumed.with_(*serdes)).process(_Passing).to(
        OUT, Produced.with_(*serdes)
    )  # sees the context
    assert FusedChain.of(_task_plain(builder.build(), config)) is None
    wall = {**config, "default.timestamp.extractor": "WallclockTimestampExtractor"}
    assert FusedChain.of(_task_plain(fusable, wall)) is None


class _Passing(Processor[Any, Any]):
    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(record)

    def fuse(self, forward: Any) -> Any:  # a user's method of that name does not make it fusable
        raise AssertionError("a user processor was fused")


def _task_plain(topology: Any, config: dict[str, Any]) -> StreamTask:
    builder = topology.internal_builder
    task = StreamTask("0_0", builder.build_topology(builder.node_groups()[0]), StreamsConfig(config))
    task.initialize()
    return task


@pytest.mark.parametrize("value", [b"7", BAD_JSON])
def test_records_already_queued_in_the_task_go_first(value: bytes) -> None:
    config = {
        "application.id": "app",
        "bootstrap.servers": "x:1",
        "deserialization.exception.handler": "log_and_continue",
    }
    task = _task_plain(_topology([("map_values", 99)], [], False), config)
    task.add_records(TOPIC, 0, [RawRecord(TOPIC, 0, 0, 10, b"k", value)])
    chain = FusedChain.of(task)
    assert chain is not None
    chain.process(TOPIC, 0, [1], [11], [b"k"], [b"1"], [None], Headers)
    got = [(o.key, o.value) for o in task.drain_output()]
    assert got == ([(b"k", b"8")] if value == b"7" else []) + [(b"k", b"2")]
    assert task.stream_time() == 11
