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
