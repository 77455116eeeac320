"""Kafka's built-in serializers and deserializers, byte for byte.

Each class mirrors one of ``org.apache.kafka.common.serialization``: numbers
are fixed-width big-endian two's complement (IEEE 754 for floats), strings and
UUIDs are UTF-8 text, booleans one byte. ``JsonSerializer`` is kspark's own
(Kafka ships none): compact UTF-8 JSON, readable by any JSON library.

``None`` always maps to ``None`` (Kafka's null / tombstone). A wrong Python
type or a byte string of the wrong length raises
:class:`kspark.errors.SerializationException` naming the class and the
problem; the runtime adds the topic and offset.
"""

from __future__ import annotations

import math
import re
import struct
import uuid
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from kspark.errors import SerializationException
from kspark.serde import _json
from kspark.serde.api import Deserializer, Serde, Serializer

__all__ = [
    "StringSerializer",
    "StringDeserializer",
    "LongSerializer",
    "LongDeserializer",
    "IntegerSerializer",
    "IntegerDeserializer",
    "ShortSerializer",
    "ShortDeserializer",
    "FloatSerializer",
    "FloatDeserializer",
    "DoubleSerializer",
    "DoubleDeserializer",
    "BooleanSerializer",
    "BooleanDeserializer",
    "ByteArraySerializer",
    "ByteArrayDeserializer",
    "UUIDSerializer",
    "UUIDDeserializer",
    "VoidSerializer",
    "VoidDeserializer",
    "JsonSerializer",
    "JsonDeserializer",
    "FunctionSerializer",
    "FunctionDeserializer",
    "WrapperSerde",
    "StringSerde",
    "LongSerde",
    "IntegerSerde",
    "ShortSerde",
    "FloatSerde",
    "DoubleSerde",
    "BooleanSerde",
    "ByteArraySerde",
    "BytesSerde",
    "UUIDSerde",
    "VoidSerde",
    "JsonSerde",
]

T = TypeVar("T")


def _type_error(cls: str, expected: str, data: object) -> SerializationException:
    return SerializationException(
        f"{cls} cannot serialize a value of type {type(data).__name__} ({data!r:.80}); expected {expected}"
    )


def _size_error(cls: str, size: int, data: bytes) -> SerializationException:
    return SerializationException(f"Size of data received by {cls} is not {size} (got {len(data)} bytes)")


def _as_bytes(cls: str, data: object) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    raise SerializationException(f"{cls} expects bytes, got {type(data).__name__}")


def _encoding(configs: dict[str, Any], is_key: bool, direction: str, default: str) -> str:
    """Kafka's ``key.serializer.encoding`` / ``serializer.encoding`` lookup."""
    value = configs.get(f"{'key' if is_key else 'value'}.{direction}.encoding")
    if value is None:
        value = configs.get(f"{direction}.encoding")
    if not isinstance(value, str):
        return default
    try:
        "".encode(value)
    except LookupError as e:
        raise SerializationException(f"Unsupported encoding {value}") from e
    return value


# -- text -----------------------------------------------------------------


class StringSerializer(Serializer[str]):
    """UTF-8 (or the configured encoding); unencodable characters become ``?`` as in Java."""

    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = encoding

    def configure(self, configs: dict[str, Any], is_key: bool) -> None:
        self.encoding = _encoding(configs, is_key, "serializer", self.encoding)

    def serialize(self, topic: str | None, data: str | None) -> bytes | None:
        if data is None:
            return None
        if not isinstance(data, str):
            raise _type_error("StringSerializer", "str", data)
        # errors passed by position: 0.14 -> 0.09 µs a call (a keyed store read and a sink each make one)
        return data.encode(self.encoding, "replace")


class StringDeserializer(Deserializer[str]):
    """Decodes UTF-8 (or the configured encoding); malformed input becomes U+FFFD as in Java."""

    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = encoding

    def configure(self, configs: dict[str, Any], is_key: bool) -> None:
        self.encoding = _encoding(configs, is_key, "deserializer", self.encoding)

    def deserialize(self, topic: str | None, data: bytes | None) -> str | None:
        if data is None:
            return None
        raw = data if type(data) is bytes else _as_bytes("StringDeserializer", data)
        return raw.decode(self.encoding, "replace")  # by position: as StringSerializer


# -- fixed-width numbers ----------------------------------------------------


