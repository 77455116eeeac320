"""What a foreign-key join sends through its two internal topics, and how it is keyed in its store.

* ``SubscriptionWrapper`` travels on the subscription-registration topic,
  keyed by the foreign key: the left key, what the right side should do
  (``Instruction``), the hash of the left value and the left record's
  partition (so the response can go back to it).
* ``SubscriptionResponseWrapper`` travels on the response topic, keyed by
  the left key: the right value (or ``None``) and the hash it answers.
* ``CombinedKeySchema`` makes the subscription store's keys: the foreign
  key's bytes behind a 4-byte length, then the left key's bytes, so all
  subscriptions of one foreign key are one prefix scan.

The byte layouts are Kafka Streams' (``SubscriptionWrapperSerde`` version 1,
``SubscriptionResponseWrapperSerde`` version 0, ``CombinedKeySchema``), so a
Java application reading these topics would agree. Inner serdes left unset
(``None``) are filled in with the config's defaults when a node initialises
(``init_nullable``), as Kafka's ``WrappingNullableSerde``; the inner serdes
are called with the pseudo topics ``<application.id>-<topic>-pk`` /
``-fk`` / ``-vh`` as Kafka calls them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import Enum
from typing import Any

from kspark.errors import StreamsException
from kspark.serde.api import Deserializer, Serde, Serializer

__all__ = [
    "Instruction",
    "SubscriptionWrapper",
    "SubscriptionResponseWrapper",
    "CombinedKey",
    "CombinedKeySchema",
    "PseudoTopic",
    "SubscriptionWrapperSerde",
    "SubscriptionResponseWrapperSerde",
]

SUBSCRIPTION_VERSION = 1
RESPONSE_VERSION = 0
_HASH_NULL = 0x80


class Instruction(Enum):
    """What the right side does with a subscription (Kafka's ``SubscriptionWrapper.Instruction``)."""

    DELETE_KEY_NO_PROPAGATE = 0  # unsubscribe; send nothing
    DELETE_KEY_AND_PROPAGATE = 1  # unsubscribe; send (k, null)
    PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE = 2  # subscribe; send the right value, or null if none
    PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE = 3  # subscribe; send the right value only if there is one


@dataclass(frozen=True)
class SubscriptionWrapper:
    """A subscription of left key ``primary_key`` to the foreign key its record is keyed by."""

    hash: tuple[int, int] | None
    instruction: Instruction
    primary_key: Any
    primary_partition: int | None
    version: int = SUBSCRIPTION_VERSION

    def __post_init__(self) -> None:
        if self.primary_key is None:
            raise StreamsException("primaryKey cannot be null. Required by downstream processor.")
        if not 0 <= self.version <= SUBSCRIPTION_VERSION:
            raise StreamsException(f"SubscriptionWrapper does not support version {self.version}")


@dataclass(frozen=True)
class SubscriptionResponseWrapper:
    """The right side's answer: ``foreign_value`` for the left value whose hash is ``original_value_hash``.

    ``primary_partition`` is not serialized: only the response sink's
    partitioner reads it, to send the answer back to the left record's partition.
    """

    original_value_hash: tuple[int, int] | None
    foreign_value: Any
    primary_partition: int | None = None
    version: int = RESPONSE_VERSION

    def __post_init__(self) -> None:
        if not 0 <= self.version <= RESPONSE_VERSION:
            raise StreamsException(f"SubscriptionResponseWrapper does not support version {self.version}")


@dataclass(frozen=True)
class CombinedKey:
    """A subscription store key: (foreign key, left key)."""

    foreign_key: Any
    primary_key: Any


class PseudoTopic:
    """The topic name an inner serde is called with: ``<application.id>-<name>``, known at init."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.topic: str | None = None

    def resolve(self, context: Any) -> str:
        if self.topic is None:
            self.topic = f"{context.application_id()}-{self.name}"
        return self.topic

    def get(self) -> str:
        # before any node initialised (a serializer used outside a task), the bare name
        return self.topic if self.topic is not None else self.name


def _pack_hash(hash_: tuple[int, int]) -> bytes:
    return struct.pack(">qq", *hash_)


class CombinedKeySchema:
    """Kafka's ``CombinedKeySchema``: ``{int32 len(fk)}{fk bytes}{pk bytes}``."""

    def __init__(
        self,
        foreign_key_topic: PseudoTopic,
        foreign_key_serde: Any,
        primary_key_topic: PseudoTopic,
        primary_key_serde: Any,
    ) -> None:
        self._fk_topic = foreign_key_topic
        self._pk_topic = primary_key_topic
        self._fk_serde = foreign_key_serde
        self._pk_serde = primary_key_serde

    def init(self, context: Any) -> None:
        self._fk_topic.resolve(context)
        self._pk_topic.resolve(context)
        if self._fk_serde is None:
            self._fk_serde = context.key_serde()
        if self._pk_serde is None:
            self._pk_serde = context.key_serde()

    def to_bytes(self, foreign_key: Any, primary_key: Any) -> bytes:
        fk: bytes = self._fk_serde.serializer().serialize(self._fk_topic.get(), foreign_key)
        pk: bytes = self._pk_serde.serializer().serialize(self._pk_topic.get(), primary_key)
        return struct.pack(">i", len(fk)) + fk + pk

    def prefix_bytes(self, foreign_key: Any) -> bytes:
        fk: bytes = self._fk_serde.serializer().serialize(self._fk_topic.get(), foreign_key)
        return struct.pack(">i", len(fk)) + fk

    def from_bytes(self, data: bytes) -> CombinedKey:
        (fk_len,) = struct.unpack_from(">i", data, 0)
        fk = self._fk_serde.deserializer().deserialize(self._fk_topic.get(), data[4 : 4 + fk_len])
        pk = self._pk_serde.deserializer().deserialize(self._pk_topic.get(), data[4 + fk_len :])
        return CombinedKey(fk, pk)


class _SubscriptionWrapperSerializer(Serializer[SubscriptionWrapper]):
    """``{1-bit hash is null}{7-bit version}{instruction}{16-byte hash?}{pk bytes}{int32 partition}``."""

    def __init__(self, pk_topic: PseudoTopic, pk_serde: Any) -> None:
        self._pk_topic = pk_topic
        self._pk_serializer = None if pk_serde is None else pk_serde.serializer()

    def init_nullable(self, context: Any) -> None:
        self._pk_topic.resolve(context)
        if self._pk_serializer is None:
            self._pk_serializer = context.key_serde().serializer()

    def serialize(self, topic: str | None, data: SubscriptionWrapper | None) -> bytes | None:
        if data is None:
            return None
        if self._pk_serializer is None:
            raise StreamsException("SubscriptionWrapper has no primary key serializer: set a key serde")
        pk = self._pk_serializer.serialize(self._pk_topic.get(), data.primary_key)
        out = bytearray()
        if data.hash is None:
            out.append(data.version | _HASH_NULL)
            out.append(data.instruction.value)
        else:
            out.append(data.version)
            out.append(data.instruction.value)
            out += _pack_hash(data.hash)
        out += pk
        if data.version > 0:
            out += struct.pack(">i", data.primary_partition)
        return bytes(out)


class _SubscriptionWrapperDeserializer(Deserializer[SubscriptionWrapper]):
    def __init__(self, pk_topic: PseudoTopic, pk_serde: Any) -> None:
        self._pk_topic = pk_topic
        self._pk_deserializer = None if pk_serde is None else pk_serde.deserializer()

    def init_nullable(self, context: Any) -> None:
        self._pk_topic.resolve(context)
        if self._pk_deserializer is None:
            self._pk_deserializer = context.key_serde().deserializer()

    def deserialize(self, topic: str | None, data: bytes | None) -> SubscriptionWrapper | None:
        if data is None:
            return None
        if self._pk_deserializer is None:
            raise StreamsException("SubscriptionWrapper has no primary key deserializer: set a key serde")
        version, hash_null = data[0] & 0x7F, bool(data[0] & _HASH_NULL)
        instruction = Instruction(data[1])
        pos = 2
        hash_: tuple[int, int] | None = None
        if not hash_null:
            hash_ = struct.unpack_from(">qq", data, pos)
            pos += 16
        end = len(data) - 4 if version > 0 else len(data)
        pk = self._pk_deserializer.deserialize(self._pk_topic.get(), data[pos:end])
        partition = struct.unpack_from(">i", data, end)[0] if version > 0 else None
        return SubscriptionWrapper(hash_, instruction, pk, partition, version)


class SubscriptionWrapperSerde(Serde[SubscriptionWrapper]):
    """The subscription topic's (and subscription store's) value serde; ``pk_serde`` is the left key serde."""

    def __init__(self, pk_topic: PseudoTopic, pk_serde: Any) -> None:
        self._serializer = _SubscriptionWrapperSerializer(pk_topic, pk_serde)
        self._deserializer = _SubscriptionWrapperDeserializer(pk_topic, pk_serde)

    def serializer(self) -> Serializer[SubscriptionWrapper]:
        return self._serializer

    def deserializer(self) -> Deserializer[SubscriptionWrapper]:
        return self._deserializer

    def init_nullable(self, context: Any) -> None:
        self._serializer.init_nullable(context)
        self._deserializer.init_nullable(context)


class _ResponseSerializer(Serializer[SubscriptionResponseWrapper]):
    """``{1-bit hash is null}{7-bit version}{16-byte hash?}{foreign value bytes, absent for null}``."""

    def __init__(self, value_serde: Any) -> None:
        self._inner = None if value_serde is None else value_serde.serializer()

    def init_nullable(self, context: Any) -> None:
        if self._inner is None:
            self._inner = context.value_serde().serializer()

    def serialize(self, topic: str | None, data: SubscriptionResponseWrapper | None) -> bytes | None:
        if data is None:
            return None
        if self._inner is None:
            raise StreamsException("SubscriptionResponseWrapper has no value serializer: set a value serde")
        value = None if data.foreign_value is None else self._inner.serialize(topic, data.foreign_value)
        if data.original_value_hash is None:
            head = bytes([data.version | _HASH_NULL])
        else:
            head = bytes([data.version]) + _pack_hash(data.original_value_hash)
        return head + (value or b"")


class _ResponseDeserializer(Deserializer[SubscriptionResponseWrapper]):
    def __init__(self, value_serde: Any) -> None:
        self._inner = None if value_serde is None else value_serde.deserializer()

    def init_nullable(self, context: Any) -> None:
        if self._inner is None:
            self._inner = context.value_serde().deserializer()

    def deserialize(self, topic: str | None, data: bytes | None) -> SubscriptionResponseWrapper | None:
        if data is None:
            return None
        if self._inner is None:
            raise StreamsException("SubscriptionResponseWrapper has no value deserializer: set a value serde")
        version, hash_null = data[0] & 0x7F, bool(data[0] & _HASH_NULL)
        pos = 1
        hash_: tuple[int, int] | None = None
        if not hash_null:
            hash_ = struct.unpack_from(">qq", data, pos)
            pos += 16
        # Kafka's layout cannot tell a null value from an empty one: no bytes left means null
        value = self._inner.deserialize(topic, data[pos:]) if len(data) > pos else None
        return SubscriptionResponseWrapper(hash_, value, None, version)


class SubscriptionResponseWrapperSerde(Serde[SubscriptionResponseWrapper]):
    """The response topic's value serde; ``value_serde`` is the right table's value serde."""

    def __init__(self, value_serde: Any) -> None:
        self._serializer = _ResponseSerializer(value_serde)
        self._deserializer = _ResponseDeserializer(value_serde)

    def serializer(self) -> Serializer[SubscriptionResponseWrapper]:
        return self._serializer

    def deserializer(self) -> Deserializer[SubscriptionResponseWrapper]:
        return self._deserializer
