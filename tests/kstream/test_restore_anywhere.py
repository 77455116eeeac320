"""Property: a task restored after any record continues exactly as an uninterrupted one.

On the Spark runner a task is rebuilt from its changelogs whenever it runs in another Python
worker than in its last micro-batch, so the input is cut into slices at arbitrary record
boundaries. For windowed counts (tumbling/hopping, sliding, session), emit-on-window-close,
suppression of final results and left/outer stream-stream joins, over out-of-order input with
late records, the outputs of a run cut into random slices (each slice's task committed, then
replaced by a new task given its processor metadata, its stores restored from the latest
changelog record per key in random order, and its stream time) must equal one uninterrupted run.
Caching is off so outputs are compared record by record; the wall-clock emit throttles are off as
in the TopologyTestDriver (the task's wall clock does not move here).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from restore_support import Input, run_once, run_sliced

from kspark import (
    Consumed,
    EmitStrategy,
    Grouped,
    JoinWindows,
    Materialized,
    Produced,
    SessionWindows,
    SlidingWindows,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
)
from kspark.kstream.internals.stream_stream_join import EMIT_INTERVAL_MS_OUTER_JOIN
from kspark.kstream.internals.window_aggregate import EMIT_INTERVAL_MS_WINDOWED_AGGREGATION
from kspark.kstream.suppressed import BufferConfig
from kspark.serde import Serdes

STR = Serdes.String()
LONG = Serdes.Long()
CONFIG = {
    "statestore.cache.max.bytes": 0,
    EMIT_INTERVAL_MS_OUTER_JOIN: 0,
    EMIT_INTERVAL_MS_WINDOWED_AGGREGATION: 0,
}
Factory = Callable[[], Any]


def _windowed_key(k: Any, v: Any) -> tuple[str, Any]:
    return f"{k.key}@{k.window.start}/{k.window.end}", v


def _count(windowing: Callable[[Any], Any], suppress: bool = False, on_close: bool = False) -> Factory:
    def factory() -> Any:
        b = StreamsBuilder()
        windowed = windowing(b.stream("in", Consumed.with_(STR, STR)).group_by_key(Grouped.with_(STR, STR)))
        if on_close:
            windowed = windowed.emit_strategy(EmitStrategy.on_window_close())
        table = windowed.count()
        if suppress:
            table = table.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
        table.to_stream().map(_windowed_key).to("out", Produced.with_(STR, LONG))
        return b.build()

    return factory


def _time_limited_count(wait: int, max_records: int) -> Factory:
    def factory() -> Any:
        b = StreamsBuilder()
        (
            b.stream("in", Consumed.with_(STR, STR))
            .group_by_key(Grouped.with_(STR, STR))
            .count(Materialized.with_(STR, LONG))
            .suppress(
                Suppressed.until_time_limit(
                    wait, BufferConfig.max_records(max_records).emit_early_when_full()
                )
            )
            .to_stream()
            .to("out", Produced.with_(STR, LONG))
        )
        return b.build()

    return factory


def _join(join_type: str, before: int, after: int, grace: int) -> Factory:
    def factory() -> Any:
        b = StreamsBuilder()
        left = b.stream("left", Consumed.with_(STR, STR))
        right = b.stream("right", Consumed.with_(STR, STR))
        windows = JoinWindows.of_time_difference_and_grace(0, grace).before(before).after(after)
        join = {"inner": left.join, "left": left.left_join, "outer": left.outer_join}[join_type]
        join(right, lambda a, c: f"{a}+{c}", windows).to("out", Produced.with_(STR, STR))
        return b.build()

    return factory


_sizes = st.integers(1, 20)
_graces = st.integers(0, 15)


@st.composite
def _topologies(draw: st.DrawFn) -> tuple[str, Factory]:
    kinds = [
        "time", "sliding", "session", "on_close", "sliding_on_close", "suppress", "session_suppress",
        "time_limit", "inner", "left", "outer",
    ]  # fmt: skip
    kind = draw(st.sampled_from(kinds))
    grace = draw(_graces)
    if kind in ("time", "on_close", "suppress"):
        size = draw(_sizes)
        advance = draw(st.integers(1, size))
        windows = TimeWindows.of_size_and_grace(size, grace).advance_by(advance)
        return (
            f"{kind} size={size} advance={advance} grace={grace}",
            _count(lambda g: g.windowed_by(windows), kind == "suppress", kind == "on_close"),
        )
    if kind in ("sliding", "sliding_on_close"):
        diff = draw(_sizes)
        sliding = SlidingWindows.of_time_difference_and_grace(diff, grace)
        on_close = kind == "sliding_on_close"
        return f"{kind} diff={diff} grace={grace}", _count(
            lambda g: g.windowed_by(sliding), on_close=on_close
        )
    if kind in ("session", "session_suppress"):
        gap = draw(_sizes)
        sessions = SessionWindows.of_inactivity_gap_and_grace(gap, grace)
        suppress = kind == "session_suppress"
        return f"{kind} gap={gap} grace={grace}", _count(lambda g: g.windowed_by(sessions), suppress)
    if kind == "time_limit":
        wait, records = draw(st.integers(0, 20)), draw(st.integers(1, 3))
        return f"time_limit wait={wait} max_records={records}", _time_limited_count(wait, records)
    before, after = draw(st.integers(0, 10)), draw(st.integers(0, 10))
    return f"{kind} join before={before} after={after} grace={grace}", _join(kind, before, after, grace)


@st.composite
def _inputs(draw: st.DrawFn, join: bool) -> list[Input]:
    # small keys and timestamps so windows overlap, merge and close; drift then jumps make records late
    n = draw(st.integers(2, 25))
    records = []
    for i in range(n):
        topic = draw(st.sampled_from(["left", "right"])) if join else "in"
        key = draw(st.sampled_from("abc"))
        ts = draw(st.integers(0, 40)) + (i * draw(st.integers(0, 4)))
        records.append(Input(topic, key.encode(), f"{topic[0]}{i}".encode(), ts))
    return records


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_outputs_do_not_depend_on_where_the_input_is_cut(data: st.DataObject) -> None:
    name, factory = data.draw(_topologies(), label="topology")
    inputs = data.draw(_inputs(join=" join " in name), label="inputs")
    cuts = sorted(data.draw(st.sets(st.integers(1, len(inputs) - 1), min_size=1), label="cuts"))
    seed = data.draw(st.integers(0, 2**32 - 1), label="restore order seed")
    rng = random.Random(seed)
    whole = run_once(factory, CONFIG, inputs).outputs
    sliced = run_sliced(factory, CONFIG, inputs, cuts, rng.shuffle)
    assert sliced == whole, name


def test_a_late_record_stays_dropped_after_a_restore() -> None:
    # the Spark symptom: one record per micro-batch, a record 21 s late at grace 5 s was counted
    factory = _count(lambda g: g.windowed_by(TimeWindows.of_size_and_grace(10_000, 5_000)))
    inputs = [Input("in", b"k", b"v", ts) for ts in (1_000, 32_726, 11_538, 32_800)]
    whole = run_once(factory, CONFIG, inputs).outputs
    sliced = run_sliced(factory, CONFIG, inputs, [1, 2, 3], random.Random(0).shuffle)
    assert [(r.key, r.timestamp) for r in whole] == [
        (b"k@0/10000", 1_000),
        (b"k@30000/40000", 32_726),
        (b"k@30000/40000", 32_800),
    ]
    assert sliced == whole


def test_processors_keep_their_times_under_keys_named_after_their_stores_or_join() -> None:
    windowed = [Input("in", b"a", b"v", ts) for ts in (5, 30, 2)]
    final = _count(lambda g: g.windowed_by(TimeWindows.of_size_and_grace(10, 5)), suppress=True)
    assert run_once(final, CONFIG, windowed).task.processor_metadata == {
        "KSTREAM-AGGREGATE-STATE-STORE-0000000001:observed-stream-time": 30,
        "KTABLE-SUPPRESS-STATE-STORE-0000000004:observed-stream-time": 30,
    }
    sessions = _count(lambda g: g.windowed_by(SessionWindows.of_inactivity_gap_and_grace(10, 5)))
    assert run_once(sessions, CONFIG, windowed).task.processor_metadata == {
        "KSTREAM-AGGREGATE-STATE-STORE-0000000001:observed-stream-time": 30,
    }
    joined = [Input("left", b"a", b"v", 5), Input("right", b"b", b"v", 30), Input("left", b"c", b"v", 2)]
    throttled = {**CONFIG, EMIT_INTERVAL_MS_OUTER_JOIN: 1000}
    # a@5 closed at 30 and was emitted (the scan leaves min time at the last parked time); the wall
    # clock stays at 0, so the next emit may come at 1000
    assert run_once(_join("outer", 3, 3, 2), throttled, joined).task.processor_metadata == {
        "KSTREAM-OUTERTHIS-0000000004:stream-time": 30,
        "KSTREAM-OUTERTHIS-0000000004:min-time": 5,
        "KSTREAM-OUTERTHIS-0000000004:next-time-to-emit": 1000,
    }
