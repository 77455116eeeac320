"""The in-memory window bytes store (Kafka's ``InMemoryWindowStore``).

Records live in a map ``window start -> (key bytes -> value bytes)``, so
iteration goes by window start first, then by key bytes (then by sequence
number for duplicates). Retention follows the store's *observed stream
time*, the largest window start ever put: a put with
``start <= observed - retention`` is dropped (and counted as a dropped
record), and reads never return windows that old. With
``retain_duplicates`` (stream-stream join stores) every put gets a fresh
4-byte sequence number appended to the key, so equal keys are all kept, and
``put(k, None, t)`` is a no-op, as in Kafka.

Persistent window stores (RocksDB in Kafka) keep this layout but expire by
whole segments (:mod:`kspark.state.internals.segmented_stores`); the
retention rules are the hooks ``_put_expired`` and
``_remove_expired_segments``.

Restore (the ``register`` callback, fed from the changelog) need not see the
records in changelog order: the Spark runner replays an unordered map of
the latest value per changelog key. So restore first advances the observed
stream time to the largest start in the batch, then keeps the records that
are live at that time, without counting the others as dropped (Kafka's
segmented store restores the same way), and a retained duplicate keeps the
sequence number of its changelog key: duplicates of one key and window come
back in the order they were written, and later puts number above them.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable, Iterator
from typing import Any

from sortedcontainers import SortedDict

from kspark.key_value import KeyValue
from kspark.kstream.windowed import Window, Windowed
from kspark.serde.windowed import LONG_MAX, SEQNUM_SIZE, time_window_for_size, window_store_key_parts
from kspark.state.api import KeyValueIterator
from kspark.state.internals.in_memory_key_value_store import INVALID_RANGE_WARNING
from kspark.state.internals.in_memory_store import InMemoryStore
from kspark.state.internals.iterators import PeekingKeyValueIterator, empty_iterator

__all__ = ["InMemoryWindowStore", "window_for"]

LOG = logging.getLogger(__name__)

_SEQ = struct.Struct(">i")
_INT_MAX = 0x7FFFFFFF
_LONG_MIN = -(1 << 63)


def window_for(start: int, window_size: int) -> Window:
    """The window of a stored record: ``[start, start + size)``, end clamped to Long.MAX."""
    if window_size <= 0:
        # a zero-size store (e.g. JoinWindows.of(0)) has no valid TimeWindow; keep the point
        return Window(start, start)
    return time_window_for_size(start, window_size)


class InMemoryWindowStore(InMemoryStore):
    """Window store of ``bytes`` keyed by (key, window start)."""

    def __init__(
        self,
        name: str,
        retention_period: int,
        window_size: int,
        retain_duplicates: bool,
        *,
        persistent: bool = False,
    ) -> None:
        super().__init__(name, persistent=persistent)
        self.retention_period = retention_period
        self.window_size = window_size
        self.retain_duplicates = retain_duplicates
        self._segments: SortedDict = SortedDict()  # start -> SortedDict(key bytes -> value)
        # Kafka starts from ConsumerRecord.NO_TIMESTAMP
        self._observed_stream_time = -1
        self._seqnum = 0

    def _clear(self) -> None:
        self._segments.clear()

    def observed_stream_time(self) -> int:
        """The largest window start put so far (-1 before any put)."""
        return self._observed_stream_time

    def iteration_order(self, key: bytes, window_start: int) -> Any:
        """Where an entry sorts in this store's scans over several keys: window start, then key
        (a caching layer merges its entries into a scan in the same order)."""
        return (window_start, key)

    def _min_live_time(self) -> int:
        # records expire exactly retention ms after their window start
        return self._observed_stream_time - self.retention_period + 1

    def _remove_expired_segments(self) -> None:
        min_live = max(0, self._min_live_time())
        while self._segments and self._segments.peekitem(0)[0] < min_live:
            self._segments.popitem(0)

    def _put_expired(self, window_start_timestamp: int) -> bool:
        """Whether a put at this start is dropped, given the (already advanced) observed time."""
        return window_start_timestamp <= self._observed_stream_time - self.retention_period

    # -- writes --------------------------------------------------------------

    def put(self, key: bytes, value: bytes | None, window_start_timestamp: int) -> None:
        self._check_open()
        self._remove_expired_segments()
        self._observed_stream_time = max(self._observed_stream_time, window_start_timestamp)
        if self._put_expired(window_start_timestamp):
            LOG.warning("Skipping record for expired segment.")
            record_dropped = getattr(self._context, "record_dropped", None)
            if callable(record_dropped):
                record_dropped("expired window store segment")
            return
        self._write(key, value, window_start_timestamp, None)

    def _write(self, key: bytes, value: bytes | None, start: int, seqnum: int | None) -> None:
        """Store (or delete) a live record; ``seqnum`` None = number a duplicate with a fresh one."""
        if value is not None:
            if self.retain_duplicates:
                if seqnum is None:
                    self._seqnum = (self._seqnum + 1) & _INT_MAX
                    seqnum = self._seqnum
                key = key + _SEQ.pack(seqnum)
            segment = self._segments.get(start)
            if segment is None:
                segment = self._segments[start] = SortedDict()
            segment[key] = value
        elif not self.retain_duplicates:
            # deleting from a duplicates store is a no-op, as in Kafka
            segment = self._segments.get(start)
            if segment is not None:
                segment.pop(key, None)
                if not segment:
                    del self._segments[start]

    def restore(self, records: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Apply changelog records whose keys are ``key + start + seqnum``, in any order."""
        self._check_open()
        parsed = [(*window_store_key_parts(store_key), value) for store_key, value in records]
        if not parsed:
            return
        self._observed_stream_time = max(self._observed_stream_time, max(start for _, start, _, _ in parsed))
        for key, start, seqnum, value in parsed:
            if self._put_expired(start):
                continue
            if self.retain_duplicates:
                self._write(key, value, start, seqnum)
                if value is not None:
                    self._seqnum = max(self._seqnum, seqnum)
            else:
                self._write(key, value, start, None)
        self._remove_expired_segments()

    # -- reads ---------------------------------------------------------------

    def fetch_window(self, key: bytes, window_start_timestamp: int) -> bytes | None:
        """The value of ``key`` in the window starting at ``window_start_timestamp``."""
        self._check_open()
        self._remove_expired_segments()
        if window_start_timestamp <= self._observed_stream_time - self.retention_period:
            return None
        segment = self._segments.get(window_start_timestamp)
        if segment is None:
            return None
        if self.retain_duplicates:
            # Kafka looks up the bare key, which never matches a key+seqnum entry
            return None
        value: bytes | None = segment.get(key)
        return value

    def fetch(self, key: bytes, time_from: int, time_to: int) -> KeyValueIterator[int, bytes]:
        return self._fetch_key(key, time_from, time_to, forward=True)

    def backward_fetch(self, key: bytes, time_from: int, time_to: int) -> KeyValueIterator[int, bytes]:
        return self._fetch_key(key, time_from, time_to, forward=False)

    def fetch_range(
        self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        return self._fetch_keys(key_from, key_to, time_from, time_to, forward=True)

    def backward_fetch_range(
        self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        return self._fetch_keys(key_from, key_to, time_from, time_to, forward=False)

    def fetch_all(self, time_from: int, time_to: int) -> KeyValueIterator[Windowed[bytes], bytes]:
        return self._fetch_keys(None, None, time_from, time_to, forward=True)

    def backward_fetch_all(self, time_from: int, time_to: int) -> KeyValueIterator[Windowed[bytes], bytes]:
        return self._fetch_keys(None, None, time_from, time_to, forward=False)

    def all(self) -> KeyValueIterator[Windowed[bytes], bytes]:
        return self._fetch_keys(None, None, _LONG_MIN, LONG_MAX, forward=True)

    def backward_all(self) -> KeyValueIterator[Windowed[bytes], bytes]:
        return self._fetch_keys(None, None, _LONG_MIN, LONG_MAX, forward=False)

    def _fetch_key(
        self, key: bytes, time_from: int, time_to: int, *, forward: bool
    ) -> KeyValueIterator[int, bytes]:
        self._check_open()
        if key is None:
            raise ValueError("key cannot be null")
        pairs = [
            KeyValue(start, value) for start, _, value in self._scan(key, key, time_from, time_to, forward)
        ]
        return PeekingKeyValueIterator(pairs, self._name)

    def _fetch_keys(
        self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int, *, forward: bool
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        self._check_open()
        if key_from is not None and key_to is not None and key_from > key_to:
            LOG.warning(INVALID_RANGE_WARNING)
            return empty_iterator(self._name)
        pairs = [
            KeyValue(Windowed(key, window_for(start, self.window_size)), value)
            for start, key, value in self._scan(key_from, key_to, time_from, time_to, forward)
        ]
        return PeekingKeyValueIterator(pairs, self._name)

    def _scan(
        self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int, forward: bool
    ) -> Iterator[tuple[int, bytes, bytes]]:
        """(start, key, value) of live records in the key and time ranges, in Kafka's order.

        Materialized by the callers, so a processor may write while it iterates.
        """
        self._remove_expired_segments()
        min_time = max(time_from, self._min_live_time())
        if time_to < min_time:
            return
        low = key_from
        high = key_to
        if self.retain_duplicates:
            low = None if key_from is None else key_from + _SEQ.pack(0)
            high = None if key_to is None else key_to + _SEQ.pack(_INT_MAX)
        for start in self._segments.irange(min_time, time_to, reverse=not forward):
            segment = self._segments[start]
            for stored_key in segment.irange(low, high, reverse=not forward):
                key = stored_key[:-SEQNUM_SIZE] if self.retain_duplicates else stored_key
                if self.retain_duplicates and not (
                    (key_from is None or key >= key_from) and (key_to is None or key <= key_to)
                ):
                    continue
                yield start, key, segment[stored_key]
