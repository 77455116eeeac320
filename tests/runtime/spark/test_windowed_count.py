"""The native windowed count computes, per micro-batch, what the engine's windowed count forwards.

The stage runs here on in-memory stand-ins for Spark's state (the
integration and conformance suites run it on Spark). The reference is the
TopologyTestDriver with the record cache off, fed the same batches: after
each batch, the stage must have forwarded exactly the latest update of
every window the batch changed -- what Kafka Streams' cache forwards at a
commit -- with the same value and timestamp.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from state_fakes import HandleLike

from kspark import Consumed, Produced, StreamsBuilder, TimeWindows
from kspark.config import StreamsConfig
from kspark.processor.api import Headers
from kspark.processor.internals.records import OutputRecord
from kspark.runtime.spark import task_commit, task_state, warm, windowed_count
from kspark.runtime.spark.lowering import native_count
from kspark.runtime.spark.shuffle import task_grouping_key
from kspark.runtime.spark.tasks import TopologySpec
from kspark.runtime.spark.windowed_count import WindowedCountStage
from kspark.serde import Serdes
from kspark.serde.windowed import window_store_key_parts
from kspark.testing import TopologyTestDriver

S, L = Serdes.String(), Serdes.Long()
SIZE = 10_000


def _topology(windows: TimeWindows) -> Any:
    b = StreamsBuilder()
    (
        b.stream("in", Consumed.with_(S, S))
        .group_by_key()
        .windowed_by(windows)
        .count()
        .to_stream()
        .to("out", Produced.with_(Serdes.time_windowed(S, SIZE), L))
    )
    return b.build()


class _Sent:
    """Stands in for the stage's RecordSender: keeps what would have gone to Kafka."""

    records: ClassVar[list[OutputRecord]] = []

    def __init__(self, conf: Any) -> None:
        pass

    def send(self, records: list[OutputRecord]) -> None:
        _Sent.records.extend(records)

    def close(self) -> int:
        return len(_Sent.records)


class _Headers:
    """Stands in for the stage's HeaderReader: the headers each offset of "in" holds, and what
    was asked for (the stage must ask only for records that had headers)."""

    held: ClassVar[dict[int, Headers]] = {}
    asked: ClassVar[list[int]] = []

    @staticmethod
    def of_application(config: Any) -> _Headers:
        return _Headers()

    def read(self, topic: str, partition: int, offsets: list[int]) -> dict[int, Headers]:
        assert (topic, partition) == ("in", 0)
        _Headers.asked += offsets
        return {o: _Headers.held[o].copy() for o in offsets}

    def close(self) -> None:
        pass


def _decoded(records: list[OutputRecord]) -> dict[Any, tuple[int, int, list[Any]]]:
    """key -> (count, timestamp, headers) of the last record per key."""
    tw = Serdes.time_windowed(S, SIZE).deserializer()
    return {
        repr(tw.deserialize("out", r.key)): (
            L.deserializer().deserialize("out", r.value),
            r.timestamp,
            list(r.headers),
        )
        for r in records
        if r.topic == "out"
    }


def _logged(records: list[OutputRecord]) -> dict[Any, tuple[int, int]]:
    """key@start -> (count, timestamp) of the last changelog record per window: what the stage
    wrote to its store's changelog topic (as the engine's window store logs: key + start +
    sequence number 0, the plain count)."""
    out = {}
    for r in records:
        if r.topic.endswith("-changelog"):
            assert r.key is not None and r.value is not None and r.partition == 0
            key, start, seqnum = window_store_key_parts(r.key)
            assert seqnum == 0
            out[f"[{key.decode()}@{start}/{start + SIZE}]"] = (
                L.deserializer().deserialize("", r.value),
                r.timestamp,
            )
    return out


