"""The time-ordered window and session stores of emit-on-window-close aggregations.

Kafka's DSL materializes a windowed aggregation with
``EmitStrategy.onWindowClose()`` in a *time-ordered* RocksDB store (with a
key index beside it) instead of the usual key-ordered one:
``RocksDBTimeOrderedWindowStore`` for ``TimeWindows`` and ``SlidingWindows``,
``RocksDBTimeOrderedSessionStore`` for ``SessionWindows``. The processor then
finds the windows that closed with one scan by time (``fetchAll`` /
``findSessions(earliestEnd, latestEnd)``). These stores share the segmented
retention of :mod:`kspark.state.internals.segmented_stores` (segments of
``max(retention / 2, 60_000)`` ms, a put dropped only when its segment is no
longer live) but read with other bounds, which decide whether a window at
the retention boundary is still emitted:

* Window store (``TimeFirstWindowKeySchema``): reads start at
  ``observed - retention``, one ms *earlier* than the key-ordered store's
  ``observed - retention + 1``, and a key lookup returns a window whose start
  is ``>= observed - retention``. A range whose end is below that start is
  empty.
* Session store: key lookups (``findSessions(key, ...)``,
  ``fetchSession``) keep the key-ordered bounds (sessions ending at or after
  ``observed - retention + 1``), but the scan by end time
  (``findSessions(earliestEnd, latestEnd)``) has no retention bound at all:
  it returns every session of a segment that still exists, ordered by
  session end, then session start, then key bytes.

As with the other persistent stores, kspark keeps the data in memory; the
order of a scan across several keys follows the in-memory layout (window
start, then key), which is the time-ordered store's order for windows.
"""

from __future__ import annotations

from typing import Any

from kspark.key_value import KeyValue
from kspark.kstream.windowed import SessionWindow, Windowed
from kspark.state.api import KeyValueIterator
from kspark.state.internals.iterators import PeekingKeyValueIterator
from kspark.state.internals.segmented_stores import SegmentedSessionStore, SegmentedWindowStore

__all__ = ["TimeOrderedWindowStore", "TimeOrderedSessionStore"]


class TimeOrderedWindowStore(SegmentedWindowStore):
    """Kafka's ``RocksDBTimeOrderedWindowStore``: reads include ``observed - retention`` itself."""

    def _min_live_time(self) -> int:
        # getActualFrom for the time-first schema: no "+ 1" (Kafka keeps the window whose start is
        # exactly retention ms behind, so a window closing when retention == size + grace is emitted)
        return self._observed_stream_time - self.retention_period

    def iteration_order(self, key: bytes, window_start: int) -> Any:
        # the time-first key schema: window start, then key
        return (window_start, key)

    def fetch_window(self, key: bytes, window_start_timestamp: int) -> bytes | None:
        self._check_open()
        if window_start_timestamp < self._min_live_time():
            return None
        segment = self._segments.get(window_start_timestamp)
        if segment is None:
            return None
        # with duplicates only the latest put matches (key + start + the current seqnum)
        stored = key + self._seqnum.to_bytes(4, "big", signed=True) if self.retain_duplicates else key
        value: bytes | None = segment.get(stored)
        return value


class TimeOrderedSessionStore(SegmentedSessionStore):
    """Kafka's ``RocksDBTimeOrderedSessionStore``: the scan by end time ignores retention."""

    def find_sessions_by_end_time(
        self, earliest_session_end_time: int, latest_session_end_time: int
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        self._check_open()
        # Kafka drops expired segments on the put before this scan, with the advanced observed time
        self._remove_expired_segments()
        # only whole expired segments are gone; no read bound by observed time - retention
        pairs: list[KeyValue[Windowed[bytes], bytes]] = []
        for end in self._by_end.irange(earliest_session_end_time, latest_session_end_time):
            for key, starts in self._by_end[end].items():
                for start, value in starts.items():
                    pairs.append(KeyValue(Windowed(key, SessionWindow(start, end)), value))
        # the base key is end, start, key bytes
        pairs.sort(key=lambda kv: (kv.key.window.end, kv.key.window.start, kv.key.key))
        return PeekingKeyValueIterator(pairs, self.name)
