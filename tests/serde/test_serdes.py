"""Byte-exact checks of the built-in serdes against Kafka's documented formats."""

from __future__ import annotations

import math
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kspark.errors import SerializationException
from kspark.serde import Serde, Serdes
from kspark.serde.api import Deserializer, Serializer


def ser(serde: Serde[Any], obj: Any) -> bytes | None:
    return serde.serializer().serialize("t", obj)


def de(serde: Serde[Any], data: bytes | None) -> Any:
    return serde.deserializer().deserialize("t", data)


@pytest.mark.parametrize(
    ("serde", "obj", "raw"),
    [
        (Serdes.Long(), 1, b"\x00\x00\x00\x00\x00\x00\x00\x01"),
        (Serdes.Long(), -1, b"\xff" * 8),
        (Serdes.Long(), 2**63 - 1, b"\x7f" + b"\xff" * 7),
        (Serdes.Long(), -(2**63), b"\x80" + b"\x00" * 7),
        (Serdes.Long(), 256, b"\x00\x00\x00\x00\x00\x00\x01\x00"),
        (Serdes.Integer(), 1, b"\x00\x00\x00\x01"),
        (Serdes.Integer(), -2, b"\xff\xff\xff\xfe"),
        (Serdes.Integer(), 2**31 - 1, b"\x7f\xff\xff\xff"),
        (Serdes.Short(), 1, b"\x00\x01"),
        (Serdes.Short(), -32768, b"\x80\x00"),
        (Serdes.Float(), 1.0, b"\x3f\x80\x00\x00"),
        (Serdes.Float(), -2.5, b"\xc0\x20\x00\x00"),
        (Serdes.Double(), 1.0, b"\x3f\xf0\x00\x00\x00\x00\x00\x00"),
        (Serdes.Double(), 0.1, b"\x3f\xb9\x99\x99\x99\x99\x99\x9a"),
        (Serdes.Double(), -0.0, b"\x80\x00\x00\x00\x00\x00\x00\x00"),
        (Serdes.Double(), math.inf, b"\x7f\xf0\x00\x00\x00\x00\x00\x00"),
        (Serdes.String(), "héllo", b"h\xc3\xa9llo"),
        (Serdes.String(), "", b""),
        (Serdes.Boolean(), True, b"\x01"),
        (Serdes.Boolean(), False, b"\x00"),
        (Serdes.ByteArray(), b"\x00\xff", b"\x00\xff"),
        (Serdes.Bytes(), b"abc", b"abc"),
        (
            Serdes.UUID(),
            uuid.UUID("123e4567-e89b-12d3-a456-426614174000"),
            b"123e4567-e89b-12d3-a456-426614174000",
        ),
        (Serdes.JSON(), {"a": [1, 2.5, "é"], "b": None}, '{"a":[1,2.5,"é"],"b":null}'.encode()),
        (Serdes.JSON(), "x", b'"x"'),
    ],
)
def test_exact_bytes_and_round_trip(serde: Serde[Any], obj: Any, raw: bytes) -> None:
    assert ser(serde, obj) == raw
    back = de(serde, raw)
    assert back == obj
    if isinstance(obj, float):
        assert math.copysign(1.0, back) == math.copysign(1.0, obj)


def test_double_nan_is_canonical() -> None:
    assert ser(Serdes.Double(), math.nan) == b"\x7f\xf8\x00\x00\x00\x00\x00\x00"
    assert math.isnan(de(Serdes.Double(), b"\x7f\xf8\x00\x00\x00\x00\x00\x00"))


def test_float_saturates_like_java_narrowing() -> None:
    assert ser(Serdes.Float(), 1e300) == b"\x7f\x80\x00\x00"
    assert ser(Serdes.Float(), -1e300) == b"\xff\x80\x00\x00"


@pytest.mark.parametrize(
    "serde",
    [
        Serdes.String(),
        Serdes.Long(),
        Serdes.Integer(),
        Serdes.Short(),
        Serdes.Float(),
        Serdes.Double(),
        Serdes.Boolean(),
        Serdes.ByteArray(),
        Serdes.Bytes(),
        Serdes.UUID(),
        Serdes.JSON(),
        Serdes.Void(),
    ],
)
def test_none_is_none_both_ways(serde: Serde[Any]) -> None:
    assert ser(serde, None) is None
    assert de(serde, None) is None


@pytest.mark.parametrize(
    ("serde", "size", "name"),
    [
        (Serdes.Long(), 8, "LongDeserializer"),
        (Serdes.Integer(), 4, "IntegerDeserializer"),
        (Serdes.Short(), 2, "ShortDeserializer"),
        (Serdes.Float(), 4, "FloatDeserializer"),
        (Serdes.Double(), 8, "DoubleDeserializer"),
        (Serdes.Boolean(), 1, "BooleanDeserializer"),
    ],
)
def test_wrong_size_names_class_and_size(serde: Serde[Any], size: int, name: str) -> None:
    with pytest.raises(SerializationException, match=f"Size of data received by {name} is not {size}"):
        de(serde, b"\x00" * (size + 1))