class _Run:
    """One task of the stage over successive micro-batches, and the driver over the same records."""

    def __init__(
        self, windows: TimeWindows, monkeypatch: Any, instance: str = "i", cache_bytes: int = 1 << 20
    ) -> None:
        monkeypatch.setattr(task_commit, "RecordSender", _Sent)  # the stage's at-least-once writes
        monkeypatch.setattr(windowed_count, "HeaderReader", _Headers)
        _Headers.held, _Headers.asked = {}, []
        topology = _topology(windows)
        config = {"application.id": "wc", "bootstrap.servers": "x:1", "statestore.cache.max.bytes": 0}
        builder = topology.internal_builder.set_application_id("wc")
        (nodes,) = builder.node_groups().values()
        cached = StreamsConfig({**config, "statestore.cache.max.bytes": 1 << 20})
        native = native_count(builder, nodes, cached)
        assert native is not None and native.windows == windows
        self.spec = TopologySpec(
            topology, {**config, "statestore.cache.max.bytes": cache_bytes}, 0, {}, instance, {}
        )
        self.stage = WindowedCountStage(self.spec, native, "in")
        self.handle = HandleLike()
        self.stage.init(self.handle)
        self.driver = TopologyTestDriver(_topology(windows), config)
        self.input = self.driver.create_input_topic("in", S, S)
        self.output = self.driver.create_output_topic("out", Serdes.time_windowed(S, SIZE), L)
        self.offset = 0

    def batch(
        self, records: list[tuple[str | None, int]], in_order: bool = False
    ) -> tuple[dict[Any, Any], dict[Any, Any]]:
        """(what the stage forwarded, what the driver's last update per window was) for one batch."""
        import pandas as pd

        rows = []
        for key, ts in records:
            # A header names the record (the one forwarded is each window's latest record's);
            # every third record has none.
            headers = [("offset", str(self.offset).encode())] if self.offset % 3 else []
            self.input.pipe_input(key, f"v{self.offset}", timestamp=ts, headers=headers)
            _Headers.held[self.offset] = Headers(headers)
            rows.append((None if key is None else key.encode(), ts, self.offset, bool(headers)))
            self.offset += 1
        expected = {
            repr(r.key): (r.value, r.timestamp, list(r.headers)) for r in self.output.read_records_to_list()
        }
        if not rows:  # Spark does not call a task without input
            return {}, expected
        _Sent.records = []
        frame = pd.DataFrame(rows, columns=["key", "timestamp", "offset", "has_headers"])
        # Spark may hand a task's rows in several frames, and not in offset order.
        if in_order:  # as Spark usually hands them: Arrow batches of 10 rows
            frames = [frame.iloc[i : i + 10] for i in range(0, len(frame), 10)]
        else:
            frames = [frame.iloc[1::2], frame.iloc[::2]] if len(frame) > 1 else [frame]
        _Headers.asked = []
        (written,) = list(self.stage.handleInputRows((task_grouping_key(0, 1),), iter(frames), None))
        assert int(written["written"][0]) == len(_Sent.records)
        assert all(_Headers.held[o] for o in _Headers.asked)  # never read for a record without
        forwarded = _decoded(_Sent.records)
        assert _logged(_Sent.records) == {k: (count, ts) for k, (count, ts, _) in forwarded.items()}
        return forwarded, expected


def _cut(records: list[tuple[str | None, int]], cuts: list[int]) -> list[list[tuple[str | None, int]]]:
    edges = [0, *sorted(c % (len(records) + 1) for c in cuts), len(records)]
    return [records[a:b] for a, b in itertools.pairwise(edges)]


# On a 500 ms grid, records land exactly on window ends and close times.
_records = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c", None]), st.integers(min_value=1, max_value=120).map(lambda t: t * 500)
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(
    records=_records,
    cuts=st.lists(st.integers(min_value=0, max_value=60), max_size=4),
    hopping=st.booleans(),
    evict=st.booleans(),
    small_cache=st.booleans(),
    in_order=st.booleans(),
)
def test_every_batch_forwards_the_latest_update_of_each_changed_window(
    records: list[tuple[str | None, int]],
    cuts: list[int],
    hopping: bool,
    evict: bool,
    small_cache: bool,
    in_order: bool,
) -> None:
    """With a small cache the stage also forwards before the batch ends (as a full cache
    does): the last record per window is still the batch's latest update."""
    windows = TimeWindows(size=SIZE, grace=4_000, advance=5_000 if hopping else None)
    with pytest.MonkeyPatch.context() as mp:
        run = _Run(windows, mp, cache_bytes=1 if small_cache else 1 << 20)
        for batch in _cut(records, cuts):
            if evict:  # the task ran elsewhere: restored from the changelog state
                warm.evict_warm(run.spec, 0)
            got, expected = run.batch(batch, in_order)
            assert got == expected
        run.driver.close()


