"""The RocksDB key-value bytes store (Kafka's ``RocksDBStore``): a persistent store on local disk.

``Stores.persistent_key_value_store``, ``persistent_timestamped_key_value_store`` and every DSL
key-value store under ``default.dsl.store=rocksDB`` (the default) build this store; it sits
below the change-logging and caching layers as the in-memory store does and answers the same
calls with the same results. Keys are ordered by RocksDB's default bytewise comparator, which is
Python's ``bytes`` order.

Where the files live, as Kafka lays them out: ``<state dir>/rocksdb/<store name>``, the state dir
being the task's (``ProcessorContext.state_dir()``). A context without one (the test driver, the
global-store task) gets a private temporary directory, removed when the store closes (or, if it
is never closed, when it is garbage collected or the interpreter exits).

The options are Kafka Streams' defaults (``RocksDBStore.openDB``): 16 MB write buffers, at most 3
of them, 4 KB blocks with a bloom filter, universal compaction, no compression, plus a bounded
16 MB LRU block cache per store (the size ``RocksDBConfigSetter``'s documentation bounds it to;
Kafka's own default is 50 MB, too much for the many stores of one Spark executor), all of which
the application's ``rocksdb.config.setter`` may change (:func:`tuned_options`). Unlike Kafka,
which disables RocksDB's write-ahead log because its changelog topic is the durable copy, the
WAL is on in a state directory: a runner reopens the same directory after a restart without
restoring it from a changelog, so ``flush`` (every commit) syncs the WAL instead of writing the
memtables out to a new SST file each time (Kafka's ``flush``), which RocksDB does by itself when
a buffer fills. A temporary directory, never reopened, skips the WAL (it halves put speed), as does
a runner's scratch directory, whose stores are rebuilt whole whenever made (:data:`REBUILT_MARKER`).

Iterators read a consistent snapshot, as Kafka's RocksDB iterators do: a RocksDB iterator pins
the state at its creation, so writes made while iterating (even to keys not yet reached) are not
seen. The in-memory store differs: it snapshots the keys only and reads values live. Iteration is
lazy (one entry at a time from RocksDB); ``close`` of the store closes its open iterators.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from rocksdict import (
    BlockBasedOptions,
    Cache,
    DBCompactionStyle,
    DBCompressionType,
    Options,
    Rdict,
    WriteBatch,
    WriteOptions,
)

from kspark.errors import InvalidStateStoreException, ProcessorStateException
from kspark.key_value import KeyValue
from kspark.state.api import KeyValueIterator, StateStore
from kspark.state.internals.in_memory_key_value_store import INVALID_RANGE_WARNING, increment_prefix
from kspark.state.internals.iterators import PeekingKeyValueIterator, empty_iterator
from kspark.state.rocksdb_config_setter import CONFIG as SETTER_CONFIG
from kspark.state.rocksdb_config_setter import resolve_config_setter

if TYPE_CHECKING:
    from kspark.processor.api import ProcessorContext

__all__ = ["RocksDBKeyValueStore", "RocksDBKeyValueIterator", "DB_FILE_DIR"]

LOG = logging.getLogger(__name__)

DB_FILE_DIR = "rocksdb"
"""The sub-directory of the task's state directory holding its RocksDB stores (Kafka's name)."""

_WRITE_BUFFER_SIZE = 16 * 1024 * 1024
_MAX_WRITE_BUFFERS = 3
_BLOCK_CACHE_SIZE = 16 * 1024 * 1024
_BLOCK_SIZE = 4096
_BLOOM_BITS_PER_KEY = 10

# rocksdict's items(): (key, value) pairs, bytes in raw mode (its stubs type them loosely)
_Items = Iterator[tuple[Any, Any]]


def _options() -> Options:
    """Kafka Streams' RocksDB defaults (see the module docstring), raw bytes keys and values."""
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.set_error_if_exists(False)
    options.set_write_buffer_size(_WRITE_BUFFER_SIZE)
    options.set_max_write_buffer_number(_MAX_WRITE_BUFFERS)
    options.set_compaction_style(DBCompactionStyle.universal())
    options.set_compression_type(DBCompressionType.none())
    options.set_optimize_filters_for_hits(True)
    # Kafka: setIncreaseParallelism(max(cores, 2)); RocksDB's background pools are process-wide
    options.increase_parallelism(max(os.cpu_count() or 2, 2))
    table = BlockBasedOptions()
    table.set_block_cache(Cache(_BLOCK_CACHE_SIZE))
    table.set_block_size(_BLOCK_SIZE)
    table.set_bloom_filter(_BLOOM_BITS_PER_KEY, False)
    options.set_block_based_table_factory(table)
    return options


