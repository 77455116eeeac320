"""The in-memory session bytes store (Kafka's ``InMemorySessionStore``).

Sessions live in ``end -> key bytes -> start -> aggregate``. Iteration follows
that nesting: session end ascending, then key bytes ascending, then session
start *descending* (backward iteration reverses all three), exactly as
Kafka's in-memory store. Retention follows the largest session end ever put:
a put with ``end <= observed - retention`` is dropped, sessions ending
before ``observed - retention + 1`` are purged, and reads never return them.

Persistent session stores (RocksDB in Kafka) keep this layout but expire by
whole segments (:mod:`kspark.state.internals.segmented_stores`) through the
hooks ``_put_expired`` and ``_remove_expired_segments``. Restore accepts the
changelog records in any order (the Spark runner replays an unordered map):
it advances the observed stream time to the largest session end in the
batch first, then keeps the live records without counting the rest as
dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from sortedcontainers import SortedDict

from kspark.key_value import KeyValue
from kspark.kstream.windowed import SessionWindow, Windowed
from kspark.serde.windowed import LONG_MAX, session_key_parts
from kspark.state.api import KeyValueIterator
from kspark.state.internals.in_memory_key_value_store import INVALID_RANGE_WARNING
from kspark.state.internals.in_memory_store import InMemoryStore
from kspark.state.internals.iterators import PeekingKeyValueIterator, empty_iterator

__all__ = ["InMemorySessionStore", "SCAN_BY_END_UNSUPPORTED"]

SCAN_BY_END_UNSUPPORTED = "This API is not supported by this implementation of SessionStore."
"""Kafka's message for a session store that cannot scan by end time (``findSessions(long, long)``:
the key-ordered persistent store and the caching layer keep ``SessionStore``'s throwing default)."""

LOG = logging.getLogger(__name__)


