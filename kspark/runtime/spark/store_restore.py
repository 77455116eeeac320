"""A Spark-hosted task's stores: their directory on the executor, and their restore from changelog topics.

Kafka Streams' shape (docs/state-and-guarantees.md): a store's changelog
topic ``<application.id>-<store>-changelog`` is the source of truth, and a
task's committed state is a *position* in it. Here the position is part of
the task's Spark state: when a micro-batch's writes are acknowledged, the
task lists where its changelog partitions end (their high watermarks: the
task is the only writer of its partition, so that is just past its writes,
even while an exactly-once transaction's commit marker is still on its way)
and Spark commits those positions with the batch. A task rebuilt anywhere restores
each store from its changelog up to the committed position and never
beyond: writes of a batch Spark did not commit (an attempt that failed, a
transaction Kafka committed ahead of Spark) are never restored.

A persistent store lives on the executor's disk (RocksDB) in the task's
directory, :class:`TaskDirectory`. The directory's checkpoint file holds the
positions its stores reached when the last batch ended; it is removed
before a batch writes anything, so a worker killed mid-batch leaves no
checkpoint. A task rebuilt on the same machine with a checkpoint at or
before the committed positions restores only the records after it (a
restart restores in seconds); one with no checkpoint, or one ahead of the
committed positions (a batch Spark did not commit), wipes its stores and
restores them whole, as Kafka Streams does under exactly-once. In-memory
stores always restore whole.

Several Python workers of one executor may each hold a task warm (Spark
picks a worker per Spark task), so a task's directory is taken with a file
lock: a worker that finds it taken uses the next free slot
(``<task>``, ``<task>.1``, ...).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, cast

from kspark.errors import StreamsException
from kspark.runtime.kafka_clients import librdkafka_security
from kspark.runtime.spark.kafka_io import OffsetLister
from kspark.runtime.spark.partition_reader import consume_toward, consumer_config
from kspark.runtime.spark.warm_pool import WarmPool
from kspark.state.internals.rocksdb_key_value_store import DB_FILE_DIR, REBUILT_MARKER

__all__ = [
    "scratch_dir",
    "TaskDirectory",
    "store_root",
    "ChangelogReader",
    "changelog_reader",
    "give_back_reader",
    "changelog_ends",
    "topic_restore_blocker",
    "on_disk",
]

_log = logging.getLogger(__name__)

CHECKPOINT = ".checkpoint"
"""The task directory's file of positions (JSON ``{changelog topic: offset}``) its stores reached."""

MAX_SLOTS = 16
"""Directories one task may have on one machine (one per Python worker holding it at once)."""

RESTORE_STALL_S = 120.0
"""How long a restore waits for records it knows exist before it fails."""

RestoreRecords = list[tuple[bytes, bytes | None, int]]

_CLEANUP_POLICY = "cleanup.policy"
"""The topic setting a store's ``log_config`` may override (a topic setting, not a kspark one)."""


def topic_restore_blocker(store_builder: Any, topic: str, read_only: bool, inputs: Iterable[str]) -> str:
    """Why a store cannot be restored from its own changelog ``topic`` ("" if it can): it must be
    logged to a topic that keeps every record a restore needs (compacted), not a read-only store
    nor one connected to a source topic (whose changelog is that topic), and not a store whose
    topic also deletes by time (window and session stores, ``compact,delete`` as Kafka Streams
    creates them): the broker deletes by *record* timestamp, so input whose event times lie
    further back than the store's retention plus a day (a backfill) would lose live windows."""
    logging_enabled = getattr(store_builder, "logging_enabled", None)
    if not (callable(logging_enabled) and logging_enabled()):
        return "its changelog is disabled"
    if read_only:
        return "it is a read-only store (its changelog is its source topic)"
    if topic in set(inputs):
        return f"its changelog is its source topic {topic}"
    if callable(getattr(store_builder, "retention_period", None)):
        return "it is a window or session store (its changelog also deletes by time)"
    log_config = getattr(store_builder, "log_config", None)
    if "delete" in (str(log_config().get(_CLEANUP_POLICY, "")) if callable(log_config) else ""):
        return "its changelog's cleanup.policy deletes by time"
    return ""


