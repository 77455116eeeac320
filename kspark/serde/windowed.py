"""Windowed-key serdes with Kafka Streams' byte layouts (``WindowedSerdes``).

Time-windowed keys are ``key bytes + 8-byte big-endian window start``; the
window end is not written, so the deserializer needs the window size and
computes ``end = start + size`` (clamped to ``Long.MAX_VALUE`` on overflow, as
Kafka's ``WindowKeySchema.timeWindowForSize``). Session-windowed keys are
``key bytes + 8-byte end + 8-byte start`` (``SessionKeySchema``). Java
consumers using Kafka's ``WindowedSerdes`` read these bytes unchanged.

A time-windowed serde ``for_changelog(True)`` reads the window store's
changelog key layout instead: ``key bytes + start + 4-byte sequence number``.
"""

from __future__ import annotations

import struct
from datetime import timedelta
from typing import Any, Generic, TypeVar

from kspark.errors import SerializationException
from kspark.kstream.windowed import SessionWindow, TimeWindow, Window, Windowed
from kspark.serde.api import Deserializer, Serde, Serializer
from kspark.serde.primitives import WrapperSerde

__all__ = [
    "LONG_MAX",
    "TIMESTAMP_SIZE",
    "SEQNUM_SIZE",
    "time_window_for_size",
    "time_windowed_to_binary",
    "time_windowed_from_binary",
    "window_store_key_to_binary",
    "window_store_key_parts",
    "session_key_to_binary",
    "session_key_parts",
    "TimeWindowedSerializer",
    "TimeWindowedDeserializer",
    "SessionWindowedSerializer",
    "SessionWindowedDeserializer",
    "TimeWindowedSerde",
    "SessionWindowedSerde",
    "WindowedSerdes",
]

K = TypeVar("K")

LONG_MAX = (1 << 63) - 1
TIMESTAMP_SIZE = 8
SEQNUM_SIZE = 4
_LONG = struct.Struct(">q")
_LONG_INT = struct.Struct(">qi")
_TWO_LONGS = struct.Struct(">qq")


def time_window_for_size(start: int, window_size: int) -> TimeWindow:
    """The time window of ``start`` and ``window_size``; the end saturates at ``Long.MAX_VALUE``."""
    end = start + window_size
    if end > LONG_MAX:
        end = LONG_MAX
    return TimeWindow(start, end)


def time_windowed_to_binary(key_bytes: bytes, start: int) -> bytes:
    """Kafka's ``WindowKeySchema.toBinary``: key bytes then the 8-byte start."""
    return key_bytes + _LONG.pack(start)


def time_windowed_from_binary(data: bytes) -> tuple[bytes, int]:
    """Split ``toBinary`` output into (key bytes, window start)."""
    if len(data) < TIMESTAMP_SIZE:
        raise SerializationException(
            f"TimeWindowedDeserializer needs at least {TIMESTAMP_SIZE} bytes, got {len(data)}"
        )
    return data[:-TIMESTAMP_SIZE], _LONG.unpack_from(data, len(data) - TIMESTAMP_SIZE)[0]


def window_store_key_to_binary(key_bytes: bytes, start: int, seqnum: int) -> bytes:
    """Kafka's ``WindowKeySchema.toStoreKeyBinary``: key, 8-byte start, 4-byte sequence number."""
    return key_bytes + _LONG_INT.pack(start, seqnum)


def window_store_key_parts(data: bytes) -> tuple[bytes, int, int]:
    """Split a window store key into (key bytes, window start, sequence number)."""
    size = TIMESTAMP_SIZE + SEQNUM_SIZE
    if len(data) < size:
        raise SerializationException(f"A window store key needs at least {size} bytes, got {len(data)}")
    start, seqnum = _LONG_INT.unpack_from(data, len(data) - size)
    return data[:-size], start, seqnum


def session_key_to_binary(key_bytes: bytes, start: int, end: int) -> bytes:
    """Kafka's ``SessionKeySchema.toBinary``: key bytes, 8-byte end, 8-byte start."""
    return key_bytes + _TWO_LONGS.pack(end, start)


