"""The RocksDB session store: the in-memory segmented store's sessions, from segments on disk.

Checked against :class:`SegmentedSessionStore` (the in-memory emulation of Kafka's segmented
retention, verified against Kafka Streams by the catalog) with seeded random operations. The
contents must be equal; the order is RocksDB's (segment, then key bytes, end, start, as Kafka's
``SessionKeySchema`` lays the bytes out), where the emulation orders by end, key, then start
descending: the model's answers are put in RocksDB's order before they are compared. Then what only
a disk store has: segment directories, expiry from disk, reopening, errors.
"""

from __future__ import annotations

import os
import random
import struct
from pathlib import Path
from typing import Any

import pytest

from kspark.errors import InvalidStateStoreException, ProcessorStateException
from kspark.kstream.windowed import SessionWindow, Windowed
from kspark.serde import Serdes
from kspark.state import Stores
from kspark.state.internals.in_memory_session_store import SCAN_BY_END_UNSUPPORTED
from kspark.state.internals.metered import innermost
from kspark.state.internals.rocksdb_session_store import RocksDBSessionStore
from kspark.state.internals.segmented_stores import SegmentedSessionStore, segment_id

from .conftest import FakeContext
from .test_rocksdb_window_store import DirContext, segment_dirs

S = Serdes.String()
KEYS = [b"a", b"b", b"ab", b"ba", b"c", b"abc"]