def store_root(config: Mapping[str, Any]) -> str:
    """Where this executor keeps the application's task directories.

    ``state.dir/<application.id>/tasks`` when ``state.dir`` is a local path (local mode, and a
    cluster whose ``state.dir`` is a mount every node has); for a ``state.dir`` on a distributed
    file system (``hdfs://``, ``s3a://``: the checkpoints' home, not a place for RocksDB) the
    executor's own local directory (Spark's ``SPARK_LOCAL_DIRS``, else the temporary directory).
    """
    from kspark.config import StreamsConfig

    streams = StreamsConfig(dict(config))
    app = streams.application_id()
    state_dir = streams.state_dir()
    if "://" not in state_dir:
        return os.path.join(state_dir, app, "tasks")
    local = (os.environ.get("SPARK_LOCAL_DIRS") or tempfile.gettempdir()).split(",")[0]
    return os.path.join(local, "kspark-state", app, "tasks")


def scratch_dir(config: Mapping[str, Any], name: str) -> str:
    """An empty directory of this process for stores that are rebuilt whole whenever they are made
    (global-store replicas, interactive-query replicas, the native windowed count's task): under
    the application's store root, not the temporary directory, so a process killed without its
    clean-up (Spark ends its Python workers with ``os._exit``) leaves nothing behind for long. The
    first call in a process removes the scratch directories of processes no longer running."""
    base = os.path.join(os.path.dirname(store_root(config)), "scratch")
    mine = os.path.join(base, str(os.getpid()))
    if not os.path.isdir(mine):
        _remove_dead_scratch(base)
    path = os.path.join(mine, name)
    if os.path.isdir(path):
        shutil.rmtree(path)
    try:
        os.makedirs(path)
        # rebuilt whole whenever made, never reopened: its RocksDB stores keep no WAL
        with open(os.path.join(path, REBUILT_MARKER), "w"):
            pass
    except OSError as e:
        raise StreamsException(f"Cannot create the store directory {path}: {e}") from e
    return path


def _remove_dead_scratch(base: str) -> None:
    try:
        entries = os.listdir(base)
    except FileNotFoundError:
        return
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            os.kill(int(entry), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(base, entry), ignore_errors=True)  # another process may race us
        except PermissionError:
            pass  # alive, someone else's


