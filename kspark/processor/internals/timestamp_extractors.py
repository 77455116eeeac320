"""Timestamp extractors: how a source node decides the event time of an input record.

Mirrors Kafka Streams' ``FailOnInvalidTimestamp`` (the default),
``LogAndSkipOnInvalidTimestamp``, ``UsePartitionTimeOnInvalidTimestamp`` and
``WallclockTimestampExtractor``. A negative extracted timestamp makes the
task drop the record and count it in ``dropped-records-total``. A plain
callable ``(record, partition_time) -> int`` works wherever an extractor is
expected.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from kspark.errors import ConfigException, StreamsException
from kspark.processor.internals.records import ConsumerRecord

__all__ = [
    "TimestampExtractor",
    "FailOnInvalidTimestamp",
    "LogAndSkipOnInvalidTimestamp",
    "UsePartitionTimeOnInvalidTimestamp",
    "WallclockTimestampExtractor",
    "resolve_timestamp_extractor",
    "record_timestamp_extractor",
]

_log = logging.getLogger(__name__)


class TimestampExtractor(ABC):
    """Returns the event time (epoch ms) of a deserialized record; negative means "drop"."""

    @abstractmethod
    def extract(self, record: ConsumerRecord, partition_time: int) -> int: ...


class _RecordTimestamp(TimestampExtractor):
    def extract(self, record: ConsumerRecord, partition_time: int) -> int:
        ts = record.timestamp
        if ts < 0:
            return self.on_invalid_timestamp(record, ts, partition_time)
        return ts

    @abstractmethod
    def on_invalid_timestamp(
        self, record: ConsumerRecord, record_timestamp: int, partition_time: int
    ) -> int: ...


def record_timestamp_extractor(extractor: Any) -> bool:
    """True when ``extractor`` returns a record's own timestamp whenever that is not negative
    (the built-in record-timestamp extractors, unless a subclass overrides ``extract``)."""
    return isinstance(extractor, _RecordTimestamp) and type(extractor).extract is _RecordTimestamp.extract


class FailOnInvalidTimestamp(_RecordTimestamp):
    """The record's own timestamp; a negative one stops processing (Kafka's default)."""

    def on_invalid_timestamp(self, record: ConsumerRecord, record_timestamp: int, partition_time: int) -> int:
        raise StreamsException(
            f"Input record {record} has invalid (negative) timestamp. Possibly because a pre-0.10 producer "
            "client was used to write this record to Kafka without embedding a timestamp, or because the "
            "input topic was created before upgrading the Kafka cluster to 0.10+. Use a different "
            "TimestampExtractor to process this data."
        )


class LogAndSkipOnInvalidTimestamp(_RecordTimestamp):
    """The record's own timestamp; a negative one is logged and the record dropped."""

    def on_invalid_timestamp(self, record: ConsumerRecord, record_timestamp: int, partition_time: int) -> int:
        _log.warning(
            "Input record %s will be dropped because it has an invalid (negative) timestamp.", record
        )
        return record_timestamp


class UsePartitionTimeOnInvalidTimestamp(_RecordTimestamp):
    """The record's own timestamp; a negative one is replaced by the partition time."""

    def on_invalid_timestamp(self, record: ConsumerRecord, record_timestamp: int, partition_time: int) -> int:
        if partition_time < 0:
            raise StreamsException(
                f"Could not infer new timestamp for input record {record} because partition time is unknown."
            )
        return partition_time


class WallclockTimestampExtractor(TimestampExtractor):
    """The current system time, ignoring the record (processing-time semantics)."""

    def extract(self, record: ConsumerRecord, partition_time: int) -> int:
        return int(time.time() * 1000)


class _CallableExtractor(TimestampExtractor):
    def __init__(self, fn: Callable[[ConsumerRecord, int], int]) -> None:
        self._fn = fn

    def extract(self, record: ConsumerRecord, partition_time: int) -> int:
        return int(self._fn(record, partition_time))

    def __repr__(self) -> str:
        return f"TimestampExtractor({getattr(self._fn, '__qualname__', self._fn)!r})"


_BY_NAME: dict[str, type[TimestampExtractor]] = {
    cls.__name__: cls
    for cls in (
        FailOnInvalidTimestamp,
        LogAndSkipOnInvalidTimestamp,
        UsePartitionTimeOnInvalidTimestamp,
        WallclockTimestampExtractor,
    )
}


def resolve_timestamp_extractor(value: Any, key: str = "default.timestamp.extractor") -> TimestampExtractor:
    """An extractor from an instance, a subclass, a built-in class name, or a callable."""
    if value is None:
        return FailOnInvalidTimestamp()
    if isinstance(value, TimestampExtractor):
        return value
    if isinstance(value, type) and issubclass(value, TimestampExtractor):
        return value()
    if isinstance(value, str):
        short = value.rsplit(".", 1)[-1]
        if short in _BY_NAME:
            return _BY_NAME[short]()
        raise ConfigException(
            f"Invalid value {value!r} for configuration {key}: expected a TimestampExtractor, a callable "
            f"(record, partition_time) -> int, or one of {sorted(_BY_NAME)}"
        )
    if callable(value):
        return _CallableExtractor(value)
    raise ConfigException(
        f"Invalid value {value!r} for configuration {key}: expected a TimestampExtractor, a callable "
        f"(record, partition_time) -> int, or one of {sorted(_BY_NAME)}"
    )
