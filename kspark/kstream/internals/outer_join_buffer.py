"""The shared store of left/outer stream-stream joins: unmatched records waiting for their window to close.

Mirrors Kafka's ``KSTREAM-OUTERSHARED-...-store``: a key-value store built by
``ListValueStoreBuilder`` (typed/metered -> change-logging -> ``ListValueStore``
-> inner bytes store from ``Stores``), where each key holds the *list* of
values parked under it. Byte layouts are Kafka's, so the changelog
``<application.id>-<store>-changelog`` carries what Kafka's does:

* key: ``TimestampedKeyAndJoinSideSerializer``: 8-byte big-endian timestamp,
  one side byte (1 = left, 0 = right), then the serialized record key; the
  inner store orders keys by these bytes (timestamp, then right before left);
* value: ``ListSerde(ByteArray)`` in its variable-size layout (strategy byte
  1, 4-byte count, then 4-byte length + bytes per element) whose elements are
  ``LeftOrRightValueSerializer`` bytes (1 = left / 0 = right, then the value).

Every change logs the key's whole current list (or a tombstone when the list
is deleted), so the latest changelog record per key restores the store; the
metered layer's restore callback writes them into the inner bytes store.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kspark.errors import SerializationException
from kspark.key_value import KeyValue
from kspark.processor.api import ProcessorContext
from kspark.serde.api import Deserializer, Serde, Serializer
from kspark.serde.primitives import WrapperSerde
from kspark.serde.serdes import Serdes
from kspark.state.api import KeyValueIterator, StateStore
from kspark.state.internals.builders import KeyValueBytesStoreSupplier, KeyValueStoreBuilder
from kspark.state.internals.change_logging import ChangeLoggingKeyValueBytesStore, WrappedStateStore
from kspark.state.internals.iterators import PeekingKeyValueIterator
from kspark.state.internals.metered import MeteredKeyValueStore

__all__ = [
    "TimestampedKeyAndJoinSide",
    "LeftOrRightValue",
    "TimestampedKeyAndJoinSideSerde",
    "LeftOrRightValueSerde",
    "serialize_value_list",
    "deserialize_value_list",
    "ListValueStore",
    "ChangeLoggingListValueBytesStore",
    "OuterJoinStoreBuilder",
]

K = TypeVar("K")
_LONG = struct.Struct(">q")
_INT = struct.Struct(">i")
_VARIABLE_SIZE = 1  # ListSerde.SerializationStrategy.VARIABLE_SIZE.ordinal()


@dataclass(frozen=True)
class TimestampedKeyAndJoinSide(Generic[K]):
    """Key of the outer-join store: the record key, its timestamp and which side it came from."""

    key: K
    timestamp: int
    left_side: bool


@dataclass(frozen=True)
class LeftOrRightValue:
    """A parked unmatched value of one side (exactly one of the two is set)."""

    left_value: Any
    right_value: Any


def _resolved(serde: Serde[Any] | str | None, default: Any, what: str) -> Serde[Any]:
    if serde is None:
        serde = default
    if isinstance(serde, str):
        serde = Serdes.from_name(serde)
    if not isinstance(serde, Serde):
        raise SerializationException(
            f"No usable {what} serde for the outer-join store: got {serde!r}; "
            f"pass one in StreamJoined or set default.{what}.serde"
        )
    return serde


class _KeyAndSideSerializer(Serializer[TimestampedKeyAndJoinSide[Any]]):
    def __init__(self, owner: TimestampedKeyAndJoinSideSerde) -> None:
        self._owner = owner

    def serialize(self, topic: str | None, data: TimestampedKeyAndJoinSide[Any] | None) -> bytes | None:
        if data is None:
            return None
        raw = self._owner.inner().serializer().serialize(topic, data.key) or b""
        return _LONG.pack(data.timestamp) + (b"\x01" if data.left_side else b"\x00") + raw


class _KeyAndSideDeserializer(Deserializer[TimestampedKeyAndJoinSide[Any]]):
    def __init__(self, owner: TimestampedKeyAndJoinSideSerde) -> None:
        self._owner = owner

    def deserialize(self, topic: str | None, data: bytes | None) -> TimestampedKeyAndJoinSide[Any] | None:
        if data is None:
            return None
        if len(data) < 9:
            raise SerializationException(f"TimestampedKeyAndJoinSide needs at least 9 bytes, got {len(data)}")
        key = self._owner.inner().deserializer().deserialize(topic, data[9:])
        return TimestampedKeyAndJoinSide(key, _LONG.unpack_from(data)[0], data[8] == 1)


class TimestampedKeyAndJoinSideSerde(WrapperSerde[TimestampedKeyAndJoinSide[Any]]):
    """Kafka's ``TimestampedKeyAndJoinSideSerde``; ``inner`` None = the app's default key serde."""

    def __init__(self, inner: Serde[Any] | str | None) -> None:
        super().__init__(_KeyAndSideSerializer(self), _KeyAndSideDeserializer(self))
        self._inner_spec = inner
        self._inner: Serde[Any] | None = None

    def set_if_unset(self, default_key_serde: Any) -> None:
        self._inner = _resolved(self._inner_spec, default_key_serde, "key")

    def inner(self) -> Serde[Any]:
        if self._inner is None:
            self._inner = _resolved(self._inner_spec, None, "key")
        return self._inner


class _LeftOrRightSerializer(Serializer[LeftOrRightValue]):
    def __init__(self, owner: LeftOrRightValueSerde) -> None:
        self._owner = owner

    def serialize(self, topic: str | None, data: LeftOrRightValue | None) -> bytes | None:
        if data is None:
            return None
        left = data.left_value is not None
        serde = self._owner.left() if left else self._owner.right()
        raw = serde.serializer().serialize(topic, data.left_value if left else data.right_value)
        if raw is None:
            return None
        return (b"\x01" if left else b"\x00") + raw


class _LeftOrRightDeserializer(Deserializer[LeftOrRightValue]):
    def __init__(self, owner: LeftOrRightValueSerde) -> None:
        self._owner = owner

    def deserialize(self, topic: str | None, data: bytes | None) -> LeftOrRightValue | None:
        if data is None:
            return None
        if not data:
            raise SerializationException("LeftOrRightValue needs at least 1 byte, got 0")
        if data[0] == 1:
            return LeftOrRightValue(self._owner.left().deserializer().deserialize(topic, data[1:]), None)
        return LeftOrRightValue(None, self._owner.right().deserializer().deserialize(topic, data[1:]))


class LeftOrRightValueSerde(WrapperSerde[LeftOrRightValue]):
    """Kafka's ``LeftOrRightValueSerde``; a None side serde = the app's default value serde."""

    def __init__(self, left: Serde[Any] | str | None, right: Serde[Any] | str | None) -> None:
        super().__init__(_LeftOrRightSerializer(self), _LeftOrRightDeserializer(self))
        self._specs = (left, right)
        self._left: Serde[Any] | None = None
        self._right: Serde[Any] | None = None

    def set_if_unset(self, default_value_serde: Any) -> None:
        self._left = _resolved(self._specs[0], default_value_serde, "value")
        self._right = _resolved(self._specs[1], default_value_serde, "value")

    def left(self) -> Serde[Any]:
        if self._left is None:
            self._left = _resolved(self._specs[0], None, "value")
        return self._left

    def right(self) -> Serde[Any]:
        if self._right is None:
            self._right = _resolved(self._specs[1], None, "value")
        return self._right


def serialize_value_list(values: Iterable[bytes]) -> bytes:
    """``ListSerde(ArrayList, ByteArray)`` bytes (variable-size strategy)."""
    items = list(values)
    parts = [bytes([_VARIABLE_SIZE]), _INT.pack(len(items))]
    for item in items:
        parts += [_INT.pack(len(item)), item]
    return b"".join(parts)


def deserialize_value_list(data: bytes) -> list[bytes]:
    if len(data) < 5 or data[0] != _VARIABLE_SIZE:
        raise SerializationException(
            f"not a variable-size ListSerde value ({len(data)} bytes, strategy {data[:1]!r})"
        )
    (count,) = _INT.unpack_from(data, 1)
    pos, out = 5, []
    for _ in range(count):
        if pos + 4 > len(data):
            raise SerializationException(f"truncated ListSerde value ({len(data)} bytes)")
        (size,) = _INT.unpack_from(data, pos)
        pos += 4
        if size < 0 or pos + size > len(data):
            raise SerializationException(f"truncated or null element in ListSerde value ({len(data)} bytes)")
        out.append(data[pos : pos + size])
        pos += size
    return out


class ListValueStore(WrappedStateStore):
    """Kafka's ``ListValueStore``: ``put`` appends to the key's list; a ``None`` put deletes the list."""

    def put(self, key: bytes, value: bytes | None) -> None:
        if value is None:
            self.wrapped.put(key, None)
            return
        old: bytes | None = self.wrapped.get(key)
        items = [] if old is None else deserialize_value_list(old)
        self.wrapped.put(key, serialize_value_list([*items, value]))

    def put_if_absent(self, key: bytes, value: bytes | None) -> bytes | None:
        """Acts only when the key *is* present (the join's "delete if any" idiom); always returns None."""
        if self.wrapped.get(key) is not None:
            self.put(key, value)
        return None

    def put_all(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        raise NotImplementedError("putAll not supported")

    def delete(self, key: bytes) -> bytes | None:
        raise NotImplementedError("delete not supported")

    def range(self, from_key: Any, to_key: Any) -> KeyValueIterator[bytes, bytes]:
        raise NotImplementedError("range not supported")

    def get(self, key: bytes) -> bytes | None:
        value: bytes | None = self.wrapped.get(key)
        return value

    def all(self) -> KeyValueIterator[bytes, bytes]:
        """One pair per list element, in key order (keys snapshotted by the inner store)."""
        inner = self.wrapped.all()

        def flatten() -> Iterator[KeyValue[bytes, bytes]]:
            try:
                for kv in inner:
                    for item in deserialize_value_list(kv.value):
                        yield KeyValue(kv.key, item)
            finally:
                inner.close()

        return PeekingKeyValueIterator(flatten(), self.name)

    def approximate_num_entries(self) -> int:
        result: int = self.wrapped.approximate_num_entries()
        return result


class ChangeLoggingListValueBytesStore(ChangeLoggingKeyValueBytesStore):
    """Logs the key's whole list after each change (a tombstone when the list is deleted)."""

    def put(self, key: bytes, value: bytes | None) -> None:
        self.wrapped.put(key, value)
        self._log(key, None if value is None else self.wrapped.get(key), self._timestamp())

    def put_if_absent(self, key: bytes, value: bytes | None) -> bytes | None:
        if self.wrapped.get(key) is not None:
            self.put(key, value)
        return None


class _MeteredListValueStore(MeteredKeyValueStore):
    """The typed layer; resolves the wrapping serdes' defaults from the task's config at ``init``."""

    def __init__(
        self, wrapped: Any, key_serde: TimestampedKeyAndJoinSideSerde, value_serde: LeftOrRightValueSerde
    ) -> None:
        super().__init__(wrapped, key_serde, value_serde)
        self._join_key_serde = key_serde
        self._join_value_serde = value_serde

    def init(self, context: ProcessorContext, root: StateStore) -> None:
        self._join_key_serde.set_if_unset(context.key_serde())
        self._join_value_serde.set_if_unset(context.value_serde())
        super().init(context, root)


class OuterJoinStoreBuilder(KeyValueStoreBuilder):
    """Kafka's ``OuterStreamJoinStoreFactory`` + ``ListValueStoreBuilder`` (never cached)."""

    def __init__(
        self,
        supplier: KeyValueBytesStoreSupplier,
        key_serde: Serde[Any] | str | None,
        this_value_serde: Serde[Any] | str | None,
        other_value_serde: Serde[Any] | str | None,
    ) -> None:
        super().__init__(supplier, key_serde, None)
        self._join_serdes = (key_serde, this_value_serde, other_value_serde)

    def with_caching_enabled(self) -> OuterJoinStoreBuilder:
        # Kafka: "caching is always disabled" for this store
        return self

    def build(self) -> _MeteredListValueStore:
        inner: Any = ListValueStore(self.supplier.get())
        if self.logging_enabled():
            inner = ChangeLoggingListValueBytesStore(inner)
        key_serde, this_serde, other_serde = self._join_serdes
        key = TimestampedKeyAndJoinSideSerde(key_serde)
        value = LeftOrRightValueSerde(this_serde, other_serde)
        return self._finish(_MeteredListValueStore(inner, key, value), False)
