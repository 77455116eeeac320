"""The plain record types the engine consumes and produces.

``RawRecord`` is what a runner feeds a task (bytes as read from a topic);
``ConsumerRecord`` is the same after deserialization (what a timestamp
extractor sees); ``OutputRecord`` is what a task produces (bytes ready to be
written); ``ProcessorRecordContext`` is the metadata of the record in flight.

The engine's own record types are mutable slotted dataclasses, not frozen
ones: a frozen dataclass sets each field through ``object.__setattr__``,
about 2.5x the cost of a plain slotted init, and the engine builds several
per input record. Nothing mutates them; treat them as values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kspark.processor.api import Headers

__all__ = ["RawRecord", "ConsumerRecord", "OutputRecord", "ProcessorRecordContext", "RecordContext"]


def _headers(h: Headers | list[tuple[str, bytes | None]] | None) -> Headers:
    if isinstance(h, Headers):
        return h
    return Headers(h or ())


@dataclass(slots=True)
class RawRecord:
    """A record as read from a topic partition: serialized key and value."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Headers = field(default_factory=Headers)

    def __post_init__(self) -> None:
        # callers may pass a plain list of (key, value) pairs
        headers: Any = self.headers
        if not isinstance(headers, Headers):
            self.headers = _headers(headers)


@dataclass(slots=True)
class ConsumerRecord:
    """A deserialized input record (Kafka's ``ConsumerRecord<Object, Object>``)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: Any
    value: Any
    headers: Headers = field(default_factory=Headers)


@dataclass(slots=True)
class OutputRecord:
    """A serialized record a task produced; ``partition`` None means "default partitioner"."""

    topic: str
    partition: int | None
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: Headers = field(default_factory=Headers)


@dataclass(frozen=True)
class ProcessorRecordContext:
    """Timestamp, offset, partition, topic and headers of the record being processed.

    Inside a punctuation ``topic`` is None and ``partition``/``offset`` are -1,
    as in Kafka Streams. A ``TopicNameExtractor`` receives one of these.
    """

    timestamp: int
    offset: int
    partition: int
    topic: str | None
    headers: Headers = field(default_factory=Headers)


RecordContext = ProcessorRecordContext