def open_rocks(
    retention: int, state_dir: str | None = None, task: str = "0_0"
) -> tuple[RocksDBSessionStore, DirContext]:
    store = RocksDBSessionStore("s", retention, max(retention // 2, 60_000))
    ctx = DirContext(state_dir, task)
    store.init(ctx, store)
    return store, ctx


def open_model(retention: int) -> tuple[SegmentedSessionStore, FakeContext]:
    store = SegmentedSessionStore("s", retention, max(retention // 2, 60_000))
    ctx = FakeContext()
    store.init(ctx, store)
    return store, ctx


def sessions(it: Any) -> list[tuple[bytes, int, int, bytes]]:
    with it:
        return [(kv.key.key, kv.key.window.start, kv.key.window.end, kv.value) for kv in it]


def rocksdb_order(found: list[tuple[bytes, int, int, bytes]], interval: int, forward: bool) -> list[Any]:
    """The model's sessions in RocksDB's order: segment, then key + end + start bytes."""
    return sorted(
        found,
        key=lambda s: (segment_id(s[2], interval), s[0] + struct.pack(">qq", s[2], s[1])),
        reverse=not forward,
    )


def changelog_key(key: bytes, start: int, end: int) -> bytes:
    return key + struct.pack(">qq", end, start)


# -- the same sessions as the in-memory segmented store ----------------------------------------------


def _random_end(rng: random.Random, observed: int, retention: int) -> int:
    # around the retention boundary, sometimes far ahead; never negative (see the window store test)
    if rng.random() < 0.05:
        return observed + rng.randint(retention, 4 * retention)
    return max(0, observed + rng.randint(-2 * retention, retention // 3))


def _random_window(rng: random.Random, observed: int, retention: int) -> SessionWindow:
    end = _random_end(rng, observed, retention)
    # several sessions of one key may share an end: the orders differ there too
    start = max(0, end - rng.choice([0, 0, 1, 50, 5_000]))
    return SessionWindow(start, end)


def _run_differential(seed: int) -> int:
    rng = random.Random(seed)
    retention = rng.choice([120_000, 200_000, 59_000])
    interval = max(retention // 2, 60_000)
    rocks, rctx = open_rocks(retention)
    model, mctx = open_model(retention)
    checks = 0
    try:
        for step in range(400):
            observed = max(model.observed_stream_time(), 0)
            op = rng.random()
            what = f"seed {seed} step {step}"
            if op < 0.40:
                session_key = Windowed(rng.choice(KEYS), _random_window(rng, observed, retention))
                value = None if rng.random() < 0.1 else b"v%d" % step
                rocks.put(session_key, value)
                model.put(session_key, value)
            elif op < 0.47:
                session_key = Windowed(rng.choice(KEYS), _random_window(rng, observed, retention))
                rocks.remove(session_key)
                model.remove(session_key)
            elif op < 0.52:
                batch = []
                for _ in range(rng.randint(1, 6)):
                    w = _random_window(rng, observed, retention)
                    value = None if rng.random() < 0.2 else b"r%d" % rng.randint(0, 99)
                    batch.append((changelog_key(rng.choice(KEYS), w.start, w.end), value))
                rocks.restore(batch)
                model.restore(batch)
            elif op < 0.62:
                key, window = rng.choice(KEYS), _random_window(rng, observed, retention)
                start, end = window.start, window.end
                if rng.random() < 0.5:  # often one that exists
                    with model.fetch_range(None, None) as it:
                        stored = [kv.key for kv in it]
                    if stored:
                        chosen = rng.choice(stored)
                        key, start, end = chosen.key, chosen.window.start, chosen.window.end
                value_found = rocks.fetch_session(key, start, end)
                assert value_found == model.fetch_session(key, start, end), what
            else:
                earliest_end = _random_end(rng, observed, retention)
                latest_start = earliest_end + rng.randint(-10_000, 2 * retention)
                k1, k2 = rng.choice(KEYS), rng.choice(KEYS)
                kind = rng.choice(["find", "find_range", "fetch", "fetch_range"])
                forward = rng.random() < 0.5
                prefix = "" if forward else "backward_"
                args: tuple[Any, ...]
                if kind == "find":
                    name, args = "find_sessions", (k1, earliest_end, latest_start)
                elif kind == "find_range":
                    name = "find_sessions_range"
                    args = (rng.choice([k1, None]), rng.choice([k2, None]), earliest_end, latest_start)
                elif kind == "fetch":
                    name, args = "fetch", (k1,)
                else:
                    name, args = "fetch_range", (rng.choice([k1, None]), rng.choice([k2, None]))
                found = sessions(getattr(rocks, prefix + name)(*args))
                expected = rocksdb_order(sessions(getattr(model, prefix + name)(*args)), interval, forward)
                assert found == expected, f"{what}: {prefix}{name} {args}"
                checks += 1
            assert rocks.observed_stream_time() == model.observed_stream_time(), what
            assert rctx.dropped == mctx.dropped, what
    finally:
        rocks.close()
    return checks


@pytest.mark.parametrize("seed", range(10))
def test_every_session_is_the_in_memory_segmented_stores(seed: int) -> None:
    assert _run_differential(seed) > 50


def test_scans_come_back_in_rocksdbs_order() -> None:
    store, _ = open_rocks(120_000)
    for key, start, end in [(b"b", 0, 5), (b"a", 3, 7), (b"ab", 1, 5), (b"a", 1, 7), (b"a", 60_000, 60_001)]:
        store.put(Windowed(key, SessionWindow(start, end)), b"x")
    expected = [(b"a", 1, 7), (b"a", 3, 7), (b"ab", 1, 5), (b"b", 0, 5), (b"a", 60_000, 60_001)]
    assert [s[:3] for s in sessions(store.fetch_range(None, None))] == expected
    assert [s[:3] for s in sessions(store.backward_fetch_range(None, None))] == expected[::-1]
    # one key, one end: start ascending (the in-memory store gives the latest start first)
    assert [s[:3] for s in sessions(store.find_sessions(b"a", 0, 10))] == [(b"a", 1, 7), (b"a", 3, 7)]
    with pytest.raises(NotImplementedError, match=SCAN_BY_END_UNSUPPORTED):
        store.find_sessions_by_end_time(0, 10)
    store.close()


def test_the_caching_layer_merges_in_rocksdbs_order() -> None:
    builder = Stores.session_store_builder(Stores.persistent_session_store("s", 120_000), S, S)
    store = builder.with_caching_enabled().build()
    ctx = FakeContext()
    store.init(ctx, store)
    store.put(Windowed("ab", SessionWindow(1, 5)), "flushed")
    store.flush()
    store.put(Windowed("a", SessionWindow(3, 7)), "cached")
    store.put(Windowed("a", SessionWindow(1, 7)), "cached")
    found = [(kv.key.key, kv.key.window.start, kv.key.window.end) for kv in store.fetch_range("a", "b")]
    assert found == [("a", 1, 7), ("a", 3, 7), ("ab", 1, 5)]
    store.close()


# -- segments on disk ------------------------------------------------------------------------------------


def test_segments_by_session_end_appear_and_expire_on_disk(tmp_path: Path) -> None:
    store, ctx = open_rocks(120_000, state_dir=str(tmp_path))
    store.put(Windowed(b"a", SessionWindow(0, 59_999)), b"1")
    store.put(Windowed(b"a", SessionWindow(0, 60_000)), b"2")
    assert segment_dirs(tmp_path, "s") == ["s.0", "s.60000"]
    # remove advances the observed time but neither creates nor removes a segment
    store.remove(Windowed(b"x", SessionWindow(0, 300_000)))
    assert segment_dirs(tmp_path, "s") == ["s.0", "s.60000"]
    assert sessions(store.fetch(b"a")) == []
    store.put(Windowed(b"b", SessionWindow(300_000, 300_000)), b"3")  # min live segment 3
    assert segment_dirs(tmp_path, "s") == ["s.300000"]
    store.put(Windowed(b"b", SessionWindow(0, 100_000)), b"late")
    assert ctx.dropped == ["expired session store segment"]
    store.close()


def test_reopen_finds_the_sessions_on_disk(tmp_path: Path) -> None:
    store, _ = open_rocks(120_000, state_dir=str(tmp_path))
    store.put(Windowed(b"a", SessionWindow(0, 10)), b"old")
    store.put(Windowed(b"a", SessionWindow(150_000, 170_000)), b"new")
    assert sessions(store.fetch(b"a")) == [(b"a", 150_000, 170_000, b"new")]
    store.close()
    again, _ = open_rocks(120_000, state_dir=str(tmp_path))
    # no observed time after a reopen (Kafka's openExisting): the old session is visible again
    assert again.observed_stream_time() == -1
    assert [s[3] for s in sessions(again.fetch(b"a"))] == [b"old", b"new"]
    again.put(Windowed(b"b", SessionWindow(180_000, 180_000)), b"x")
    assert [s[3] for s in sessions(again.fetch(b"a"))] == [b"new"]
    assert segment_dirs(tmp_path, "s") == ["s.120000", "s.180000"]
    again.close()


def test_restore_advances_the_observed_time_first_and_writes_live_segments(tmp_path: Path) -> None:
    store, ctx = open_rocks(120_000, state_dir=str(tmp_path))
    store.restore(
        [
            (changelog_key(b"a", 0, 10), b"expired"),
            (changelog_key(b"a", 0, 200_000), b"live"),
            (changelog_key(b"b", 0, 70_000), b"kept, not read"),
        ]
    )
    assert ctx.dropped == []
    assert segment_dirs(tmp_path, "s") == ["s.60000", "s.180000"]
    assert sessions(store.fetch_range(None, None)) == [(b"a", 0, 200_000, b"live")]
    store.close()


# -- errors -------------------------------------------------------------------------------------------------


def test_closed_store_refuses_use() -> None:
    store, _ = open_rocks(120_000)
    store.put(Windowed(b"a", SessionWindow(0, 5)), b"1")
    it = store.fetch(b"a")
    store.close()
    with pytest.raises(InvalidStateStoreException, match="Iterator for store s has already been closed"):
        next(it)
    calls = (
        lambda: store.put(Windowed(b"a", SessionWindow(0, 5)), b"1"),
        lambda: store.remove(Windowed(b"a", SessionWindow(0, 5))),
        lambda: store.fetch_session(b"a", 0, 5),
        lambda: store.find_sessions(b"a", 0, 5),
        lambda: store.fetch_range(None, None),
    )
    for call in calls:
        with pytest.raises(InvalidStateStoreException, match="Store s is currently closed"):
            call()


def test_a_segment_already_open_fails_naming_store_task_and_path(tmp_path: Path) -> None:
    first, _ = open_rocks(120_000, state_dir=str(tmp_path), task="0_7")
    first.put(Windowed(b"a", SessionWindow(0, 5)), b"1")
    try:
        with pytest.raises(ProcessorStateException) as raised:
            open_rocks(120_000, state_dir=str(tmp_path), task="0_7")
        message = str(raised.value)
        assert "store s" in message and "task 0_7" in message
        assert str(tmp_path / "rocksdb" / "s" / "s.0") in message
    finally:
        first.close()


def test_the_dsl_builder_puts_the_rocksdb_store_under_the_layers(tmp_path: Path) -> None:
    store = Stores.session_store_builder(Stores.persistent_session_store("s", 120_000), S, S).build()
    store.init(DirContext(str(tmp_path)), store)
    assert isinstance(innermost(store.wrapped), RocksDBSessionStore)
    store.put(Windowed("k", SessionWindow(0, 5)), "v")
    assert store.fetch_session("k", 0, 5) == "v"
    store.close()
    assert os.listdir(tmp_path / "rocksdb" / "s") == ["s.0"]
