"""Serializer and deserializer of ``Change`` values on KTable repartition topics.

The byte layout is Kafka Streams' ``ChangedSerializer``: ``old + 0x00`` when
only the old value is set, ``new + 0x01`` when only the new value is set, and
``varint(len(new)) + new + old + 0x02`` when both are. Flags 3 to 5 (the same
with an ``is_latest`` byte) are read too.
"""

from __future__ import annotations

from typing import Any

from kspark.errors import StreamsException
from kspark.kstream.internals.change import Change
from kspark.serde.api import Deserializer, Serializer

__all__ = ["ChangedSerializer", "ChangedDeserializer"]


def _write_varint(value: int) -> bytes:
    # zig-zag, as Kafka's ByteUtils.writeVarint
    v = (value << 1) ^ (value >> 31)
    out = bytearray()
    while v & ~0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        if pos >= len(data):
            raise StreamsException("Truncated varint in Change value")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
    return (value >> 1) ^ -(value & 1), pos


def _default_inner(configs: dict[str, Any], is_key: bool) -> Any:
    from kspark.serde import Serdes  # the serde package is owned elsewhere; resolved only when needed

    serde = configs.get("default.key.serde" if is_key else "default.value.serde")
    if serde is None:
        return None
    return Serdes.from_name(serde) if isinstance(serde, str) else serde


class ChangedSerializer(Serializer[Change[Any]]):
    """Writes a ``Change`` with the inner value serializer (``None``: the config's default serde)."""

    def __init__(self, inner: Serializer[Any] | None) -> None:
        self.inner = inner

    def configure(self, configs: dict[str, Any], is_key: bool) -> None:
        if self.inner is None:
            serde = _default_inner(configs, is_key)
            self.inner = None if serde is None else serde.serializer()
        elif hasattr(self.inner, "configure"):
            self.inner.configure(configs, is_key)

    def init_nullable(self, context: Any) -> None:
        """Kafka's ``WrappingNullableUtils``: a sink fills in the default value serde at init."""
        if self.inner is None and context.value_serde() is not None:
            self.inner = context.value_serde().serializer()

    def serialize(self, topic: str | None, data: Change[Any] | None) -> bytes | None:
        if data is None:
            return None
        if self.inner is None:
            raise StreamsException(
                "ChangedSerializer has no inner value serializer: set a value serde or default.value.serde"
            )
        new_bytes = self.inner.serialize(topic, data.new_value) if data.new_value is not None else None
        old_bytes = self.inner.serialize(topic, data.old_value) if data.old_value is not None else None
        if new_bytes is not None and old_bytes is not None:
            return _write_varint(len(new_bytes)) + new_bytes + old_bytes + b"\x02"
        if new_bytes is not None:
            return new_bytes + b"\x01"
        if old_bytes is not None:
            return old_bytes + b"\x00"
        raise StreamsException("Both old and new values are null in ChangeSerializer, which is not allowed.")


class ChangedDeserializer(Deserializer[Change[Any]]):
    """Reads a ``Change`` written by ``ChangedSerializer`` (or by Kafka Streams)."""

    def __init__(self, inner: Deserializer[Any] | None) -> None:
        self.inner = inner

    def configure(self, configs: dict[str, Any], is_key: bool) -> None:
        if self.inner is None:
            serde = _default_inner(configs, is_key)
            self.inner = None if serde is None else serde.deserializer()
        elif hasattr(self.inner, "configure"):
            self.inner.configure(configs, is_key)

    def init_nullable(self, context: Any) -> None:
        """Kafka's ``WrappingNullableUtils``: a source fills in the default value serde at init."""
        if self.inner is None and context.value_serde() is not None:
            self.inner = context.value_serde().deserializer()

    def deserialize(self, topic: str | None, data: bytes | None) -> Change[Any] | None:
        if data is None:
            return None
        if not data:
            raise StreamsException("Empty Change value: missing encoding flag")
        if self.inner is None:
            raise StreamsException(
                "ChangedDeserializer has no inner value deserializer: "
                "set a value serde or default.value.serde"
            )
        flag = data[-1]
        is_latest = True
        body = data[:-1]
        if flag in (3, 4, 5):
            is_latest = body[-1] != 0
            body = body[:-1]
            flag -= 3
        new_data: bytes | None
        old_data: bytes | None
        if flag == 0:
            new_data, old_data = None, body
        elif flag == 1:
            new_data, old_data = body, None
        elif flag == 2:
            length, pos = _read_varint(body, 0)
            new_data, old_data = body[pos : pos + length], body[pos + length :]
        else:
            raise StreamsException(
                f"Encountered unknown byte value `{flag}` for encodingFlag in ChangedDeserializer."
            )
        return Change(
            None if new_data is None else self.inner.deserialize(topic, new_data),
            None if old_data is None else self.inner.deserialize(topic, old_data),
            is_latest,
        )
