"""The serializer, deserializer and serde interfaces, as Kafka's ``common.serialization``.

A ``None`` object always serializes to ``None`` bytes and back (Kafka's null),
so tombstones flow through every serde unchanged.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Generic, TypeVar

__all__ = ["Serializer", "Deserializer", "Serde"]

T = TypeVar("T")


class Serializer(ABC, Generic[T]):
    """Turns an object into bytes for a topic."""

    @abstractmethod
    def serialize(self, topic: str | None, data: T | None) -> bytes | None:
        """Return the bytes of ``data`` (``None`` for ``None``)."""

    def configure(self, configs: dict[str, Any], is_key: bool) -> None:
        """Optional hook, called with the application config before first use."""

    def close(self) -> None:
        """Optional hook, called when the owner closes."""


class Deserializer(ABC, Generic[T]):
    """Turns bytes read from a topic back into an object."""

    @abstractmethod
    def deserialize(self, topic: str | None, data: bytes | None) -> T | None:
        """Return the object for ``data`` (``None`` for ``None``)."""

    def configure(self, configs: dict[str, Any], is_key: bool) -> None:
        """Optional hook, called with the application config before first use."""

    def close(self) -> None:
        """Optional hook, called when the owner closes."""


class Serde(ABC, Generic[T]):
    """A matching serializer and deserializer pair."""

    @abstractmethod
    def serializer(self) -> Serializer[T]:
        """The serializer half."""

    @abstractmethod
    def deserializer(self) -> Deserializer[T]:
        """The deserializer half."""

    def configure(self, configs: dict[str, Any], is_key: bool) -> None:
        self.serializer().configure(configs, is_key)
        self.deserializer().configure(configs, is_key)

    def close(self) -> None:
        self.serializer().close()
        self.deserializer().close()
