"""Test doubles for the windowed processors: a recording context and small in-memory stores.

They implement only what the processors call, with the semantics of Kafka's
in-memory stores (window retention, duplicates, session lookups), so each
processor can be checked record by record without a topology.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from kspark.key_value import KeyValue
from kspark.kstream.windowed import SessionWindow, TimeWindow, Windowed
from kspark.processor.api import (
    Cancellable,
    Headers,
    ProcessorContext,
    PunctuationType,
    Record,
    RecordMetadata,
)

__all__ = ["FakeContext", "FakeWindowStore", "FakeSessionStore", "Iter"]


class Iter:
    def __init__(self, items: list[KeyValue[Any, Any]]) -> None:
        self._items = items

    def __iter__(self) -> Iterator[KeyValue[Any, Any]]:
        return iter(self._items)

    def __enter__(self) -> Iter:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class FakeContext(ProcessorContext):
    def __init__(
        self,
        stores: dict[str, Any],
        config: dict[str, Any] | None = None,
        processor_metadata: dict[str, int] | None = None,
    ) -> None:
        self.stores = stores
        # Kafka's processor metadata: committed with the offsets, handed to a restarted task
        self.processor_metadata: dict[str, int] = dict(processor_metadata or {})
        self.forwarded: list[Record[Any, Any]] = []
        self.dropped: list[str] = []
        self.wall_clock = 0
        self.config = config or {}

    def application_id(self) -> str:
        return "app"

    def task_id(self) -> str:
        return "0_0"

    def app_config(self) -> dict[str, Any]:
        return self.config

    def forward(self, record: Record[Any, Any], child_name: str | None = None) -> None:
        self.forwarded.append(record)

    def schedule(
        self, interval: int | timedelta, punctuation_type: PunctuationType, callback: Any
    ) -> Cancellable:
        raise NotImplementedError

    def get_state_store(self, name: str) -> Any:
        return self.stores[name]

    def commit(self) -> None:
        pass

    def current_stream_time_ms(self) -> int:
        return -1

    def current_system_time_ms(self) -> int:
        return self.wall_clock

    def record_metadata(self) -> RecordMetadata | None:
        return RecordMetadata("in", 0, 0)

    def timestamp(self) -> int:
        return 0

    def headers(self) -> Headers:
        return Headers()

    def key_serde(self) -> Any:
        from kspark.serde import Serdes

        return Serdes.String()

    def value_serde(self) -> Any:
        from kspark.serde import Serdes

        return Serdes.String()

    def add_processor_metadata_key_value(self, key: str, value: int) -> None:
        self.processor_metadata[key] = value

    def processor_metadata_for_key(self, key: str) -> int | None:
        return self.processor_metadata.get(key)

    def record_dropped(self, reason: str = "") -> None:
        self.dropped.append(reason)

    def take(self) -> list[tuple[Any, Any, int]]:
        """Forwarded (key, value, timestamp) since the last call; Change values as (new, old)."""
        out = []
        for r in self.forwarded:
            v = r.value
            if hasattr(v, "new_value"):
                v = (v.new_value, v.old_value)
            out.append((r.key, v, r.timestamp))
        self.forwarded.clear()
        return out


class FakeWindowStore:
    """Kafka's in-memory window store semantics: retention by observed stream time, duplicates optional."""

    def __init__(self, window_size: int, retention: int = 10**12, retain_duplicates: bool = False) -> None:
        self.size = window_size
        self.retention = retention
        self.dups = retain_duplicates
        self.observed = -1
        self.data: dict[tuple[Any, int], list[Any]] = {}

    def _min_live(self) -> int:
        return self.observed - self.retention + 1

    def put(self, key: Any, value: Any, start: int) -> None:
        self.observed = max(self.observed, start)
        if start <= self.observed - self.retention:
            return
        if value is None:
            if not self.dups:
                self.data.pop((key, start), None)
            return
        if self.dups:
            self.data.setdefault((key, start), []).append(value)
        else:
            self.data[(key, start)] = [value]

    def _entries(self, key: Any, lo: int, hi: int) -> list[KeyValue[int, Any]]:
        lo = max(lo, self._min_live())
        return [
            KeyValue(s, v)
            for (k, s), vs in sorted(self.data.items(), key=lambda e: e[0][1])
            if k == key and lo <= s <= hi
            for v in vs
        ]

    def fetch(self, key: Any, time_from: int, time_to: int | None = None) -> Any:
        if time_to is None:
            vs = self.data.get((key, time_from))
            return vs[-1] if vs and time_from >= self._min_live() else None
        return Iter(self._entries(key, time_from, time_to))

    def backward_fetch(self, key: Any, time_from: int, time_to: int) -> Iter:
        return Iter(list(reversed(self._entries(key, time_from, time_to))))

    def fetch_all(self, time_from: int, time_to: int) -> Iter:
        lo = max(time_from, self._min_live())
        items = sorted(
            ((s, k, v) for (k, s), vs in self.data.items() if lo <= s <= time_to for v in vs),
            key=lambda e: (e[0], str(e[1])),
        )
        return Iter([KeyValue(Windowed(k, TimeWindow(s, s + self.size)), v) for s, k, v in items])


class FakeSessionStore:
    def __init__(self) -> None:
        self.data: dict[tuple[Any, int, int], Any] = {}

    def find_sessions(self, key: Any, earliest_end: int, latest_start: int) -> Iter:
        items = sorted(
            (s, e, v)
            for (k, s, e), v in self.data.items()
            if k == key and e >= earliest_end and s <= latest_start
        )
        return Iter([KeyValue(Windowed(key, SessionWindow(s, e)), v) for s, e, v in items])

    def put(self, session_key: Windowed[Any], agg: Any) -> None:
        self.data[(session_key.key, session_key.window.start, session_key.window.end)] = agg

    def remove(self, session_key: Windowed[Any]) -> None:
        self.data.pop((session_key.key, session_key.window.start, session_key.window.end), None)

    def fetch_session(self, key: Any, start: int, end: int) -> Any:
        return self.data.get((key, start, end))

    def find_sessions_by_end_time(self, earliest_end: int, latest_end: int) -> Iter:
        # the time-ordered session store's order: end, start, key
        items = sorted((e, s, k, v) for (k, s, e), v in self.data.items() if earliest_end <= e <= latest_end)
        return Iter([KeyValue(Windowed(k, SessionWindow(s, e)), v) for e, s, k, v in items])
