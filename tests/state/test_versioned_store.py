"""The versioned key-value store (KIP-889): cases ported from Kafka's RocksDBVersionedStoreTest,
plus the change-logging, typed and builder layers and restore from the logged changelog."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from kspark.errors import InvalidStateStoreException
from kspark.state import Stores, VersionedKeyValueStore, VersionedRecord
from kspark.state.internals.versioned import (
    InMemoryVersionedKeyValueBytesStore,
    MeteredVersionedKeyValueStore,
)
from kspark.state.versioned import PUT_RETURN_CODE_NOT_PUT, PUT_RETURN_CODE_VALID_TO_UNDEFINED

from .conftest import FakeContext

HISTORY_RETENTION = 300_000
SEGMENT_INTERVAL = HISTORY_RETENTION // 3
GRACE_PERIOD = HISTORY_RETENTION
BASE = 10
UNDEF = PUT_RETURN_CODE_VALID_TO_UNDEFINED
SI = SEGMENT_INTERVAL


class Bytes:
    """The bytes store under test with string keys and values, as the Java test drives it."""

    def __init__(self, retention: int = HISTORY_RETENTION) -> None:
        self.context = FakeContext()
        self.store = InMemoryVersionedKeyValueBytesStore("s", retention, SEGMENT_INTERVAL)
        self.store.init(self.context, self.store)

    def put(self, key: str, value: str | None, ts: int, expected_valid_to: int) -> None:
        raw = None if value is None else value.encode()
        assert self.store.put(key.encode(), raw, ts) == expected_valid_to

    def delete(self, key: str, ts: int) -> VersionedRecord[str] | None:
        return _decoded(self.store.delete(key.encode(), ts))

    def latest(self, key: str, value: str | None, ts: int | None = None) -> None:
        got = _decoded(self.store.get(key.encode()))
        assert got == (None if value is None else VersionedRecord(value, ts))  # type: ignore[arg-type]

    def as_of(self, key: str, as_of: int, value: str | None, ts: int = 0, valid_to: int = UNDEF) -> None:
        got = _decoded(self.store.get(key.encode(), as_of))
        if value is None:
            assert got is None
        else:
            assert got == VersionedRecord(value, ts, None if valid_to == UNDEF else valid_to)

    def restore(self, records: list[tuple[str, str | None, int]]) -> None:
        self.store.restore([(k.encode(), None if v is None else v.encode(), ts) for k, v, ts in records])


def _decoded(record: VersionedRecord[bytes] | None) -> VersionedRecord[str] | None:
    if record is None:
        return None
    return VersionedRecord(record.value.decode(), record.timestamp, record.valid_to)


@pytest.fixture
def s() -> Bytes:
    return Bytes()


def test_put_latest(s: Bytes) -> None:
    s.put("k", "v", BASE, UNDEF)
    s.put("k", "v2", BASE + 1, UNDEF)
    s.latest("k", "v2", BASE + 1)
    s.as_of("k", BASE, "v", BASE, BASE + 1)
    s.as_of("k", BASE + 1, "v2", BASE + 1)
    s.as_of("k", BASE + 2, "v2", BASE + 1)


def test_put_null_as_latest(s: Bytes) -> None:
    s.put("k", None, BASE, UNDEF)
    s.put("k", None, BASE + 1, UNDEF)
    s.latest("k", None)
    for t in (BASE, BASE + 1, BASE + 2):
        s.as_of("k", t, None)


def test_put_older_with_non_null_latest(s: Bytes) -> None:
    s.put("k", "v", BASE, UNDEF)
    s.put("k", "v2", BASE - 2, BASE)
    s.put("k", "v1", BASE - 1, BASE)
    s.put("k", "v4", BASE - 4, BASE - 2)
    s.latest("k", "v", BASE)
    s.as_of("k", BASE, "v", BASE)
    s.as_of("k", BASE - 1, "v1", BASE - 1, BASE)
    s.as_of("k", BASE - 2, "v2", BASE - 2, BASE - 1)
    s.as_of("k", BASE - 3, "v4", BASE - 4, BASE - 2)


def test_put_older_null_with_non_null_latest(s: Bytes) -> None:
    s.put("k", "v", BASE, UNDEF)
    s.put("k", None, BASE - 2, BASE)
    s.put("k", None, BASE - 1, BASE)
    s.put("k", None, BASE - 4, BASE - 2)
    s.put("k", "v5", BASE - 5, BASE - 4)
    s.put("k", "v3", BASE - 3, BASE - 2)
    s.put("k", None, BASE - 6, BASE - 5)
    s.latest("k", "v", BASE)
    s.as_of("k", BASE, "v", BASE)
    s.as_of("k", BASE - 1, None)
    s.as_of("k", BASE - 2, None)
    s.as_of("k", BASE - 3, "v3", BASE - 3, BASE - 2)
    s.as_of("k", BASE - 4, None)
    s.as_of("k", BASE - 5, "v5", BASE - 5, BASE - 4)
    s.as_of("k", BASE - 6, None)


def test_put_repeat_timestamps(s: Bytes) -> None:
    s.put("k", "to_be_replaced", SI + 20, UNDEF)
    s.put("k", None, SI - 10, SI + 20)
    s.put("k", "to_be_replaced", SI - 10, SI + 20)
    s.put("k", None, SI - 10, SI + 20)
    s.put("k", "to_be_replaced", SI - 1, SI + 20)
    s.put("k", "to_be_replaced", SI + 1, SI + 20)
    s.put("k", None, SI - 1, SI + 1)
    s.put("k", None, SI + 1, SI + 20)
    s.put("k", None, SI + 10, SI + 20)
    s.put("k", None, SI + 5, SI + 10)
    s.put("k", "vp5", SI + 5, SI + 10)
    s.put("k", "to_be_replaced", SI - 5, SI - 1)
    s.put("k", "vn5", SI - 5, SI - 1)
    s.put("k", None, SI + 20, UNDEF)
    s.put("k", None, SI + 20, UNDEF)
    s.put("k", "vn6", SI - 6, SI - 5)
    s.latest("k", None)
    s.as_of("k", SI + 30, None)
    s.as_of("k", SI + 15, None)
    s.as_of("k", SI + 6, "vp5", SI + 5, SI + 10)
    s.as_of("k", SI + 2, None)
    s.as_of("k", SI, None)
    s.as_of("k", SI - 1, None)
    s.as_of("k", SI - 5, "vn5", SI - 5, SI - 1)
    s.as_of("k", SI - 6, "vn6", SI - 6, SI - 5)
    s.as_of("k", SI - 8, None)


def test_put_non_latest_tombstone_with_valid_to(s: Bytes) -> None:
    s.put("k", "vp30", SI + 30, UNDEF)
    s.put("k", None, SI - 10, SI + 30)
    s.put("k", "vn5", SI - 5, SI + 30)
    s.put("k", "vn1", SI - 1, SI + 30)
    s.put("k", None, SI - 2, SI - 1)
    s.latest("k", "vp30", SI + 30)
    s.as_of("k", SI + 10, "vn1", SI - 1, SI + 30)
    s.as_of("k", SI - 2, None)
    s.as_of("k", SI - 5, "vn5", SI - 5, SI - 2)
    s.as_of("k", SI - 10, None)


def test_delete(s: Bytes) -> None:
    s.put("k", "vp20", SI + 20, UNDEF)
    s.put("k", "vp10", SI + 10, SI + 20)
    s.put("k", "vn10", SI - 10, SI + 10)
    s.put("k", "vn2", SI - 2, SI + 10)
    assert s.delete("k", SI - 5) == VersionedRecord("vn10", SI - 10, SI - 2)
    assert s.delete("k", SI + 10) == VersionedRecord("vp10", SI + 10, SI + 20)
    assert s.delete("k", SI + 10) is None
    assert s.delete("k", SI + 25) == VersionedRecord("vp20", SI + 20)


def test_not_put_expired_counts_a_dropped_record(s: Bytes) -> None:
    s.put("k", "v", HISTORY_RETENTION + 10, UNDEF)
    s.put("k1", "v1", HISTORY_RETENTION + 10 - GRACE_PERIOD, UNDEF)
    s.latest("k1", "v1", HISTORY_RETENTION + 10 - GRACE_PERIOD)
    s.put("k2", "v2", HISTORY_RETENTION + 9 - GRACE_PERIOD, PUT_RETURN_CODE_NOT_PUT)
    s.latest("k2", None)
    assert len(s.context.dropped) == 1


def test_not_delete_expired(s: Bytes) -> None:
    s.put("k1", "v1", 1, UNDEF)
    s.put("k2", "v2", 1, UNDEF)
    s.put("kother", "vother", HISTORY_RETENTION + 10, UNDEF)
    assert s.delete("k1", HISTORY_RETENTION + 10 - GRACE_PERIOD) == VersionedRecord("v1", 1)
    s.latest("k1", None)
    assert s.delete("k2", HISTORY_RETENTION + 9 - GRACE_PERIOD) is None
    s.latest("k2", "v2", 1)
    assert len(s.context.dropped) == 1


def test_not_get_expired(s: Bytes) -> None:
    s.put("k", "v_old", 0, UNDEF)
    s.put("k", "v", SI - 10, UNDEF)
    s.as_of("k", SI - 11, "v_old", 0, SI - 10)
    s.put("ko", "vo", HISTORY_RETENTION + SI - 11, UNDEF)
    s.as_of("k", SI - 11, "v_old", 0, SI - 10)
    s.put("ko", "vo2", HISTORY_RETENTION + SI - 10, UNDEF)
    s.as_of("k", SI - 11, None)


def test_get_expired_if_latest_value(s: Bytes) -> None:
    s.put("k", "v", 1, UNDEF)
    s.put("ko", "vo_old", 1, UNDEF)
    s.put("ko", "vo_new", HISTORY_RETENTION + 12, UNDEF)
    s.as_of("k", 10, "v", 1)
    s.as_of("ko", 10, None)


def test_distinguish_empty_and_null(s: Bytes) -> None:
    s.put("k", None, SI + 20, UNDEF)
    s.put("k", None, SI - 10, SI + 20)
    s.put("k", "", SI + 5, SI + 20)
    s.as_of("k", SI + 6, "", SI + 5, SI + 20)
    s.as_of("k", SI - 5, None)


def test_restore_with_nulls_and_repeat_timestamps(s: Bytes) -> None:
    s.restore(
        [
            ("k", "to_be_replaced", SI + 20),
            ("k", None, SI - 10),
            ("k", "to_be_replaced", SI - 10),
            ("k", None, SI - 10),
            ("k", "to_be_replaced", SI - 1),
            ("k", "to_be_replaced", SI + 1),
            ("k", None, SI - 1),
            ("k", None, SI + 1),
            ("k", None, SI + 10),
            ("k", None, SI + 5),
            ("k", "vp5", SI + 5),
            ("k", "to_be_replaced", SI - 5),
            ("k", "vn5", SI - 5),
            ("k", None, SI + 20),
            ("k", None, SI + 20),
            ("k", "vn6", SI - 6),
        ]
    )
    s.latest("k", None)
    s.as_of("k", SI + 6, "vp5", SI + 5, SI + 10)
    s.as_of("k", SI - 5, "vn5", SI - 5, SI - 1)
    s.as_of("k", SI - 6, "vn6", SI - 6, SI - 5)
    s.as_of("k", SI - 8, None)


def test_not_restore_expired_and_not_counted(s: Bytes) -> None:
    s.restore(
        [
            ("k", "v", HISTORY_RETENTION + 10),
            ("k1", "v1", HISTORY_RETENTION + 10 - GRACE_PERIOD),
            ("k2", "v2", HISTORY_RETENTION + 9 - GRACE_PERIOD),
        ]
    )
    s.latest("k", "v", HISTORY_RETENTION + 10)
    s.latest("k1", "v1", HISTORY_RETENTION + 10 - GRACE_PERIOD)
    s.latest("k2", None)
    assert s.context.dropped == []


def test_restore_record_expired_only_by_end_of_batch(s: Bytes) -> None:
    s.restore([("k2", "v2", HISTORY_RETENTION - GRACE_PERIOD), ("k", "v", HISTORY_RETENTION + 10)])
    s.latest("k2", "v2", HISTORY_RETENTION - GRACE_PERIOD)
    s.latest("k", "v", HISTORY_RETENTION + 10)


def test_zero_history_retention() -> None:
    s = Bytes(retention=0)
    s.put("k", "v", BASE, UNDEF)
    s.as_of("k", BASE + 1, "v", BASE)
    s.put("k", "updated", BASE, UNDEF)
    s.latest("k", "updated", BASE)
    s.put("k", "v2", BASE + 2, UNDEF)
    s.as_of("k", BASE + 1, None)
    s.delete("k", BASE + 3)
    s.latest("k", None)
    s.put("k2", "v", BASE + 2, PUT_RETURN_CODE_NOT_PUT)
    s.latest("k2", None)


def test_old_versions_are_dropped_once_out_of_retention(s: Bytes) -> None:
    s.put("k", "a", 0, UNDEF)
    s.put("k", "b", 10, UNDEF)
    s.put("k", "c", 20, UNDEF)
    s.put("other", "x", HISTORY_RETENTION + 15, UNDEF)
    s.put("k", "d", HISTORY_RETENTION + 16, UNDEF)  # prunes what no read can reach any more
    assert [t for t, _ in s.store.versions(b"k")] == [10, 20, HISTORY_RETENTION + 16]
    s.as_of("k", HISTORY_RETENTION + 15, "c", 20, HISTORY_RETENTION + 16)


def test_closed_store_refuses_use(s: Bytes) -> None:
    s.store.close()
    with pytest.raises(InvalidStateStoreException, match="closed"):
        s.store.get(b"k")


# -- the typed store, change-logging and restore ---------------------------------------------------


def _typed(logging: bool = True, retention: Any = HISTORY_RETENTION) -> tuple[Any, FakeContext]:
    builder = Stores.versioned_key_value_store_builder(
        Stores.persistent_versioned_key_value_store("vs", retention), None, None
    )
    if not logging:
        builder = builder.with_logging_disabled()
    store = builder.build()
    context = FakeContext()
    store.init(context, store)
    return store, context


def test_typed_store_logs_puts_and_deletes_with_their_timestamps() -> None:
    store, context = _typed()
    assert isinstance(store, VersionedKeyValueStore)
    assert store.put("k", "v1", 100) == UNDEF
    assert store.put("k", "v0", 50) == 100
    assert store.delete("k", 200) == VersionedRecord("v1", 100)
    assert store.put("k", "late", 100 - HISTORY_RETENTION - 200) == PUT_RETURN_CODE_NOT_PUT
    assert context.logged == [
        ("vs", b"k", b"v1", 100),
        ("vs", b"k", b"v0", 50),
        ("vs", b"k", None, 200),
        # Kafka logs a refused put too; restore skips it again
        ("vs", b"k", b"late", 100 - HISTORY_RETENTION - 200),
    ]
    # typed reads carry no valid_to, as Kafka's MeteredVersionedKeyValueStore
    assert store.get("k", 99) == VersionedRecord("v0", 50)
    assert store.get("k") is None


def test_restore_from_logged_changelog_gives_the_same_versions() -> None:
    store, context = _typed()
    for key, value, ts in [("a", "1", 10), ("a", "2", 30), ("b", "x", 20), ("a", "1.5", 20), ("b", None, 40)]:
        store.put(key, value, ts)
    restored, restored_context = _typed()
    (registered_store, callback) = restored_context.registered[0]
    assert id(registered_store) == id(restored)
    callback([(k, v, ts) for _, k, v, ts in context.logged])
    for key in ("a", "b"):
        for as_of in (None, 9, 10, 19, 20, 29, 30, 39, 40, 100):
            assert restored.get(key, as_of) == store.get(key, as_of), (key, as_of)


def test_builder_refuses_caching_and_other_suppliers() -> None:
    builder = Stores.versioned_key_value_store_builder(
        Stores.persistent_versioned_key_value_store("vs", timedelta(minutes=5)), None, None
    )
    assert builder.history_retention() == 300_000
    with pytest.raises(ValueError, match="do not support caching"):
        builder.with_caching_enabled()
    with pytest.raises(TypeError, match="versioned store supplier"):
        Stores.versioned_key_value_store_builder(Stores.persistent_key_value_store("kv"), None, None)  # type: ignore[arg-type]


def test_supplier_validates_durations() -> None:
    with pytest.raises(ValueError, match="historyRetention cannot be negative"):
        Stores.persistent_versioned_key_value_store("vs", -1)
    with pytest.raises(ValueError, match="segmentInterval cannot be zero"):
        Stores.persistent_versioned_key_value_store("vs", 10, 0)
    with pytest.raises(TypeError, match="historyRetention must be int"):
        Stores.persistent_versioned_key_value_store("vs", "1s")  # type: ignore[arg-type]
    assert Stores.persistent_versioned_key_value_store("vs", 60_000).segment_interval_ms() == 20_000


def test_typed_store_validates_arguments() -> None:
    store, _ = _typed(logging=False)
    assert isinstance(store, MeteredVersionedKeyValueStore)
    with pytest.raises(ValueError, match="key cannot be null"):
        store.put(None, "v", 1)
    with pytest.raises(TypeError, match="timestamp must be int"):
        store.put("k", "v", "1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="value cannot be null"):
        VersionedRecord(None, 1)
