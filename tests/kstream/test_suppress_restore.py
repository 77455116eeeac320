"""The suppression buffer survives a task restore: a task rebuilt from its changelog emits what an
uninterrupted task emits (what the Spark runner relies on for cold tasks)."""

from __future__ import annotations

from typing import Any

import pytest
from restore_support import Input, decoded, run_once, run_split

from kspark import Consumed, Grouped, Materialized, Produced, StreamsBuilder, Suppressed, TimeWindows
from kspark.kstream.suppressed import BufferConfig
from kspark.serde import Serdes

STR = Serdes.String()
LONG = Serdes.Long()


def _s(text: str) -> bytes:
    return text.encode()


def _long(raw: bytes) -> Any:
    return LONG.deserializer().deserialize("out", raw)


def _final_results() -> Any:
    b = StreamsBuilder()
    (
        b.stream("in", Consumed.with_(STR, STR))
        .group_by_key(Grouped.with_(STR, STR))
        .windowed_by(TimeWindows.of_size_and_grace(10, 5))
        .count()
        .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
        .to_stream()
        .map(lambda k, v: (f"{k.key}@{k.window.start}/{k.window.end}", v))
        .to("out", Produced.with_(STR, LONG))
    )
    return b.build()


def _time_limit() -> Any:
    b = StreamsBuilder()
    (
        b.stream("in", Consumed.with_(STR, STR))
        .group_by_key(Grouped.with_(STR, STR))
        .count(Materialized.with_(STR, LONG))
        .suppress(Suppressed.until_time_limit(10, BufferConfig.max_records(3)))
        .to_stream()
        .to("out", Produced.with_(STR, LONG))
    )
    return b.build()


# in order at the split points, as a restarted task's processors re-derive stream time from the
# records they see (Kafka 4.0 keeps the suppress processor's observed stream time in memory only)
FINAL_INPUTS = [
    Input("in", _s(k), _s("v"), ts)
    for k, ts in [
        ("a", 0), ("b", 1), ("a", 3), ("a", 9), ("b", 12), ("a", 13), ("c", 14),
        ("a", 2), ("b", 16), ("b", 18), ("c", 19), ("a", 25), ("c", 26), ("b", 40),
    ]
]  # fmt: skip

TIME_LIMIT_INPUTS = [
    Input("in", _s(k), _s("v"), ts)
    for k, ts in [
        ("a", 0), ("b", 2), ("a", 4), ("c", 6), ("d", 7), ("a", 11), ("e", 12),
        ("b", 13), ("a", 20), ("f", 21), ("g", 22), ("a", 30), ("h", 41), ("i", 60),
    ]
]  # fmt: skip


def test_final_results_uninterrupted_run() -> None:
    run = run_once(_final_results, {}, FINAL_INPUTS)
    # stream time 25 closes windows ending at or before 20 (end + grace 5 <= 25); 40 closes [20, 30)
    assert decoded(run.outputs, bytes.decode, _long) == [
        ("a@0/10", 4, 9),
        ("b@0/10", 1, 1),
        ("a@10/20", 1, 13),
        ("b@10/20", 3, 18),
        ("c@10/20", 2, 19),
        ("a@20/30", 1, 25),
        ("c@20/30", 1, 26),
    ]


@pytest.mark.parametrize("compact", ["no", "sorted", "reversed"])
@pytest.mark.parametrize("split", [3, 5, 8, 11, 12])
def test_final_results_restored_task_emits_the_same(split: int, compact: str) -> None:
    whole, restored, first = run_split(_final_results, {}, FINAL_INPUTS, split, compact=compact)
    assert restored == whole
    topic = "restore-test-KTABLE-SUPPRESS-STATE-STORE-0000000004-changelog"
    buffer_log = [r for r in first.changelog if r.topic == topic]
    assert buffer_log, "the suppression buffer must log its changes"


def test_time_limit_uninterrupted_run() -> None:
    run = run_once(_time_limit, {}, TIME_LIMIT_INPUTS)
    assert decoded(run.outputs, bytes.decode, _long) == [
        ("a", 2, 4),  # evicted early by d: 4 keys buffered, max 3
        ("b", 1, 2),
        ("c", 1, 6),
        ("d", 1, 7),
        ("a", 4, 20),  # a kept its buffer time 11 (non-resetting), due at stream time 21
        ("e", 1, 12),
        ("b", 2, 13),
        ("f", 1, 21),
        ("g", 1, 22),
        ("a", 5, 30),
        ("h", 1, 41),
    ]


@pytest.mark.parametrize("compact", ["no", "sorted", "reversed"])
@pytest.mark.parametrize("split", [2, 4, 6, 9, 12])
def test_time_limit_restored_task_emits_the_same(split: int, compact: str) -> None:
    whole, restored, _ = run_split(_time_limit, {}, TIME_LIMIT_INPUTS, split, compact=compact)
    assert restored == whole
