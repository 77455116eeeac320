"""Windowed serdes: Kafka's WindowKeySchema / SessionKeySchema byte layouts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kspark.errors import SerializationException
from kspark.kstream.windowed import SessionWindow, TimeWindow, Window, Windowed
from kspark.serde import Serdes, WindowedSerdes

LONG_MAX = 2**63 - 1


def test_time_windowed_layout_key_then_start() -> None:
    serde = Serdes.time_windowed(Serdes.String(), 5000)
    raw = serde.serializer().serialize("t", Windowed("k", TimeWindow(1000, 6000)))
    assert raw == b"k" + (1000).to_bytes(8, "big")
    back = serde.deserializer().deserialize("t", raw)
    assert back == Windowed("k", Window(1000, 6000))
    assert isinstance(back.window, TimeWindow)


def test_time_windowed_end_comes_from_size_not_the_data() -> None:
    # the end is not written: a different size on read yields a different end (as in Kafka)
    raw = Serdes.time_windowed(Serdes.Long(), 10).serializer().serialize("t", Windowed(7, TimeWindow(20, 30)))
    assert raw == (7).to_bytes(8, "big") + (20).to_bytes(8, "big")
    assert Serdes.time_windowed(Serdes.Long(), timedelta(seconds=1)).deserializer().deserialize(
        "t", raw
    ) == Windowed(7, Window(20, 1020))


def test_time_windowed_end_clamped_to_long_max() -> None:
    serde = Serdes.time_windowed(Serdes.String(), LONG_MAX)
    raw = b"k" + (5).to_bytes(8, "big")
    assert serde.deserializer().deserialize("t", raw) == Windowed("k", Window(5, LONG_MAX))


def test_session_windowed_layout_key_end_start() -> None:
    serde = Serdes.session_windowed(Serdes.String())
    raw = serde.serializer().serialize("t", Windowed("ab", SessionWindow(10, 30)))
    assert raw == b"ab" + (30).to_bytes(8, "big") + (10).to_bytes(8, "big")
    back = serde.deserializer().deserialize("t", raw)
    assert back == Windowed("ab", Window(10, 30))
    assert isinstance(back.window, SessionWindow)


def test_changelog_layout_has_sequence_number() -> None:
    serde = WindowedSerdes.time_windowed_serde_from(Serdes.String(), 100).for_changelog(True)
    raw = b"k" + (200).to_bytes(8, "big") + (3).to_bytes(4, "big")
    assert serde.deserializer().deserialize("t", raw) == Windowed("k", Window(200, 300))


def test_none_and_empty() -> None:
    serde = Serdes.time_windowed(Serdes.String(), 10)
    assert serde.serializer().serialize("t", None) is None
    assert serde.deserializer().deserialize("t", None) is None
    assert serde.deserializer().deserialize("t", b"") is None
    assert Serdes.session_windowed(Serdes.String()).deserializer().deserialize("t", b"") is None


def test_errors() -> None:
    with pytest.raises(SerializationException, match="expected Windowed"):
        Serdes.time_windowed(Serdes.String(), 10).serializer().serialize("t", "k")  # type: ignore[arg-type]
    with pytest.raises(SerializationException, match="at least 8 bytes"):
        Serdes.time_windowed(Serdes.String(), 10).deserializer().deserialize("t", b"abc")
    with pytest.raises(SerializationException, match="at least 16 bytes"):
        Serdes.session_windowed(Serdes.String()).deserializer().deserialize("t", b"abcdefghij")
    with pytest.raises(SerializationException, match="invalid window"):
        Serdes.session_windowed(Serdes.String()).deserializer().deserialize(
            "t", b"k" + (1).to_bytes(8, "big") + (5).to_bytes(8, "big")
        )
    with pytest.raises(ValueError, match="positive"):
        Serdes.time_windowed(Serdes.String(), 0)


def test_equality() -> None:
    assert Serdes.time_windowed(Serdes.String(), 10) == Serdes.time_windowed(Serdes.String(), 10)
    assert Serdes.time_windowed(Serdes.String(), 10) != Serdes.time_windowed(Serdes.String(), 11)
    assert Serdes.session_windowed(Serdes.Long()) == Serdes.session_windowed(Serdes.Long())


def test_deserializer_window_size_from_config() -> None:
    from kspark.serde.windowed import TimeWindowedDeserializer

    d = TimeWindowedDeserializer(Serdes.String().deserializer())
    d.configure({"window.size.ms": "50"}, is_key=True)
    assert d.deserialize("t", b"k" + (0).to_bytes(8, "big")) == Windowed("k", Window(0, 50))
    both = TimeWindowedDeserializer(Serdes.String().deserializer(), 10)
    with pytest.raises(ValueError, match="both"):
        both.configure({"window.size.ms": 50}, is_key=True)


@given(st.text(), st.integers(0, 2**62), st.integers(1, 2**40))
def test_time_windowed_round_trip(key: str, start: int, size: int) -> None:
    serde = Serdes.time_windowed(Serdes.String(), size)
    w = Windowed(key, TimeWindow(start, start + size))
    raw = serde.serializer().serialize("t", w)
    assert raw is not None and raw[-8:] == start.to_bytes(8, "big")
    assert serde.deserializer().deserialize("t", raw) == w


@given(st.binary(), st.integers(0, 2**62), st.integers(0, 2**40))
def test_session_windowed_round_trip(key: bytes, start: int, length: int) -> None:
    serde = Serdes.session_windowed(Serdes.ByteArray())
    w = Windowed(key, SessionWindow(start, start + length))
    assert serde.deserializer().deserialize("t", serde.serializer().serialize("t", w)) == w
