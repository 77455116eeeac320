"""Stream-stream self-joins without Kafka's self-join optimization: an ordinary join whose two
windowed nodes hang off the same parent (KStreamKStreamSelfJoinTest / StreamStreamJoinIntegrationTest
scenarios; with the optimization off Kafka gives the same results)."""

from __future__ import annotations

from typing import Any

import pytest

from kspark import Consumed, JoinWindows, Produced, StreamsBuilder
from kspark.serde import Serdes
from kspark.testing import TopologyTestDriver

STR = Serdes.String()
LONG = Serdes.Long()
CONFIG = {"application.id": "self-join", "default.key.serde": "string", "default.value.serde": "string"}


def _self_join(windows: JoinWindows, join_type: str = "inner") -> Any:
    b = StreamsBuilder()
    s = b.stream("topic1", Consumed.with_(STR, STR))
    join = {"inner": s.join, "left": s.left_join, "outer": s.outer_join}[join_type]
    join(s, lambda v, v2: f"{v}+{v2}", windows).to("out", Produced.with_(STR, STR))
    return b.build()


def _run(topology: Any, inputs: list[tuple[str, str | None, int]]) -> list[tuple[Any, Any, int]]:
    with TopologyTestDriver(topology, CONFIG) as d:
        i = d.create_input_topic("topic1", STR, STR)
        o = d.create_output_topic("out", STR, STR)
        for key, value, ts in inputs:
            i.pipe_input(key, value, timestamp=ts)
        return [(r.key, r.value, r.timestamp) for r in o.read_records_to_list()]


def test_describe_has_two_windowed_nodes_on_the_same_source() -> None:
    text = str(_self_join(JoinWindows.of_time_difference_with_no_grace(100)).describe())
    assert text == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [topic1])\n"
        "      --> KSTREAM-WINDOWED-0000000001, KSTREAM-WINDOWED-0000000002\n"
        "    Processor: KSTREAM-WINDOWED-0000000001 (stores: [KSTREAM-JOINTHIS-0000000003-store])\n"
        "      --> KSTREAM-JOINTHIS-0000000003\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: KSTREAM-WINDOWED-0000000002 (stores: [KSTREAM-JOINOTHER-0000000004-store])\n"
        "      --> KSTREAM-JOINOTHER-0000000004\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: KSTREAM-JOINOTHER-0000000004 (stores: [KSTREAM-JOINTHIS-0000000003-store])\n"
        "      --> KSTREAM-MERGE-0000000005\n"
        "      <-- KSTREAM-WINDOWED-0000000002\n"
        "    Processor: KSTREAM-JOINTHIS-0000000003 (stores: [KSTREAM-JOINOTHER-0000000004-store])\n"
        "      --> KSTREAM-MERGE-0000000005\n"
        "      <-- KSTREAM-WINDOWED-0000000001\n"
        "    Processor: KSTREAM-MERGE-0000000005 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000006\n"
        "      <-- KSTREAM-JOINTHIS-0000000003, KSTREAM-JOINOTHER-0000000004\n"
        "    Sink: KSTREAM-SINK-0000000006 (topic: out)\n"
        "      <-- KSTREAM-MERGE-0000000005\n\n"
    )


def test_single_stream_self_join() -> None:
    # KStreamKStreamSelfJoinTest.shouldMatchInnerJoinWithSelfJoinWithSingleStream. Each record first
    # reaches the this-side join (the other store does not hold it yet), then the other side, which
    # finds it in the this-side store: a record always joins itself once.
    out = _run(
        _self_join(JoinWindows.of_time_difference_with_no_grace(100)),
        [("A", "1", 1), ("B", "1", 2), ("A", "2", 3), ("B", "2", 4), ("B", "3", 5)],
    )
    assert out == [
        ("A", "1+1", 1),
        ("B", "1+1", 2),
        ("A", "2+1", 3), ("A", "1+2", 3), ("A", "2+2", 3),
        ("B", "2+1", 4), ("B", "1+2", 4), ("B", "2+2", 4),
        ("B", "3+1", 5), ("B", "3+2", 5), ("B", "1+3", 5), ("B", "2+3", 5), ("B", "3+3", 5),
    ]  # fmt: skip


