"""Change-logging layers: what each write sends to ``context.log_change``."""

from __future__ import annotations

from typing import Any

from kspark.serde import Serdes
from kspark.state import Stores, ValueAndTimestamp

from .conftest import FakeContext


def build(builder: Any, ctx: FakeContext) -> Any:
    store = builder.build()
    store.init(ctx, store)
    return store


def test_key_value_writes_are_logged_with_record_timestamp() -> None:
    ctx = FakeContext()
    store = build(Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"), None, None), ctx)
    ctx.time = 5
    store.put("a", "1")
    store.put_if_absent("a", "2")  # present: nothing written, nothing logged
    store.put_if_absent("b", "3")
    store.put_all([("c", "4"), ("a", None)])
    store.delete("zz")  # Kafka logs a delete even when the key was absent
    assert ctx.logged == [
        ("kv", b"a", b"1", 5),
        ("kv", b"b", b"3", 5),
        ("kv", b"c", b"4", 5),
        ("kv", b"a", None, 5),
        ("kv", b"zz", None, 5),
    ]


def test_timestamped_key_value_logs_plain_value_with_its_timestamp() -> None:
    ctx = FakeContext()
    ctx.time = 99
    store = build(
        Stores.timestamped_key_value_store_builder(
            Stores.persistent_timestamped_key_value_store("t"), Serdes.String(), Serdes.Long()
        ),
        ctx,
    )
    store.put("k", ValueAndTimestamp(3, 17))
    store.put("k", None)
    assert ctx.logged == [("t", b"k", (3).to_bytes(8, "big"), 17), ("t", b"k", None, 99)]


def test_logging_disabled_logs_nothing() -> None:
    ctx = FakeContext()
    builder = Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"), None, None)
    store = build(builder.with_logging_disabled(), ctx)
    store.put("a", "1")
    assert ctx.logged == []
    assert not builder.logging_enabled()


def test_window_duplicates_get_increasing_sequence_numbers() -> None:
    ctx = FakeContext()
    supplier = Stores.in_memory_window_store("j", 100, 10, True)
    store = build(Stores.window_store_builder(supplier, None, None), ctx)
    store.put("a", "1", 3)
    store.put("a", "2", 3)
    start = (3).to_bytes(8, "big")
    assert [entry[1] for entry in ctx.logged] == [
        b"a" + start + (1).to_bytes(4, "big"),
        b"a" + start + (2).to_bytes(4, "big"),
    ]


def test_context_without_log_change_is_fine() -> None:
    class Quiet(FakeContext):
        log_change = None  # type: ignore[assignment]

    store = build(Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"), None, None), Quiet())
    store.put("a", "1")
    assert store.get("a") == "1"


def test_restore_callback_rebuilds_state_without_logging() -> None:
    ctx = FakeContext()
    store = build(
        Stores.timestamped_key_value_store_builder(Stores.in_memory_key_value_store("t"), None, None), ctx
    )
    ((root, restore),) = ctx.registered
    restore([(b"a", b"1", 10), (b"b", b"2", 11), (b"b", None, 12)])
    assert store.get("a") == ValueAndTimestamp("1", 10)
    assert store.get("b") is None
    assert ctx.logged == []
    assert root is store


def test_window_and_session_restore() -> None:
    ctx = FakeContext()
    w = build(
        Stores.window_store_builder(Stores.in_memory_window_store("w", 100, 10, False), None, None), ctx
    )
    s = build(Stores.session_store_builder(Stores.in_memory_session_store("s", 100), None, None), ctx)
    (_, restore_w), (_, restore_s) = ctx.registered
    restore_w([(b"k" + (20).to_bytes(8, "big") + (0).to_bytes(4, "big"), b"v", 0)])
    restore_s([(b"k" + (9).to_bytes(8, "big") + (4).to_bytes(8, "big"), b"agg", 0)])
    assert w.fetch("k", 20) == "v"
    assert s.fetch_session("k", 4, 9) == "agg"


def _dup_key(key: bytes, start: int, seqnum: int) -> bytes:
    return key + start.to_bytes(8, "big") + seqnum.to_bytes(4, "big")


def test_duplicates_restore_in_changelog_seqnum_order_and_numbering_continues_above_them() -> None:
    for persistent in (False, True):
        ctx = FakeContext()
        factory = Stores.persistent_window_store if persistent else Stores.in_memory_window_store
        store = build(Stores.window_store_builder(factory("j", 100, 10, True), None, None), ctx)
        ((_, restore),) = ctx.registered
        # an unordered replay (the Spark runner restores from a map): seqnum 7 arrives before 3
        restore([(_dup_key(b"k", 5, 7), b"second", 5), (_dup_key(b"k", 5, 3), b"first", 5)])
        assert [kv.value for kv in store.fetch("k", 0, 10)] == ["first", "second"]
        ctx.time = 6
        store.put("k", "third", 5)
        # the new duplicate's changelog key must not overwrite a restored one (1, 2, ... would hit 3)
        assert ctx.logged == [("j", _dup_key(b"k", 5, 8), b"third", 6)]
        assert [kv.value for kv in store.fetch("k", 0, 10)] == ["first", "second", "third"]
