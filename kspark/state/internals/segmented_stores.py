"""Persistent window and session bytes stores: Kafka's RocksDB stores' *segmented* retention.

Kafka's ``RocksDBWindowStore`` and ``RocksDBSessionStore`` sit on an
``AbstractRocksDBSegmentedBytesStore``: records go into time segments of
``segment_interval`` ms (``Stores`` uses ``max(retention / 2, 60_000)`` for
both kinds), segment id ``= timestamp / segment_interval`` (Java's division,
truncating toward zero). The timestamp is the window start for window
stores and the session *end* for session stores. Kafka's DSL builds these
stores unless in-memory ones are asked for (``default.dsl.store=rocksDB``),
so stream-stream join stores and windowed/session aggregations follow these
rules, which differ from the in-memory stores' (``InMemoryWindowStore``,
``InMemorySessionStore``):

* The observed stream time is the largest timestamp ever put (or, for a
  session store, removed); a put first advances it.
* A put is dropped ("Skipping record for expired segment", counted as a
  dropped record) only when its segment id is below the *minimum live
  segment*, ``segment_id(observed - retention)`` (``getOrCreateSegmentIfLive``).
  An in-memory store drops every put with ``timestamp <= observed - retention``;
  a segmented one keeps a late record whose segment is still live.
* Reads clamp to ``observed - retention + 1`` (``getActualFrom``): a window
  (session end) older than that is never returned, though it may still be
  stored in a live segment; a key lookup of such a window returns ``None``.
* Whole segments below the minimum live segment are removed (only memory:
  reads never see them anyway).
* Restore advances the observed time to the largest timestamp in the batch
  before it drops records of expired segments, without counting them.

The persistent window and session stores are on disk
(:mod:`kspark.state.internals.rocksdb_segments`). The classes here keep these
rules in memory with the in-memory stores' layout: the time-ordered stores of
emit-on-window-close aggregations build on them
(:mod:`kspark.state.internals.time_ordered_stores`), and the on-disk stores'
tests check their answers against them. A window store's scans over several
keys come back in RocksDB's order (segment, then key, then window start); a
session store's follow the in-memory order (session end, then key, then start
descending), where the on-disk store's are RocksDB's.
"""

from __future__ import annotations

import logging
import struct
from typing import Any

from kspark.kstream.windowed import Windowed
from kspark.serde.windowed import LONG_MAX
from kspark.state.api import KeyValueIterator
from kspark.state.internals.in_memory_session_store import SCAN_BY_END_UNSUPPORTED, InMemorySessionStore
from kspark.state.internals.in_memory_window_store import InMemoryWindowStore
from kspark.state.internals.iterators import PeekingKeyValueIterator

__all__ = ["segment_id", "SegmentedWindowStore", "SegmentedSessionStore", "default_segment_interval"]

LOG = logging.getLogger(__name__)

_START = struct.Struct(">q")


def default_segment_interval(retention_period: int) -> int:
    """Kafka's ``Stores`` default segment interval: ``max(retention / 2, 60_000)`` ms."""
    return max(retention_period // 2, 60_000)


def segment_id(timestamp: int, segment_interval: int) -> int:
    """``timestamp / segment_interval`` with Java's long division (truncates toward zero)."""
    if timestamp >= 0:
        return timestamp // segment_interval
    return -(-timestamp // segment_interval)


class SegmentedWindowStore(InMemoryWindowStore):
    """A persistent window store: Kafka's ``RocksDBWindowStore`` retention (see the module docstring)."""

    def __init__(
        self,
        name: str,
        retention_period: int,
        window_size: int,
        retain_duplicates: bool,
        segment_interval: int,
    ) -> None:
        if segment_interval < 1:
            raise ValueError("segmentInterval cannot be zero or negative")
        super().__init__(name, retention_period, window_size, retain_duplicates, persistent=True)
        self.segment_interval = segment_interval

    def _min_live_segment(self) -> int:
        return segment_id(self._observed_stream_time - self.retention_period, self.segment_interval)

    def _put_expired(self, window_start_timestamp: int) -> bool:
        return segment_id(window_start_timestamp, self.segment_interval) < self._min_live_segment()

    def _remove_expired_segments(self) -> None:
        min_live = self._min_live_segment()
        segments = self._segments
        while segments and segment_id(segments.peekitem(0)[0], self.segment_interval) < min_live:
            segments.popitem(0)

    def iteration_order(self, key: bytes, window_start: int) -> Any:
        # RocksDB's order: segment, then the store key bytes (key, 8-byte start, sequence number)
        return (segment_id(window_start, self.segment_interval), key + _START.pack(window_start))

    def _fetch_keys(
        self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int, *, forward: bool
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        with super()._fetch_keys(key_from, key_to, time_from, time_to, forward=forward) as it:
            pairs = list(it)
        # a stable sort: duplicates of one key and start keep their sequence order
        pairs.sort(key=lambda kv: self.iteration_order(kv.key.key, kv.key.window.start), reverse=not forward)
        return PeekingKeyValueIterator(pairs, self.name)

    def fetch_window(self, key: bytes, window_start_timestamp: int) -> bytes | None:
        if not self.retain_duplicates:
            return super().fetch_window(key, window_start_timestamp)
        # RocksDBWindowStore looks up key + start + the *current* seqnum: only the latest put matches
        self._check_open()
        if window_start_timestamp <= self._observed_stream_time - self.retention_period:
            return None
        segment = self._segments.get(window_start_timestamp)
        if segment is None:
            return None
        value: bytes | None = segment.get(key + self._seqnum.to_bytes(4, "big", signed=True))
        return value

    def all(self) -> KeyValueIterator[Windowed[bytes], bytes]:
        # the segmented store's all() starts at getActualFrom(0)
        return self._fetch_keys(None, None, 0, LONG_MAX, forward=True)

    def backward_all(self) -> KeyValueIterator[Windowed[bytes], bytes]:
        return self._fetch_keys(None, None, 0, LONG_MAX, forward=False)


class SegmentedSessionStore(InMemorySessionStore):
    """A persistent session store: Kafka's ``RocksDBSessionStore`` retention, segments by session end."""

    def __init__(self, name: str, retention_period: int, segment_interval: int) -> None:
        if segment_interval < 1:
            raise ValueError("segmentInterval cannot be zero or negative")
        super().__init__(name, retention_period, persistent=True)
        self.segment_interval = segment_interval

    def _min_live_segment(self) -> int:
        return segment_id(self._observed_stream_time - self.retention_period, self.segment_interval)

    def _put_expired(self, end: int) -> bool:
        return segment_id(end, self.segment_interval) < self._min_live_segment()

    def _remove_expired_segments(self) -> None:
        min_live = self._min_live_segment()
        by_end = self._by_end
        while by_end and segment_id(by_end.peekitem(0)[0], self.segment_interval) < min_live:
            by_end.popitem(0)

    def find_sessions_by_end_time(
        self, earliest_session_end_time: int, latest_session_end_time: int
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        # Kafka's key-ordered RocksDBSessionStore cannot scan by end time (the SessionStore default
        # throws); only the time-ordered store of emit-final aggregations and the in-memory one can
        raise NotImplementedError(SCAN_BY_END_UNSUPPORTED)

    def remove(self, session_key: Windowed[bytes]) -> None:
        # the segmented store's remove advances the observed stream time, as a put does
        self._observed_stream_time = max(self._observed_stream_time, session_key.window.end)
        super().remove(session_key)