@pytest.mark.parametrize(
    ("serde", "obj", "name"),
    [
        (Serdes.Long(), "1", "LongSerializer"),
        (Serdes.Long(), True, "LongSerializer"),
        (Serdes.Integer(), 1.5, "IntegerSerializer"),
        (Serdes.String(), 5, "StringSerializer"),
        (Serdes.Double(), "x", "DoubleSerializer"),
        (Serdes.Boolean(), 1, "BooleanSerializer"),
        (Serdes.ByteArray(), "x", "ByteArraySerializer"),
        (Serdes.UUID(), "123e4567-e89b-12d3-a456-426614174000", "UUIDSerializer"),
        (Serdes.Void(), 1, "VoidSerializer"),
        (Serdes.JSON(), {1, 2}, "JsonSerializer"),
        (Serdes.JSON(), math.nan, "JsonSerializer"),
    ],
)
def test_wrong_type_is_a_serialization_error(serde: Serde[Any], obj: Any, name: str) -> None:
    with pytest.raises(SerializationException, match=name):
        ser(serde, obj)


def test_out_of_range_ints() -> None:
    with pytest.raises(SerializationException, match="64-bit"):
        ser(Serdes.Long(), 2**63)
    with pytest.raises(SerializationException, match="32-bit"):
        ser(Serdes.Integer(), 2**31)
    with pytest.raises(SerializationException, match="16-bit"):
        ser(Serdes.Short(), -(2**15) - 1)


def test_boolean_bad_byte_and_void_data() -> None:
    with pytest.raises(SerializationException, match="Unexpected byte received by BooleanDeserializer: -1"):
        de(Serdes.Boolean(), b"\xff")
    with pytest.raises(SerializationException, match="Data should be null for a VoidDeserializer"):
        de(Serdes.Void(), b"")


def test_bad_json_and_bad_uuid() -> None:
    with pytest.raises(SerializationException, match="JsonDeserializer"):
        de(Serdes.JSON(), b"{nope")
    with pytest.raises(SerializationException, match="UUID"):
        de(Serdes.UUID(), b"not-a-uuid")
    # UUID.fromString pads short groups
    assert de(Serdes.UUID(), b"1-2-3-4-5") == uuid.UUID("00000001-0002-0003-0004-000000000005")


def test_string_malformed_utf8_is_replaced_like_java() -> None:
    assert de(Serdes.String(), b"a\xffb") == "a\ufffdb"


def test_string_encoding_config() -> None:
    s = Serdes.String()
    s.configure({"value.serializer.encoding": "latin-1", "deserializer.encoding": "latin-1"}, is_key=False)
    assert ser(s, "é") == b"\xe9"
    assert de(s, b"\xe9") == "é"
    with pytest.raises(SerializationException, match="Unsupported encoding nope"):
        Serdes.String().configure({"serializer.encoding": "nope"}, is_key=True)


@pytest.mark.parametrize(
    ("name", "obj", "raw"),
    [
        ("string", "a", b"a"),
        ("long", 1, b"\x00" * 7 + b"\x01"),
        ("integer", 1, b"\x00\x00\x00\x01"),
        ("double", 1.0, b"\x3f\xf0" + b"\x00" * 6),
        ("bytes", b"x", b"x"),
        ("json", [1], b"[1]"),
        ("LONG", 1, b"\x00" * 7 + b"\x01"),
        ("org.apache.kafka.common.serialization.Serdes$StringSerde", "a", b"a"),
    ],
)
def test_from_name(name: str, obj: Any, raw: bytes) -> None:
    assert ser(Serdes.from_name(name), obj) == raw


def test_from_name_unknown_lists_choices() -> None:
    with pytest.raises(ValueError, match=r"Unknown serde name 'avro'.*json"):
        Serdes.from_name("avro")


def test_serde_equality_and_repr() -> None:
    assert Serdes.String() == Serdes.String()
    assert Serdes.String() != Serdes.Long()  # type: ignore[comparison-overlap]
    assert repr(Serdes.Long()) == "Serdes.Long()"
    assert Serdes.from_name("json") == Serdes.JSON()


def test_serde_from_objects_and_functions() -> None:
    class Upper(Serializer[str]):
        def serialize(self, topic: str | None, data: str | None) -> bytes | None:
            return None if data is None else data.upper().encode()

    class Lower(Deserializer[str]):
        def deserialize(self, topic: str | None, data: bytes | None) -> str | None:
            return None if data is None else data.decode().lower()

    s = Serdes.serde_from(Upper(), Lower())
    assert ser(s, "ab") == b"AB" and de(s, b"AB") == "ab"
    f = Serdes.wrap(lambda v: str(v).encode(), lambda b: int(b))
    assert ser(f, 42) == b"42" and de(f, b"42") == 42
    assert ser(f, None) is None
    assert Serdes.serde_from(str) == Serdes.String()
    with pytest.raises(ValueError, match="int"):
        Serdes.serde_from(int)


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_long_matches_twos_complement(n: int) -> None:
    raw = ser(Serdes.Long(), n)
    assert raw == (n % 2**64).to_bytes(8, "big")
    assert de(Serdes.Long(), raw) == n


@given(st.integers(min_value=-(2**31), max_value=2**31 - 1))
def test_integer_matches_twos_complement(n: int) -> None:
    raw = ser(Serdes.Integer(), n)
    assert raw == (n % 2**32).to_bytes(4, "big")
    assert de(Serdes.Integer(), raw) == n


@given(st.floats(allow_nan=False))
def test_double_round_trip(x: float) -> None:
    assert de(Serdes.Double(), ser(Serdes.Double(), x)) == x


@given(st.text())
def test_string_round_trip(s: str) -> None:
    raw = ser(Serdes.String(), s)
    if not any(0xD800 <= ord(c) <= 0xDFFF for c in s):
        assert raw == s.encode("utf-8")
        assert de(Serdes.String(), raw) == s


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
    )
)
def test_json_round_trip(obj: Any) -> None:
    if obj is None:
        return
    assert de(Serdes.JSON(), ser(Serdes.JSON(), obj)) == obj
