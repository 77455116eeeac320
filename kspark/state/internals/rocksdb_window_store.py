"""The RocksDB window bytes store (Kafka's ``RocksDBWindowStore`` on a segmented bytes store).

``Stores.persistent_window_store`` and ``persistent_timestamped_window_store``, and the DSL's
window stores under ``default.dsl.store=rocksDB`` (the default: windowed aggregations,
stream-stream joins), build this store. Its records live in time segments on disk
(:mod:`kspark.state.internals.rocksdb_segments`: segments of ``segment_interval`` ms by window
start, expiring whole). A store key is Kafka's ``WindowKeySchema`` layout, the one the changelog
carries: key bytes, 8-byte big-endian window start, 4-byte sequence number (0 unless the store
retains duplicates, when every put takes the next one). So a scan goes by segment, then by the
key bytes, then window start, then sequence number, as RocksDB orders the bytes.

Retention is Kafka's segmented one: a put is dropped (logged and counted as a dropped record)
only when its segment is no longer live, and reads start at ``observed - retention + 1``
(``getActualFrom``), so a late record kept in a live segment is never read. ``put(k, None, t)``
deletes, except in a store retaining duplicates, where it does nothing at all (not even advance
the observed time), as Kafka's ``RocksDBWindowStore.put``.

kspark departs from Kafka in one point: restore continues the sequence numbers above the
highest restored one (see :mod:`kspark.state.internals.change_logging`), so a duplicate put after
a restore never overwrites a restored one; Kafka restarts them at 0.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable
from typing import Any

from kspark.key_value import KeyValue
from kspark.kstream.windowed import Windowed
from kspark.serde.windowed import LONG_MAX, SEQNUM_SIZE, TIMESTAMP_SIZE
from kspark.state.api import KeyValueIterator
from kspark.state.internals.in_memory_key_value_store import INVALID_RANGE_WARNING
from kspark.state.internals.in_memory_window_store import window_for
from kspark.state.internals.iterators import empty_iterator
from kspark.state.internals.rocksdb_segments import RocksDBSegmentedBytesStore, ordered_upper_range
from kspark.state.internals.segmented_stores import segment_id

__all__ = ["RocksDBWindowStore"]

LOG = logging.getLogger(__name__)

_START_SEQ = struct.Struct(">qi")
_START = struct.Struct(">q")
_SUFFIX = TIMESTAMP_SIZE + SEQNUM_SIZE
_INT_MAX = 0x7FFFFFFF
_MIN_SUFFIX = bytes(_SUFFIX)


def _store_key(key: bytes, start: int, seqnum: int) -> bytes:
    return key + _START_SEQ.pack(start, seqnum)


class RocksDBWindowStore(RocksDBSegmentedBytesStore):
    """A window store of ``bytes`` in RocksDB segments (see the module docstring)."""

    def __init__(
        self,
        name: str,
        retention_period: int,
        window_size: int,
        retain_duplicates: bool,
        segment_interval: int,
    ) -> None:
        super().__init__(name, retention_period, segment_interval)
        self.window_size = window_size
        self.retain_duplicates = retain_duplicates
        self._seqnum = 0

    @staticmethod
    def segment_timestamp(store_key: bytes) -> int:
        start: int = _START.unpack_from(store_key, len(store_key) - _SUFFIX)[0]
        return start

    def iteration_order(self, key: bytes, window_start: int) -> Any:
        """Where an entry sorts in a scan over several keys: segment, then the store key bytes (a
        caching layer merges its entries into a scan in the same order)."""
        return (segment_id(window_start, self.segment_interval), key + _START.pack(window_start))

    # -- writes --------------------------------------------------------------

    def put(self, key: bytes, value: bytes | None, window_start_timestamp: int) -> None:
        self._check_open()
        if value is None and self.retain_duplicates:
            return  # deleting from a duplicates store is a no-op, as in Kafka
        if self.retain_duplicates:
            self._seqnum = (self._seqnum + 1) & _INT_MAX
        self._put_store_key(
            _store_key(key, window_start_timestamp, self._seqnum),
            value,
            window_start_timestamp,
            "expired window store segment",
        )

    def restore(self, records: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Apply changelog records whose keys are ``key + start + seqnum``, in any order."""
        self._check_open()
        parsed = [(store_key, value, self.segment_timestamp(store_key)) for store_key, value in records]
        written = self._restore_store_keys(parsed)
        if self.retain_duplicates:
            for i in written:
                store_key, value, _ = parsed[i]
                if value is not None:
                    seqnum: int = struct.unpack_from(">i", store_key, len(store_key) - SEQNUM_SIZE)[0]
                    self._seqnum = max(self._seqnum, seqnum)

    # -- reads ---------------------------------------------------------------

    def fetch_window(self, key: bytes, window_start_timestamp: int) -> bytes | None:
        """The value of ``key`` in the window starting at ``window_start_timestamp`` (with retained
        duplicates: only the latest put's, whose sequence number is the current one, as Kafka)."""
        self._check_open()
        store_key = _store_key(key, window_start_timestamp, self._seqnum)
        return self._get_store_key(store_key, window_start_timestamp)

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
        # the segmented store's all() starts at getActualFrom(0)
        return self._fetch_keys(None, None, 0, LONG_MAX, forward=True)

    def backward_all(self) -> KeyValueIterator[Windowed[bytes], bytes]:
        return self._fetch_keys(None, None, 0, LONG_MAX, forward=False)

    def _fetch_key(
        self, key: bytes, time_from: int, time_to: int, *, forward: bool
    ) -> KeyValueIterator[int, bytes]:
        self._check_open()
        if key is None:
            raise ValueError("key cannot be null")
        actual_from = self._actual_from(time_from)
        if time_to < actual_from:
            return empty_iterator(self._name)
        segments = self._segments.segments_in(actual_from, time_to, forward=forward)
        key_len = len(key)

        def accept(store_key: bytes) -> bool:
            if len(store_key) - _SUFFIX != key_len or not store_key.startswith(key):
                return False
            start: int = _START.unpack_from(store_key, key_len)[0]
            return actual_from <= start <= time_to

        def convert(store_key: bytes, value: bytes) -> KeyValue[int, bytes]:
            return KeyValue(_START.unpack_from(store_key, key_len)[0], value)

        lower = _store_key(key, max(0, actual_from), 0)
        upper = _store_key(key, time_to, _INT_MAX)
        return self._scan(segments, lower, upper, forward, accept, convert)

    def _fetch_keys(
        self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int, *, forward: bool
    ) -> KeyValueIterator[Windowed[bytes], bytes]:
        self._check_open()
        if key_from is not None and key_to is not None and key_from > key_to:
            LOG.warning(INVALID_RANGE_WARNING)
            return empty_iterator(self._name)
        actual_from = self._actual_from(time_from)
        if time_to < actual_from:
            return empty_iterator(self._name)
        segments = self._segments.segments_in(actual_from, time_to, forward=forward)
        window_size = self.window_size

        def accept(store_key: bytes) -> bool:
            cut = len(store_key) - _SUFFIX
            start: int = _START.unpack_from(store_key, cut)[0]
            if not actual_from <= start <= time_to:
                return False
            key = store_key[:cut]
            return (key_from is None or key >= key_from) and (key_to is None or key <= key_to)

        def convert(store_key: bytes, value: bytes) -> KeyValue[Windowed[bytes], bytes]:
            cut = len(store_key) - _SUFFIX
            start: int = _START.unpack_from(store_key, cut)[0]
            return KeyValue(Windowed(store_key[:cut], window_for(start, window_size)), value)

        # WindowKeySchema.lowerRange / upperRange: bounds of the key range whatever the suffix
        lower = None if key_from is None else key_from + _MIN_SUFFIX
        upper = None if key_to is None else ordered_upper_range(key_to, _START_SEQ.pack(time_to, _INT_MAX))
        return self._scan(segments, lower, upper, forward, accept, convert)
