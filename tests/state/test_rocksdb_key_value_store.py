"""The RocksDB key-value store: the in-memory store's answers, on disk, with snapshot iterators.

Checked against the in-memory store as a model (random operations), then what only a disk store
has: where its files go, reopening them, the errors of a directory it cannot use, its temporary
directory, and iterators that read the state of their creation as Kafka's RocksDB iterators do.
"""

from __future__ import annotations

import gc
import logging
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kspark import Consumed, Materialized, StreamsBuilder
from kspark.config import StreamsConfig
from kspark.errors import InvalidStateStoreException, ProcessorStateException
from kspark.key_value import KeyValue
from kspark.processor.internals.records import RawRecord
from kspark.processor.internals.task import StreamTask
from kspark.serde import Serdes
from kspark.state import Stores
from kspark.state.internals.in_memory_key_value_store import INVALID_RANGE_WARNING, InMemoryKeyValueStore
from kspark.state.internals.metered import innermost
from kspark.state.internals.rocksdb_key_value_store import REBUILT_MARKER, RocksDBKeyValueStore

from .conftest import FakeContext

S = Serdes.String()


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


def open_raw(name: str = "s", state_dir: str | None = None, task: str = "0_0") -> RocksDBKeyValueStore:
    store = RocksDBKeyValueStore(name)
    store.init(DirContext(state_dir, task), store)
    return store


@pytest.fixture
def store() -> Any:
    s = open_raw()
    yield s
    s.close()


def pairs(it: Any) -> list[tuple[bytes, bytes]]:
    with it:
        return [(kv.key, kv.value) for kv in it]


# -- the same answers as the in-memory store ------------------------------------------------------

KEYS = st.binary(max_size=3)  # short keys collide often; 0x00 and 0xff bytes are common
VALUES = st.none() | st.binary(max_size=3)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), KEYS, VALUES),
        st.tuples(st.just("put_if_absent"), KEYS, VALUES),
        st.tuples(st.just("delete"), KEYS, st.none()),
        st.tuples(st.just("get"), KEYS, st.none()),
        st.tuples(st.just("put_all"), st.lists(st.tuples(KEYS, VALUES), max_size=4), st.none()),
        st.tuples(st.just("restore"), st.lists(st.tuples(KEYS, VALUES), max_size=4), st.none()),
    ),
    max_size=40,
)


def _apply(s: Any, op: tuple[str, Any, Any]) -> Any:
    name, arg, value = op
    if name in ("put", "put_if_absent"):
        return getattr(s, name)(arg, value)
    if name in ("put_all", "restore"):
        return getattr(s, name)(iter(arg))  # a generator, as the metered layer's _restore passes
    return getattr(s, name)(arg)


@settings(max_examples=60, deadline=None)
@given(OPS, KEYS, KEYS, KEYS)
def test_every_answer_is_the_in_memory_stores(ops: list[Any], a: bytes, b: bytes, prefix: bytes) -> None:
    model = InMemoryKeyValueStore("s")
    model.init(FakeContext(), model)
    rocks = open_raw()
    try:
        for op in ops:
            assert _apply(rocks, op) == _apply(model, op), op
        for scan in ("all", "reverse_all"):
            assert pairs(getattr(rocks, scan)()) == pairs(getattr(model, scan)())
        for lo, hi in [(a, b), (None, b), (a, None), (None, None), (min(a, b), max(a, b))]:
            assert pairs(rocks.range(lo, hi)) == pairs(model.range(lo, hi)), (lo, hi)
            assert pairs(rocks.reverse_range(lo, hi)) == pairs(model.reverse_range(lo, hi)), (lo, hi)
        assert pairs(rocks.prefix_scan(prefix)) == pairs(model.prefix_scan(prefix))
    finally:
        rocks.close()


