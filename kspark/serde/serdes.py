"""``Serdes``: the factory of built-in serdes, as Kafka's ``Serdes`` class.

``Serdes.String()``, ``Serdes.Long()`` ... return new serde instances whose
bytes are identical to Kafka's. ``Serdes.from_name`` resolves the names the
config accepts (``default.key.serde`` / ``default.value.serde``), and
``Serdes.serde_from`` / ``Serdes.wrap`` build a serde from a user's own
serializer and deserializer (objects or plain functions).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from kspark.serde.api import Deserializer, Serde, Serializer
from kspark.serde.primitives import (
    BooleanSerde,
    ByteArraySerde,
    BytesSerde,
    DoubleSerde,
    FloatSerde,
    FunctionDeserializer,
    FunctionSerializer,
    IntegerSerde,
    JsonSerde,
    LongSerde,
    ShortSerde,
    StringSerde,
    UUIDSerde,
    VoidSerde,
    WrapperSerde,
)
from kspark.serde.windowed import SessionWindowedSerde, TimeWindowedSerde

__all__ = ["Serdes"]

T = TypeVar("T")

_BY_NAME: dict[str, Callable[[], Serde[Any]]] = {
    "string": StringSerde,
    "long": LongSerde,
    "integer": IntegerSerde,
    "int": IntegerSerde,
    "short": ShortSerde,
    "float": FloatSerde,
    "double": DoubleSerde,
    "boolean": BooleanSerde,
    "bool": BooleanSerde,
    "bytes": BytesSerde,
    "bytearray": ByteArraySerde,
    "uuid": UUIDSerde,
    "void": VoidSerde,
    "json": JsonSerde,
}

# Kafka's class names, so a config copied from a Java app works unchanged.
_JAVA_PREFIX = "org.apache.kafka.common.serialization.serdes$"


class Serdes:
    """Built-in serdes. Method names follow Kafka's (``Serdes.String()``), hence the capitals."""

    WrapperSerde = WrapperSerde

    @staticmethod
    def String() -> Serde[str]:
        """UTF-8 text."""
        return StringSerde()

    @staticmethod
    def Long() -> Serde[int]:
        """8-byte big-endian signed integer."""
        return LongSerde()

    @staticmethod
    def Integer() -> Serde[int]:
        """4-byte big-endian signed integer."""
        return IntegerSerde()

    @staticmethod
    def Short() -> Serde[int]:
        """2-byte big-endian signed integer."""
        return ShortSerde()

    @staticmethod
    def Float() -> Serde[float]:
        """4-byte IEEE 754 big-endian."""
        return FloatSerde()

    @staticmethod
    def Double() -> Serde[float]:
        """8-byte IEEE 754 big-endian."""
        return DoubleSerde()

    @staticmethod
    def Boolean() -> Serde[bool]:
        """One byte, 0x01 or 0x00."""
        return BooleanSerde()

    @staticmethod
    def ByteArray() -> Serde[bytes]:
        """The bytes unchanged."""
        return ByteArraySerde()

    @staticmethod
    def Bytes() -> Serde[bytes]:
        """The bytes unchanged (Kafka's ``Bytes`` wrapper is plain ``bytes`` in Python)."""
        return BytesSerde()

    @staticmethod
    def UUID() -> Serde[uuid.UUID]:
        """The 36-character text form in UTF-8."""
        return UUIDSerde()

    @staticmethod
    def Void() -> Serde[None]:
        """Only ``None``."""
        return VoidSerde()

    @staticmethod
    def JSON() -> Serde[Any]:
        """Compact UTF-8 JSON. kspark's own; Kafka has no built-in JSON serde."""
        return JsonSerde()

    @staticmethod
    def time_windowed(inner: Serde[T], window_size_ms: int | timedelta) -> TimeWindowedSerde[T]:
        """Kafka's ``TimeWindowedSerde``: key bytes + 8-byte start; the end is start + size."""
        return TimeWindowedSerde(inner, window_size_ms)

    @staticmethod
    def session_windowed(inner: Serde[T]) -> SessionWindowedSerde[T]:
        """Kafka's ``SessionWindowedSerde``: key bytes + 8-byte end + 8-byte start."""
        return SessionWindowedSerde(inner)

    @staticmethod
    def serde_from(
        serializer: Serializer[T] | Callable[[T], bytes] | type,
        deserializer: Deserializer[T] | Callable[[bytes], T] | None = None,
    ) -> Serde[T]:
        """A serde from a serializer and a deserializer (objects or plain functions).

        With a single type argument it picks the built-in serde of that type,
        as Kafka's ``serdeFrom(Class)`` (``str``, ``float``, ``bool``, ``bytes``,
        ``uuid.UUID``; ``int`` is ambiguous in Python and refused: use
        ``Serdes.Long()`` or ``Serdes.Integer()``).
        """
        if deserializer is None:
            if isinstance(serializer, type):
                return Serdes._from_type(serializer)
            raise ValueError("deserializer must not be None")
        ser: Serializer[T]
        de: Deserializer[T]
        if isinstance(serializer, Serializer):
            ser = serializer
        elif callable(serializer):
            ser = FunctionSerializer(serializer)
        else:
            raise TypeError(f"serializer must be a Serializer or a callable, got {serializer!r}")
        if isinstance(deserializer, Deserializer):
            de = deserializer
        elif callable(deserializer):
            de = FunctionDeserializer(deserializer)
        else:
            raise TypeError(f"deserializer must be a Deserializer or a callable, got {deserializer!r}")
        return WrapperSerde(ser, de)

    wrap = serde_from

    @staticmethod
    def _from_type(cls: type) -> Serde[Any]:
        table: dict[type, Callable[[], Serde[Any]]] = {
            str: StringSerde,
            float: DoubleSerde,
            bool: BooleanSerde,
            bytes: ByteArraySerde,
            uuid.UUID: UUIDSerde,
        }
        factory = table.get(cls)
        if factory is None:
            raise ValueError(
                f"Unknown class for built-in serializer: {cls.__name__}. Supported types are: "
                "str, float, bool, bytes, uuid.UUID (for int choose Serdes.Long() or Serdes.Integer())"
            )
        return factory()

    @staticmethod
    def from_name(name: str) -> Serde[Any]:
        """The serde a config name stands for: ``string``, ``long``, ``integer``, ``double``,
        ``bytes``, ``json`` (also ``short``, ``float``, ``boolean``, ``bytearray``, ``uuid``,
        ``void``, and Kafka's Java class names such as
        ``org.apache.kafka.common.serialization.Serdes$StringSerde``)."""
        if not isinstance(name, str):
            raise TypeError(f"serde name must be a str, got {name!r}")
        key = name.strip().lower()
        if key.startswith(_JAVA_PREFIX) and key.endswith("serde"):
            key = key[len(_JAVA_PREFIX) : -len("serde")]
        factory = _BY_NAME.get(key)
        if factory is None:
            known = ", ".join(sorted(_BY_NAME))
            raise ValueError(f"Unknown serde name {name!r}; expected one of: {known}")
        return factory()

    @staticmethod
    def names() -> list[str]:
        """The names ``from_name`` accepts (besides Java class names)."""
        return sorted(_BY_NAME)
