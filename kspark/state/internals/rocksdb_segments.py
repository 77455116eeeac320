"""RocksDB time segments: the on-disk base of the persistent window and session stores.

Kafka's ``RocksDBWindowStore`` and ``RocksDBSessionStore`` sit on an
``AbstractRocksDBSegmentedBytesStore``: the store's records are split by time into
*segments* of ``segment_interval`` ms, each its own RocksDB database (``KeyValueSegment``),
managed by ``KeyValueSegments`` (``AbstractSegments``). This module is that layer; the window
and session stores (:mod:`kspark.state.internals.rocksdb_window_store`,
:mod:`kspark.state.internals.rocksdb_session_store`) add their key layouts on top.

* Segment id ``= timestamp / segment_interval`` (Java's division, truncating toward zero); the
  timestamp is the one in the store key (window start, session end).
* A segment's database is ``<state dir>/rocksdb/<store>/<store>.<id * segment_interval>``. Kafka
  names the segment the same way (``AbstractSegments.segmentName``) but keeps the store's
  directory beside ``rocksdb/`` (``<state dir>/<store>/...``); kspark keeps every store under
  ``rocksdb/``, the directory a task drops (wipes) when its stores must restore from scratch.
* The *observed stream time* is the largest timestamp put, removed or restored. A put whose
  segment is below the *minimum live segment*, ``segment_id(observed - retention)``, is dropped
  (``getOrCreateSegmentIfLive``); every put first advances the observed time, then removes the
  segments below the minimum live one: closed, their directory deleted
  (``cleanupExpiredSegments``).
* Opening the store opens the segments found in its directory (``openExisting``). As in Kafka,
  the observed stream time is not read back from them: it starts at -1 (``NO_TIMESTAMP``) and the
  next put or restore advances it, removing whatever expired meanwhile.
* Scans visit the segments that can hold the time range, each with one RocksDB range iterator,
  opened when the scan reaches that segment (Kafka's ``SegmentIterator``): an iterator reads the
  snapshot of its segment at that moment, and a segment removed meanwhile is skipped.
* Restore advances the observed time to the largest timestamp of the batch first, then writes
  the records of live segments, one write batch per segment; the others are skipped without
  being counted as dropped.

The RocksDB options, the temporary directory of a context without a state directory, the WAL and
the iterator release follow :mod:`kspark.state.internals.rocksdb_key_value_store`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import weakref
from abc import abstractmethod
from collections.abc import Callable, Generator, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rocksdict import Rdict, WriteBatch, WriteOptions
from sortedcontainers import SortedDict

from kspark.errors import InvalidStateStoreException, ProcessorStateException
from kspark.key_value import KeyValue
from kspark.state.api import StateStore
from kspark.state.internals.iterators import PeekingKeyValueIterator
from kspark.state.internals.rocksdb_key_value_store import DB_FILE_DIR, _Cursor, needs_wal, tuned_options
from kspark.state.internals.segmented_stores import segment_id

if TYPE_CHECKING:
    from kspark.processor.api import ProcessorContext

__all__ = [
    "KeyValueSegment",
    "KeyValueSegments",
    "RocksDBSegmentedBytesStore",
    "SegmentIterator",
    "ordered_upper_range",
]

LOG = logging.getLogger(__name__)

_NO_TIMESTAMP = -1

_SHM = "/dev/shm"
_SHM_MIN_FREE = 1 << 30
_UNKNOWN = "?"
_SCRATCH_ROOT: str | None = _UNKNOWN


def ordered_upper_range(key: bytes, max_suffix: bytes) -> bytes:
    """Kafka's ``OrderedBytes.upperRange``: the upper bound of a scan up to ``key`` with any suffix
    up to ``max_suffix``. Key bytes are kept while they are at least the suffix's first byte (the
    first always), so a shorter key that sorts below ``key`` is not cut off by its suffix."""
    first = max_suffix[0]
    if first == 0:
        return key + max_suffix
    i = 1 if key else 0
    while i < len(key) and key[i] >= first:
        i += 1
    return key[:i] + max_suffix


def _scratch_root() -> str | None:
    """Where a store without a state directory opens its segments: the memory file system
    ``/dev/shm`` when it has room (opening a RocksDB database on disk costs tens of ms of fsyncs,
    and a test driver opens many), else the default temporary directory."""
    global _SCRATCH_ROOT
    if _SCRATCH_ROOT is _UNKNOWN:
        root = None
        with contextlib.suppress(OSError):
            stats = os.statvfs(_SHM)
            if stats.f_bavail * stats.f_frsize >= _SHM_MIN_FREE and os.access(_SHM, os.W_OK | os.X_OK):
                root = _SHM
        _SCRATCH_ROOT = root
    return _SCRATCH_ROOT


class _SegmentCursor(_Cursor):
    """A cursor its segment can release when the segment closes (hence weakly referenced)."""

    __slots__ = ("__weakref__",)


class KeyValueSegment:
    """One segment: a RocksDB database of ``store key bytes -> value bytes``."""

    def __init__(
        self, store_name: str, segment_id: int, name: str, path: str, context: ProcessorContext, wal: bool
    ) -> None:
        self.id = segment_id
        self.name = name
        self.path = path
        self._store_name = store_name
        task_id = context.task_id()
        # the application's rocksdb.config.setter sees each segment, by its name, as in Kafka
        options, self._close_setter = tuned_options(name, context)
        try:
            os.makedirs(path, exist_ok=True)
            db = Rdict(path, options)
            if not wal:
                # a temporary or rebuilt directory is never reopened: a WAL would only halve put speed
                no_wal = WriteOptions()
                no_wal.disable_wal = True  # type: ignore[assignment]  # a property; the stubs say method
                db.set_write_options(no_wal)
            self._wal = wal
        except Exception as e:
            raise ProcessorStateException(
                f"Error opening segment {name} of store {store_name} of task {task_id} "
                f"at location {path}: {e}"
            ) from e
        self._db: Rdict | None = db
        self._cursors: weakref.WeakSet[_SegmentCursor] = weakref.WeakSet()

    def is_open(self) -> bool:
        return self._db is not None

    def _check_open(self) -> Rdict:
        db = self._db
        if db is None:
            raise InvalidStateStoreException(f"Segment {self.name} of store {self._store_name} is closed.")
        return db

    def put(self, key: bytes, value: bytes | None) -> None:
        db = self._check_open()
        try:
            if value is None:
                db.delete(key)
            else:
                db.put(key, value)
        except Exception as e:
            raise ProcessorStateException(
                f"Error while putting key/value into store {self._store_name} at location {self.path}: {e}"
            ) from e

    def get(self, key: bytes) -> bytes | None:
        db = self._check_open()
        try:
            value: bytes | None = db.get(key)
        except Exception as e:
            raise ProcessorStateException(
                f"Error while getting value from store {self._store_name} at location {self.path}: {e}"
            ) from e
        return value

    def write(self, batch: WriteBatch) -> None:
        db = self._check_open()
        try:
            db.write(batch)
        except Exception as e:
            raise ProcessorStateException(
                f"Error restoring batch to store {self._store_name} at location {self.path}: {e}"
            ) from e

    def cursor(self, lower: bytes | None, upper: bytes | None, *, forward: bool) -> _SegmentCursor | None:
        """The pairs with ``lower <= key <= upper`` (None: unbounded); None if the segment has closed
        or the range is empty."""
        db = self._db
        if db is None:
            return None
        if lower is not None and upper is not None and lower > upper:
            return None
        past_end: Callable[[bytes], bool] | None
        if forward:
            items = db.items(from_key=lower) if lower is not None else db.items()
            past_end = None if upper is None else (lambda key: key > upper)
        else:
            # backwards from a key seeks for the last key <= it (RocksDB's SeekForPrev)
            items = (
                db.items(backwards=True, from_key=upper) if upper is not None else db.items(backwards=True)
            )
            past_end = None if lower is None else (lambda key: key < lower)
        cursor = _SegmentCursor(items, past_end)
        self._cursors.add(cursor)
        return cursor

    def flush(self) -> None:
        db = self._db
        if db is None or not self._wal:  # no WAL: nothing to sync
            return
        try:
            db.flush_wal(True)
        except Exception as e:
            raise ProcessorStateException(
                f"Error while executing flush from store {self._store_name} at location {self.path}: {e}"
            ) from e

    def close(self) -> None:
        """Release the segment's open cursors (their scans move on to the next segment), then close."""
        db, self._db = self._db, None
        if db is None:
            return
        for cursor in list(self._cursors):
            cursor.release()
        db.close()
        if self._close_setter is not None:
            self._close_setter()

    def destroy(self) -> None:
        """Delete the (closed) segment's directory."""
        shutil.rmtree(self.path, ignore_errors=True)

    def __repr__(self) -> str:
        return f"KeyValueSegment(id={self.id}, name={self.name})"