def test_keys_are_ordered_by_unsigned_bytes_and_point_reads(store: RocksDBKeyValueStore) -> None:
    keys = [b"\xff", b"", b"a", b"\x00", b"a\x00", b"\x7f", b"\x80", b"ab", b"b"]
    store.put_all((k, b"v" + k) for k in keys)
    assert [k for k, _ in pairs(store.all())] == sorted(keys)
    assert [k for k, _ in pairs(store.reverse_all())] == sorted(keys, reverse=True)
    assert store.get(b"\x80") == b"v\x80"
    assert store.get(b"") == b"v"
    assert store.get(b"zz") is None


def test_writes_deletes_and_put_if_absent(store: RocksDBKeyValueStore) -> None:
    store.put(b"k", b"1")
    assert store.put_if_absent(b"k", b"2") == b"1"
    assert store.get(b"k") == b"1"
    assert store.put_if_absent(b"n", b"2") is None
    assert store.get(b"n") == b"2"
    store.put(b"k", None)  # a None value deletes
    assert store.get(b"k") is None
    assert store.delete(b"n") == b"2"
    assert store.delete(b"n") is None
    store.put(b"e", b"")  # an empty value is a value, not a delete
    assert store.get(b"e") == b""
    store.put_all([(b"x", b"1"), (b"y", b"2"), (b"x", None), (b"e", None)])
    assert pairs(store.all()) == [(b"y", b"2")]


def test_a_null_or_non_bytes_key_or_value_is_the_callers_mistake(store: RocksDBKeyValueStore) -> None:
    with pytest.raises(ValueError, match="key cannot be null"):
        store.put(None, b"v")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="key cannot be null"):
        store.get(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="store s takes bytes keys, got str"):
        store.put_all([(b"ok", b"v"), ("k", b"v")])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="store s takes bytes values"):
        store.put(b"k", "v")  # type: ignore[arg-type]
    assert pairs(store.all()) == []  # the batch with a bad entry wrote nothing


def test_restore_applies_changelog_records_in_order(store: RocksDBKeyValueStore) -> None:
    store.put(b"gone", b"old")
    store.restore(((k, v) for k, v in [(b"a", b"1"), (b"gone", None), (b"a", b"2"), (b"b", b"3")]))
    assert pairs(store.all()) == [(b"a", b"2"), (b"b", b"3")]


def test_restore_through_the_metered_layer_reaches_rocksdb() -> None:
    ctx = FakeContext()
    builder = Stores.timestamped_key_value_store_builder(
        Stores.persistent_timestamped_key_value_store("t"), S, S
    )
    typed = builder.build()
    typed.init(ctx, typed)
    try:
        (store, restore) = ctx.registered[0]
        assert store is typed
        restore([(b"k", b"v", 7), (b"x", b"1", 8), (b"x", None, 9)])
        assert typed.get("k").value == "v" and typed.get("k").timestamp == 7
        assert typed.get("x") is None
        assert isinstance(innermost(typed.wrapped), RocksDBKeyValueStore)
    finally:
        typed.close()


def test_approximate_num_entries_is_rocksdbs_estimate(store: RocksDBKeyValueStore) -> None:
    assert store.approximate_num_entries() == 0
    store.put_all((b"k%03d" % i, b"v") for i in range(100))
    assert store.approximate_num_entries() == 100
    store.flush()
    assert 90 <= store.approximate_num_entries() <= 110  # an estimate, as Kafka's documents


# -- scans ------------------------------------------------------------------------------------------


def test_ranges_are_inclusive_and_none_is_unbounded(store: RocksDBKeyValueStore) -> None:
    store.put_all((k, k.upper()) for k in [b"a", b"b", b"b\x00", b"c", b"d"])
    assert [k for k, _ in pairs(store.range(b"b", b"c"))] == [b"b", b"b\x00", b"c"]
    assert [k for k, _ in pairs(store.reverse_range(b"b", b"c"))] == [b"c", b"b\x00", b"b"]
    assert [k for k, _ in pairs(store.range(b"bb", b"cc"))] == [b"c"]
    assert [k for k, _ in pairs(store.reverse_range(b"bb", b"cc"))] == [b"c"]
    assert [k for k, _ in pairs(store.range(None, b"b"))] == [b"a", b"b"]
    assert [k for k, _ in pairs(store.reverse_range(b"c", None))] == [b"d", b"c"]
    assert [k for k, _ in pairs(store.range(b"e", None))] == []
    assert [k for k, _ in pairs(store.reverse_range(None, b"\x00"))] == []