def session_key_parts(data: bytes) -> tuple[bytes, int, int]:
    """Split a session key into (key bytes, start, end)."""
    size = 2 * TIMESTAMP_SIZE
    if len(data) < size:
        raise SerializationException(
            f"SessionWindowedDeserializer needs at least {size} bytes, got {len(data)}"
        )
    end, start = _TWO_LONGS.unpack_from(data, len(data) - size)
    return data[:-size], start, end


def _require_windowed(cls: str, data: object) -> Windowed[Any]:
    if not isinstance(data, Windowed):
        raise SerializationException(
            f"{cls} cannot serialize a value of type {type(data).__name__}; expected Windowed"
        )
    return data


def _inner_key_bytes(cls: str, inner: Serializer[Any], topic: str | None, key: Any) -> bytes:
    raw = inner.serialize(topic, key)
    if raw is None:
        raise SerializationException(f"{cls}: the inner serializer returned None for key {key!r:.60}")
    return raw


def _window(cls: str, factory: type[Window], start: int, end: int) -> Window:
    try:
        return factory(start, end)
    except ValueError as e:
        raise SerializationException(f"{cls}: invalid window in data: {e}") from e


class TimeWindowedSerializer(Serializer[Windowed[K]], Generic[K]):
    """Writes ``inner key bytes + 8-byte window start``."""

    def __init__(self, inner: Serializer[K]) -> None:
        if inner is None:
            raise ValueError("TimeWindowedSerializer needs an inner serializer")
        self.inner = inner

    def serialize(self, topic: str | None, data: Windowed[K] | None) -> bytes | None:
        if data is None:
            return None
        w = _require_windowed("TimeWindowedSerializer", data)
        return time_windowed_to_binary(
            _inner_key_bytes("TimeWindowedSerializer", self.inner, topic, w.key), w.window.start
        )

    def serialize_base_key(self, topic: str | None, data: Windowed[K]) -> bytes | None:
        """The inner key's bytes alone (Kafka's ``WindowedSerializer.serializeBaseKey``)."""
        return self.inner.serialize(topic, data.key)

    def configure(self, configs: dict[str, Any], is_key: bool) -> None:
        self.inner.configure(configs, is_key)

    def close(self) -> None:
        self.inner.close()


class TimeWindowedDeserializer(Deserializer[Windowed[K]], Generic[K]):
    """Reads ``key + start`` (or the changelog layout) and rebuilds ``[start, start + size)``.

    ``window_size`` may instead come from the ``window.size.ms`` config at
    ``configure``; giving it both ways is an error, as in Kafka.
    """

    def __init__(self, inner: Deserializer[K], window_size: int | timedelta | None = None) -> None:
        if inner is None:
            raise ValueError("TimeWindowedDeserializer needs an inner deserializer")
        self.inner = inner
        self.window_size: int | None = None if window_size is None else _millis(window_size)
        self.is_changelog_topic = False

    def configure(self, configs: dict[str, Any], is_key: bool) -> None:
        configured = configs.get("window.size.ms")
        if configured is not None:
            if self.window_size is not None:
                raise ValueError(
                    "Window size should not be set in both the time windowed deserializer "
                    "constructor and the window.size.ms config"
                )
            self.window_size = int(configured)
        self.inner.configure(configs, is_key)

    def deserialize(self, topic: str | None, data: bytes | None) -> Windowed[K] | None:
        if not data:
            return None
        if self.window_size is None:
            raise SerializationException(
                "TimeWindowedDeserializer needs the window size (constructor argument or window.size.ms)"
            )
        if self.is_changelog_topic:
            key_bytes, start, _ = window_store_key_parts(data)
        else:
            key_bytes, start = time_windowed_from_binary(data)
        end = min(start + self.window_size, LONG_MAX)
        window = _window("TimeWindowedDeserializer", TimeWindow, start, end)
        return Windowed(self.inner.deserialize(topic, key_bytes), window)  # type: ignore[arg-type]

    def close(self) -> None:
        self.inner.close()