class _IntSerializer(Serializer[int]):
    _name = ""
    _fmt = ""
    _bits = 0

    def serialize(self, topic: str | None, data: int | None) -> bytes | None:
        if data is None:
            return None
        # bool is an int in Python but a different type in Java: refuse it, as Kafka would.
        if isinstance(data, bool) or not isinstance(data, int):
            raise _type_error(self._name, "int", data)
        lo, hi = -(1 << (self._bits - 1)), (1 << (self._bits - 1)) - 1
        if not lo <= data <= hi:
            raise SerializationException(
                f"{self._name} cannot serialize {data}: out of the {self._bits}-bit signed range [{lo}, {hi}]"
            )
        return struct.pack(self._fmt, data)


class _IntDeserializer(Deserializer[int]):
    _name = ""
    _fmt = ""
    _size = 0

    def deserialize(self, topic: str | None, data: bytes | None) -> int | None:
        if data is None:
            return None
        raw = _as_bytes(self._name, data)
        if len(raw) != self._size:
            raise _size_error(self._name, self._size, raw)
        value: int = struct.unpack(self._fmt, raw)[0]
        return value


class LongSerializer(_IntSerializer):
    """8-byte big-endian two's complement."""

    _name, _fmt, _bits = "LongSerializer", ">q", 64


class LongDeserializer(_IntDeserializer):
    _name, _fmt, _size = "LongDeserializer", ">q", 8


class IntegerSerializer(_IntSerializer):
    """4-byte big-endian two's complement."""

    _name, _fmt, _bits = "IntegerSerializer", ">i", 32


class IntegerDeserializer(_IntDeserializer):
    _name, _fmt, _size = "IntegerDeserializer", ">i", 4


class ShortSerializer(_IntSerializer):
    """2-byte big-endian two's complement."""

    _name, _fmt, _bits = "ShortSerializer", ">h", 16


class ShortDeserializer(_IntDeserializer):
    _name, _fmt, _size = "ShortDeserializer", ">h", 2


class FloatSerializer(Serializer[float]):
    """4-byte IEEE 754 single precision (``Float.floatToRawIntBits``)."""

    def serialize(self, topic: str | None, data: float | None) -> bytes | None:
        if data is None:
            return None
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise _type_error("FloatSerializer", "float", data)
        try:
            return struct.pack(">f", data)
        except OverflowError:
            # Java's double-to-float narrowing saturates to infinity instead of failing.
            return struct.pack(">f", math.copysign(math.inf, data))


class FloatDeserializer(Deserializer[float]):
    def deserialize(self, topic: str | None, data: bytes | None) -> float | None:
        if data is None:
            return None
        raw = _as_bytes("FloatDeserializer", data)
        if len(raw) != 4:
            raise _size_error("FloatDeserializer", 4, raw)
        value: float = struct.unpack(">f", raw)[0]
        return value


class DoubleSerializer(Serializer[float]):
    """8-byte IEEE 754 double precision (``Double.doubleToLongBits``)."""

    def serialize(self, topic: str | None, data: float | None) -> bytes | None:
        if data is None:
            return None
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise _type_error("DoubleSerializer", "float", data)
        if isinstance(data, float) and math.isnan(data):
            # doubleToLongBits collapses every NaN to the canonical one.
            return b"\x7f\xf8\x00\x00\x00\x00\x00\x00"
        try:
            return struct.pack(">d", data)
        except OverflowError as e:
            raise SerializationException(
                f"DoubleSerializer cannot serialize {data}: too large for a double"
            ) from e


class DoubleDeserializer(Deserializer[float]):
    def deserialize(self, topic: str | None, data: bytes | None) -> float | None:
        if data is None:
            return None
        raw = _as_bytes("DoubleDeserializer", data)
        if len(raw) != 8:
            raise _size_error("DoubleDeserializer", 8, raw)
        value: float = struct.unpack(">d", raw)[0]
        return value


class BooleanSerializer(Serializer[bool]):
    """One byte: ``0x01`` for true, ``0x00`` for false."""

    def serialize(self, topic: str | None, data: bool | None) -> bytes | None:
        if data is None:
            return None
        if not isinstance(data, bool):
            raise _type_error("BooleanSerializer", "bool", data)
        return b"\x01" if data else b"\x00"