def test_invalid_range_warns_and_is_empty(
    store: RocksDBKeyValueStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.put(b"a", b"1")
    with caplog.at_level(logging.WARNING):
        assert pairs(store.range(b"z", b"a")) == []
        assert pairs(store.reverse_range(b"z", b"a")) == []
    assert [r.getMessage() for r in caplog.records] == [INVALID_RANGE_WARNING] * 2


def test_prefix_scan_stops_at_the_prefix_boundary(store: RocksDBKeyValueStore) -> None:
    keys = [b"ab", b"ab\x00", b"ab\xff", b"ab\xff\xff", b"ac", b"aa\xff", b"a", b"b"]
    store.put_all((k, b"v") for k in keys)
    assert [k for k, _ in pairs(store.prefix_scan(b"ab"))] == [b"ab", b"ab\x00", b"ab\xff", b"ab\xff\xff"]
    assert [k for k, _ in pairs(store.prefix_scan(b"ab\xff"))] == [b"ab\xff", b"ab\xff\xff"]
    in_a = [b"a", b"aa\xff", b"ab", b"ab\x00", b"ab\xff", b"ab\xff\xff", b"ac"]
    assert [k for k, _ in pairs(store.prefix_scan(b"a"))] == in_a
    assert [k for k, _ in pairs(store.prefix_scan(b""))] == sorted(keys)
    assert pairs(store.prefix_scan(b"z")) == []


def test_prefix_scan_of_an_all_ff_prefix_is_unbounded_above(store: RocksDBKeyValueStore) -> None:
    store.put_all((k, b"v") for k in [b"\xfe\xff", b"\xff", b"\xff\x00", b"\xff\xff", b"\xff\xff\x01"])
    assert [k for k, _ in pairs(store.prefix_scan(b"\xff\xff"))] == [b"\xff\xff", b"\xff\xff\x01"]
    assert [k for k, _ in pairs(store.prefix_scan(b"\xff"))] == [
        b"\xff",
        b"\xff\x00",
        b"\xff\xff",
        b"\xff\xff\x01",
    ]


def test_iterators_read_the_snapshot_of_their_creation(store: RocksDBKeyValueStore) -> None:
    """Kafka's RocksDB iterators see neither puts nor deletes made after they were opened; the
    in-memory store's iterators read values live (their keys are a snapshot)."""
    store.put_all([(b"a", b"1"), (b"b", b"2"), (b"c", b"3")])
    forward, backward, scan = store.all(), store.reverse_range(b"a", b"c"), store.prefix_scan(b"")
    assert forward.peek_next_key() == b"a"
    store.put(b"b", b"changed")
    store.delete(b"c")
    store.put(b"bb", b"new")
    store.put(b"a", None)
    assert pairs(forward) == [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]
    assert pairs(backward) == [(b"c", b"3"), (b"b", b"2"), (b"a", b"1")]
    assert pairs(scan) == [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]
    assert pairs(store.all()) == [(b"b", b"changed"), (b"bb", b"new")]
    model = InMemoryKeyValueStore("m")
    model.init(FakeContext(), model)
    model.put_all([(b"a", b"1"), (b"b", b"2")])
    live = model.all()
    model.put(b"b", b"changed")
    assert pairs(live) == [(b"a", b"1"), (b"b", b"changed")]


def test_iteration_is_lazy(store: RocksDBKeyValueStore) -> None:
    n = 200_000
    store.put_all((b"%08d" % i, b"x" * 100) for i in range(n))  # 20 MB of values
    tracemalloc.start()
    try:
        it = store.all()
        first = [next(it) for _ in range(3)]
        reverse = store.reverse_all()
        last = next(reverse)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [kv.key for kv in first] == [b"00000000", b"00000001", b"00000002"]
    assert last.key == b"%08d" % (n - 1)
    assert peak < 1_000_000, f"all() allocated {peak} bytes before the fourth entry"
    it.close()
    reverse.close()


def test_closed_store_and_its_iterators_refuse_use() -> None:
    s = open_raw()
    s.put_all([(b"a", b"1"), (b"b", b"2")])
    it = s.all()
    assert next(it) == KeyValue(b"a", b"1")
    s.close()
    assert not s.is_open()
    with pytest.raises(InvalidStateStoreException, match="Iterator for store s has already been closed"):
        next(it)
    for call in (lambda: s.get(b"a"), lambda: s.put(b"a", b"1"), lambda: s.all(), lambda: s.prefix_scan(b"")):
        with pytest.raises(InvalidStateStoreException, match="Store s is currently closed"):
            call()
    s.close()  # closing twice is harmless


# -- through the record cache -----------------------------------------------------------------------


def test_scans_through_the_cache_merge_flushed_dirty_and_deleted_entries() -> None:
    ctx = FakeContext()
    builder = Stores.key_value_store_builder(
        Stores.persistent_key_value_store("s"), S, S
    ).with_caching_enabled()
    store = builder.build()
    store.init(ctx, store)
    try:
        assert isinstance(innermost(store.wrapped), RocksDBKeyValueStore)
        disk = innermost(store.wrapped)
        for k in ["a1", "a2", "a3", "b1", "b2"]:
            store.put(k, "disk-" + k)
        store.flush()  # on disk now
        assert pairs(disk.all()) == [
            (k.encode(), b"disk-" + k.encode()) for k in ["a1", "a2", "a3", "b1", "b2"]
        ]
        store.put("a2", "dirty-a2")  # overwrite in the cache
        store.put("a0", "dirty-a0")  # new in the cache only
        store.put("b3", "dirty-b3")
        store.delete("a3")  # deleted in the cache, still on disk
        store.put("b1", None)
        assert disk.get(b"a3") == b"disk-a3" and disk.get(b"a0") is None

        def kv(it: Any) -> list[tuple[str, str]]:
            with it:
                return [(x.key, x.value) for x in it]

        expected = [
            ("a0", "dirty-a0"),
            ("a1", "disk-a1"),
            ("a2", "dirty-a2"),
            ("b2", "disk-b2"),
            ("b3", "dirty-b3"),
        ]
        assert kv(store.all()) == expected
        assert kv(store.reverse_all()) == expected[::-1]
        assert kv(store.range("a1", "b2")) == expected[1:4]
        assert kv(store.reverse_range("a1", "b2")) == expected[1:4][::-1]
        assert kv(store.prefix_scan("a", S.serializer())) == expected[:3]
        assert kv(store.prefix_scan("b", S.serializer())) == expected[3:]
        assert store.get("a3") is None and store.get("a0") == "dirty-a0"
        store.flush()
        assert [(k.decode(), v.decode()) for k, v in pairs(disk.all())] == expected
    finally:
        store.close()


def test_scans_through_the_cache_are_lazy_and_close_the_rocksdb_iterator() -> None:
    builder = Stores.key_value_store_builder(
        Stores.persistent_key_value_store("s"), S, S
    ).with_caching_enabled()
    store = builder.build()
    store.init(FakeContext(), store)
    try:
        disk = innermost(store.wrapped)
        disk.put_all((b"%08d" % i, b"x" * 100) for i in range(200_000))  # 20 MB below the cache
        store.put("00000001", "cached")
        store.delete("00000002")
        tracemalloc.start()
        try:
            it = store.all()
            first = [next(it) for _ in range(3)]
            backwards = store.reverse_all()
            last = next(backwards)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert [(kv.key, kv.value[:6]) for kv in first] == [
            ("00000000", "x" * 6),
            ("00000001", "cached"),
            ("00000003", "x" * 6),
        ]
        assert last.key == "00199999"
        assert peak < 1_000_000, f"all() through the cache allocated {peak} bytes before the fourth entry"
        assert len(disk._iterators) == 2
        it.close()
        backwards.close()
        assert not any(i.holds_rocksdb_iterator for i in disk._iterators)
    finally:
        store.close()


# -- files: layout, reopening, errors, temporary directories -------------------------------------------


def test_files_live_in_the_task_state_dir_and_survive_close(tmp_path: Path) -> None:
    s = open_raw("counts", str(tmp_path))
    assert s.path == str(tmp_path / "rocksdb" / "counts")
    s.put_all([(b"a", b"1"), (b"b", b"2")])
    s.put(b"a", None)
    s.flush()
    s.close()
    assert (tmp_path / "rocksdb" / "counts" / "CURRENT").exists()  # close keeps a real state dir
    again = open_raw("counts", str(tmp_path))
    try:
        assert pairs(again.all()) == [(b"b", b"2")]
    finally:
        again.close()


def test_unflushed_writes_survive_close_and_reopen_through_the_wal(tmp_path: Path) -> None:
    s = open_raw("s", str(tmp_path))
    s.put(b"k", b"v")
    s.close()
    again = open_raw("s", str(tmp_path))
    try:
        assert again.get(b"k") == b"v"
    finally:
        again.close()


def _wal_bytes(db_dir: Path) -> int:
    return sum(f.stat().st_size for f in db_dir.glob("*.log"))


def test_a_directory_marked_rebuilt_keeps_no_wal_and_a_state_dir_does(tmp_path: Path) -> None:
    """A runner's scratch directory (REBUILT_MARKER: filled anew whenever its task is built, never
    reopened) skips the WAL, as a temporary directory does; any other state directory keeps it."""
    kept, rebuilt = tmp_path / "kept", tmp_path / "rebuilt"
    kept.mkdir()
    rebuilt.mkdir()
    (rebuilt / REBUILT_MARKER).touch()
    logged = {}
    for where in (kept, rebuilt):
        s = open_raw("s", str(where))
        try:
            s.put_all([(b"k%d" % i, b"v" * 100) for i in range(1000)])
            s.flush()
            assert s.get(b"k7") == b"v" * 100
            logged[where] = _wal_bytes(where / "rocksdb" / "s")  # before close writes an SST
        finally:
            s.close()
    assert logged[kept] > 100_000 and logged[rebuilt] == 0


def test_committed_writes_survive_a_crashed_process_through_the_wal(tmp_path: Path) -> None:
    """The process dies (os._exit) after a commit without closing: the WAL has the writes."""
    script = (
        "import os, sys\n"
        "sys.path[:0] = [sys.argv[2], sys.argv[3]]\n"
        "from conftest import FakeContext\n"
        "from kspark.state.internals.rocksdb_key_value_store import RocksDBKeyValueStore\n"
        "class Ctx(FakeContext):\n"
        "    def state_dir(self): return sys.argv[1]\n"
        "s = RocksDBKeyValueStore('s')\n"
        "s.init(Ctx(), s)\n"
        "s.put_all([(b'a', b'1'), (b'b', b'2')])\n"
        "s.put(b'a', None)\n"
        "s.flush()\n"
        "os._exit(0)\n"
    )
    here = os.path.dirname(__file__)
    repo = os.path.dirname(os.path.dirname(here))
    subprocess.run([sys.executable, "-c", script, str(tmp_path), here, repo], check=True, timeout=60)
    again = open_raw("s", str(tmp_path))
    try:
        assert pairs(again.all()) == [(b"b", b"2")]
    finally:
        again.close()


def test_a_second_open_of_an_open_store_fails_naming_store_task_and_path(tmp_path: Path) -> None:
    first = open_raw("s", str(tmp_path), "1_4")
    try:
        path = str(tmp_path / "rocksdb" / "s")
        with pytest.raises(ProcessorStateException) as raised:
            open_raw("s", str(tmp_path), "1_4")
        message = str(raised.value)
        assert "store s" in message and "task 1_4" in message and path in message
        assert raised.value.__cause__ is not None  # RocksDB's own error (its LOCK)
        assert "lock" in str(raised.value.__cause__).lower()
        assert first.get(b"x") is None  # the first one is untouched
        with pytest.raises(ProcessorStateException, match="already open"):
            first.init(DirContext(str(tmp_path), "1_4"), first)
    finally:
        first.close()
    reopened = open_raw("s", str(tmp_path), "1_4")  # the lock went with the close
    reopened.close()


def test_an_unusable_state_dir_fails_naming_store_task_and_path(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # root writes through chmod: a path under a regular file fails for everyone
        blocker = tmp_path / "file"
        blocker.write_text("not a directory")
        state_dir = str(blocker / "state")
    else:
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        state_dir = str(locked)
    try:
        with pytest.raises(ProcessorStateException) as raised:
            open_raw("s", state_dir, "2_0")
    finally:
        if os.geteuid() != 0:
            (tmp_path / "locked").chmod(0o700)
    message = str(raised.value)
    assert "store s" in message and "task 2_0" in message
    assert os.path.join(state_dir, "rocksdb", "s") in message
    assert isinstance(raised.value.__cause__, OSError)


def test_without_a_state_dir_the_store_uses_a_temporary_directory_removed_at_close() -> None:
    s = open_raw("s", None)
    path = s.path
    assert path is not None and os.path.basename(path) == "s"
    temp_dir = os.path.dirname(os.path.dirname(path))
    assert os.path.basename(temp_dir).startswith("kspark-")
    s.put(b"k", b"v")
    it = s.all()  # an open iterator must not keep the database (and its directory) alive
    s.close()
    assert not os.path.exists(temp_dir)
    with pytest.raises(InvalidStateStoreException):
        next(it)


def test_a_store_never_closed_removes_its_temporary_directory_when_collected() -> None:
    s = open_raw("s", None)
    assert s.path is not None
    temp_dir = os.path.dirname(os.path.dirname(s.path))
    s.put(b"k", b"v")
    del s
    gc.collect()
    assert not os.path.exists(temp_dir)


# -- where the stores come from -------------------------------------------------------------------------


def test_persistent_suppliers_make_rocksdb_stores_in_memory_ones_do_not() -> None:
    assert isinstance(Stores.persistent_key_value_store("a").get(), RocksDBKeyValueStore)
    assert isinstance(Stores.persistent_timestamped_key_value_store("a").get(), RocksDBKeyValueStore)
    memory = Stores.in_memory_key_value_store("a").get()
    assert isinstance(memory, InMemoryKeyValueStore) and not memory.persistent()
    assert RocksDBKeyValueStore("a").persistent()


def _table_task(state_dir: str) -> StreamTask:
    b = StreamsBuilder()
    b.table("in", Consumed.with_(S, S), Materialized.as_("t"))  # default.dsl.store: rocksDB
    topology = b.build().internal_builder.set_application_id("app").build_topology()
    config = StreamsConfig({"application.id": "app", "bootstrap.servers": "x:1"})
    task = StreamTask("0_3", topology, config, partition=3, state_dir=state_dir)
    task.initialize()
    return task


def test_a_task_with_a_state_dir_keeps_its_dsl_store_there_across_restarts(tmp_path: Path) -> None:
    task = _table_task(str(tmp_path))
    assert task.context.state_dir() == str(tmp_path)
    table: Any = task.stores["t"]
    inner = innermost(table.wrapped)
    assert isinstance(inner, RocksDBKeyValueStore)
    assert inner.path == str(tmp_path / "rocksdb" / "t")
    task.add_records("in", 3, [RawRecord("in", 3, 0, 5, b"k", b"v")])
    while task.process():
        pass
    task.commit()
    task.close()
    assert not inner.is_open()
    restarted = _table_task(str(tmp_path))
    try:
        table = restarted.stores["t"]
        found = table.get("k")
        assert (found.value, found.timestamp) == ("v", 5)
    finally:
        restarted.close()