class KeyValueSegments:
    """The live segments of one store, by id (Kafka's ``KeyValueSegments``)."""

    def __init__(self, store_name: str, retention_period: int, segment_interval: int) -> None:
        self.store_name = store_name
        self.retention_period = retention_period
        self.segment_interval = segment_interval
        self.segments: SortedDict = SortedDict()  # id -> KeyValueSegment
        self.directory = ""
        self._context: ProcessorContext | None = None
        self._wal = True

    def segment_id(self, timestamp: int) -> int:
        return segment_id(timestamp, self.segment_interval)

    def segment_name(self, segment_id: int) -> str:
        return f"{self.store_name}.{segment_id * self.segment_interval}"

    def segment_for_timestamp(self, timestamp: int) -> KeyValueSegment | None:
        segment: KeyValueSegment | None = self.segments.get(self.segment_id(timestamp))
        return segment

    def min_live_segment(self, stream_time: int) -> int:
        return self.segment_id(stream_time - self.retention_period)

    def get_or_create_segment(self, segment_id: int) -> KeyValueSegment:
        segment: KeyValueSegment | None = self.segments.get(segment_id)
        if segment is None:
            name = self.segment_name(segment_id)
            path = os.path.join(self.directory, name)
            if self._context is None:
                raise InvalidStateStoreException(f"Store {self.store_name} is not initialized.")
            segment = KeyValueSegment(self.store_name, segment_id, name, path, self._context, self._wal)
            self.segments[segment_id] = segment
        return segment

    def get_or_create_segment_if_live(self, segment_id: int, stream_time: int) -> KeyValueSegment | None:
        segment = None
        if segment_id >= self.min_live_segment(stream_time):
            segment = self.get_or_create_segment(segment_id)
        self.cleanup_expired_segments(stream_time)
        return segment

    def open_existing(self, directory: str, context: ProcessorContext, wal: bool, stream_time: int) -> None:
        """Open the segments found in ``directory`` (created if missing), in id order."""
        self.directory = directory
        self._context = context
        self._wal = wal
        task_id = context.task_id()
        try:
            os.makedirs(directory, exist_ok=True)
            entries = os.listdir(directory)
        except OSError as e:
            raise ProcessorStateException(
                f"Error opening store {self.store_name} of task {task_id} at location {directory}: {e}"
            ) from e
        ids = []
        prefix = self.store_name + "."
        for entry in entries:
            if not entry.startswith(prefix) or not os.path.isdir(os.path.join(directory, entry)):
                continue
            try:
                ids.append(int(entry[len(prefix) :]) // self.segment_interval)
            except ValueError:
                LOG.warning("Unable to parse the segment id of %s in %s: skipped", entry, directory)
        for sid in sorted(ids):
            if sid >= 0:
                self.get_or_create_segment(sid)
        self.cleanup_expired_segments(stream_time)

    def segments_in(self, time_from: int, time_to: int, *, forward: bool) -> list[KeyValueSegment]:
        """The open segments that can hold timestamps in ``[time_from, time_to]``."""
        low, high = self.segment_id(time_from), self.segment_id(time_to)
        if low > high:
            return []
        ids = self.segments.irange(low, high, reverse=not forward)
        return [s for s in map(self.segments.__getitem__, ids) if s.is_open()]

    def flush(self) -> None:
        for segment in self.segments.values():
            segment.flush()

    def close(self) -> None:
        for segment in self.segments.values():
            segment.close()
        self.segments.clear()

    def cleanup_expired_segments(self, stream_time: int) -> None:
        min_live = self.min_live_segment(stream_time)
        segments = self.segments
        while segments and segments.peekitem(0)[0] < min_live:
            _, segment = segments.popitem(0)
            segment.close()
            segment.destroy()


class SegmentIterator(PeekingKeyValueIterator[Any, Any]):
    """A scan over several segments, one RocksDB iterator at a time, opened when reached; keeps the
    entries ``accept`` takes and turns them into pairs with ``convert``."""

    def __init__(
        self,
        segments: Sequence[KeyValueSegment],
        lower: bytes | None,
        upper: bytes | None,
        forward: bool,
        accept: Callable[[bytes], bool],
        convert: Callable[[bytes, bytes], KeyValue[Any, Any]],
        store_name: str,
    ) -> None:
        self._cursor: _SegmentCursor | None = None
        self._pairs_gen: Generator[KeyValue[Any, Any], None, None] = self._pairs(
            segments, lower, upper, forward, accept, convert
        )
        super().__init__(self._pairs_gen, store_name)

    def _pairs(
        self,
        segments: Sequence[KeyValueSegment],
        lower: bytes | None,
        upper: bytes | None,
        forward: bool,
        accept: Callable[[bytes], bool],
        convert: Callable[[bytes, bytes], KeyValue[Any, Any]],
    ) -> Generator[KeyValue[Any, Any], None, None]:
        for segment in segments:
            cursor = segment.cursor(lower, upper, forward=forward)
            if cursor is None:
                continue  # closed (expired) since the scan began
            self._cursor = cursor
            # the cursor, not its RocksDB iterator, is what this frame holds between entries: a
            # released cursor (store or segment closed) lets RocksDB free the iterator at once
            for key, value in cursor:
                if accept(key):
                    yield convert(key, value)
            self._cursor = None

    @property
    def holds_rocksdb_iterator(self) -> bool:
        cursor = self._cursor
        return cursor is not None and cursor.live

    def close(self) -> None:
        super().close()
        cursor, self._cursor = self._cursor, None
        if cursor is not None:
            cursor.release()
        self._pairs_gen.close()


def _shut_down(
    segments: KeyValueSegments, iterators: weakref.WeakSet[SegmentIterator], temp_dir: str | None
) -> None:
    """Close the store's iterators, then its segments, then remove a temporary directory. The
    store's ``close`` and its finalizer (a store never closed) both come here, once."""
    for iterator in list(iterators):
        iterator.close()
    segments.close()
    if temp_dir is not None:
        shutil.rmtree(temp_dir, ignore_errors=True)


class RocksDBSegmentedBytesStore(StateStore):
    """Kafka's ``AbstractRocksDBSegmentedBytesStore``: segments, observed stream time, retention.

    Subclasses give the key layout (:meth:`segment_timestamp`) and the store's public methods."""

    def __init__(self, name: str, retention_period: int, segment_interval: int) -> None:
        if segment_interval < 1:
            raise ValueError("segmentInterval cannot be zero or negative")
        self._name = name
        self.retention_period = retention_period
        self.segment_interval = segment_interval
        self._segments = KeyValueSegments(name, retention_period, segment_interval)
        # Kafka starts from ConsumerRecord.NO_TIMESTAMP, also when it reopens existing segments
        self._observed_stream_time = _NO_TIMESTAMP
        self._context: ProcessorContext | None = None
        self._open = False
        self._path: str | None = None
        self._temp_dir: str | None = None
        self._iterators: weakref.WeakSet[SegmentIterator] = weakref.WeakSet()
        self._finalizer: weakref.finalize[Any, Any] | None = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def path(self) -> str | None:
        """The directory of the store's segments while it is open."""
        return self._path

    def persistent(self) -> bool:
        return True

    def is_open(self) -> bool:
        return self._open

    def observed_stream_time(self) -> int:
        """The largest timestamp put, removed or restored so far (-1 before any)."""
        return self._observed_stream_time

    def segment_ids(self) -> list[int]:
        """The ids of the open segments, ascending."""
        return list(self._segments.segments)

    @staticmethod
    @abstractmethod
    def segment_timestamp(store_key: bytes) -> int:
        """The timestamp that places a store key in its segment."""

    # -- lifecycle -----------------------------------------------------------

    def init(self, context: ProcessorContext, root: StateStore) -> None:
        task_id = context.task_id()
        if self._open:
            raise ProcessorStateException(
                f"Store {self._name} of task {task_id} is already open at location {self._path}"
            )
        state_dir = context.state_dir()
        temp_dir = None
        if state_dir is None:
            temp_dir = tempfile.mkdtemp(prefix="kspark-", dir=_scratch_root())
            state_dir = temp_dir
        path = os.path.join(state_dir, DB_FILE_DIR, self._name)
        segments = KeyValueSegments(self._name, self.retention_period, self.segment_interval)
        try:
            segments.open_existing(path, context, needs_wal(state_dir, temp_dir), self._observed_stream_time)
        except BaseException:
            segments.close()
            if temp_dir is not None:
                shutil.rmtree(temp_dir, ignore_errors=True)  # ours: the open error is the news
            raise
        self._segments = segments
        self._context = context
        self._path = path
        self._temp_dir = temp_dir
        self._iterators = weakref.WeakSet()
        self._finalizer = weakref.finalize(self, _shut_down, segments, self._iterators, temp_dir)
        self._open = True

    def flush(self) -> None:
        if self._open and self._temp_dir is None:
            # a temporary directory dies with the store: nothing there is worth an fsync
            self._segments.flush()

    def close(self) -> None:
        if not self._open:
            return
        live = sum(1 for it in self._iterators if it.holds_rocksdb_iterator)
        if live:
            LOG.warning("Closing %d open iterators for store %s", live, self._name)
        finalizer = self._finalizer
        self._open = False
        self._path = None
        self._temp_dir = None
        self._finalizer = None
        if finalizer is not None:
            finalizer()

    def _check_open(self) -> None:
        if not self._open:
            raise InvalidStateStoreException(f"Store {self._name} is currently closed.")

    # -- the segmented bytes store ---------------------------------------------

    def _actual_from(self, time_from: int) -> int:
        # getActualFrom: reads never go below observed - retention + 1
        return max(time_from, self._observed_stream_time - self.retention_period + 1)

    def _put_store_key(
        self, store_key: bytes, value: bytes | None, timestamp: int, dropped_reason: str
    ) -> None:
        """Advance the observed time, then write to the segment of ``timestamp`` if it is live;
        otherwise the record is dropped (logged and counted)."""
        observed = self._observed_stream_time = max(self._observed_stream_time, timestamp)
        segments = self._segments
        segment = segments.get_or_create_segment_if_live(segments.segment_id(timestamp), observed)
        if segment is None:
            LOG.warning("Skipping record for expired segment.")
            record_dropped = getattr(self._context, "record_dropped", None)
            if callable(record_dropped):
                record_dropped(dropped_reason)
            return
        segment.put(store_key, value)

    def _get_store_key(self, store_key: bytes, timestamp: int) -> bytes | None:
        if timestamp < self._observed_stream_time - self.retention_period + 1:
            return None
        segment = self._segments.segment_for_timestamp(timestamp)
        return None if segment is None else segment.get(store_key)

    def _remove_store_key(self, store_key: bytes, timestamp: int) -> None:
        # Kafka's remove advances the observed time, and only deletes from an existing segment
        self._observed_stream_time = max(self._observed_stream_time, timestamp)
        segment = self._segments.segment_for_timestamp(timestamp)
        if segment is not None:
            segment.put(store_key, None)

    def _restore_store_keys(self, records: Iterable[tuple[bytes, bytes | None, int]]) -> list[int]:
        """Write changelog records ``(store key, value, timestamp)`` of live segments, one batch per
        segment, after advancing the observed time to the batch's largest timestamp; returns the
        indexes (in ``records``) of the records written."""
        records = list(records)
        if not records:
            return []
        observed = self._observed_stream_time = max(
            self._observed_stream_time, max(ts for _, _, ts in records)
        )
        segments = self._segments
        batches: dict[int, tuple[KeyValueSegment, WriteBatch]] = {}
        written = []
        for i, (store_key, value, ts) in enumerate(records):
            segment = segments.get_or_create_segment_if_live(segments.segment_id(ts), observed)
            if segment is None:
                continue
            entry = batches.get(segment.id)
            if entry is None:
                entry = batches[segment.id] = (segment, WriteBatch(raw_mode=True))
            if value is None:
                entry[1].delete(store_key)
            else:
                entry[1].put(store_key, value)
            written.append(i)
        # the observed time was advanced first: no record of the batch expires another's segment
        for segment, batch in batches.values():
            segment.write(batch)
        return written

    def _scan(
        self,
        segments: Sequence[KeyValueSegment],
        lower: bytes | None,
        upper: bytes | None,
        forward: bool,
        accept: Callable[[bytes], bool],
        convert: Callable[[bytes, bytes], KeyValue[Any, Any]],
    ) -> SegmentIterator:
        iterator = SegmentIterator(segments, lower, upper, forward, accept, convert, self._name)
        self._iterators.add(iterator)
        return iterator

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._name!r}, path={self._path!r})"