class BooleanDeserializer(Deserializer[bool]):
    def deserialize(self, topic: str | None, data: bytes | None) -> bool | None:
        if data is None:
            return None
        raw = _as_bytes("BooleanDeserializer", data)
        if len(raw) != 1:
            raise _size_error("BooleanDeserializer", 1, raw)
        if raw == b"\x01":
            return True
        if raw == b"\x00":
            return False
        # Java prints the signed byte value.
        signed = raw[0] - 256 if raw[0] > 127 else raw[0]
        raise SerializationException(f"Unexpected byte received by BooleanDeserializer: {signed}")


# -- raw bytes, UUID, Void --------------------------------------------------


class ByteArraySerializer(Serializer[bytes]):
    """The bytes unchanged (``bytearray`` and ``memoryview`` are copied to ``bytes``)."""

    def serialize(self, topic: str | None, data: bytes | None) -> bytes | None:
        if data is None:
            return None
        if not isinstance(data, bytes | bytearray | memoryview):
            raise _type_error("ByteArraySerializer", "bytes", data)
        return bytes(data)


class ByteArrayDeserializer(Deserializer[bytes]):
    def deserialize(self, topic: str | None, data: bytes | None) -> bytes | None:
        if data is None:
            return None
        return _as_bytes("ByteArrayDeserializer", data)


_UUID_TEXT = re.compile(
    r"^[0-9a-fA-F]{1,8}-[0-9a-fA-F]{1,4}-[0-9a-fA-F]{1,4}-[0-9a-fA-F]{1,4}-[0-9a-fA-F]{1,12}$"
)


class UUIDSerializer(Serializer[uuid.UUID]):
    """The canonical 36-character text form, encoded as UTF-8 (``UUID.toString()``)."""

    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = encoding

    def configure(self, configs: dict[str, Any], is_key: bool) -> None:
        self.encoding = _encoding(configs, is_key, "serializer", self.encoding)

    def serialize(self, topic: str | None, data: uuid.UUID | None) -> bytes | None:
        if data is None:
            return None
        if not isinstance(data, uuid.UUID):
            raise _type_error("UUIDSerializer", "uuid.UUID", data)
        return str(data).encode(self.encoding)


class UUIDDeserializer(Deserializer[uuid.UUID]):
    """Parses the hyphenated text form, as ``UUID.fromString`` does."""

    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = encoding

    def configure(self, configs: dict[str, Any], is_key: bool) -> None:
        self.encoding = _encoding(configs, is_key, "deserializer", self.encoding)

    def deserialize(self, topic: str | None, data: bytes | None) -> uuid.UUID | None:
        if data is None:
            return None
        try:
            text = _as_bytes("UUIDDeserializer", data).decode(self.encoding)
        except UnicodeDecodeError as e:
            raise SerializationException("Error parsing data into UUID: not valid text") from e
        if not _UUID_TEXT.match(text):
            raise SerializationException(f"Error parsing data into UUID: {text!r:.60}")
        # UUID.fromString accepts short groups and pads them with leading zeros.
        groups = text.split("-")
        widths = (8, 4, 4, 4, 12)
        return uuid.UUID("-".join(g.rjust(w, "0") for g, w in zip(groups, widths, strict=True)))


class VoidSerializer(Serializer[None]):
    """Only ``None`` is a valid value; it serializes to ``None``."""

    def serialize(self, topic: str | None, data: None) -> bytes | None:
        if data is not None:
            raise _type_error("VoidSerializer", "None", data)
        return None


class VoidDeserializer(Deserializer[None]):
    def deserialize(self, topic: str | None, data: bytes | None) -> None:
        if data is not None:
            raise SerializationException("Data should be null for a VoidDeserializer.")
        return None


# -- JSON (kspark's own) -------------------------------------------------------


class JsonSerializer(Serializer[Any]):
    """Compact UTF-8 JSON (no spaces, non-ASCII kept as UTF-8, NaN/Infinity refused).

    Not a Kafka built-in: kspark's convenience for dict/list/str/number
    values. Any JSON reader (Jackson, ``json.loads``) reads the bytes.
    Encoded with orjson where that gives the standard library's value
    (``kspark/serde/_json.py`` says where the two differ and how it is kept).
    """

    def serialize(self, topic: str | None, data: Any) -> bytes | None:
        if data is None:
            return None
        try:
            return _json.encode(data)
        except (TypeError, ValueError, RecursionError) as e:
            raise SerializationException(
                f"JsonSerializer cannot serialize a value of type {type(data).__name__}: {e}"
            ) from e