class InMemorySessionStore(InMemoryStore):
    """Session store of ``bytes`` keyed by ``Windowed(key bytes, SessionWindow(start, end))``."""

    def __init__(self, name: str, retention_period: int, *, persistent: bool = False) -> None:
        super().__init__(name, persistent=persistent)
        self.retention_period = retention_period
        self._by_end: SortedDict = SortedDict()  # end -> SortedDict(key -> SortedDict(start -> value))
        # Kafka starts from ConsumerRecord.NO_TIMESTAMP
        self._observed_stream_time = -1

    def _clear(self) -> None:
        self._by_end.clear()

    def observed_stream_time(self) -> int:
        """The largest session end put so far (-1 before any put)."""
        return self._observed_stream_time

    def _remove_expired_segments(self) -> None:
        min_live = max(0, self._observed_stream_time - self.retention_period + 1)
        while self._by_end and self._by_end.peekitem(0)[0] < min_live:
            self._by_end.popitem(0)

    def _put_expired(self, end: int) -> bool:
        """Whether a put of a session ending at ``end`` is dropped (observed time already advanced)."""
        return end <= self._observed_stream_time - self.retention_period

    # -- writes --------------------------------------------------------------

    def put(self, session_key: Windowed[bytes], aggregate: bytes | None) -> None:
        self._check_open()
        self._remove_expired_segments()
        end = session_key.window.end
        self._observed_stream_time = max(self._observed_stream_time, end)
        if self._put_expired(end):
            LOG.warning("Skipping record for expired segment.")
            record_dropped = getattr(self._context, "record_dropped", None)
            if callable(record_dropped):
                record_dropped("expired session store segment")
            return
        self._write(session_key, aggregate)

    def _write(self, session_key: Windowed[bytes], aggregate: bytes | None) -> None:
        end = session_key.window.end
        if aggregate is None:
            self.remove(session_key)
            return
        keys = self._by_end.get(end)
        if keys is None:
            keys = self._by_end[end] = SortedDict()
        starts = keys.get(session_key.key)
        if starts is None:
            starts = keys[session_key.key] = SortedDict()
        starts[session_key.window.start] = aggregate

    def remove(self, session_key: Windowed[bytes]) -> None:
        self._check_open()
        end = session_key.window.end
        keys = self._by_end.get(end)
        if keys is None:
            return
        starts = keys.get(session_key.key)
        if starts is None:
            return
        starts.pop(session_key.window.start, None)
        if not starts:
            del keys[session_key.key]
            if not keys:
                del self._by_end[end]

    def restore(self, records: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Apply changelog records whose keys are ``key + end + start``, in any order."""
        self._check_open()
        parsed = [(*session_key_parts(raw_key), value) for raw_key, value in records]
        if not parsed:
            return
        self._observed_stream_time = max(self._observed_stream_time, max(end for _, _, end, _ in parsed))
        for key, start, end, value in parsed:
            if not self._put_expired(end):
                self._write(Windowed(key, SessionWindow(start, end)), value)
        self._remove_expired_segments()

    # -- reads ---------------------------------------------------------------

    def fetch_session(self, key: bytes, session_start_time: int, session_end_time: int) -> bytes | None:
        self._check_open()
        if key is None:
            raise ValueError("key cannot be null")
        self._remove_expired_segments()
        if session_end_time <= self._observed_stream_time - self.retention_period:
            return None
        keys = self._by_end.get(session_end_time)
        if keys is None:
            return None
        starts = keys.get(key)
        if starts is None:
            return None
        value: bytes | None = starts.get(session_start_time)
        return value

    def find_sessions(
        self, key: bytes, earliest_session_end_time: int, latest_session_start_time: int
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        """Sessions of ``key`` with ``end >= earliest`` and ``start <= latest``."""
        if key is None:
            raise ValueError("key cannot be null")
        return self.find_sessions_range(key, key, earliest_session_end_time, latest_session_start_time)

    def backward_find_sessions(
        self, key: bytes, earliest_session_end_time: int, latest_session_start_time: int
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        if key is None:
            raise ValueError("key cannot be null")
        return self.backward_find_sessions_range(
            key, key, earliest_session_end_time, latest_session_start_time
        )

    def find_sessions_range(
        self,
        key_from: bytes | None,
        key_to: bytes | None,
        earliest_session_end_time: int,
        latest_session_start_time: int,
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        return self._find(
            key_from, key_to, earliest_session_end_time, LONG_MAX, latest_session_start_time, True
        )

    def backward_find_sessions_range(
        self,
        key_from: bytes | None,
        key_to: bytes | None,
        earliest_session_end_time: int,
        latest_session_start_time: int,
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        return self._find(
            key_from, key_to, earliest_session_end_time, LONG_MAX, latest_session_start_time, False
        )

    def find_sessions_by_end_time(
        self, earliest_session_end_time: int, latest_session_end_time: int
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        """All sessions (every key) whose end is in ``[earliest, latest]`` (Kafka's
        ``findSessions(long, long)``, used by emit-final session aggregation)."""
        return self._find(None, None, earliest_session_end_time, latest_session_end_time, LONG_MAX, True)

    def fetch(self, key: bytes) -> KeyValueIterator[Windowed[bytes], bytes]:
        if key is None:
            raise ValueError("key cannot be null")
        return self._find(key, key, -(1 << 63), LONG_MAX, LONG_MAX, True)

    def backward_fetch(self, key: bytes) -> KeyValueIterator[Windowed[bytes], bytes]:
        if key is None:
            raise ValueError("key cannot be null")
        return self._find(key, key, -(1 << 63), LONG_MAX, LONG_MAX, False)

    def fetch_range(
        self, key_from: bytes | None, key_to: bytes | None
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        return self._find(key_from, key_to, -(1 << 63), LONG_MAX, LONG_MAX, True)

    def backward_fetch_range(
        self, key_from: bytes | None, key_to: bytes | None
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        return self._find(key_from, key_to, -(1 << 63), LONG_MAX, LONG_MAX, False)

    def _find(
        self,
        key_from: bytes | None,
        key_to: bytes | None,
        earliest_end: int,
        latest_end: int,
        latest_start: int,
        forward: bool,
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        self._check_open()
        self._remove_expired_segments()
        if key_from is not None and key_to is not None and key_from > key_to:
            LOG.warning(INVALID_RANGE_WARNING)
            return empty_iterator(self._name)
        pairs = list(self._scan(key_from, key_to, earliest_end, latest_end, latest_start, forward))
        return PeekingKeyValueIterator(pairs, self._name)

    def _scan(
        self,
        key_from: bytes | None,
        key_to: bytes | None,
        earliest_end: int,
        latest_end: int,
        latest_start: int,
        forward: bool,
    ) -> Iterator[KeyValue[Windowed[bytes], bytes]]:
        # a no-op for the in-memory store (purged below this); a segmented store keeps older sessions
        earliest_end = max(earliest_end, self._observed_stream_time - self.retention_period + 1)
        for end in self._by_end.irange(earliest_end, latest_end, reverse=not forward):
            keys = self._by_end[end]
            for key in keys.irange(key_from, key_to, reverse=not forward):
                starts = keys[key]
                # forward iteration yields the latest start first, as Kafka's descendingMap
                for start in starts.irange(None, latest_start, reverse=forward):
                    yield KeyValue(Windowed(key, SessionWindow(start, end)), starts[start])
