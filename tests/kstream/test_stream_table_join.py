"""Stream-table and stream-globaltable joins; build-time errors of joins."""

from __future__ import annotations

from typing import Any

import pytest

from kspark import Joined, Repartitioned, StreamsBuilder
from kspark.errors import TopologyException
from kspark.serde import Serdes
from kspark.testing import TopologyTestDriver

S = Serdes.String()
CONFIG = {
    "application.id": "app",
    "bootstrap.servers": "dummy:9092",
    "default.key.serde": "string",
    "default.value.serde": "string",
}


def recs(d: TopologyTestDriver, topic: str) -> list[tuple[Any, Any, int]]:
    return [(r.key, r.value, r.timestamp) for r in d.create_output_topic(topic, S, S).read_records_to_list()]


def test_stream_table_join_table_update_after_stream_record_emits_nothing() -> None:
    b = StreamsBuilder()
    t = b.table("t")
    s = b.stream("s")
    s.join(t, lambda sv, tv: f"{sv}+{tv}").to("inner")
    s.left_join(t, lambda sv, tv: f"{sv}+{tv}").to("left")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        si = d.create_input_topic("s", S, S)
        ti = d.create_input_topic("t", S, S)
        si.pipe_input("k", "s1", timestamp=1)  # no table value yet
        ti.pipe_input("k", "t1", timestamp=2)  # table side never triggers
        si.pipe_input("k", "s2", timestamp=3)
        si.pipe_input(None, "s3", timestamp=4)  # inner: dropped; left: joins with None
        si.pipe_input("k", None, timestamp=5)  # dropped by both
        assert recs(d, "inner") == [("k", "s2+t1", 3)]
        assert recs(d, "left") == [("k", "s1+None", 1), ("k", "s2+t1", 3), (None, "s3+None", 4)]
        assert d.dropped_records_total() == 3


def test_stream_table_join_with_key_joiner() -> None:
    b = StreamsBuilder()
    b.stream("s").join(b.table("t"), lambda k, sv, tv: k + sv + tv).to("out")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        d.create_input_topic("t", S, S).pipe_input("k", "T", timestamp=1)
        d.create_input_topic("s", S, S).pipe_input("k", "S", timestamp=2)
        assert recs(d, "out") == [("k", "kST", 2)]


def test_join_after_key_change_repartitions_with_join_name() -> None:
    b = StreamsBuilder()
    s = b.stream("s").select_key(lambda k, v: v)
    s.join(b.table("t"), lambda a, c: a + c, Joined.as_("j")).to("out")
    text = str(b.build().describe())
    assert "Sink: j-repartition-sink (topic: j-repartition)" in text
    assert "Processor: j (stores: [t-STATE-STORE-0000000002])" in text
    with TopologyTestDriver(b.build(), CONFIG) as d:
        d.create_input_topic("t", S, S).pipe_input("x", "T", timestamp=1)
        d.create_input_topic("s", S, S).pipe_input("k", "x", timestamp=2)
        assert recs(d, "out") == [("x", "xT", 2)]


def test_global_table_join_with_key_selector() -> None:
    b = StreamsBuilder()
    g = b.global_table("g")
    s = b.stream("s")
    s.join(g, lambda k, v: v, lambda sv, gv: f"{sv}/{gv}").to("inner")
    s.left_join(g, lambda k, v: v, lambda sv, gv: f"{sv}/{gv}").to("left")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        d.create_input_topic("g", S, S).pipe_input("ref", "G", timestamp=1)
        si = d.create_input_topic("s", S, S)
        si.pipe_input("k1", "ref", timestamp=5)
        si.pipe_input("k2", "missing", timestamp=6)
        assert recs(d, "inner") == [("k1", "ref/G", 5)]
        assert recs(d, "left") == [("k1", "ref/G", 5), ("k2", "missing/None", 6)]


def test_join_of_repartitions_with_different_partition_counts_fails_at_build() -> None:
    b = StreamsBuilder()
    left = b.stream("a").repartition(Repartitioned.as_("x").with_number_of_partitions(2)).to_table()
    right = b.stream("b").repartition(Repartitioned.as_("y").with_number_of_partitions(3)).to_table()
    left.join(right, lambda p, q: p)
    with pytest.raises(TopologyException, match="do not have the same number of partitions"):
        b.build()


def test_join_arguments_are_checked() -> None:
    b = StreamsBuilder()
    with pytest.raises(ValueError, match="joiner can't be None"):
        b.stream("s").join(b.table("t"), None)
    with pytest.raises(TypeError, match="KStream, KTable or GlobalKTable"):
        b.stream("s2").join("nope", lambda a, c: a)


def test_global_left_join_keeps_a_record_whose_selected_key_is_none() -> None:
    # Kafka 4.1 KStreamKTableJoinProcessor.maybeDropRecord: a left join drops a record only for a null
    # value; a null *join key* (the selector's result) joins with null. The inner join drops it.
    b = StreamsBuilder()
    g = b.global_table("g")
    s = b.stream("s")

    def selector(k: Any, v: str) -> str | None:
        return v.split(",")[1] if "," in v else None

    s.join(g, selector, lambda sv, gv: f"{sv}+{gv}").to("inner")
    s.left_join(g, selector, lambda sv, gv: f"{sv}+{gv}").to("left")
    with TopologyTestDriver(b.build(), CONFIG) as d:
        d.create_input_topic("g", S, S).pipe_input("f", "G", timestamp=1)
        si = d.create_input_topic("s", S, S)
        si.pipe_input("k", "a,f", timestamp=2)
        si.pipe_input("k", "b", timestamp=3)  # no foreign key
        si.pipe_input(None, "c,f", timestamp=4)  # null stream key, foreign key present: joins
        assert recs(d, "inner") == [("k", "a,f+G", 2), (None, "c,f+G", 4)]
        assert recs(d, "left") == [("k", "a,f+G", 2), ("k", "b+None", 3), (None, "c,f+G", 4)]
        assert d.dropped_records_total() == 1  # only the inner join's record of step 3