def test_counts_survive_compaction_and_restore(monkeypatch: Any) -> None:
    monkeypatch.setattr(task_state, "COMPACT_AFTER_ROWS", 3)
    run = _Run(TimeWindows(size=SIZE, grace=4_000), monkeypatch, instance="compact")
    for n in range(10):
        batch = [(k, 3_000 * n + 100 * i) for i, k in enumerate(["a", "b", "a", "c"])]
        warm.evict_warm(run.spec, 0)
        got, expected = run.batch(batch)
        assert got == expected
    assert len(run.handle.lists["changelog"].rows) <= 3


def test_a_full_cache_forwards_within_the_batch_and_memory_stays_bounded(monkeypatch: Any) -> None:
    """A batch far larger than the cache: windows are forwarded (and closed ones forgotten) as
    the cache fills, not all at the commit; the final counts are the engine's."""
    run = _Run(TimeWindows(size=SIZE, grace=4_000), monkeypatch, instance="full", cache_bytes=600)
    peak: list[int] = []
    flush = windowed_count._Batch.flush

    def watched(batch: Any) -> None:
        peak.append(len(batch.counts))
        flush(batch)

    monkeypatch.setattr(windowed_count._Batch, "flush", watched)
    # 400 records of 5 keys 200 ms apart (80 s: 8 windows per key), handed in 40 chunks of 10
    records: list[tuple[str | None, int]] = [("abcde"[i % 5], 200 * i) for i in range(400)]
    got, expected = run.batch(records, in_order=True)
    assert got == expected
    assert len(_Sent.records) > len(expected)  # forwarded before the commit too
    assert len(peak) > 2 and max(peak) <= 3  # flushed along the way; closed windows forgotten
    # the next batch continues from the persisted state, restored elsewhere
    warm.evict_warm(run.spec, 0)
    got, expected = run.batch([("a", 79_900), ("b", 80_000)], in_order=True)
    assert got == expected


def test_closed_windows_are_forgotten(monkeypatch: Any) -> None:
    run = _Run(TimeWindows(size=SIZE, grace=4_000), monkeypatch, instance="forget")
    run.batch([("a", 1_000), ("b", 2_000)])
    run.batch([("a", 50_000)])  # window [0, 10000) closed at 14,000
    kept = warm.warm_entry(run.spec, 0)
    assert kept is not None and sorted(kept.latest) == [50_000 - 50_000 % SIZE]


def test_dropped_records_are_logged_as_the_engine_logs_them(monkeypatch: Any, caplog: Any) -> None:
    run = _Run(TimeWindows(size=SIZE, grace=4_000), monkeypatch, instance="log")
    with caplog.at_level(logging.WARNING):
        got, expected = run.batch([("a", 30_000), ("a", 1_000), (None, 31_000)])
    assert got == expected
    messages = [r.getMessage() for r in caplog.records]
    assert any(
        "record for expired window: timestamp=[1000] window=[0,10000) expiration=[26000] streamTime=[30000]"
        in m
        and "offset=[1]" in m
        for m in messages
    ), messages
    assert any("null key" in m and "offset=[2]" in m for m in messages), messages


def test_a_window_open_by_one_millisecond_survives_a_restore(monkeypatch: Any) -> None:
    """Only closed windows are left out of the changelog state: one a later record can still
    reach is restored with its count."""
    run = _Run(TimeWindows(size=SIZE, grace=4_000), monkeypatch, instance="edge")
    # stream time 23,999: window [10000, 20000) closes at 24,000 (end + grace)
    got, expected = run.batch([("a", 10_000), ("b", 23_999)])
    assert got == expected
    warm.evict_warm(run.spec, 0)  # the next batch runs on another worker
    got, expected = run.batch([("a", 10_500)])
    assert got == expected and [(n, ts) for n, ts, _ in got.values()] == [(2, 10_500)]
