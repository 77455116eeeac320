"""Left and outer stream-stream joins survive a task restore with unmatched records still parked.

The window stores and the shared outer-join store are rebuilt from the changelog records the
first task produced; the restored task then emits exactly what an uninterrupted one emits. The
wall-clock emit throttle is off, as in Kafka's TopologyTestDriver: a restarted task starts a new
throttle period, so with throttling the two runs could only differ in *when* results appear.
"""

from __future__ import annotations

from typing import Any

import pytest
from restore_support import Input, decoded, run_once, run_split

from kspark import Consumed, JoinWindows, Produced, StreamsBuilder
from kspark.kstream.internals.outer_join_buffer import deserialize_value_list
from kspark.kstream.internals.stream_stream_join import EMIT_INTERVAL_MS_OUTER_JOIN
from kspark.serde import Serdes

STR = Serdes.String()
CONFIG = {EMIT_INTERVAL_MS_OUTER_JOIN: 0}


def _join(join_type: str) -> Any:
    def factory() -> Any:
        b = StreamsBuilder()
        left = b.stream("left", Consumed.with_(STR, STR))
        right = b.stream("right", Consumed.with_(STR, STR))
        windows = JoinWindows.of_time_difference_and_grace(10, 5)
        join = left.left_join if join_type == "left" else left.outer_join
        join(right, lambda a, c: f"{a}+{c}", windows).to("out", Produced.with_(STR, STR))
        return b.build()

    return factory


def _in(topic: str, key: str, value: str, ts: int) -> Input:
    return Input(topic, key.encode(), value.encode(), ts)


INPUTS = [
    _in("left", "a", "A0", 0),
    _in("right", "x", "X1", 1),
    _in("left", "b", "B2", 2),
    _in("left", "a", "A3", 3),  # a parked twice under different timestamps
    _in("right", "b", "b4", 4),  # b matched: leaves the outer store
    _in("left", "c", "C5", 5),
    _in("left", "c", "C5b", 5),  # two values parked under the same key and time (one list)
    _in("right", "y", "Y6", 6),
    _in("left", "d", "D12", 12),
    _in("right", "c", "c14", 14),  # joins both C5 values; removes c@5 from the outer store
    _in("left", "e", "E17", 17),
    _in("right", "z", "Z18", 18),  # stream time 18 > 0 + 10 + 5: a@0 (left) and x@1 (right) close
    _in("left", "f", "F21", 21),
    _in("left", "g", "G40", 40),
    _in("right", "h", "H60", 60),
]


def _outputs(run_outputs: Any) -> list[tuple[Any, Any, int]]:
    return decoded(run_outputs, bytes.decode, bytes.decode)


def test_left_join_uninterrupted_run() -> None:
    run = run_once(_join("left"), CONFIG, INPUTS)
    assert _outputs(run.outputs) == [
        ("b", "B2+b4", 4),
        ("c", "C5+c14", 14),
        ("c", "C5b+c14", 14),
        ("a", "A0+None", 0),
        ("a", "A3+None", 3),
        ("d", "D12+None", 12),
        ("e", "E17+None", 17),
        ("f", "F21+None", 21),
        ("g", "G40+None", 40),
    ]


def test_outer_join_uninterrupted_run() -> None:
    run = run_once(_join("outer"), CONFIG, INPUTS)
    assert _outputs(run.outputs) == [
        ("b", "B2+b4", 4),
        ("c", "C5+c14", 14),
        ("c", "C5b+c14", 14),
        ("a", "A0+None", 0),
        ("x", "None+X1", 1),
        ("a", "A3+None", 3),
        ("y", "None+Y6", 6),
        ("d", "D12+None", 12),
        ("e", "E17+None", 17),
        ("z", "None+Z18", 18),
        ("f", "F21+None", 21),
        ("g", "G40+None", 40),
    ]


@pytest.mark.parametrize("compact", ["no", "sorted"])
@pytest.mark.parametrize("split", [3, 6, 7, 9, 11, 12, 14])
@pytest.mark.parametrize("join_type", ["left", "outer"])
def test_restored_join_emits_the_same(join_type: str, split: int, compact: str) -> None:
    whole, restored, _ = run_split(_join(join_type), CONFIG, INPUTS, split, compact=compact)
    assert _outputs(restored) == _outputs(whole)
    assert restored == whole


def test_restored_join_with_duplicates_restored_out_of_order() -> None:
    whole, restored, _ = run_split(_join("left"), CONFIG, INPUTS, 7, compact="reversed")
    assert restored == whole


@pytest.mark.parametrize("split", [3, 11, 12, 14])
def test_restored_join_without_duplicates_restored_out_of_order(split: int) -> None:
    inputs = [i for i in INPUTS if i.value != b"C5b"]
    whole, restored, _ = run_split(_join("outer"), CONFIG, inputs, split, compact="reversed")
    assert restored == whole


def test_outer_store_changelog_uses_kafka_layouts() -> None:
    run = run_once(_join("outer"), CONFIG, INPUTS[:7])
    topic = "restore-test-KSTREAM-OUTERSHARED-0000000004-store-changelog"
    log = [(r.key, r.value) for r in run.changelog if r.topic == topic]
    c5 = (5).to_bytes(8, "big") + b"\x01" + b"c"
    # <timestamp><side: left=1><key> -> ListSerde of <side byte><value>; the list grows, then b is removed
    assert (c5, None) not in log
    assert [deserialize_value_list(v) for k, v in log if k == c5 and v is not None] == [
        [b"\x01C5"],
        [b"\x01C5", b"\x01C5b"],
    ]
    b2 = (2).to_bytes(8, "big") + b"\x01" + b"b"
    assert (b2, None) in log  # matched by b4: tombstone
    x1 = (1).to_bytes(8, "big") + b"\x00" + b"x"
    assert (x1, b"\x01\x00\x00\x00\x01\x00\x00\x00\x03\x00X1") in log


def test_describe_lists_the_shared_store_on_both_join_processors() -> None:
    # Kafka's KStreamKStreamJoinTest expected description lines
    text = str(_join("outer")().describe())
    assert (
        "    Processor: KSTREAM-OUTEROTHER-0000000005 (stores: [KSTREAM-OUTERTHIS-0000000004-store, "
        "KSTREAM-OUTERSHARED-0000000004-store])\n"
    ) in text
    assert (
        "    Processor: KSTREAM-OUTERTHIS-0000000004 (stores: [KSTREAM-OUTEROTHER-0000000005-store, "
        "KSTREAM-OUTERSHARED-0000000004-store])\n"
    ) in text
    left = str(_join("left")().describe())
    assert (
        "    Processor: KSTREAM-JOINTHIS-0000000004 (stores: [KSTREAM-OUTEROTHER-0000000005-store, "
        "KSTREAM-OUTERSHARED-0000000004-store])\n"
    ) in left