def test_self_join_integration_scenario_with_null_values() -> None:
    # StreamStreamJoinIntegrationTest.testSelfJoin: key 0, values null/A/B/null/C/null/D, joiner "v-v2"
    b = StreamsBuilder()
    s = b.stream("left", Consumed.with_(LONG, STR))
    s.join(s, lambda v, v2: f"{v}-{v2}", JoinWindows.of_time_difference_and_grace(10_000, 86_400_000)).to(
        "out", Produced.with_(LONG, STR)
    )
    first = 1_000
    expected: list[list[tuple[str, int]] | None] = [
        None,
        [("A-A", 2)],
        [("B-A", 3), ("A-B", 3), ("B-B", 3)],
        None,
        [("C-A", 5), ("C-B", 5), ("A-C", 5), ("B-C", 5), ("C-C", 5)],
        None,
        [("D-A", 7), ("D-B", 7), ("D-C", 7), ("A-D", 7), ("B-D", 7), ("C-D", 7), ("D-D", 7)],
    ]
    with TopologyTestDriver(b.build(), {**CONFIG, "default.key.serde": "long"}) as d:
        i = d.create_input_topic("left", LONG, STR)
        o = d.create_output_topic("out", LONG, STR)
        for n, (value, want) in enumerate(zip([None, "A", "B", None, "C", None, "D"], expected, strict=True)):
            i.pipe_input(0, value, timestamp=first + n + 1)
            got = [(r.key, r.value, r.timestamp) for r in o.read_records_to_list()]
            assert got == [(0, v, first + ts) for v, ts in (want or [])]


SCENARIOS = [
    # shouldMatchInnerJoinWithSelfJoinDifferentBeforeAfterWindows
    (
        JoinWindows.of_time_difference_and_grace(11_000, 10_000),
        [("A", "1", 0), ("A", "2", 11000), ("B", "1", 12000), ("A", "3", 13000), ("A", "4", 15000),
         ("C", "1", 16000), ("D", "1", 17000), ("A", "5", 30000)],
    ),
    # shouldMatchInnerJoinWithSelfJoinOutOfOrderMessages
    (
        JoinWindows.of_time_difference_with_no_grace(10_000),
        [("A", "1", 0), ("A", "2", 9999), ("B", "1", 11000), ("A", "3", 13000), ("A", "4", 15000),
         ("C", "1", 16000), ("D", "1", 17000), ("A", "5", 30000), ("A", "5", 6000)],
    ),
    (
        JoinWindows.of_time_difference_and_grace(5, 3).before(2),
        [("A", "1", 10), ("A", "2", 12), ("A", "3", 16), ("A", "4", 9), ("A", "5", 30), ("A", "6", 17)],
    ),
]  # fmt: skip


@pytest.mark.parametrize("join_type", ["inner", "left", "outer"])
@pytest.mark.parametrize(("windows", "inputs"), SCENARIOS)
def test_self_join_equals_a_join_of_two_streams_fed_the_same_records(
    windows: JoinWindows, inputs: list[tuple[str, str, int]], join_type: str
) -> None:
    # KStreamKStreamSelfJoinTest compares against a join of two streams over the same topic: every
    # record reaches the this-side first, then the other side. Two topics fed in that order do the same.
    b = StreamsBuilder()
    left = b.stream("l", Consumed.with_(STR, STR))
    right = b.stream("r", Consumed.with_(STR, STR))
    join = {"inner": left.join, "left": left.left_join, "outer": left.outer_join}[join_type]
    join(right, lambda v, v2: f"{v}+{v2}", windows).to("out", Produced.with_(STR, STR))
    with TopologyTestDriver(b.build(), CONFIG) as d:
        li, ri = d.create_input_topic("l", STR, STR), d.create_input_topic("r", STR, STR)
        o = d.create_output_topic("out", STR, STR)
        for key, value, ts in inputs:
            li.pipe_input(key, value, timestamp=ts)
            ri.pipe_input(key, value, timestamp=ts)
        expected = [(r.key, r.value, r.timestamp) for r in o.read_records_to_list()]
    assert expected, "the scenario must produce join results"
    assert _run(_self_join(windows, join_type), inputs) == expected


def test_left_self_join_naming_and_outer_store() -> None:
    text = str(_self_join(JoinWindows.of_time_difference_with_no_grace(5), "left").describe())
    assert "--> KSTREAM-WINDOWED-0000000001, KSTREAM-WINDOWED-0000000002\n" in text
    assert (
        "Processor: KSTREAM-JOINTHIS-0000000003 (stores: [KSTREAM-OUTEROTHER-0000000004-store, "
        "KSTREAM-OUTERSHARED-0000000003-store])"
    ) in text