class TaskDirectory:
    """A task's directory on this machine, held (an exclusive file lock) while its stores are open."""

    def __init__(self, path: str, lock: Any) -> None:
        self.path = path
        self._lock = lock

    @staticmethod
    def claim(root: str, task_id: str) -> TaskDirectory:
        """The first of the task's directories no other process (or task object) holds."""
        for slot in range(MAX_SLOTS):
            path = os.path.join(root, task_id if slot == 0 else f"{task_id}.{slot}")
            try:
                os.makedirs(path, exist_ok=True)
                lock = open(os.path.join(path, ".lock"), "a+b")  # noqa: SIM115 - held until release()
            except OSError as e:
                raise StreamsException(
                    f"Task {task_id}: cannot create its state directory {path}: {e}"
                ) from e
            try:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock.close()
                continue
            return TaskDirectory(path, lock)
        raise StreamsException(
            f"Task {task_id}: all {MAX_SLOTS} of its state directories under {root} are held by "
            "other processes"
        )

    def checkpoint(self) -> dict[str, int] | None:
        """The positions the stores here reached when the last batch ended; None if there is no
        checkpoint (never written, or a batch was running when the process stopped)."""
        try:
            with open(os.path.join(self.path, CHECKPOINT), encoding="utf-8") as fh:
                return {str(t): int(o) for t, o in json.load(fh).items()}
        except FileNotFoundError:
            return None
        except (OSError, ValueError, AttributeError) as e:
            _log.warning("%s: unreadable checkpoint (%r); its stores restore from changelogs", self.path, e)
            return None

    def mark_dirty(self) -> None:
        """The stores are about to change: a checkpoint must not vouch for them until rewritten."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(self.path, CHECKPOINT))

    def write_checkpoint(self, positions: Mapping[str, int]) -> None:
        path = os.path.join(self.path, CHECKPOINT)
        with open(path + ".tmp", "w", encoding="utf-8") as fh:
            json.dump(dict(positions), fh, sort_keys=True)
        os.replace(path + ".tmp", path)

    def wipe(self, stores: Iterable[str] | None = None) -> None:
        """Drop the stores kept here, or only ``stores`` (before they are opened): they restore
        from the changelogs."""
        root = os.path.join(self.path, DB_FILE_DIR)
        if stores is None:
            self.mark_dirty()
            if os.path.isdir(root):
                shutil.rmtree(root)
            return
        for name in stores:
            path = os.path.join(root, name)
            if os.path.isdir(path):
                shutil.rmtree(path)

    def release(self) -> None:
        """Let another process take the directory (the task's stores are closed)."""
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.close()


class ChangelogReader:
    """Reads changelog partitions between two offsets (``read_committed``), assigned, never in a
    group: nothing is committed."""

    def __init__(
        self,
        bootstrap_servers: str,
        group_id: str,
        settings: Mapping[str, Any],
        log_end: Callable[[str, int], int] | None = None,
    ) -> None:
        from confluent_kafka import Consumer

        # Where a partition's log ends (its high watermark), asked when a restore meets the end of
        # what it may read before the committed position.
        self._log_end = log_end

        # The range reader's settings (partition_reader.py): read_committed, no commits, and a
        # 10 ms fetch-queue backoff, without which librdkafka pauses 1 s whenever its prefetch
        # queue fills (2M records restored in 10.1 s instead of 3.3: bench/results/changelog-restore.txt).
        # Records gone from the changelog (offset out of range) fail the restore, never skipped.
        self.consumer = Consumer(
            {
                **consumer_config(bootstrap_servers, group_id, settings),
                "fetch.message.max.bytes": 16 * 1024 * 1024,
                "fetch.max.bytes": 64 * 1024 * 1024,
                "fetch.wait.max.ms": 10,
            }
        )

    def restore(
        self,
        topic: str,
        partition: int,
        start: int,
        end: int,
        apply: Callable[[RestoreRecords], None],
        *,
        chunk: int = 50_000,
    ) -> int:
        """Apply the records of ``topic[partition]`` at offsets ``[start, end)`` in order, in chunks;
        returns how many. The partition must reach ``end``: one that ends before it was deleted or
        truncated under the application, and its state cannot be restored."""
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        if end <= start:
            return 0
        self.consumer.assign([TopicPartition(topic, partition, start if start > 0 else OFFSET_BEGINNING)])
        restored, position = 0, start
        last_progress = time.monotonic()
        try:
            while True:
                messages = consume_toward(self.consumer, end - position, chunk)
                if messages:
                    position = max(position, (messages[-1].offset() or 0) + 1)
                # The common chunk (every message a record, all before ``end``) in one comprehension:
                # this loop runs once per restored record. Keys are never null: brokers refuse
                # keyless records on compacted topics, and every changelog is compacted.
                records = cast(
                    RestoreRecords,
                    [(m.key(), m.value(), m.timestamp()[1]) for m in messages if m.error() is None],
                )
                done = False
                if len(records) != len(messages) or (messages and (messages[-1].offset() or 0) >= end - 1):
                    records, done = self._up_to(messages, topic, partition, end)
                if records:
                    apply(records)
                    restored += len(records)
                    last_progress = time.monotonic()
                if done:
                    return restored
                if time.monotonic() - last_progress > RESTORE_STALL_S:
                    raise StreamsException(
                        f"Restoring from changelog {topic}[{partition}]: no record for "
                        f"{RESTORE_STALL_S:.0f} s before the committed position {end}"
                    )
        finally:
            self.consumer.unassign()

    def _up_to(
        self, messages: list[Any], topic: str, partition: int, end: int
    ) -> tuple[RestoreRecords, bool]:
        """A chunk that meets an event (an error, the partition's end) or the committed position:
        its records before ``end``, and whether the restore is done."""
        from confluent_kafka import KafkaError

        records: RestoreRecords = []
        for msg in messages:
            error = msg.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    raise StreamsException(f"Restoring from changelog {topic}[{partition}]: {error}")
                if (msg.offset() or 0) >= end:
                    return records, True
                self._check_not_truncated(topic, partition, end)
                # A committed transaction's marker not written yet: its records become readable
                # when it is.
                time.sleep(0.05)
                continue
            offset = msg.offset() or 0
            if offset >= end:
                return records, True
            records.append((msg.key(), msg.value(), msg.timestamp()[1]))
            if offset >= end - 1:
                return records, True
        return records, False

    def _check_not_truncated(self, topic: str, partition: int, end: int) -> None:
        log_end = self._log_end(topic, partition) if self._log_end is not None else end
        if log_end < end:
            raise StreamsException(
                f"Changelog {topic}[{partition}] ends at offset {log_end}, before the committed "
                f"position {end}: the topic was deleted or truncated under the application, and the "
                "task's state cannot be restored. Reset the application (kspark reset) to start over"
            )

    def close(self) -> None:
        self.consumer.close()


_READERS: WarmPool[ChangelogReader] = WarmPool(60.0, close=lambda reader: reader.close())
_LISTERS: dict[str, OffsetLister] = {}


def _client(config: Mapping[str, Any], kind: Literal["consumer", "admin"]) -> tuple[str, str, dict[str, Any]]:
    from kspark.config import StreamsConfig

    streams = StreamsConfig(dict(config))
    return (
        ",".join(streams.bootstrap_servers()),
        streams.application_id(),
        librdkafka_security(config, kind),
    )


def changelog_reader(config: Mapping[str, Any]) -> tuple[str, ChangelogReader]:
    """This worker's changelog reader for the application (its pool key, to give it back)."""
    bootstrap, app, settings = _client(config, "consumer")
    key = json.dumps([bootstrap, app, settings], sort_keys=True, default=str)
    lister = _lister(config)

    def log_end(topic: str, partition: int) -> int:
        return lister.offsets([(topic, partition)], latest=True, committed=False)[(topic, partition)]

    return key, _READERS.borrow(key, lambda: ChangelogReader(bootstrap, f"{app}-restore", settings, log_end))


def give_back_reader(key: str, reader: ChangelogReader) -> None:
    _READERS.give_back(key, reader)


def changelog_ends(config: Mapping[str, Any], topics: Iterable[str], partition: int) -> dict[str, int]:
    """Where ``topics``' partition ``partition`` end now: their high watermarks, past every
    acknowledged record (committed or not)."""
    wanted = sorted(set(topics))
    if not wanted:
        return {}
    ends = _lister(config).offsets([(t, partition) for t in wanted], latest=True, committed=False)
    return {t: ends[(t, partition)] for t in wanted}


def _lister(config: Mapping[str, Any]) -> OffsetLister:
    bootstrap, _, settings = _client(config, "admin")
    key = json.dumps([bootstrap, settings], sort_keys=True, default=str)
    lister = _LISTERS.get(key)
    if lister is None:
        lister = _LISTERS[key] = OffsetLister(bootstrap, settings=settings)
    return lister


def on_disk(store: Any) -> bool:
    """Whether a task's store keeps its data in the task's directory (RocksDB), where a task
    reopening the directory finds it as of the directory's checkpoint."""
    from kspark.state.internals.metered import innermost
    from kspark.state.internals.rocksdb_key_value_store import RocksDBKeyValueStore

    return isinstance(innermost(store), RocksDBKeyValueStore)


def restore_stores(
    config: Mapping[str, Any],
    changelogs: Mapping[str, str],
    stores: Mapping[str, Any],
    callbacks: Mapping[str, Callable[[RestoreRecords], None] | None],
    partition: int,
    positions: Mapping[str, int],
    local: Mapping[str, int],
) -> None:
    """Restore each store of ``changelogs`` (store -> topic) from its changelog partition up to its
    committed position: an on-disk store from its directory's checkpoint ``local``, any other
    from the start."""
    work = []
    for name, topic in sorted(changelogs.items()):
        restore = callbacks.get(name)
        end = positions.get(topic, 0)
        start = local.get(topic, 0) if on_disk(stores[name]) else 0
        if restore is not None and end > start:
            work.append((name, topic, start, end, restore))
    if not work:
        return
    key, reader = changelog_reader(config)
    healthy = False
    try:
        for name, topic, start, end, restore in work:
            began = time.monotonic()
            n = reader.restore(topic, partition, start, end, restore)
            _log.info(
                "restored store %s of partition %d: %d records of %s[%d], offsets %d to %d, in %.2f s",
                name,
                partition,
                n,
                topic,
                partition,
                start,
                end,
                time.monotonic() - began,
            )
        healthy = True
    finally:
        if healthy:
            give_back_reader(key, reader)
        else:
            reader.close()