class SessionWindowedSerializer(Serializer[Windowed[K]], Generic[K]):
    """Writes ``inner key bytes + 8-byte end + 8-byte start``."""

    def __init__(self, inner: Serializer[K]) -> None:
        if inner is None:
            raise ValueError("SessionWindowedSerializer needs an inner serializer")
        self.inner = inner

    def serialize(self, topic: str | None, data: Windowed[K] | None) -> bytes | None:
        if data is None:
            return None
        w = _require_windowed("SessionWindowedSerializer", data)
        key_bytes = _inner_key_bytes("SessionWindowedSerializer", self.inner, topic, w.key)
        return session_key_to_binary(key_bytes, w.window.start, w.window.end)

    def serialize_base_key(self, topic: str | None, data: Windowed[K]) -> bytes | None:
        return self.inner.serialize(topic, data.key)

    def configure(self, configs: dict[str, Any], is_key: bool) -> None:
        self.inner.configure(configs, is_key)

    def close(self) -> None:
        self.inner.close()


class SessionWindowedDeserializer(Deserializer[Windowed[K]], Generic[K]):
    """Reads ``key + end + start`` into ``Windowed(key, SessionWindow(start, end))``."""

    def __init__(self, inner: Deserializer[K]) -> None:
        if inner is None:
            raise ValueError("SessionWindowedDeserializer needs an inner deserializer")
        self.inner = inner

    def deserialize(self, topic: str | None, data: bytes | None) -> Windowed[K] | None:
        if not data:
            return None
        key_bytes, start, end = session_key_parts(data)
        window = _window("SessionWindowedDeserializer", SessionWindow, start, end)
        return Windowed(self.inner.deserialize(topic, key_bytes), window)  # type: ignore[arg-type]

    def configure(self, configs: dict[str, Any], is_key: bool) -> None:
        self.inner.configure(configs, is_key)

    def close(self) -> None:
        self.inner.close()


def _millis(size: int | timedelta) -> int:
    if isinstance(size, timedelta):
        return int(size / timedelta(milliseconds=1))
    if isinstance(size, bool) or not isinstance(size, int):
        raise TypeError(f"window size must be int milliseconds or a timedelta, got {size!r}")
    return size


class TimeWindowedSerde(WrapperSerde[Windowed[K]], Generic[K]):
    """Kafka's ``WindowedSerdes.TimeWindowedSerde``."""

    def __init__(self, inner: Serde[K], window_size: int | timedelta) -> None:
        size = _millis(window_size)
        if size <= 0:
            raise ValueError(f"window size must be positive, got {size}")
        super().__init__(
            TimeWindowedSerializer(inner.serializer()), TimeWindowedDeserializer(inner.deserializer(), size)
        )
        self.inner = inner
        self.window_size = size

    def for_changelog(self, is_changelog_topic: bool) -> TimeWindowedSerde[K]:
        """Read the window store changelog key layout (with a sequence number) instead."""
        deserializer = self.deserializer()
        assert isinstance(deserializer, TimeWindowedDeserializer)
        deserializer.is_changelog_topic = is_changelog_topic
        return self

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, TimeWindowedSerde)
            and other.inner == self.inner
            and other.window_size == self.window_size
        )

    def __hash__(self) -> int:
        return hash(("time_windowed", self.window_size))

    def __repr__(self) -> str:
        return f"Serdes.time_windowed({self.inner!r}, {self.window_size})"


class SessionWindowedSerde(WrapperSerde[Windowed[K]], Generic[K]):
    """Kafka's ``WindowedSerdes.SessionWindowedSerde``."""

    def __init__(self, inner: Serde[K]) -> None:
        super().__init__(
            SessionWindowedSerializer(inner.serializer()), SessionWindowedDeserializer(inner.deserializer())
        )
        self.inner = inner

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SessionWindowedSerde) and other.inner == self.inner

    def __hash__(self) -> int:
        return hash("session_windowed")

    def __repr__(self) -> str:
        return f"Serdes.session_windowed({self.inner!r})"


class WindowedSerdes:
    """Factories as Kafka's ``WindowedSerdes``; also ``Serdes.time_windowed`` / ``session_windowed``."""

    @staticmethod
    def time_windowed_serde_from(inner: Serde[K], window_size: int | timedelta) -> TimeWindowedSerde[K]:
        return TimeWindowedSerde(inner, window_size)

    @staticmethod
    def session_windowed_serde_from(inner: Serde[K]) -> SessionWindowedSerde[K]:
        return SessionWindowedSerde(inner)
