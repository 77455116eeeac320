"""The RocksDB session bytes store (Kafka's ``RocksDBSessionStore`` on a segmented bytes store).

``Stores.persistent_session_store`` and the DSL's session stores under
``default.dsl.store=rocksDB`` (the default) build this store. Its records live in time segments
on disk (:mod:`kspark.state.internals.rocksdb_segments`), by session *end*. A store key is
Kafka's ``SessionKeySchema`` layout, the one the changelog carries: key bytes, 8-byte big-endian
session end, 8-byte session start. A scan therefore comes back in RocksDB's order: segment, then
key bytes, then session end, then session start, each ascending (all reversed backwards). The
in-memory session store orders by end, key, then start descending; the two differ only for scans
over several keys and for several sessions of one key with the same end.

Retention is Kafka's segmented one: a put is dropped (logged and counted as a dropped record)
only when its segment is no longer live; reads skip sessions ending before
``observed - retention + 1``; ``remove`` also advances the observed time. The scan by end time
(``findSessions(earliestEnd, latestEnd)``) is not supported, as Kafka's key-ordered store.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable
from typing import Any

from kspark.key_value import KeyValue
from kspark.kstream.windowed import SessionWindow, Windowed
from kspark.serde.windowed import LONG_MAX, TIMESTAMP_SIZE
from kspark.state.api import KeyValueIterator
from kspark.state.internals.in_memory_key_value_store import INVALID_RANGE_WARNING
from kspark.state.internals.in_memory_session_store import SCAN_BY_END_UNSUPPORTED
from kspark.state.internals.iterators import empty_iterator
from kspark.state.internals.rocksdb_segments import RocksDBSegmentedBytesStore, ordered_upper_range
from kspark.state.internals.segmented_stores import segment_id

__all__ = ["RocksDBSessionStore"]

LOG = logging.getLogger(__name__)

_END_START = struct.Struct(">qq")
_SUFFIX = 2 * TIMESTAMP_SIZE
_MIN_SUFFIX = bytes(_SUFFIX)


def _store_key(key: bytes, start: int, end: int) -> bytes:
    return key + _END_START.pack(end, start)


class RocksDBSessionStore(RocksDBSegmentedBytesStore):
    """A session store of ``bytes`` in RocksDB segments (see the module docstring)."""

    @staticmethod
    def segment_timestamp(store_key: bytes) -> int:
        end: int = _END_START.unpack_from(store_key, len(store_key) - _SUFFIX)[0]
        return end

    def iteration_order(self, key: bytes, start: int, end: int) -> Any:
        """Where a session sorts in a scan over several keys: segment, then the store key bytes (a
        caching layer merges its entries into a scan in the same order)."""
        return (segment_id(end, self.segment_interval), _store_key(key, start, end))

    # -- writes --------------------------------------------------------------

    def put(self, session_key: Windowed[bytes], aggregate: bytes | None) -> None:
        self._check_open()
        window = session_key.window
        store_key = _store_key(session_key.key, window.start, window.end)
        self._put_store_key(store_key, aggregate, window.end, "expired session store segment")

    def remove(self, session_key: Windowed[bytes]) -> None:
        self._check_open()
        window = session_key.window
        self._remove_store_key(_store_key(session_key.key, window.start, window.end), window.end)

    def restore(self, records: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Apply changelog records whose keys are ``key + end + start``, in any order."""
        self._check_open()
        self._restore_store_keys(
            (store_key, value, self.segment_timestamp(store_key)) for store_key, value in records
        )

    # -- reads ---------------------------------------------------------------

    def fetch_session(self, key: bytes, session_start_time: int, session_end_time: int) -> bytes | None:
        self._check_open()
        if key is None:
            raise ValueError("key cannot be null")
        return self._get_store_key(_store_key(key, session_start_time, session_end_time), session_end_time)

    def find_sessions(
        self, key: bytes, earliest_session_end_time: int, latest_session_start_time: int
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        """Sessions of ``key`` with ``end >= earliest`` and ``start <= latest``."""
        return self._find_key(key, earliest_session_end_time, latest_session_start_time, forward=True)

    def backward_find_sessions(
        self, key: bytes, earliest_session_end_time: int, latest_session_start_time: int
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        return self._find_key(key, earliest_session_end_time, latest_session_start_time, forward=False)

    def find_sessions_range(
        self,
        key_from: bytes | None,
        key_to: bytes | None,
        earliest_session_end_time: int,
        latest_session_start_time: int,
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        return self._find_keys(
            key_from, key_to, earliest_session_end_time, latest_session_start_time, forward=True
        )

    def backward_find_sessions_range(
        self,
        key_from: bytes | None,
        key_to: bytes | None,
        earliest_session_end_time: int,
        latest_session_start_time: int,
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        return self._find_keys(
            key_from, key_to, earliest_session_end_time, latest_session_start_time, forward=False
        )

    def find_sessions_by_end_time(
        self, earliest_session_end_time: int, latest_session_end_time: int
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        # Kafka's key-ordered RocksDBSessionStore cannot scan by end time (the SessionStore default
        # throws); only the time-ordered store of emit-final aggregations and the in-memory one can
        raise NotImplementedError(SCAN_BY_END_UNSUPPORTED)

    def fetch(self, key: bytes) -> KeyValueIterator[Windowed[bytes], bytes]:
        return self._find_key(key, 0, LONG_MAX, forward=True)

    def backward_fetch(self, key: bytes) -> KeyValueIterator[Windowed[bytes], bytes]:
        return self._find_key(key, 0, LONG_MAX, forward=False)

    def fetch_range(
        self, key_from: bytes | None, key_to: bytes | None
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        return self._find_keys(key_from, key_to, 0, LONG_MAX, forward=True)

    def backward_fetch_range(
        self, key_from: bytes | None, key_to: bytes | None
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        return self._find_keys(key_from, key_to, 0, LONG_MAX, forward=False)

    def _find_key(
        self, key: bytes, earliest_end: int, latest_start: int, *, forward: bool
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        self._check_open()
        if key is None:
            raise ValueError("key cannot be null")
        actual_from = self._actual_from(earliest_end)
        # SessionKeySchema.segmentsToSearch: a session ending at any later time may start early enough
        segments = self._segments.segments_in(actual_from, LONG_MAX, forward=forward)
        key_len = len(key)

        def accept(store_key: bytes) -> bool:
            if len(store_key) - _SUFFIX != key_len or not store_key.startswith(key):
                return False
            end, start = _END_START.unpack_from(store_key, key_len)
            return bool(end >= actual_from and start <= latest_start)

        def convert(store_key: bytes, value: bytes) -> KeyValue[Windowed[bytes], bytes]:
            end, start = _END_START.unpack_from(store_key, key_len)
            return KeyValue(Windowed(key, SessionWindow(start, end)), value)

        # lowerRangeFixedSize / upperRangeFixedSize: (end >= from, start >= 0) to (end MAX, start latest)
        lower = _store_key(key, 0, max(0, actual_from))
        upper = _store_key(key, latest_start, LONG_MAX)
        return self._scan(segments, lower, upper, forward, accept, convert)

    def _find_keys(
        self,
        key_from: bytes | None,
        key_to: bytes | None,
        earliest_end: int,
        latest_start: int,
        *,
        forward: bool,
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        self._check_open()
        if key_from is not None and key_to is not None and key_from > key_to:
            LOG.warning(INVALID_RANGE_WARNING)
            return empty_iterator(self._name)
        actual_from = self._actual_from(earliest_end)
        segments = self._segments.segments_in(actual_from, LONG_MAX, forward=forward)

        def accept(store_key: bytes) -> bool:
            cut = len(store_key) - _SUFFIX
            end, start = _END_START.unpack_from(store_key, cut)
            if end < actual_from or start > latest_start:
                return False
            key = store_key[:cut]
            return (key_from is None or key >= key_from) and (key_to is None or key <= key_to)

        def convert(store_key: bytes, value: bytes) -> KeyValue[Windowed[bytes], bytes]:
            cut = len(store_key) - _SUFFIX
            end, start = _END_START.unpack_from(store_key, cut)
            return KeyValue(Windowed(store_key[:cut], SessionWindow(start, end)), value)

        # SessionKeySchema.lowerRange / upperRange: bounds of the key range whatever the suffix
        lower = None if key_from is None else key_from + _MIN_SUFFIX
        upper = (
            None if key_to is None else ordered_upper_range(key_to, _END_START.pack(LONG_MAX, latest_start))
        )
        return self._scan(segments, lower, upper, forward, accept, convert)