class JsonDeserializer(Deserializer[Any]):
    def deserialize(self, topic: str | None, data: bytes | None) -> Any:
        if data is None:
            return None
        raw = data if type(data) is bytes else _as_bytes("JsonDeserializer", data)
        try:
            return _json.decode(raw)
        except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
            raise SerializationException(
                f"JsonDeserializer cannot parse {len(raw)} bytes as UTF-8 JSON: {e}"
            ) from e


# -- user functions ---------------------------------------------------------


class FunctionSerializer(Serializer[T]):
    """A serializer from a plain ``fn(obj) -> bytes`` (``None`` stays ``None``)."""

    def __init__(self, fn: Callable[[T], bytes]) -> None:
        self._fn = fn

    def serialize(self, topic: str | None, data: T | None) -> bytes | None:
        return None if data is None else self._fn(data)


class FunctionDeserializer(Deserializer[T]):
    """A deserializer from a plain ``fn(bytes) -> obj`` (``None`` stays ``None``)."""

    def __init__(self, fn: Callable[[bytes], T]) -> None:
        self._fn = fn

    def deserialize(self, topic: str | None, data: bytes | None) -> T | None:
        return None if data is None else self._fn(data)


# -- serdes -------------------------------------------------------------------


class WrapperSerde(Serde[T], Generic[T]):
    """A serde holding one serializer and one deserializer (Kafka's ``Serdes.WrapperSerde``).

    Two serdes are equal when they are of the same class and hold equal
    halves; the built-in ones compare equal whenever they are of the same kind.
    """

    def __init__(self, serializer: Serializer[T], deserializer: Deserializer[T]) -> None:
        if serializer is None:
            raise ValueError("serializer must not be None")
        if deserializer is None:
            raise ValueError("deserializer must not be None")
        self._serializer = serializer
        self._deserializer = deserializer

    def serializer(self) -> Serializer[T]:
        return self._serializer

    def deserializer(self) -> Deserializer[T]:
        return self._deserializer

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({type(self._serializer).__name__}, {type(self._deserializer).__name__})"
        )


class _BuiltinSerde(WrapperSerde[T]):
    """A stateless built-in: equal to any other instance of its class."""

    _label = ""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        return f"Serdes.{self._label}()"


class StringSerde(_BuiltinSerde[str]):
    _label = "String"

    def __init__(self) -> None:
        super().__init__(StringSerializer(), StringDeserializer())


class LongSerde(_BuiltinSerde[int]):
    _label = "Long"

    def __init__(self) -> None:
        super().__init__(LongSerializer(), LongDeserializer())


class IntegerSerde(_BuiltinSerde[int]):
    _label = "Integer"

    def __init__(self) -> None:
        super().__init__(IntegerSerializer(), IntegerDeserializer())


class ShortSerde(_BuiltinSerde[int]):
    _label = "Short"

    def __init__(self) -> None:
        super().__init__(ShortSerializer(), ShortDeserializer())


class FloatSerde(_BuiltinSerde[float]):
    _label = "Float"

    def __init__(self) -> None:
        super().__init__(FloatSerializer(), FloatDeserializer())


class DoubleSerde(_BuiltinSerde[float]):
    _label = "Double"

    def __init__(self) -> None:
        super().__init__(DoubleSerializer(), DoubleDeserializer())


class BooleanSerde(_BuiltinSerde[bool]):
    _label = "Boolean"

    def __init__(self) -> None:
        super().__init__(BooleanSerializer(), BooleanDeserializer())


class ByteArraySerde(_BuiltinSerde[bytes]):
    _label = "ByteArray"

    def __init__(self) -> None:
        super().__init__(ByteArraySerializer(), ByteArrayDeserializer())


class BytesSerde(_BuiltinSerde[bytes]):
    """Kafka's ``Bytes`` wrapper has no Python counterpart: same bytes as ``ByteArray``."""

    _label = "Bytes"

    def __init__(self) -> None:
        super().__init__(ByteArraySerializer(), ByteArrayDeserializer())


class UUIDSerde(_BuiltinSerde[uuid.UUID]):
    _label = "UUID"

    def __init__(self) -> None:
        super().__init__(UUIDSerializer(), UUIDDeserializer())


class VoidSerde(_BuiltinSerde[None]):
    _label = "Void"

    def __init__(self) -> None:
        super().__init__(VoidSerializer(), VoidDeserializer())


class JsonSerde(_BuiltinSerde[Any]):
    """kspark's JSON serde (not a Kafka built-in)."""

    _label = "JSON"

    def __init__(self) -> None:
        super().__init__(JsonSerializer(), JsonDeserializer())
