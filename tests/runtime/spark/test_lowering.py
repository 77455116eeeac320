"""Which counts the Spark runner computes natively: only those whose result is the engine's, byte for byte."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import pytest

from kspark import (
    Consumed,
    EmitStrategy,
    Grouped,
    KeyValue,
    Materialized,
    Produced,
    SlidingWindows,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
    Topology,
)
from kspark.config import StreamsConfig
from kspark.processor import Processor, Record
from kspark.runtime.spark.lowering import NativeCount, native_count
from kspark.serde import Serdes
from kspark.serde.primitives import StringDeserializer, StringSerializer, WrapperSerde

S, L, B, J = Serdes.String(), Serdes.Long(), Serdes.ByteArray(), Serdes.JSON()
LATIN1 = WrapperSerde(StringSerializer("latin-1"), StringDeserializer("latin-1"))


def _lowered(build: Callable[[StreamsBuilder], None], **config: Any) -> list[NativeCount | None]:
    b = StreamsBuilder()
    build(b)
    topology: Topology = b.build()
    builder = topology.internal_builder.set_application_id("app")
    conf = StreamsConfig({"application.id": "app", "bootstrap.servers": "x:1", **config})
    return [native_count(builder, nodes, conf) for nodes in builder.node_groups().values()]


def _count(
    consumed: Any = None, materialized: Any = None, after: Any = None
) -> Callable[[StreamsBuilder], None]:
    def build(b: StreamsBuilder) -> None:
        table = b.stream("in", consumed or Consumed.with_(S, B)).group_by_key().count(materialized)
        stream = table.to_stream()
        (after(stream) if after else stream).to("out", Produced.with_(S, L))

    return build


def test_a_plain_count_is_lowered() -> None:
    (native,) = _lowered(_count())
    assert native is not None and native.utf8_keys and native.aggregate == "KSTREAM-AGGREGATE-0000000002"


def test_the_fused_tail_starts_after_a_plain_to_stream_only() -> None:
    (native,) = _lowered(_count())
    assert native is not None and native.to_stream == "KTABLE-TOSTREAM-0000000003"

    def twice(b: StreamsBuilder) -> None:
        table = b.stream("in", Consumed.with_(S, B)).group_by_key().count()
        table.to_stream().to("out", Produced.with_(S, L))
        table.to_stream().to("out2", Produced.with_(S, L))

    (native,) = _lowered(twice)
    assert native is not None and native.to_stream is None


def test_byte_keys_and_stateless_operations_after_to_stream_are_lowered() -> None:
    (native,) = _lowered(
        _count(Consumed.with_(B, S), after=lambda s: s.filter(lambda k, v: v > 1).map_values(str))
    )
    assert native is not None and not native.utf8_keys


def test_a_count_after_a_repartition_is_lowered_in_its_own_subtopology() -> None:
    def build(b: StreamsBuilder) -> None:
        b.stream("in", Consumed.with_(S, S)).group_by(
            lambda k, v: v, Grouped.with_(S, S)
        ).count().to_stream().to("out", Produced.with_(S, L))

    first, second = _lowered(build)
    assert first is None and second is not None


class _Touch(Processor[Any, Any]):
    def process(self, record: Record[Any, Any]) -> None:
        pass


@pytest.mark.parametrize(
    ("build", "config"),
    [
        (_count(), {"statestore.cache.max.bytes": 0}),  # every update is forwarded: not a per-batch result
        (_count(materialized=Materialized.as_("c").with_caching_disabled()), {}),
        (_count(), {"spark.kspark.nativeLowering": "false"}),
        (_count(Consumed.with_(S, J)), {}),  # a value that fails to deserialize fails the engine
        (_count(Consumed.with_(L, B)), {}),  # Long keys: bytes of another length fail the engine
        (_count(materialized=Materialized.with_(L, L)), {}),  # store key serde differs from the source's
        (_count(Consumed.with_(S, B).with_timestamp_extractor(lambda r, p: 7)), {}),
        (_count(after=lambda s: s.process_values(_Touch)), {}),  # user processors may punctuate
        (_count(materialized=Materialized.with_(B, L)), {}),  # String source keys, ByteArray store keys
        (_count(Consumed.with_(LATIN1, B), materialized=Materialized.with_(LATIN1, L)), {}),  # not UTF-8
    ],
)
def test_counts_whose_result_could_differ_are_not_lowered(build: Any, config: dict[str, Any]) -> None:
    assert _lowered(build, **config) == [None]


def test_a_count_table_read_by_anything_but_to_stream_is_not_lowered() -> None:
    def build(b: StreamsBuilder) -> None:
        b.stream("in", Consumed.with_(S, B)).group_by_key().count().filter(lambda k, v: v > 1).to_stream().to(
            "out", Produced.with_(S, L)
        )

    assert _lowered(build) == [None]


def test_other_aggregations_are_not_lowered() -> None:
    def build(b: StreamsBuilder) -> None:
        grouped = b.stream("in", Consumed.with_(S, B)).group_by_key()
        grouped.aggregate(lambda: 0, lambda k, v, n: n + 1, Materialized.with_(S, L)).to_stream().to("out")

    assert _lowered(build) == [None]


def _reduce(reducer: Any, values: Any = None, materialized: Any = None) -> Callable[[StreamsBuilder], None]:
    def build(b: StreamsBuilder) -> None:
        grouped = b.stream("in", Consumed.with_(S, values or L)).group_by_key()
        table = grouped.reduce(reducer, materialized) if materialized else grouped.reduce(reducer)
        table.to_stream().to("out", Produced.with_(S, values or L))

    return build


@pytest.mark.parametrize(("reducer", "function"), [(operator.add, "sum"), (min, "min"), (max, "max")])
@pytest.mark.parametrize(("values", "size"), [(L, 8), (Serdes.Integer(), 4)])
def test_sum_min_and_max_reduces_of_long_and_integer_values_are_lowered(
    reducer: Any, function: str, values: Any, size: int
) -> None:
    (native,) = _lowered(_reduce(reducer, values))
    assert native is not None and native.reduce is not None
    assert (native.reduce.function, native.reduce.size, native.column) == (function, size, "aggregate")
    assert native.reduce.source == "KSTREAM-SOURCE-0000000000"


class _Unhashable:
    __hash__ = None  # type: ignore[assignment]

    def __call__(self, a: int, b: int) -> int:
        return a + b


@pytest.mark.parametrize(
    ("build", "config"),
    [
        (_reduce(lambda a, b: a + b), {}),  # a Python function Spark cannot see into
        (_reduce(_Unhashable()), {}),
        (_reduce(operator.add, Serdes.Double()), {}),  # floating-point sums depend on the order
        (_reduce(operator.add, J), {}),
        (_reduce(operator.add, materialized=Materialized.with_(S, Serdes.Integer())), {}),  # store serde
        (_reduce(operator.add), {"default.deserialization.exception.handler": "log_and_continue"}),
        (_reduce(operator.add), {"errors.dead.letter.queue.topic.name": "dlq"}),
        (_reduce(operator.add), {"statestore.cache.max.bytes": 0}),
        (_reduce(operator.add), {"spark.kspark.nativeLowering": "false"}),
    ],
)
def test_reduces_whose_result_or_errors_could_differ_are_not_lowered(
    build: Any, config: dict[str, Any]
) -> None:
    assert _lowered(build, **config) == [None]


# Malformed UTF-8 of every kind: truncated, overlong, surrogate, beyond U+10FFFF, stray continuation.
MALFORMED = [b"\xff", b"a\xff", b"b\xe2\x82", b"c\xc3", b"\xe2\x82\xe2", b"\xf0\x9f\x98", b"\xed\xa0\x80"]
MALFORMED += [b"\xc0\xaf", b"ok", b"\xf4\x90\x80\x80", b"x\x80y", b"\xe0\x80\x80", "é".encode()]


@pytest.mark.integration
def test_spark_groups_string_keys_as_the_engine_stores_them(spark: Any) -> None:
    from kspark.runtime.spark.lowering import count_plan

    native = NativeCount("agg", True, S.deserializer())
    rows = spark.createDataFrame(
        [(0, k, b"v", 1, 0, None, "t") for k in MALFORMED],
        "partition int, key binary, value binary, timestamp long, offset long, "
        "headers array<struct<key:string,value:binary>>, topic string",
    )
    got = {bytes(r["key"]) for r in count_plan(rows, native).collect()}
    engine = {S.serializer().serialize("t", S.deserializer().deserialize("t", k)) for k in MALFORMED}
    assert got == engine


def _windowed(windows: Any, *, then: Any = None, emit: Any = None, agg: str = "count") -> Any:
    def build(b: StreamsBuilder) -> None:
        windowed = b.stream("in", Consumed.with_(S, B)).group_by_key().windowed_by(windows)
        if emit is not None:
            windowed = windowed.emit_strategy(emit)
        if agg == "count":
            table = windowed.count()
        else:
            table = windowed.aggregate(lambda: 0, lambda k, v, n: n + 1, Materialized.with_(S, L))
        (then(table) if then else table).to_stream().map(lambda wk, n: KeyValue(wk.key, n)).to(
            "out", Produced.with_(S, L)
        )

    return build


@pytest.mark.parametrize("windows", [TimeWindows(size=5_000, grace=1_000), TimeWindows(5_000, 0, 2_000)])
def test_tumbling_and_hopping_window_counts_are_lowered(windows: TimeWindows) -> None:
    (native,) = _lowered(_windowed(windows))
    assert native is not None and native.windows == windows and native.utf8_keys


@pytest.mark.parametrize(
    "build",
    [
        _windowed(TimeWindows(size=5_000, grace=1_000), agg="aggregate"),  # a Python aggregator
        _windowed(SlidingWindows(time_difference=5_000, grace=1_000)),
        _windowed(TimeWindows(size=5_000, grace=1_000), emit=EmitStrategy.on_window_close()),
        _windowed(
            TimeWindows(size=5_000, grace=1_000), then=lambda t: t.suppress(Suppressed.until_window_closes())
        ),
    ],
)
def test_other_windowed_aggregations_are_not_lowered(build: Any) -> None:
    assert _lowered(build) == [None]


def test_a_windowed_count_without_cache_is_not_lowered() -> None:
    assert _lowered(_windowed(TimeWindows(size=5_000, grace=1_000)), **{"statestore.cache.max.bytes": 0}) == [
        None
    ]
