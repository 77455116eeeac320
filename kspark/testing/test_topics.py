"""``TestInputTopic`` and ``TestOutputTopic``: typed views of the test driver's topics.

Both accept a ``Serde`` or a bare serializer/deserializer. Reading a topic
that has no record raises :class:`NoSuchElementException` (Kafka's
``NoSuchElementException``): ``"Uninitialized topic: X"`` if nothing was
ever written to it, ``"Empty topic: X"`` once it was drained.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from kspark.key_value import KeyValue
from kspark.processor.api import Headers, to_millis
from kspark.testing.test_record import TestRecord

if TYPE_CHECKING:
    from kspark.testing.driver import TopologyTestDriver

__all__ = ["TestInputTopic", "TestOutputTopic", "NoSuchElementException"]

_MISSING: Any = object()


class NoSuchElementException(LookupError):
    """Raised when reading from an output topic that holds no record."""


def _serializer(x: Any, what: str) -> Any:
    if hasattr(x, "serializer") and callable(x.serializer):
        return x.serializer()
    if hasattr(x, "serialize"):
        return x
    raise TypeError(f"{what} must be a Serde or a Serializer, got {x!r}")


def _deserializer(x: Any, what: str) -> Any:
    if hasattr(x, "deserializer") and callable(x.deserializer):
        return x.deserializer()
    if hasattr(x, "deserialize"):
        return x
    raise TypeError(f"{what} must be a Serde or a Deserializer, got {x!r}")


def _ts(ts: int | datetime | None) -> int | None:
    if ts is None:
        return None
    if isinstance(ts, datetime):
        return int(ts.timestamp() * 1000)
    return int(ts)


class TestInputTopic:
    """Pipes typed records into one input topic of a :class:`TopologyTestDriver`."""

    __test__ = False

    def __init__(
        self,
        driver: TopologyTestDriver,
        topic: str,
        key_serde_or_serializer: Any,
        value_serde_or_serializer: Any,
        start_timestamp: int | datetime | None = None,
        auto_advance: int | timedelta | None = None,
    ) -> None:
        self._driver = driver
        self.topic = topic
        self._key_serializer = _serializer(key_serde_or_serializer, "key serde")
        self._value_serializer = _serializer(value_serde_or_serializer, "value serde")
        start = _ts(start_timestamp)
        # Kafka starts an input topic's clock at Instant.now() unless given a start time.
        self._current_time = int(time.time() * 1000) if start is None else start
        advance = 0 if auto_advance is None else to_millis(auto_advance, "auto_advance")
        if advance < 0:
            raise ValueError("auto_advance must be positive")
        self._advance = advance

    def advance_time(self, advance: int | timedelta) -> None:
        ms = to_millis(advance, "advance")
        if ms < 0:
            raise ValueError("advance must be positive")
        self._current_time += ms

    def _timestamp_and_advance(self) -> int:
        ts = self._current_time
        self._current_time += self._advance
        return ts

    def pipe_input(
        self,
        key: Any = _MISSING,
        value: Any = _MISSING,
        timestamp: int | datetime | None = None,
        headers: Headers | list[tuple[str, bytes | None]] | None = None,
    ) -> None:
        """``pipe_input(key, value, timestamp=None, headers=None)``, ``pipe_input(value)``, or
        ``pipe_input(TestRecord)``."""
        if isinstance(key, TestRecord) and value is _MISSING:
            record = key
            if timestamp is not None or headers is not None:
                record = TestRecord(
                    record.key,
                    record.value,
                    headers if headers is not None else record.headers,
                    timestamp if timestamp is not None else record.timestamp,
                )
        elif value is _MISSING:
            if key is _MISSING:
                raise TypeError("pipe_input needs a value, a key and a value, or a TestRecord")
            record = TestRecord(None, key, headers, timestamp)
        else:
            record = TestRecord(None if key is _MISSING else key, value, headers, timestamp)
        ts = record.timestamp if record.timestamp is not None else self._timestamp_and_advance()
        key_bytes = self._key_serializer.serialize(self.topic, record.key)
        value_bytes = self._value_serializer.serialize(self.topic, record.value)
        self._driver.pipe_raw(self.topic, ts, key_bytes, value_bytes, record.headers)

    def pipe_record_list(self, records: Iterable[TestRecord]) -> None:
        for r in records:
            self.pipe_input(r)

    def pipe_key_value_list(
        self,
        key_values: Iterable[KeyValue[Any, Any] | tuple[Any, Any]],
        start_timestamp: int | datetime | None = None,
        advance: int | timedelta | None = None,
    ) -> None:
        t = _ts(start_timestamp)
        step = 0 if advance is None else to_millis(advance, "advance")
        for k, v in key_values:
            self.pipe_input(k, v, timestamp=t)
            if t is not None:
                t += step

    def pipe_value_list(
        self,
        values: Iterable[Any],
        start_timestamp: int | datetime | None = None,
        advance: int | timedelta | None = None,
    ) -> None:
        t = _ts(start_timestamp)
        step = 0 if advance is None else to_millis(advance, "advance")
        for v in values:
            self.pipe_input(None, v, timestamp=t)
            if t is not None:
                t += step

    def __repr__(self) -> str:
        return f"TestInputTopic[topic={self.topic!r}]"


class TestOutputTopic:
    """Reads typed records the topology wrote to one topic, oldest first."""

    __test__ = False

    def __init__(
        self,
        driver: TopologyTestDriver,
        topic: str,
        key_serde_or_deserializer: Any,
        value_serde_or_deserializer: Any,
    ) -> None:
        self._driver = driver
        self.topic = topic
        self._key_deserializer = _deserializer(key_serde_or_deserializer, "key serde")
        self._value_deserializer = _deserializer(value_serde_or_deserializer, "value serde")

    def read_record(self) -> TestRecord:
        raw = self._driver.read_raw(self.topic)
        key = self._key_deserializer.deserialize(self.topic, raw.key)
        value = self._value_deserializer.deserialize(self.topic, raw.value)
        return TestRecord(key, value, raw.headers, raw.timestamp)

    def read_value(self) -> Any:
        return self.read_record().value

    def read_key_value(self) -> KeyValue[Any, Any]:
        r = self.read_record()
        return KeyValue(r.key, r.value)

    def read_records_to_list(self) -> list[TestRecord]:
        out = []
        while not self.is_empty():
            out.append(self.read_record())
        return out

    def read_values_to_list(self) -> list[Any]:
        return [r.value for r in self.read_records_to_list()]

    def read_key_values_to_list(self) -> list[KeyValue[Any, Any]]:
        return [KeyValue(r.key, r.value) for r in self.read_records_to_list()]

    def read_key_values_to_map(self) -> dict[Any, Any]:
        """Last value per key (a ``None`` value stays as ``None``); ``None`` keys are an error."""
        out: dict[Any, Any] = {}
        while not self.is_empty():
            r = self.read_record()
            if r.key is None:
                raise ValueError("Null keys not allowed with read_key_values_to_map")
            out[r.key] = r.value
        return out

    def get_queue_size(self) -> int:
        return self._driver.queue_size(self.topic)

    def is_empty(self) -> bool:
        return self.get_queue_size() == 0

    def __repr__(self) -> str:
        return f"TestOutputTopic[topic={self.topic!r}, size={self.get_queue_size()}]"
