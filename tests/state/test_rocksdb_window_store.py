"""The RocksDB window store: the in-memory segmented store's answers, from segments on disk.

Checked against :class:`SegmentedWindowStore` (the in-memory emulation of Kafka's segmented
retention, verified against Kafka Streams by the catalog) with seeded random operations, then what
only a disk store has: its segment directories (named as Kafka's ``AbstractSegments.segmentName``),
removed from disk when they expire, reopening them (Kafka's ``openExisting``), lazy per-segment
iterators, and the errors of a directory it cannot use.

Where Kafka's ``RocksDBWindowStore`` and the emulation differ, the RocksDB store follows Kafka and
the random operations avoid the difference; each is pinned by a test of its own below (a delete
from a duplicates store, the sequence number a dropped duplicate still takes).
"""

from __future__ import annotations

import gc
import os
import random
import struct
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from kspark.errors import InvalidStateStoreException, ProcessorStateException
from kspark.key_value import KeyValue
from kspark.serde import Serdes
from kspark.state import RocksDBConfigSetter, Stores
from kspark.state.api import ValueAndTimestamp
from kspark.state.internals.in_memory_key_value_store import INVALID_RANGE_WARNING
from kspark.state.internals.metered import innermost
from kspark.state.internals.rocksdb_window_store import RocksDBWindowStore
from kspark.state.internals.segmented_stores import SegmentedWindowStore, segment_id

from .conftest import FakeContext

S = Serdes.String()
KEYS = [b"a", b"b", b"ab", b"ba", b"c", b"abc"]


class DirContext(FakeContext):
    """A FakeContext of task ``task`` whose state directory is ``state_dir``."""

    def __init__(self, state_dir: str | None, task: str = "0_0") -> None:
        super().__init__()
        self._dir = state_dir
        self._task = task

    def task_id(self) -> str:
        return self._task

    def state_dir(self) -> str | None:
        return self._dir


