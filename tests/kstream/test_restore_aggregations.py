"""Windowed, session and KTable re-grouping aggregations survive a task restore.

A task rebuilt from the changelog records of the first half of the input (all of them, or only
the latest per key in either key order, as a Spark MapState holds them) continues with exactly
the outputs of an uninterrupted task.
"""

from __future__ import annotations

from typing import Any

import pytest
from restore_support import Input, decoded, run_once, run_split

from kspark import (
    Consumed,
    Grouped,
    Materialized,
    Produced,
    SessionWindows,
    StreamsBuilder,
    TimeWindows,
)
from kspark.serde import Serdes

STR = Serdes.String()
LONG = Serdes.Long()
SPLITS = [1, 3, 5, 7, 9]
ORDERS = ["no", "sorted", "reversed"]


def _long(raw: bytes) -> Any:
    return LONG.deserializer().deserialize("out", raw)


def _windowed_count() -> Any:
    b = StreamsBuilder()
    (
        b.stream("in", Consumed.with_(STR, STR))
        .group_by_key(Grouped.with_(STR, STR))
        .windowed_by(TimeWindows.of_size_and_grace(10, 5).advance_by(5))
        .count()
        .to_stream()
        .map(lambda k, v: (f"{k.key}@{k.window.start}", v))
        .to("out", Produced.with_(STR, LONG))
    )
    return b.build()


def _session_count() -> Any:
    b = StreamsBuilder()
    (
        b.stream("in", Consumed.with_(STR, STR))
        .group_by_key(Grouped.with_(STR, STR))
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(5, 10))
        .count()
        .to_stream()
        .map(lambda k, v: (f"{k.key}@{k.window.start}/{k.window.end}", v))
        .to("out", Produced.with_(STR, Serdes.Long()))
    )
    return b.build()


def _table_regroup() -> Any:
    # count users per region: a re-keying group_by through a repartition topic, with subtractions
    b = StreamsBuilder()
    (
        b.table("users", Consumed.with_(STR, STR))
        .group_by(lambda user, region: (region, user), Grouped.with_(STR, STR))
        .count(Materialized.with_(STR, LONG))
        .to_stream()
        .to("out", Produced.with_(STR, LONG))
    )
    return b.build()


def _in(key: str, ts: int, topic: str = "in", value: str = "v") -> Input:
    return Input(topic, key.encode(), value.encode(), ts)


STREAM_INPUTS = [
    _in("a", 0), _in("b", 2), _in("a", 4), _in("a", 7), _in("b", 11),
    _in("a", 12), _in("a", 3), _in("b", 20), _in("a", 24), _in("c", 40), _in("a", 1),
]  # fmt: skip

TABLE_INPUTS = [
    _in("alice", 0, "users", "eu"), _in("bob", 1, "users", "us"), _in("carol", 2, "users", "eu"),
    _in("alice", 3, "users", "us"), _in("dave", 4, "users", "eu"), _in("bob", 5, "users", "eu"),
    _in("carol", 6, "users", "asia"), _in("erin", 7, "users", "us"), _in("alice", 8, "users", "eu"),
    _in("dave", 9, "users", "us"), _in("erin", 10, "users", "asia"),
]  # fmt: skip


def test_windowed_count_uninterrupted_run() -> None:
    outputs = decoded(run_once(_windowed_count, {}, STREAM_INPUTS).outputs, bytes.decode, _long)
    assert outputs == [
        ("a@0", 1, 0), ("b@0", 1, 2), ("a@0", 2, 4), ("a@0", 3, 7), ("a@5", 1, 7),
        ("b@5", 1, 11), ("b@10", 1, 11), ("a@5", 2, 12), ("a@10", 1, 12),
        ("a@0", 4, 7),  # a@3 at stream time 12: [0, 10) closes at 10 + 5
        ("b@15", 1, 20), ("b@20", 1, 20), ("a@15", 1, 24), ("a@20", 1, 24),
        ("c@35", 1, 40), ("c@40", 1, 40),
        # a@1 at stream time 40: too late for every window, dropped
    ]  # fmt: skip


@pytest.mark.parametrize("compact", ORDERS)
@pytest.mark.parametrize("split", SPLITS)
def test_windowed_count_restored(split: int, compact: str) -> None:
    whole, restored, _ = run_split(_windowed_count, {}, STREAM_INPUTS, split, compact=compact)
    assert restored == whole


def test_session_count_uninterrupted_run() -> None:
    outputs = decoded(run_once(_session_count, {}, STREAM_INPUTS).outputs, bytes.decode, _long)
    assert outputs == [
        ("a@0/0", 1, 0), ("b@2/2", 1, 2),
        ("a@0/0", None, 0), ("a@0/4", 2, 4),  # merged: the old session is removed
        ("a@0/4", None, 4), ("a@0/7", 3, 7), ("b@11/11", 1, 11),
        ("a@0/7", None, 7), ("a@0/12", 4, 12),
        ("a@0/12", 5, 12),  # a@3 falls inside [0, 12]
        ("b@20/20", 1, 20), ("a@24/24", 1, 24), ("c@40/40", 1, 40),
    ]  # fmt: skip


@pytest.mark.parametrize("compact", ORDERS)
@pytest.mark.parametrize("split", SPLITS)
def test_session_count_restored(split: int, compact: str) -> None:
    whole, restored, _ = run_split(_session_count, {}, STREAM_INPUTS, split, compact=compact)
    assert restored == whole


def test_table_regroup_uninterrupted_run() -> None:
    outputs = decoded(run_once(_table_regroup, {}, TABLE_INPUTS).outputs, bytes.decode, _long)
    # each move subtracts from the old region first, then adds to the new one
    assert outputs == [
        ("eu", 1, 0), ("us", 1, 1), ("eu", 2, 2), ("eu", 1, 3), ("us", 2, 3), ("eu", 2, 4),
        ("us", 1, 5), ("eu", 3, 5), ("eu", 2, 6), ("asia", 1, 6), ("us", 2, 7), ("us", 1, 8),
        ("eu", 3, 8), ("eu", 2, 9), ("us", 2, 9), ("us", 1, 10), ("asia", 2, 10),
    ]  # fmt: skip


@pytest.mark.parametrize("compact", ORDERS)
@pytest.mark.parametrize("split", SPLITS)
def test_table_regroup_restored(split: int, compact: str) -> None:
    whole, restored, _ = run_split(_table_regroup, {}, TABLE_INPUTS, split, compact=compact)
    assert restored == whole
