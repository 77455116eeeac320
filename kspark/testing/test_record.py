"""``TestRecord``: a key, value, headers and timestamp as piped into or read from the test driver."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kspark.processor.api import Headers

__all__ = ["TestRecord"]


def _millis(ts: int | datetime | None) -> int | None:
    if ts is None:
        return None
    if isinstance(ts, datetime):
        return int(ts.timestamp() * 1000)
    if isinstance(ts, bool) or not isinstance(ts, int):
        raise TypeError(f"timestamp must be int epoch milliseconds or a datetime, got {ts!r}")
    if ts < 0:
        raise ValueError(f"timestamp cannot be negative, got {ts}")
    return ts


class TestRecord:
    """Kafka Streams' ``TestRecord``: equality compares key, value, headers and timestamp."""

    __test__ = False  # not a pytest test class
    __slots__ = ("headers", "key", "timestamp", "value")

    def __init__(
        self,
        key: Any = None,
        value: Any = None,
        headers: Headers | list[tuple[str, bytes | None]] | None = None,
        timestamp: int | datetime | None = None,
    ) -> None:
        self.key = key
        self.value = value
        self.headers = headers if isinstance(headers, Headers) else Headers(headers or ())
        self.timestamp = _millis(timestamp)

    @property
    def record_time(self) -> int | None:
        return self.timestamp

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TestRecord):
            return NotImplemented
        return (
            self.key == other.key
            and self.value == other.value
            and self.headers == other.headers
            and self.timestamp == other.timestamp
        )

    def __hash__(self) -> int:
        return hash((repr(self.key), repr(self.value), self.timestamp))

    def __repr__(self) -> str:
        return (
            f"TestRecord(key={self.key!r}, value={self.value!r}, headers={self.headers.to_list()!r}, "
            f"timestamp={self.timestamp!r})"
        )