class _Cursor:
    """The pairs of one RocksDB iterator up to a bound. Dropping the iterator (``release``, or the
    end) lets RocksDB free its snapshot; an unreleased one would keep the database, and its lock,
    alive after the store closes."""

    __slots__ = ("_items", "_past_end")

    def __init__(self, items: _Items, past_end: Callable[[bytes], bool] | None) -> None:
        self._items: _Items | None = items
        self._past_end = past_end

    def __iter__(self) -> _Cursor:
        return self

    def __next__(self) -> KeyValue[bytes, bytes]:
        items = self._items
        if items is None:
            raise StopIteration
        try:
            key, value = next(items)
        except StopIteration:
            self._items = None
            raise
        if self._past_end is not None and self._past_end(key):
            self._items = None
            raise StopIteration
        return KeyValue(key, value)

    @property
    def live(self) -> bool:
        """Whether it still holds a RocksDB iterator (neither exhausted nor released)."""
        return self._items is not None

    def release(self) -> None:
        self._items = None


class RocksDBKeyValueIterator(PeekingKeyValueIterator[bytes, bytes]):
    """A store iterator over one RocksDB iterator (a snapshot taken at creation)."""

    def __init__(self, cursor: _Cursor, store_name: str, on_close: Callable[[Any], None]) -> None:
        super().__init__(cursor, store_name)
        self._cursor = cursor
        self._on_close = on_close

    @property
    def holds_rocksdb_iterator(self) -> bool:
        return self._cursor.live

    def close(self) -> None:
        super().close()
        self._cursor.release()
        self._on_close(self)


REBUILT_MARKER = ".kspark-rebuilt"
"""A file in a state directory that is never reopened: its stores are filled anew whenever their
task is built (a runner's scratch directories: interactive-query and global-store replicas, a
native stage's task). Their RocksDB stores skip the WAL, as a temporary directory's do: nothing
ever replays it, and each write would pay a ``write()`` to the log (the WAL halves put speed).
Kafka Streams never writes RocksDB's WAL (its changelog topic is the durable copy)."""


def needs_wal(state_dir: str, temp_dir: str | None) -> bool:
    """Whether a RocksDB store in ``state_dir`` keeps a WAL: only where it may be reopened (not a
    temporary directory, nor one marked with :data:`REBUILT_MARKER`)."""
    return temp_dir is None and not os.path.exists(os.path.join(state_dir, REBUILT_MARKER))


def tuned_options(db_name: str, context: ProcessorContext) -> tuple[Options, Callable[[], None] | None]:
    """The options of database ``db_name`` (a store's, or a segment's): :func:`_options` as the
    application's ``rocksdb.config.setter`` changed them, and the setter's ``close`` for when the
    database closes (None without a setter)."""
    options = _options()
    configs = context.app_configs()
    factory = resolve_config_setter(configs.get(SETTER_CONFIG))
    if factory is None:
        return options, None
    setter = factory()
    try:
        setter.set_config(db_name, options, configs)
    except Exception as e:
        raise ProcessorStateException(f"{SETTER_CONFIG} failed for store {db_name}: {e}") from e
    return options, lambda: setter.close(db_name, options)


def _shut_down(
    db: Rdict,
    iterators: weakref.WeakSet[RocksDBKeyValueIterator],
    temp_dir: str | None,
    close_setter: Callable[[], None] | None = None,
) -> None:
    """Close the store's iterators, then the database, then its options' setter, then remove a
    temporary directory. The store's ``close`` and its finalizer (a store never closed) both
    come here, once."""
    for iterator in list(iterators):
        iterator.close()
    db.close()
    if close_setter is not None:
        close_setter()
    if temp_dir is not None:
        shutil.rmtree(temp_dir)