def open_rocks(
    retention: int,
    size: int = 10,
    dups: bool = False,
    state_dir: str | None = None,
    name: str = "w",
    task: str = "0_0",
) -> tuple[RocksDBWindowStore, DirContext]:
    interval = max(retention // 2, 60_000)
    store = RocksDBWindowStore(name, retention, size, dups, interval)
    ctx = DirContext(state_dir, task)
    store.init(ctx, store)
    return store, ctx


def open_model(
    retention: int, size: int = 10, dups: bool = False
) -> tuple[SegmentedWindowStore, FakeContext]:
    store = SegmentedWindowStore("w", retention, size, dups, max(retention // 2, 60_000))
    ctx = FakeContext()
    store.init(ctx, store)
    return store, ctx


def drain(it: Any) -> list[tuple[Any, bytes]]:
    with it:
        return [(kv.key, kv.value) for kv in it]


def store_key(key: bytes, start: int, seqnum: int) -> bytes:
    return key + struct.pack(">qi", start, seqnum)


# -- the same answers as the in-memory segmented store ---------------------------------------------


def _random_time(rng: random.Random, observed: int, retention: int) -> int:
    # around the retention boundary, sometimes far ahead (whole segments expire), never negative
    # (Kafka's key layout puts negative starts after the positive ones; the emulation does not)
    choice = rng.random()
    if choice < 0.05:
        return observed + rng.randint(retention, 4 * retention)
    return max(0, observed + rng.randint(-2 * retention, retention // 3))


def _run_differential(seed: int, dups: bool) -> int:
    rng = random.Random(seed)
    retention = rng.choice([120_000, 200_000, 59_000])
    size = rng.choice([1, 10, 1000])
    rocks, rctx = open_rocks(retention, size, dups)
    model, mctx = open_model(retention, size, dups)
    seqnum = 0
    checks = 0
    try:
        for step in range(400):
            observed = max(model.observed_stream_time(), 0)
            op = rng.random()
            what = f"seed {seed} step {step}"
            if op < 0.45:
                key, t = rng.choice(KEYS), _random_time(rng, observed, retention)
                # a delete from a duplicates store: Kafka's RocksDB store ignores it altogether
                value = None if (not dups and rng.random() < 0.15) else b"v%d" % step
                rocks.put(key, value, t)
                model.put(key, value, t)
            elif op < 0.50:
                batch = []
                for _ in range(rng.randint(1, 6)):
                    t = _random_time(rng, observed, retention)
                    seqnum += 1
                    value = None if (not dups and rng.random() < 0.2) else b"r%d" % rng.randint(0, 99)
                    batch.append((store_key(rng.choice(KEYS), t, seqnum if dups else 0), value))
                rocks.restore(batch)
                model.restore(batch)
            elif op < 0.60 and not dups:
                # with duplicates a point lookup reads the current sequence number, which Kafka's
                # store advances on dropped puts too (test_a_dropped_duplicate_still_takes_a_seqnum)
                key, t = rng.choice(KEYS), _random_time(rng, observed, retention)
                assert rocks.fetch_window(key, t) == model.fetch_window(key, t), what
            else:
                t1 = _random_time(rng, observed, retention)
                t2 = t1 + rng.randint(-1000, 2 * retention)
                k1, k2 = rng.choice(KEYS), rng.choice(KEYS)
                kind = rng.choice(["fetch", "fetch_range", "fetch_all", "all"])
                prefix = "" if rng.random() < 0.5 else "backward_"
                args: tuple[Any, ...]
                if kind == "fetch":
                    args = (k1, t1, t2)
                elif kind == "fetch_range":
                    args = (rng.choice([k1, None]), rng.choice([k2, None]), t1, t2)
                elif kind == "fetch_all":
                    args = (t1, t2)
                else:
                    args = ()
                found = drain(getattr(rocks, prefix + kind)(*args))
                assert found == drain(getattr(model, prefix + kind)(*args)), f"{what}: {prefix}{kind} {args}"
                checks += 1
            assert rocks.observed_stream_time() == model.observed_stream_time(), what
            assert rctx.dropped == mctx.dropped, what
    finally:
        rocks.close()
    return checks


@pytest.mark.parametrize("dups", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_every_answer_is_the_in_memory_segmented_stores(seed: int, dups: bool) -> None:
    assert _run_differential(seed * 2 + int(dups), dups) > 50


def test_scans_over_keys_come_back_in_rocksdbs_order() -> None:
    store, _ = open_rocks(120_000)
    for key, t in [(b"b", 5), (b"a", 70_000), (b"ab", 5), (b"a", 5), (b"a", 61_000)]:
        store.put(key, b"%s@%d" % (key, t), t)
    # segment (60_000 ms), then the key bytes with the start: "a"+start sorts before "ab"
    expected = [(b"a", 5), (b"ab", 5), (b"b", 5), (b"a", 61_000), (b"a", 70_000)]
    assert [(w.key, w.window.start) for w, _ in drain(store.all())] == expected
    assert [(w.key, w.window.start) for w, _ in drain(store.backward_all())] == expected[::-1]
    assert drain(store.fetch(b"a", 0, 100_000)) == [(5, b"a@5"), (61_000, b"a@61000"), (70_000, b"a@70000")]


def test_invalid_key_range_warns_and_is_empty(caplog: pytest.LogCaptureFixture) -> None:
    store, _ = open_rocks(120_000)
    store.put(b"a", b"1", 5)
    assert drain(store.fetch_range(b"b", b"a", 0, 10)) == []
    assert INVALID_RANGE_WARNING in caplog.text
    store.close()


# -- where Kafka's RocksDB store differs from the emulation -------------------------------------------


def test_a_delete_from_a_duplicates_store_does_nothing_at_all() -> None:
    store, ctx = open_rocks(120_000, dups=True)
    store.put(b"a", b"1", 500_000)
    store.put(b"a", None, 900_000)  # RocksDBWindowStore.put skips it: no observed time, no drop
    assert store.observed_stream_time() == 500_000
    store.put(b"a", None, 0)
    assert ctx.dropped == []
    assert drain(store.fetch(b"a", 0, 1_000_000)) == [(500_000, b"1")]


def test_a_dropped_duplicate_still_takes_a_seqnum() -> None:
    store, ctx = open_rocks(120_000, dups=True)
    store.put(b"a", b"1", 500_000)
    store.put(b"a", b"2", 500_000)
    assert store.fetch_window(b"a", 500_000) == b"2"  # only the latest put's key matches
    store.put(b"a", b"late", 0)
    assert ctx.dropped == ["expired window store segment"]
    # Kafka advances the sequence number before the segment drops the record
    assert store.fetch_window(b"a", 500_000) is None
    assert drain(store.fetch(b"a", 0, 600_000)) == [(500_000, b"1"), (500_000, b"2")]


def test_restore_continues_the_seqnums_above_the_restored_ones() -> None:
    store, _ = open_rocks(120_000, dups=True)
    store.restore([(store_key(b"a", 100, 7), b"x"), (store_key(b"a", 100, 3), b"y")])
    store.put(b"a", b"z", 100)
    assert drain(store.fetch(b"a", 0, 200)) == [(100, b"y"), (100, b"x"), (100, b"z")]
    assert store.fetch_window(b"a", 100) == b"z"


# -- segments on disk ------------------------------------------------------------------------------------


def segment_dirs(root: Path, name: str = "w") -> list[str]:
    store_dir = root / "rocksdb" / name
    return sorted(os.listdir(store_dir), key=lambda n: int(n.rsplit(".", 1)[1]))


def test_each_live_segment_is_a_database_named_as_kafkas(tmp_path: Path) -> None:
    store, _ = open_rocks(120_000, state_dir=str(tmp_path))  # segments of 60_000 ms
    assert store.path == str(tmp_path / "rocksdb" / "w")
    store.put(b"a", b"1", 5)
    store.put(b"a", b"2", 60_000)
    store.put(b"a", b"3", 150_000)
    assert segment_dirs(tmp_path) == ["w.0", "w.60000", "w.120000"]
    assert (tmp_path / "rocksdb" / "w" / "w.60000" / "CURRENT").exists()
    assert store.segment_ids() == [0, 1, 2]
    store.close()


def test_expired_segments_are_deleted_from_disk_by_a_later_put(tmp_path: Path) -> None:
    store, ctx = open_rocks(120_000, state_dir=str(tmp_path))
    for t in (5, 60_000, 120_000):
        store.put(b"a", b"%d" % t, t)
    # observed 200_000: min live segment = (200_000 - 120_000) / 60_000 = 1
    store.put(b"b", b"x", 200_000)
    assert segment_dirs(tmp_path) == ["w.60000", "w.120000", "w.180000"]
    assert store.segment_ids() == [1, 2, 3]
    # a read neither creates nor removes segments; a put far ahead removes all the old ones
    assert drain(store.fetch(b"a", 0, 10**9)) == [(120_000, b"120000")]
    store.put(b"b", b"y", 1_000_000)
    assert segment_dirs(tmp_path) == ["w.960000"]
    store.put(b"a", b"late", 900_000)  # segment 15, min live (1_000_000 - 120_000) / 60_000 = 14
    assert segment_dirs(tmp_path) == ["w.900000", "w.960000"]
    store.put(b"a", b"too late", 800_000)
    assert ctx.dropped == ["expired window store segment"]
    assert segment_dirs(tmp_path) == ["w.900000", "w.960000"]
    store.close()


def test_a_scan_skips_a_segment_removed_while_it_runs(tmp_path: Path) -> None:
    store, _ = open_rocks(120_000, state_dir=str(tmp_path))
    for t in (5, 10, 60_000, 61_000):
        store.put(b"a", b"%d" % t, t)
    it = store.fetch(b"a", 0, 100_000)
    assert next(it) == KeyValue(5, b"5")  # the iterator of segment 0 is open
    store.put(b"b", b"x", 125_000)  # min live segment 0: nothing expires yet
    store.put(b"b", b"x", 180_000)  # min live segment 1: segment 0 is closed and deleted
    assert not (tmp_path / "rocksdb" / "w" / "w.0").exists()
    # Kafka's SegmentIterator moves on to the next open segment, opened now (a snapshot of now)
    assert [kv.key for kv in it] == [60_000, 61_000]


def test_each_segment_is_read_from_a_snapshot_taken_when_the_scan_reaches_it() -> None:
    store, _ = open_rocks(120_000)
    for t in (5, 60_000):
        store.put(b"a", b"%d" % t, t)
    it = store.fetch(b"a", 0, 100_000)
    assert next(it) == KeyValue(5, b"5")
    store.put(b"a", b"new", 6)  # segment 0 is being read: its snapshot does not see this
    store.put(b"a", b"new", 60_001)  # segment 1 is not opened yet: seen
    assert [kv.key for kv in it] == [60_000, 60_001]
    store.close()


def test_reopen_finds_the_segments_on_disk_and_starts_from_no_observed_time(tmp_path: Path) -> None:
    store, _ = open_rocks(120_000, state_dir=str(tmp_path))
    for t in (30_000, 100_000, 170_000):
        store.put(b"a", b"%d" % t, t)
    store.flush()
    assert drain(store.fetch(b"a", 0, 10**6)) == [(100_000, b"100000"), (170_000, b"170000")]
    store.close()
    assert segment_dirs(tmp_path) == ["w.0", "w.60000", "w.120000"]

    again, ctx = open_rocks(120_000, state_dir=str(tmp_path))
    assert again.segment_ids() == [0, 1, 2]
    # AbstractSegments.openExisting is given NO_TIMESTAMP: the observed time is not read back from
    # the segments, so until the next put (or restore) every reopened record is visible
    assert again.observed_stream_time() == -1
    assert drain(again.fetch(b"a", 0, 10**6)) == [
        (30_000, b"30000"),
        (100_000, b"100000"),
        (170_000, b"170000"),
    ]
    again.put(b"b", b"x", 170_000)
    assert drain(again.fetch(b"a", 0, 10**6)) == [(100_000, b"100000"), (170_000, b"170000")]
    assert segment_dirs(tmp_path) == ["w.0", "w.60000", "w.120000"]  # min live segment is still 0
    again.put(b"b", b"y", 190_000)
    assert segment_dirs(tmp_path) == ["w.60000", "w.120000", "w.180000"]
    assert ctx.dropped == []
    again.close()


def test_reopen_ignores_what_is_not_a_segment_of_the_store(tmp_path: Path) -> None:
    store_dir = tmp_path / "rocksdb" / "w"
    store_dir.mkdir(parents=True)
    (store_dir / "w.notanumber").mkdir()
    (store_dir / "other.0").mkdir()
    (store_dir / "w.60000.txt").write_text("x")
    store, _ = open_rocks(120_000, state_dir=str(tmp_path))
    assert store.segment_ids() == []
    store.close()


def test_unflushed_writes_of_a_state_dir_survive_close_and_reopen(tmp_path: Path) -> None:
    store, _ = open_rocks(120_000, dups=True, state_dir=str(tmp_path))
    store.put(b"k", b"v1", 10)
    store.put(b"k", b"v2", 10)
    store.close()
    again, _ = open_rocks(120_000, dups=True, state_dir=str(tmp_path))
    assert drain(again.fetch(b"k", 0, 20)) == [(10, b"v1"), (10, b"v2")]
    again.close()


def test_without_a_state_dir_segments_live_in_a_temporary_directory_removed_at_close() -> None:
    store, _ = open_rocks(120_000)
    path = store.path
    assert path is not None and os.path.basename(path) == "w"
    temp_dir = os.path.dirname(os.path.dirname(path))
    assert os.path.basename(temp_dir).startswith("kspark-")
    store.put(b"k", b"v", 5)
    assert os.listdir(path) == ["w.0"]
    it = store.fetch(b"k", 0, 10)
    assert next(it) == KeyValue(5, b"v")  # an open iterator must not keep the segment alive
    store.close()
    assert not os.path.exists(temp_dir)
    with pytest.raises(InvalidStateStoreException):
        next(it)


def test_a_store_never_closed_removes_its_temporary_directory_when_collected() -> None:
    store, _ = open_rocks(120_000)
    assert store.path is not None
    temp_dir = os.path.dirname(os.path.dirname(store.path))
    store.put(b"k", b"v", 5)
    del store
    gc.collect()
    assert not os.path.exists(temp_dir)


def test_iteration_is_lazy() -> None:
    # a month of one-minute windows in one store: a scan must not list them into memory
    store, _ = open_rocks(31 * 86_400_000, size=60_000)
    minutes = 31 * 24 * 60
    for i in range(minutes):
        store.put(b"k", b"x" * 100, i * 60_000)
    tracemalloc.start()
    try:
        it = store.fetch(b"k", 0, minutes * 60_000)
        first = [next(it) for _ in range(3)]
        back = store.backward_fetch_all(0, minutes * 60_000)
        last = next(back)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [kv.key for kv in first] == [0, 60_000, 120_000]
    assert last.key.window.start == (minutes - 1) * 60_000
    assert peak < 200_000, f"fetch allocated {peak} bytes before the fourth entry"
    it.close()
    back.close()
    store.close()


# -- errors -------------------------------------------------------------------------------------------------


def test_closed_store_and_its_iterators_refuse_use() -> None:
    store, _ = open_rocks(120_000)
    store.put(b"a", b"1", 5)
    it = store.all()
    assert next(it).value == b"1"
    store.close()
    assert not store.is_open()
    with pytest.raises(InvalidStateStoreException, match="Iterator for store w has already been closed"):
        next(it)
    calls = (
        lambda: store.put(b"a", b"1", 5),
        lambda: store.fetch_window(b"a", 5),
        lambda: store.fetch(b"a", 0, 5),
        lambda: store.all(),
        lambda: store.restore([]),
    )
    for call in calls:
        with pytest.raises(InvalidStateStoreException, match="Store w is currently closed"):
            call()
    store.close()  # closing twice is harmless


def test_a_segment_already_open_fails_naming_store_task_and_path(tmp_path: Path) -> None:
    first, _ = open_rocks(120_000, state_dir=str(tmp_path), task="1_4")
    first.put(b"a", b"1", 5)
    try:
        path = str(tmp_path / "rocksdb" / "w" / "w.0")
        with pytest.raises(ProcessorStateException) as raised:
            open_rocks(120_000, state_dir=str(tmp_path), task="1_4")
        message = str(raised.value)
        assert "store w" in message and "task 1_4" in message and path in message
        assert "lock" in str(raised.value.__cause__).lower()  # RocksDB's own error (its LOCK)
        assert drain(first.fetch(b"a", 0, 10)) == [(5, b"1")]  # the first one is untouched
        with pytest.raises(ProcessorStateException, match="already open"):
            first.init(DirContext(str(tmp_path), "1_4"), first)
    finally:
        first.close()
    reopened, _ = open_rocks(120_000, state_dir=str(tmp_path), task="1_4")
    reopened.close()


def test_an_unusable_state_dir_fails_naming_store_task_and_path(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")  # fails for root too, unlike a chmod
    state_dir = str(blocker / "state")
    with pytest.raises(ProcessorStateException) as raised:
        open_rocks(120_000, state_dir=state_dir, task="2_0")
    message = str(raised.value)
    assert "store w" in message and "task 2_0" in message
    assert os.path.join(state_dir, "rocksdb", "w") in message
    assert isinstance(raised.value.__cause__, OSError)


def test_a_segment_that_cannot_be_created_fails_the_put_naming_store_task_and_path(tmp_path: Path) -> None:
    store, _ = open_rocks(120_000, state_dir=str(tmp_path), task="3_1")
    try:
        # a file where the segment's directory would go
        (tmp_path / "rocksdb" / "w" / "w.0").write_text("in the way")
        with pytest.raises(ProcessorStateException) as raised:
            store.put(b"a", b"1", 5)
        message = str(raised.value)
        assert "store w" in message and "task 3_1" in message
        assert str(tmp_path / "rocksdb" / "w" / "w.0") in message
    finally:
        store.close()


# -- through the DSL layers -------------------------------------------------------------------------------


def test_persistent_suppliers_and_the_typed_layers_use_the_rocksdb_store(tmp_path: Path) -> None:
    builder = Stores.timestamped_window_store_builder(
        Stores.persistent_timestamped_window_store("t", 120_000, 10, False), S, S
    ).with_caching_enabled()
    store = builder.build()
    ctx = DirContext(str(tmp_path))
    store.init(ctx, store)
    assert isinstance(innermost(store.wrapped), RocksDBWindowStore)
    store.put("k", ValueAndTimestamp.make("v", 7), 0)
    store.flush()
    assert [(kv.key.key, kv.value.value) for kv in store.all()] == [("k", "v")]
    assert ctx.logged[0][0] == "t"
    store.close()
    assert os.listdir(tmp_path / "rocksdb" / "t") == ["t.0"]
    assert segment_id(0, 60_000) == 0


def test_the_config_setter_tunes_each_segment_by_name_and_is_closed_with_it() -> None:
    calls: list[tuple[str, str]] = []

    class Setter(RocksDBConfigSetter):
        def set_config(self, store_name: str, options: Any, configs: Any) -> None:
            calls.append(("set", store_name))

        def close(self, store_name: str, options: Any) -> None:
            calls.append(("close", store_name))

    class SetterContext(DirContext):
        def app_configs(self) -> dict[str, Any]:
            return {"application.id": "app", "rocksdb.config.setter": Setter}

    store = RocksDBWindowStore("w", 120_000, 10, False, 60_000)
    store.init(SetterContext(None), store)
    store.put(b"a", b"1", 5)
    store.put(b"a", b"2", 60_000)
    assert calls == [("set", "w.0"), ("set", "w.60000")]
    store.put(b"a", b"3", 200_000)  # segment 0 expires: closed, with its setter
    assert calls[2:] == [("set", "w.180000"), ("close", "w.0")]
    store.close()
    assert sorted(calls[4:]) == [("close", "w.180000"), ("close", "w.60000")]
