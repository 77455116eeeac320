"""Versioned tables (KIP-914) on the TopologyTestDriver: what changes when a KTable's store is versioned,
the grace-period stream-table join and its buffer, and the errors Kafka raises (the behaviour itself is
checked against Java by the catalog's ported_versioned scenarios)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from kspark import Consumed, Joined, Materialized, Produced, StreamsBuilder, Suppressed
from kspark.errors import TopologyException
from kspark.kstream.internals.stream_table_join_buffer import StreamTableJoinBuffer
from kspark.serde import Serdes
from kspark.state import Stores, VersionedKeyValueStore, VersionedRecord
from kspark.testing import TopologyTestDriver

S = Serdes.String()
CONFIG = {"application.id": "versioned", "default.key.serde": "string", "default.value.serde": "string"}


def _versioned(name: str, retention: int = 100) -> Materialized:
    return Materialized.as_(Stores.persistent_versioned_key_value_store(name, retention))


def _stream_table(grace: int | None, retention: int = 100, left: bool = False) -> StreamsBuilder:
    b = StreamsBuilder()
    stream = b.stream("s", Consumed.with_(S, S))
    table = b.table("t", Consumed.with_(S, S), _versioned("vt", retention))
    joined = Joined.with_(S, S, S) if grace is None else Joined.with_(S, S, S).with_grace_period(grace)
    (stream.left_join if left else stream.join)(table, lambda a, c: f"{a}+{c or 'null'}", joined).to(
        "out", Produced.with_(S, S)
    )
    return b


def _run(builder: StreamsBuilder, steps: Sequence[tuple[str, str, str | None, int]]) -> list[tuple[Any, ...]]:
    with TopologyTestDriver(builder.build(), CONFIG) as d:
        inputs = {t: d.create_input_topic(t, S, S) for t in {s[0] for s in steps}}
        out = d.create_output_topic("out", S, S)
        for topic, key, value, ts in steps:
            inputs[topic].pipe_input(key, value, timestamp=ts)
        return [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]


def test_source_table_store_is_versioned_and_queryable_through_the_driver() -> None:
    b = StreamsBuilder()
    b.table("t", Consumed.with_(S, S), _versioned("vt")).to_stream().to("out", Produced.with_(S, S))
    with TopologyTestDriver(b.build(), CONFIG) as d:
        t = d.create_input_topic("t", S, S)
        t.pipe_input("k", "v1", timestamp=1000)
        t.pipe_input("k", "v2", timestamp=1010)
        t.pipe_input("k", "v0", timestamp=1005)
        store = d.get_state_store("vt")
        assert isinstance(store, VersionedKeyValueStore)
        assert store.get("k") == VersionedRecord("v2", 1010)
        assert store.get("k", 1007) == VersionedRecord("v0", 1005)
        assert store.get("k", 999) is None
        # the timestamped/plain key-value views do not apply to a versioned store, as in Kafka
        assert d.get_key_value_store("vt") is None


def test_stream_join_without_grace_reads_the_table_as_of_the_record() -> None:
    steps = [("t", "A", "t1", 1000), ("t", "A", "t2", 1010), ("s", "A", "s1", 1005), ("s", "A", "s2", 999)]
    assert _run(_stream_table(None), steps) == [("A", "s1+t1", 1005)]


def test_grace_waits_for_later_table_updates_and_late_records_join_at_once() -> None:
    steps = [
        ("s", "A", "s1", 1000),
        ("t", "A", "t1", 999),  # arrives after the stream record it precedes
        ("s", "B", "s2", 1005),  # stream time 1005: s1 (1000) is still within grace 10
        ("s", "B", "s3", 1011),  # passes 1000 + 10: s1 joins t1
        ("s", "A", "late", 990),  # older than 1011 - 10: joined at once (no table then)
    ]
    assert _run(_stream_table(10, left=True), steps) == [
        ("A", "s1+t1", 1000),
        ("A", "late+null", 990),
    ]


def test_grace_buffer_is_a_named_store_of_the_join_and_restores_from_its_changelog() -> None:
    topology = _stream_table(10).build()
    described = str(topology.describe())
    assert "KSTREAM-JOIN-0000000003 (stores: [KSTREAM-JOIN-0000000003-Buffer, vt])" in described
    with TopologyTestDriver(topology, CONFIG) as d:
        s = d.create_input_topic("s", S, S)
        s.pipe_input("A", "x", timestamp=1000)
        s.pipe_input("B", "y", timestamp=1004)
        buffer = d.get_state_store("KSTREAM-JOIN-0000000003-Buffer")
        assert isinstance(buffer, StreamTableJoinBuffer)
        assert buffer.num_records() == 2
    logged: list[tuple[bytes, bytes | None, int]] = []

    class Ctx:
        def log_change(self, store: str, key: bytes, value: bytes | None, ts: int) -> None:
            logged.append((key, value, ts))

        def key_serde(self) -> Any:
            return S

        def value_serde(self) -> Any:
            return S

    original = StreamTableJoinBuffer("b", 10, "join", True)
    original.init(Ctx(), original)  # type: ignore[arg-type]
    from kspark.processor.api import Headers, Record
    from kspark.processor.internals.records import ProcessorRecordContext

    for key, ts in (("A", 1000), ("B", 1004), ("C", 1020)):
        original.put(Record(key, "v" + key, ts), ProcessorRecordContext(ts, 0, 0, "s", Headers()))
    evicted: list[Any] = []
    original.evict_expired(lambda k, v, rc: evicted.append((k, v, rc.timestamp)))
    assert evicted == [("A", "vA", 1000), ("B", "vB", 1004)]
    restored = StreamTableJoinBuffer("b", 10, "join", True)
    restored.init(Ctx(), restored)  # type: ignore[arg-type]
    restored.restore_batch(list(logged))
    assert restored.num_records() == 1 and restored.observed_stream_time == 1020


def test_grace_needs_a_versioned_table() -> None:
    b = StreamsBuilder()
    stream = b.stream("s", Consumed.with_(S, S))
    table = b.table("t", Consumed.with_(S, S), Materialized.as_("plain"))
    with pytest.raises(ValueError, match="KTable must be versioned to use a grace period"):
        stream.join(table, lambda a, c: a, Joined.with_(S, S, S).with_grace_period(10))


def test_grace_longer_than_history_retention_is_refused_at_build() -> None:
    with pytest.raises(ValueError, match="History retention must be at least grace period"):
        _stream_table(grace=200, retention=100).build()


def test_negative_grace_is_refused() -> None:
    with pytest.raises(ValueError, match="grace period cannot be negative"):
        _stream_table(grace=-1)


def test_suppress_of_a_versioned_table_is_refused() -> None:
    b = StreamsBuilder()
    table = b.table("t", Consumed.with_(S, S), _versioned("vt"))
    table.filter(lambda k, v: True).suppress(Suppressed.until_time_limit(10)).to_stream().to("out")
    with pytest.raises(TopologyException, match="suppress\\(\\) is only supported for non-versioned KTables"):
        b.build()


def test_versioned_table_never_caches() -> None:
    b = StreamsBuilder()
    b.table("t", Consumed.with_(S, S), _versioned("vt").with_caching_enabled()).to_stream().to("out")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        t = d.create_input_topic("t", S, S)
        out = d.create_output_topic("out", S, S)
        t.pipe_input("k", "v1", timestamp=1)
        t.pipe_input("k", "v2", timestamp=2)
        assert out.read_values_to_list() == ["v1", "v2"]


def test_a_global_table_cannot_be_versioned() -> None:
    b = StreamsBuilder()
    with pytest.raises(TopologyException, match=r"GlobalTables cannot be versioned.*'g'.*'vg'"):
        b.global_table("g", Consumed.with_(S, S), _versioned("vg"))


def _fk_join(left_versioned: bool, right_versioned: bool) -> StreamsBuilder:
    b = StreamsBuilder()
    left = b.table("l", Consumed.with_(S, S), _versioned("vl") if left_versioned else Materialized.as_("pl"))
    right = b.table(
        "r", Consumed.with_(S, S), _versioned("vr") if right_versioned else Materialized.as_("pr")
    )
    joined = left.join(right, lambda v: v.split("|")[1], lambda a, c: f"{a}+{c}", Materialized.with_(None, S))
    joined.to_stream().to("out", Produced.with_(S, S))
    return b


def _fk_run(
    builder: StreamsBuilder, steps: Sequence[tuple[str, str, str | None, int]]
) -> tuple[list[Any], float]:
    with TopologyTestDriver(builder.build(), CONFIG) as d:
        inputs = {t: d.create_input_topic(t, S, S) for t in ("l", "r")}
        out = d.create_output_topic("out", S, S)
        for topic, key, value, ts in steps:
            inputs[topic].pipe_input(key, value, timestamp=ts)
        return [(kv.key, kv.value) for kv in out.read_key_values_to_list()], d.dropped_records_total()


_FK_STEPS = [
    ("r", "r1", "x1", 10),
    ("l", "a", "va|r1", 10),
    ("r", "r1", "x0", 5),  # out of order on the right
    ("l", "a", "vb|r1", 6),  # out of order on the left
    ("r", "r1", "x2", 11),
]


@pytest.mark.parametrize(
    ("left_versioned", "right_versioned", "expected", "dropped"),
    [
        # both plain: every update joins
        (False, False, [("a", "va|r1+x1"), ("a", "va|r1+x0"), ("a", "vb|r1+x0"), ("a", "vb|r1+x2")], 0),
        # a versioned right table: its out-of-order update answers no subscriber
        (False, True, [("a", "va|r1+x1"), ("a", "vb|r1+x1"), ("a", "vb|r1+x2")], 1),
        # a versioned left table: its out-of-order update sends no subscription
        (True, False, [("a", "va|r1+x1"), ("a", "va|r1+x0"), ("a", "va|r1+x2")], 1),
        (True, True, [("a", "va|r1+x1"), ("a", "va|r1+x2")], 2),
    ],
)
def test_a_foreign_key_join_skips_out_of_order_updates_of_a_versioned_table(
    left_versioned: bool, right_versioned: bool, expected: list[Any], dropped: int
) -> None:
    assert _fk_run(_fk_join(left_versioned, right_versioned), _FK_STEPS) == (expected, dropped)