class RocksDBKeyValueStore(StateStore):
    """A RocksDB database of ``bytes -> bytes`` at ``<state dir>/rocksdb/<name>``, opened by ``init``."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._db: Rdict | None = None
        self._path: str | None = None
        self._temp_dir: str | None = None
        self._wal = False
        self._context: ProcessorContext | None = None
        self._iterators: weakref.WeakSet[RocksDBKeyValueIterator] = weakref.WeakSet()
        self._finalizer: weakref.finalize[Any, Any] | None = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def path(self) -> str | None:
        """The database's directory while the store is open."""
        return self._path

    def persistent(self) -> bool:
        return True

    def is_open(self) -> bool:
        return self._db is not None

    # -- lifecycle -----------------------------------------------------------

    def init(self, context: ProcessorContext, root: StateStore) -> None:
        task_id = context.task_id()
        if self._db is not None:
            raise ProcessorStateException(
                f"Store {self._name} of task {task_id} is already open at location {self._path}"
            )
        state_dir = context.state_dir()
        temp_dir = None
        if state_dir is None:
            temp_dir = tempfile.mkdtemp(prefix="kspark-")
            state_dir = temp_dir
        path = os.path.join(state_dir, DB_FILE_DIR, self._name)
        options, close_setter = tuned_options(self._name, context)
        try:
            os.makedirs(path, exist_ok=True)
            db = Rdict(path, options)
            wal = needs_wal(state_dir, temp_dir)
            if not wal:
                # nothing reopens a temporary or rebuilt directory: a WAL would only halve put speed
                no_wal = WriteOptions()
                no_wal.disable_wal = True  # type: ignore[assignment]  # a property; the stubs say method
                db.set_write_options(no_wal)
        except Exception as e:
            if close_setter is not None:
                close_setter()
            if temp_dir is not None:
                shutil.rmtree(temp_dir, ignore_errors=True)  # ours, empty: the open error is the news
            raise ProcessorStateException(
                f"Error opening store {self._name} of task {task_id} at location {path}: {e}"
            ) from e
        self._db = db
        self._path = path
        self._temp_dir = temp_dir
        self._wal = wal
        self._context = context
        self._iterators = weakref.WeakSet()
        self._finalizer = weakref.finalize(self, _shut_down, db, self._iterators, temp_dir, close_setter)

    def flush(self) -> None:
        db = self._db
        if db is None or not self._wal:
            # a temporary or rebuilt directory dies with the store: nothing there is worth an fsync
            return
        try:
            # the WAL holds every write since the memtables were last written out: syncing it
            # makes the committed state durable (see the module docstring)
            db.flush_wal(True)
        except Exception as e:
            raise ProcessorStateException(f"Error while executing flush from store {self._name}: {e}") from e

    def close(self) -> None:
        if self._db is None:
            return
        live = sum(1 for it in self._iterators if it.holds_rocksdb_iterator)
        if live:
            LOG.warning("Closing %d open iterators for store %s", live, self._name)
        finalizer = self._finalizer
        self._db = None
        self._path = None
        self._temp_dir = None
        self._finalizer = None
        if finalizer is not None:
            finalizer()

    def _check_open(self) -> Rdict:
        db = self._db
        if db is None:
            raise InvalidStateStoreException(f"Store {self._name} is currently closed.")
        return db

    # -- writes --------------------------------------------------------------

    def _check_entry(self, key: Any, value: Any = None) -> None:
        # a caller's mistake, told as such rather than as a RocksDB failure (Kafka: NullPointerException)
        if not isinstance(key, bytes):
            if key is None:
                raise ValueError(f"key cannot be null (store {self._name})")
            raise TypeError(f"store {self._name} takes bytes keys, got {type(key).__name__}")
        if value is not None and not isinstance(value, bytes):
            raise TypeError(f"store {self._name} takes bytes values (or None), got {type(value).__name__}")

    def put(self, key: bytes, value: bytes | None) -> None:
        db = self._check_open()
        self._check_entry(key, value)
        try:
            if value is None:
                db.delete(key)
            else:
                db.put(key, value)
        except Exception as e:
            raise ProcessorStateException(
                f"Error while putting key/value into store {self._name}: {e}"
            ) from e

    def put_if_absent(self, key: bytes, value: bytes | None) -> bytes | None:
        original = self.get(key)
        if original is None:
            self.put(key, value)
        return original

    def put_all(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        self._write_batch(entries, "batch writing to")

    def delete(self, key: bytes) -> bytes | None:
        old = self.get(key)
        if old is not None:
            self.put(key, None)
        return old

    def restore(self, records: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Apply changelog records (key, value) in one write batch, as Kafka's restore does.

        Changelog records are bytes already (a compacted topic has no keyless records): this loop
        runs once per restored record, so it skips :meth:`_check_entry`; anything else fails the
        batch, naming the store."""
        db = self._check_open()
        batch = WriteBatch(raw_mode=True)
        put, delete = batch.put, batch.delete
        try:
            for key, value in records:
                if value is None:
                    delete(key)
                else:
                    put(key, value)
            db.write(batch)
        except Exception as e:
            raise ProcessorStateException(f"Error while restoring store {self._name}: {e}") from e

    def _write_batch(self, entries: Iterable[tuple[bytes, bytes | None]], what: str) -> None:
        db = self._check_open()
        batch = WriteBatch(raw_mode=True)
        for key, value in entries:
            self._check_entry(key, value)
            if value is None:
                batch.delete(key)
            else:
                batch.put(key, value)
        if batch.is_empty():
            return
        try:
            db.write(batch)
        except Exception as e:
            raise ProcessorStateException(f"Error while {what} store {self._name}: {e}") from e

    # -- reads ---------------------------------------------------------------

    def get(self, key: bytes) -> bytes | None:
        db = self._check_open()
        self._check_entry(key)
        try:
            value: bytes | None = db.get(key)
        except Exception as e:
            raise ProcessorStateException(f"Error while getting value from store {self._name}: {e}") from e
        return value

    def approximate_num_entries(self) -> int:
        """RocksDB's ``rocksdb.estimate-num-keys``: deleted and overwritten keys may still count."""
        db = self._check_open()
        try:
            estimate = db.property_int_value("rocksdb.estimate-num-keys")
        except Exception as e:
            raise ProcessorStateException(f"Error fetching property from store {self._name}: {e}") from e
        return int(estimate or 0)

    def range(self, from_key: bytes | None, to_key: bytes | None) -> KeyValueIterator[bytes, bytes]:
        return self._range(from_key, to_key, forward=True)

    def reverse_range(self, from_key: bytes | None, to_key: bytes | None) -> KeyValueIterator[bytes, bytes]:
        return self._range(from_key, to_key, forward=False)

    def all(self) -> KeyValueIterator[bytes, bytes]:
        return self._range(None, None, forward=True)

    def reverse_all(self) -> KeyValueIterator[bytes, bytes]:
        return self._range(None, None, forward=False)

    def prefix_scan(self, prefix: bytes) -> KeyValueIterator[bytes, bytes]:
        db = self._check_open()
        upper = increment_prefix(prefix)
        past_end = None if upper is None else (lambda key: key >= upper)
        return self._iterator(db.items(from_key=prefix), past_end)

    def _range(
        self, from_key: bytes | None, to_key: bytes | None, *, forward: bool
    ) -> KeyValueIterator[bytes, bytes]:
        db = self._check_open()
        if from_key is not None and to_key is not None and from_key > to_key:
            LOG.warning(INVALID_RANGE_WARNING)
            return empty_iterator(self._name)
        past_end: Callable[[bytes], bool] | None
        if forward:
            # RocksDB's read-option bounds are not raw in rocksdict: the bound is checked here
            items = db.items(from_key=from_key) if from_key is not None else db.items()
            past_end = None if to_key is None else (lambda key: key > to_key)
        else:
            # backwards from a key seeks for the last key <= it (RocksDB's SeekForPrev)
            items = (
                db.items(backwards=True, from_key=to_key) if to_key is not None else db.items(backwards=True)
            )
            past_end = None if from_key is None else (lambda key: key < from_key)
        return self._iterator(items, past_end)

    def _iterator(self, items: _Items, past_end: Callable[[bytes], bool] | None) -> RocksDBKeyValueIterator:
        iterator = RocksDBKeyValueIterator(_Cursor(items, past_end), self._name, self._iterators.discard)
        self._iterators.add(iterator)
        return iterator

    def __repr__(self) -> str:
        return f"RocksDBKeyValueStore({self._name!r}, path={self._path!r})"
