"""Typed store layer: default serdes, ValueAndTimestamp layout, changelog topic name."""

from __future__ import annotations

from typing import Any

import pytest

from kspark.errors import ConfigException, SerializationException
from kspark.serde import Serdes
from kspark.serde.api import Serializer
from kspark.state import Stores, ValueAndTimestamp
from kspark.state.internals.metered import ValueAndTimestampSerde, innermost

from .conftest import FakeContext


def test_none_serdes_resolve_to_context_defaults_at_init() -> None:
    ctx = FakeContext(Serdes.Long(), Serdes.JSON())
    store = Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"), None, None).build()
    store.init(ctx, store)
    store.put(1, {"a": 1})
    assert innermost(store).get((1).to_bytes(8, "big")) == b'{"a":1}'
    assert store.key_serde == Serdes.Long()


def test_serde_names_are_accepted() -> None:
    store = Stores.key_value_store_builder(
        Stores.in_memory_key_value_store("kv"), "integer", "string"
    ).build()
    store.init(FakeContext(), store)
    store.put(1, "x")
    assert innermost(store).get(b"\x00\x00\x00\x01") == b"x"


def test_missing_default_serde_is_a_config_error() -> None:
    class NoDefaults(FakeContext):
        def key_serde(self) -> Any:
            return None

    store = Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"), None, None).build()
    with pytest.raises(ConfigException, match="No key serde for store kv"):
        store.init(NoDefaults(), store)


def test_timestamped_value_layout() -> None:
    serde = ValueAndTimestampSerde(Serdes.String())
    raw = serde.serializer().serialize("t", ValueAndTimestamp("v", 258))
    assert raw == b"\x00\x00\x00\x00\x00\x00\x01\x02v"
    assert serde.deserializer().deserialize("t", raw) == ValueAndTimestamp("v", 258)
    assert serde.serializer().serialize("t", None) is None
    with pytest.raises(SerializationException, match="expects a ValueAndTimestamp"):
        serde.serializer().serialize("t", "v")  # type: ignore[arg-type]


def test_timestamped_store_round_trip() -> None:
    store = Stores.timestamped_key_value_store_builder(
        Stores.in_memory_key_value_store("t"), Serdes.String(), Serdes.Long()
    ).build()
    store.init(FakeContext(), store)
    store.put("a", ValueAndTimestamp(5, 100))
    assert store.get("a") == ValueAndTimestamp(5, 100)
    assert innermost(store).get(b"a") == (100).to_bytes(8, "big") + (5).to_bytes(8, "big")
    assert [(kv.key, kv.value) for kv in store.all()] == [("a", ValueAndTimestamp(5, 100))]


def test_serializers_see_the_changelog_topic() -> None:
    topics: list[str | None] = []

    class Spy(Serializer[str]):
        def serialize(self, topic: str | None, data: str | None) -> bytes | None:
            topics.append(topic)
            return None if data is None else data.encode()

    key_serde = Serdes.serde_from(Spy(), Serdes.String().deserializer())
    store = Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"), key_serde, None).build()
    store.init(FakeContext(), store)
    store.put("a", "1")
    assert topics == ["app-kv-changelog"]


def test_wrong_value_type_is_a_serialization_error() -> None:
    store = Stores.key_value_store_builder(
        Stores.in_memory_key_value_store("kv"), Serdes.String(), Serdes.Long()
    ).build()
    store.init(FakeContext(), store)
    with pytest.raises(SerializationException, match="LongSerializer"):
        store.put("a", "not a number")


def test_builder_flags() -> None:
    b = Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"), None, None)
    assert b.name == "kv" and b.logging_enabled() and not b.caching_enabled()
    b.with_caching_enabled().with_logging_enabled({"retention.ms": "1000"})
    assert b.caching_enabled() and b.log_config() == {"retention.ms": "1000"}
    assert b.build().caching_enabled is True
    w = Stores.window_store_builder(Stores.in_memory_window_store("j", 10, 1, True), None, None)
    assert w.with_caching_enabled().build().caching_enabled is False  # duplicates disable caching


class _DebugContext(FakeContext):
    def app_config(self) -> dict[str, Any]:
        return {"application.id": "app", "metrics.recording.level": "DEBUG"}


def test_store_operations_are_timed_at_the_debug_level_only() -> None:
    builder = Stores.key_value_store_builder(
        Stores.persistent_key_value_store("kv"), Serdes.String(), Serdes.Long()
    )
    quiet = builder.build()
    quiet.init(FakeContext(), quiet)
    quiet.put("a", 1)
    assert quiet.op_stats == {} and "put" not in vars(quiet)  # INFO: the class's own methods, untouched

    store = builder.build()
    store.init(_DebugContext(), store)
    store.put("a", 1)
    store.put("b", 2)
    assert store.get("a") == 1
    with store.range("a", "z") as it:
        assert [kv.key for kv in it] == ["a", "b"]
    store.flush()
    assert store.metrics_scope == "rocksdb"  # the supplier's, as Kafka tags the store
    counts = {op: s.count for op, s in store.op_stats.items()}
    assert counts == {
        "get": 1, "put": 2, "put-if-absent": 0, "put-all": 0, "delete": 0,
        "range": 1, "all": 0, "prefix-scan": 0, "flush": 1,
    }  # fmt: skip
    assert store.op_stats["put"].max >= store.op_stats["put"].min > 0  # nanoseconds, as Kafka's
    store.close()


def test_window_and_session_stores_time_put_fetch_and_remove() -> None:
    window = Stores.window_store_builder(
        Stores.in_memory_window_store("w", 60_000, 1_000, False), Serdes.String(), Serdes.Long()
    ).build()
    window.init(_DebugContext(), window)
    window.put("k", 1, 0)
    assert window.fetch("k", 0) == 1
    list(window.fetch_all(0, 10))
    assert window.metrics_scope == "in-memory-window"
    assert {op: s.count for op, s in window.op_stats.items()} == {"put": 1, "fetch": 2, "flush": 0}
    session = Stores.session_store_builder(
        Stores.in_memory_session_store("s", 60_000), Serdes.String(), Serdes.Long()
    ).build()
    session.init(_DebugContext(), session)
    assert session.metrics_scope == "in-memory-session"
    assert set(session.op_stats) == {"put", "remove", "fetch", "flush"}
