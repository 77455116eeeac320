"""Interactive queries on Spark: read replicas of an application's stores in the driver.

The stores live in Spark's Python workers, spread over executors; reading
them there would block processing and could see half a micro-batch. So the
application process (the Spark driver) keeps a *read replica* of every
queryable store, as a Kafka Streams standby replica does: fed from the
stores' changelog topics (``<application.id>-<store>-changelog``, one
partition per task, written by the tasks inside each micro-batch's commit),
read with ``read_committed``.

Consistency (docs/state-and-guarantees.md): after a query's micro-batch
commits, the runner hands the replica a :class:`CommittedBatch`: the
changelog end offsets the batch's writes reached (listed in the driver
right after the batch's tasks returned, when no other batch of that query
is writing) and the input position the batch reached (Spark's progress).
The replica reads the changelogs up to those offsets, holding back records
past them (the next batch's, not committed yet), and applies them to its
stores under a lock, all stores of the query at once. A read takes the same
lock: it sees the state as of a committed micro-batch, never part of one.

The replica starts on first use (``KafkaStreams.store``, the HTTP endpoint):
an application that is never queried pays one admin request per stateful
micro-batch and nothing else. Its stores are the engine's own (a task of
each sub-topology built in the driver, never run), restored through the
stores' restore callbacks as a task restores them, so every store type and
serde reads as it does in the test driver.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from kspark.errors import InvalidStateStoreException, StreamsException, UnknownStateStoreException
from kspark.query import Position, PositionBound, StoreQueryParameters
from kspark.runtime.kafka_clients import create_topics
from kspark.runtime.spark.kafka_io import OffsetLister
from kspark.runtime.spark.partition_reader import consume_toward
from kspark.runtime.spark.plan import PhysicalPlan, Stage
from kspark.state.api import KeyValueIterator
from kspark.state.internals.iterators import PeekingKeyValueIterator
from kspark.state.internals.versioned import VersionedKeyValueStoreBuilder
from kspark.state.queryable import QueryableStoreTypes

if TYPE_CHECKING:
    from kspark.processor.internals.task import StreamTask
    from kspark.state.api import StateStore

__all__ = [
    "CommittedBatch",
    "StoreHome",
    "StoreReplicas",
    "create_changelog_topics",
    "position_of",
    "store_homes",
]

_log = logging.getLogger(__name__)

T = TypeVar("T")

TP = tuple[str, int]


@dataclass(frozen=True)
class StoreHome:
    """Where a queryable store lives: its query, sub-topology, task count and changelog topic."""

    query: str
    subtopology: int
    tasks: int
    changelog: str


@dataclass(frozen=True)
class CommittedBatch:
    """A micro-batch Spark committed: what a replica needs to show its state."""

    query: str
    batch_id: int
    changelog_ends: Mapping[TP, int]  # each changelog partition's end after the batch's writes
    position: Position  # per input partition, the last offset the batch included


def store_homes(
    plan: PhysicalPlan, builder: Any, application_id: str
) -> tuple[dict[str, StoreHome], dict[str, str], dict[str, StoreHome]]:
    """The plan's queryable stores; the stores it has that cannot be queried, with why; and every
    store with a changelog topic (the queryable ones and the others), whose topics must exist."""
    homes: dict[str, StoreHome] = {}
    refused: dict[str, str] = {}
    logged: dict[str, StoreHome] = {}
    read_only = set(builder.read_only_store_names())
    for query in plan.queries:
        for sub in query.subtopologies:
            for store in sub.stores:
                # Every stateful stage writes its stores' changelogs (the engine through the
                # stores' logging layer, native counts and reduces as those layers would).
                if store in read_only:
                    refused[store] = (
                        "it is a read-only store (KIP-813), whose changelog is its source topic; on "
                        "Spark its updates are kept in its task's state, and no replica is fed for it"
                    )
                    continue
                if not builder.store_builder(store).logging_enabled():
                    refused[store] = (
                        "its changelog is disabled (with_logging_disabled()), and on Spark a store is "
                        "read from a replica its changelog topic feeds"
                    )
                    continue
                if sub.tasks is None:
                    continue
                home = StoreHome(
                    query.name, sub.subtopology, sub.tasks, f"{application_id}-{store}-changelog"
                )
                logged[store] = home
                if sub.stage is Stage.LOW_LATENCY:
                    refused[store] = (
                        "its sub-topology runs in low-latency tasks (spark.kspark.lowLatency), which "
                        "commit their state every commit.interval.ms, not with Spark's micro-batches "
                        "that replicas follow; interactive queries of such stores are not supported yet"
                    )
                elif isinstance(builder.store_builder(store), VersionedKeyValueStoreBuilder):
                    refused[store] = (
                        "it is a versioned store (KIP-889), and interactive queries of versioned "
                        "stores (VersionedKeyQuery) are not supported on the Spark runner yet"
                    )
                else:
                    homes[store] = home
    for store in builder.global_store_names():
        refused[store] = "global stores are not queryable on the Spark runner yet"
    return homes, refused, logged


VERSIONED_CHANGELOG_EXTRA_COMPACTION_LAG_MS = 24 * 60 * 60 * 1000


def create_changelog_topics(
    settings: Mapping[str, Any],
    homes: Mapping[str, StoreHome],
    builder: Any,
    existing: Mapping[str, int],
    additional_retention_ms: int,
) -> None:
    """Create the changelog topics of ``homes`` (every logged store, see :func:`store_homes`)
    that do not exist, as Kafka Streams configures
    them: compacted; window and session stores ``compact,delete`` with their retention plus
    ``windowstore.changelog.additional.retention.ms``; versioned stores compacted no sooner than
    their history retention plus a day; a store's ``log_config()`` on top. One
    partition per task: an existing topic with another count is an error, not a guess."""
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    wanted = []
    for name, home in sorted(homes.items()):
        have = existing.get(home.changelog)
        if have is not None:
            if have != home.tasks:
                raise StreamsException(
                    f"changelog topic {home.changelog} of store {name} has {have} partitions, but the "
                    f"store's sub-topology has {home.tasks} tasks; delete the topic (kspark reset) or "
                    "restore the input partition counts"
                )
            continue
        store = builder.store_builder(name)
        config = {"cleanup.policy": "compact"}
        retention = getattr(store, "retention_period", None)
        if callable(retention):
            total = int(retention()) + additional_retention_ms
            config = {"cleanup.policy": "compact,delete", "retention.ms": str(total)}
        if isinstance(store, VersionedKeyValueStoreBuilder):
            # compaction must not drop a version its history retention still serves (Kafka's
            # VersionedChangelogTopicConfig: the history retention plus a day)
            lag = store.history_retention() + VERSIONED_CHANGELOG_EXTRA_COMPACTION_LAG_MS
            config["min.compaction.lag.ms"] = str(lag)
        config.update({str(k): str(v) for k, v in store.log_config().items()})
        wanted.append(
            NewTopic(home.changelog, num_partitions=home.tasks, replication_factor=-1, config=config)
        )
    create_topics(settings, wanted, "changelog")


def position_of(ends: Mapping[TP, int]) -> Position:
    """The position a batch that ended at ``ends`` (next offsets to read) reflects."""
    offsets: dict[str, dict[int, int]] = {}
    for (topic, partition), end in ends.items():
        if end > 0:
            offsets.setdefault(topic, {})[partition] = end - 1
    return Position(offsets)


class StoreReplicas:
    """The read replicas of one application run (made by the runner, started on first use).

    ``homes``: the queryable stores; ``refused``: stores that exist but cannot be
    queried on Spark, with the reason; ``build_task(subtopology, partition)``:
    an initialized engine task whose stores the replica fills; ``consumer_config``:
    librdkafka settings of the changelog consumer (bootstrap and security)."""

    def __init__(
        self,
        homes: Mapping[str, StoreHome],
        refused: Mapping[str, str],
        build_task: Callable[[int, int], StreamTask],
        consumer_config: Mapping[str, Any],
        lister: OffsetLister | None,
        committed_file: str | None = None,
    ) -> None:
        self.homes = dict(homes)
        self._lister = lister  # changelog ends after each batch (after_batch; None: fed committed())
        self._ends: dict[tuple[str, int], dict[TP, int]] = {}  # (query, batch id) -> ends, until committed
        # Each query's last committed batch survives a restart here, so a restarted application's
        # stores are queryable before (or without) a new batch.
        self._committed_file = committed_file
        self.refused = dict(refused)
        self._build_task = build_task
        self.consumer_config = dict(consumer_config)
        self._lock = threading.RLock()  # reads and the apply of a batch
        self._changed = threading.Condition(self._lock)
        self._latest: dict[str, CommittedBatch] = {}  # per query, the last batch Spark committed
        self._pending: dict[str, CommittedBatch] = {}  # committed, not applied yet
        self._applied: dict[str, CommittedBatch] = {}  # per query, the batch the stores show
        self._tasks: dict[tuple[int, int], StreamTask] = {}
        self._thread: threading.Thread | None = None
        self._closed = False
        self._applying = False  # a batch is being applied, chunk by chunk (_apply)
        self.error: BaseException | None = None
        self.freshness_ms: list[float] = []  # commit seen -> readable, recent batches (bench/)
        self._applied_records = 0
        self._freeze_at = FREEZE_FIRST  # see _freeze_long_lived
        self._seen_at: dict[str, float] = {}
        self._followers: list[Callable[[CommittedBatch], None]] = []
        self._latest.update(_load_committed(committed_file, {h.query for h in self.homes.values()}))

    # ------------------------------------------------------------ feeding
    def after_batch(self, query: str) -> Callable[[int], None] | None:
        """What records where a batch of ``query`` left its stores' changelogs, called once the
        batch's tasks have returned (None: the query has no queryable store). No other batch of
        the query writes then, so the ends are the batch's own."""
        partitions = [
            (h.changelog, p) for h in self.homes.values() if h.query == query for p in range(h.tasks)
        ]
        lister = self._lister
        if not partitions or lister is None:
            return None

        def record(batch_id: int) -> None:
            self._ends[(query, batch_id)] = lister.offsets(partitions, latest=True)

        return record

    def on_progress(self, query: str, batch_id: int, ends: Mapping[TP, int]) -> None:
        """Spark committed ``batch_id`` of ``query``, whose input ended at ``ends``."""
        changelog = self._ends.pop((query, batch_id), None)
        for old in [k for k in self._ends if k[0] == query and k[1] < batch_id]:
            del self._ends[old]
        if changelog is not None:
            self.committed(CommittedBatch(query, batch_id, changelog, position_of(ends)))

    def committed(self, batch: CommittedBatch) -> None:
        """Spark committed ``batch``; a started replica applies it (in its own thread)."""
        with self._changed:
            self._latest[batch.query] = batch
            _save_committed(self._committed_file, self._latest)
            if self._thread is not None:
                self._pending[batch.query] = batch
                self._seen_at.setdefault(batch.query, time.monotonic())
            self._changed.notify_all()
            for follower in self._followers:
                follower(batch)

    def follow(self, follower: Callable[[CommittedBatch], None]) -> None:
        """Hand ``follower`` each query's last committed batch so far, then every batch committed
        from now on, in order (in the committing thread: it must not block)."""
        with self._changed:  # committed() takes it too: nothing is missed or handed out of order
            for batch in self._latest.values():
                follower(batch)
            self._followers.append(follower)

    def await_committed(self, done: Mapping[str, int], timeout_s: float) -> None:
        """Wait until the batches ``done`` (query -> last batch id run) of queries with stores
        have been committed to the replicas, and applied if they are started."""
        queries = {h.query for h in self.homes.values()}
        deadline = time.monotonic() + timeout_s

        def caught_up() -> bool:
            for query, batch_id in done.items():
                if query not in queries:
                    continue
                latest = self._latest.get(query)
                if latest is None or latest.batch_id < batch_id:
                    return False
                if self._thread is not None and self.error is None:
                    applied = self._applied.get(query)
                    if applied is None or applied.batch_id < batch_id:
                        return False
            return True

        with self._changed:
            while not caught_up() and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    _log.warning("store replicas did not catch up with batches %s in %g s", done, timeout_s)
                    return
                self._changed.wait(min(left, 0.2))

    def start(self) -> None:
        """Build the stores and follow the changelogs (idempotent)."""
        if self._started_or_closed():
            # Every read calls this: once started, it must not wait for the lock, which a batch
            # being applied holds chunk by chunk (both fields are only ever set, under the lock).
            return
        with self._changed:
            if self._started_or_closed():
                return
            for home in self.homes.values():
                for partition in range(home.tasks):
                    key = (home.subtopology, partition)
                    if key not in self._tasks:
                        self._tasks[key] = self._build_task(*key)
            self._pending = dict(self._latest)
            self._seen_at = {q: time.monotonic() for q in self._pending}
            self._thread = threading.Thread(target=self._follow, name="kspark-store-replicas", daemon=True)
            self._thread.start()

    def _started_or_closed(self) -> bool:
        return self._thread is not None or self._closed

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=30)
        for task in self._tasks.values():
            task.close()
        if self._lister is not None:
            self._lister.close()

    def _follow(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        partitions = sorted({(h.changelog, p) for h in self.homes.values() for p in range(h.tasks)})
        store_of = {
            (h.changelog, p): (name, h.subtopology) for name, h in self.homes.items() for p in range(h.tasks)
        }
        consumer = Consumer(
            {
                **self.consumer_config,
                # Assigned, never subscribed: no group membership, nothing committed.
                "group.id": "kspark-store-replicas",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "enable.partition.eof": False,
            }
        )
        try:
            consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in partitions])
            reached: dict[TP, int] = dict.fromkeys(partitions, 0)  # next offset to apply
            held: dict[TP, list[tuple[int, bytes, bytes | None, int]]] = {tp: [] for tp in partitions}
            while True:
                with self._changed:
                    while not self._pending and not self._closed:
                        self._changed.wait(0.5)
                    if self._closed:
                        return
                    batches = dict(self._pending)
                    self._pending.clear()
                targets: dict[TP, int] = {}
                for batch in batches.values():
                    for tp, end in batch.changelog_ends.items():
                        targets[tp] = max(end, targets.get(tp, 0))
                ready = self._read_to(consumer, targets, reached, held)
                if ready is None:  # closed: nothing reads the stores any more
                    return
                self._apply(ready, store_of, batches)
                self._applied_records += sum(len(records) for records in ready.values())
                if self._applied_records >= self._freeze_at:
                    _freeze_long_lived()
                    self._freeze_at = 2 * self._applied_records
        except BaseException as e:  # a reader must learn that the replica stopped, and why
            _log.exception("store replicas stopped")
            with self._changed:
                self.error = e
                self._changed.notify_all()
        finally:
            consumer.close()

    def _read_to(
        self,
        consumer: Any,
        targets: Mapping[TP, int],
        reached: dict[TP, int],
        held: dict[TP, list[tuple[int, bytes, bytes | None, int]]],
    ) -> dict[TP, list[tuple[bytes, bytes | None, int]]] | None:
        """Changelog records below ``targets``, per partition; records at or past a target stay
        in ``held`` for a later batch. None once the replicas are closed."""
        from confluent_kafka import TopicPartition

        ready: dict[TP, list[tuple[bytes, bytes | None, int]]] = {}

        def take(tp: TP) -> None:
            target = targets.get(tp, 0)
            records = held[tp]
            cut = 0
            while cut < len(records) and records[cut][0] < target:
                cut += 1
            if cut:
                ready.setdefault(tp, []).extend((k, v, ts) for _, k, v, ts in records[:cut])
                del records[:cut]

        for tp in targets:
            take(tp)
        deadline = time.monotonic() + 120.0
        next_look = time.monotonic() + 1.0
        while any(reached[tp] < end for tp, end in targets.items()):
            if self._closed:
                return None
            if time.monotonic() > deadline:
                behind = {
                    f"{t}-{p}": (reached[(t, p)], e) for (t, p), e in targets.items() if reached[(t, p)] < e
                }
                raise StreamsException(
                    f"changelog topics did not reach the committed offsets in 120 s (at, wanted): {behind}"
                )
            wanted = sum(max(0, end - reached[tp]) for tp, end in targets.items())
            for msg in consume_toward(consumer, wanted, CONSUME_MOST):
                if msg.error() is not None:
                    raise StreamsException(
                        f"reading changelog {msg.topic()}-{msg.partition()}: {msg.error()}"
                    )
                tp = (str(msg.topic()), int(msg.partition()))
                held[tp].append((int(msg.offset()), msg.key(), msg.value(), int(msg.timestamp()[1])))
                reached[tp] = max(reached[tp], int(msg.offset()) + 1)
            for tp, end in targets.items():
                if reached[tp] < end:  # transaction markers take offsets without a record
                    position = consumer.position([TopicPartition(tp[0], tp[1])])[0].offset
                    if position >= 0:
                        reached[tp] = max(reached[tp], position)
            short = [tp for tp, end in targets.items() if reached[tp] < end]
            if short and time.monotonic() >= next_look:
                # Records the broker deleted are never fetched: a window or session changelog's
                # retention deletes by the records' own timestamps (history being reprocessed,
                # say), as Kafka Streams' restore finds them gone too. Start at the log's start.
                for tp in short:
                    marks = consumer.get_watermark_offsets(TopicPartition(tp[0], tp[1]), timeout=5.0)
                    if marks is not None and marks[0] > reached[tp]:  # None: no answer yet
                        reached[tp] = marks[0]
                next_look = time.monotonic() + 1.0
            for tp in targets:
                take(tp)
        return ready

    def _apply(
        self,
        ready: Mapping[TP, list[tuple[bytes, bytes | None, int]]],
        store_of: Mapping[TP, tuple[str, int]],
        batches: Mapping[str, CommittedBatch],
    ) -> None:
        """Apply committed changelog records, :data:`APPLY_CHUNK` at a time.

        Between chunks the lock is free for point reads (``get``): a batch's records are first
        reduced to the last one per changelog key (as compaction would), so a key read in the
        middle has either its value before the batch or after it, both committed states. Reads
        of several keys (ranges, scans, window and session fetches) wait until the whole batch
        is in (``_applying``)."""
        work: list[tuple[Callable[..., Any], list[tuple[bytes, bytes | None, int]]]] = []
        for (topic, partition), records in ready.items():
            store, subtopology = store_of[(topic, partition)]
            restore = self._tasks[(subtopology, partition)].context.restore_callbacks.get(store)
            if restore is None:
                raise StreamsException(f"store {store} has no restore callback")
            last = {key: (key, value, ts) for key, value, ts in records}
            work.append((restore, list(last.values())))
        with self._changed:
            self._applying = True
        try:
            for restore, records in work:
                for i in range(0, len(records), APPLY_CHUNK):
                    with self._changed:
                        restore(records[i : i + APPLY_CHUNK])
                    # Lets a read waiting for the lock (read_now) take it before the next chunk:
                    # else this thread, holding the interpreter lock, would take it back first.
                    time.sleep(0)
        finally:
            with self._changed:
                self._applying = False
                now = time.monotonic()
                for query, batch in batches.items():
                    self._applied[query] = batch
                    seen = self._seen_at.pop(query, None)
                    if seen is not None:
                        self.freshness_ms.append((now - seen) * 1000)
                del self.freshness_ms[:-10_000]
                self._changed.notify_all()

    def whole(self) -> Any:
        """The lock, taken once no batch is half applied (for reads of several keys)."""
        return _Whole(self)

    # ------------------------------------------------------------ reading
    def _home(self, name: str) -> StoreHome:
        home = self.homes.get(name)
        if home is None:
            reason = self.refused.get(name)
            if reason is not None:
                raise InvalidStateStoreException(f"Cannot query store {name} on Spark: {reason}")
            known = sorted(self.homes)
            raise UnknownStateStoreException(
                f"Cannot get state store {name} because no such store is registered in the topology "
                f"(queryable stores: {known})"
            )
        return home

    def position(self, name: str) -> Position:
        """What store ``name`` reflects now: per input partition, the last offset included."""
        home = self._home(name)
        with self._lock:
            applied = self._applied.get(home.query)
            return applied.position if applied is not None else Position()

    def wait_for(self, name: str, bound: PositionBound, timeout_s: float) -> Position:
        """Start if need be; wait until store ``name`` shows a committed batch that satisfies
        ``bound``; its position. Raises InvalidStateStoreException after ``timeout_s``."""
        home = self._home(name)
        self.start()
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                if self.error is not None:
                    raise InvalidStateStoreException(
                        f"Cannot query store {name}: the replica stopped: {self.error}"
                    ) from self.error
                if self._closed:
                    raise InvalidStateStoreException(f"Cannot query store {name}: the application is closed")
                applied = self._applied.get(home.query)
                if applied is not None and bound.satisfied_by(applied.position):
                    return applied.position
                if bound.is_unbounded() and home.query not in self._latest:
                    # Nothing committed to wait for (Kafka Streams refuses at once too); a bound
                    # waits, as for the first batch that reaches it.
                    raise InvalidStateStoreException(
                        f"Cannot query store {name}: no micro-batch of its query {home.query} has "
                        "committed yet (the application is still starting)"
                    )
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(min(left, 0.5))
        if applied is None:
            latest = self._latest.get(home.query)
            if latest is None:
                raise InvalidStateStoreException(
                    f"Cannot query store {name}: no micro-batch of its query {home.query} has "
                    f"committed within {timeout_s:g} s (the application may still be starting)"
                )
            raise InvalidStateStoreException(
                f"Cannot query store {name}: its replica did not catch up with the changelog of "
                f"micro-batch {latest.batch_id} within {timeout_s:g} s"
            )
        raise InvalidStateStoreException(
            f"Cannot query store {name}: it has reached {applied.position}, not the bound "
            f"{bound.position}, within {timeout_s:g} s"
        )

    def stores(self, name: str) -> list[StateStore]:
        """Store ``name`` of every task, in partition order (a composite view's order)."""
        home = self._home(name)
        return [self._tasks[(home.subtopology, p)].stores[name] for p in range(home.tasks)]

    def view(self, params: StoreQueryParameters) -> Any:
        """The read-only view ``KafkaStreams.store(params)`` returns: each call reads under the
        replica's lock, so it sees one committed batch; iterators are read whole under it."""
        name = params.store_name
        self.wait_for(name, params.position_bound, params.timeout.total_seconds())
        stores = self.stores(name)
        if params.partition is not None:
            if not 0 <= params.partition < len(stores):
                raise InvalidStateStoreException(
                    f"Cannot get state store {name}: partition {params.partition} is not one of its "
                    f"{len(stores)} partitions"
                )
            stores = [stores[params.partition]]
        kind = params.queryable_store_type or QueryableStoreTypes.key_value_store()
        return _LockedView(kind.create(stores), self, name)

    def read(self, name: str, query: Callable[[Any], T], params: StoreQueryParameters) -> tuple[T, Position]:
        """``query(view)`` and the position it saw, both under the lock (the HTTP endpoint's read)."""
        view = self.view(params)
        with self.whole():
            return query(view), self.position(name)

    def read_now(
        self, name: str, query: Callable[[Any], T], params: StoreQueryParameters
    ) -> tuple[T, Position] | None:
        """``query(view)`` of a point read and the position it saw, if that needs no wait: the
        lock is free, the store shows a committed batch and no bound is asked for. None
        otherwise (the caller reads with :meth:`read`). For the HTTP endpoint's event loop,
        which must not wait long: a point read itself takes microseconds, and it waits for the
        lock at most :data:`POINT_READ_WAIT_S` (the end of a chunk of a batch being applied),
        rather than hop to a thread pool and back, a wait for the interpreter lock each way."""
        if not self._lock.acquire(timeout=POINT_READ_WAIT_S):
            return None
        try:
            home = self._home(name)
            applied = self._applied.get(home.query)
            if applied is None or self._closed or self.error is not None:
                return None
            if not params.position_bound.is_unbounded():
                return None
            return query(self.view(params)), applied.position
        finally:
            self._lock.release()

    def check_open(self, name: str) -> None:
        if self._closed:
            raise InvalidStateStoreException(
                f"State store {name} is not open: the application has been closed"
            )


def _load_committed(path: str | None, queries: set[str]) -> dict[str, CommittedBatch]:
    """The last committed batch of each of ``queries`` an earlier run recorded in ``path``."""
    if path is None or not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        saved = json.load(f)
    out = {}
    for query, batch in saved.items():
        if query in queries:
            ends = {(str(t), int(p)): int(e) for t, p, e in batch["changelog_ends"]}
            out[query] = CommittedBatch(query, int(batch["batch_id"]), ends, Position(batch["position"]))
    return out


def _save_committed(path: str | None, latest: Mapping[str, CommittedBatch]) -> None:
    """Record each query's last committed batch (written whole, then renamed: never half)."""
    if path is None:
        return
    saved = {
        query: {
            "batch_id": batch.batch_id,
            "changelog_ends": [[t, p, e] for (t, p), e in sorted(batch.changelog_ends.items())],
            "position": batch.position.to_map(),
        }
        for query, batch in latest.items()
    }
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(path), delete=False, encoding="utf-8") as f:
        json.dump(saved, f)
    os.replace(f.name, path)


FREEZE_FIRST = 50_000
"""Changelog records applied before the replica first moves the process's objects out of the
garbage collector's way (:func:`_freeze_long_lived`); again each time the count doubles."""


def _freeze_long_lived() -> None:
    """Move every object alive now into the garbage collector's permanent generation.

    A full collection walks every container the process holds, a replica's stores included:
    with a million keys that is ~250 ms during which no thread of the process runs, the
    interactive-query server's included (bench/results/iq-reads-*-gc.json: gen2 pauses of up to
    313 ms were the HTTP endpoint's tail). Frozen containers are not walked; they are still
    freed as usual when nothing refers to them, only a reference cycle among them is never
    collected. Young garbage is collected first, and freezing happens each time the applied
    records double, so a long-running application freezes a few dozen times in all."""
    gc.collect(1)
    gc.freeze()


APPLY_CHUNK = 64
"""Changelog records applied per hold of the replica's lock. A point read waits at most that long,
and so does every other thread of the process: a RocksDB store writes a chunk in one call into C
that holds the interpreter lock, which the serving process's event loop waits out. ``python -m
bench.replica_holds``: a thread kept waiting up to 3.7 ms (p99) by chunks of 2,000, 1.1 ms by 250
(a quiet day); a write of 64 took a third of one of 250 (bench/results/replica-holds-00e1bca.txt).
From 250 to 64 (with :data:`CONSUME_MOST` from 1,000 to 250) the HTTP point read's p99 under W2
went from 6.2-6.5 ms to 4.3-4.8 ms (bench/results/iq-slice/)."""

CONSUME_MOST = 250
"""Changelog records the replica takes from librdkafka per call. The call builds their Python
objects holding the interpreter lock: ``python -m bench.replica_holds`` saw a thread kept waiting
up to 35 ms by calls of 10,000 records, 1.3 ms by calls of 1,000; a call of 250 took a quarter
of one of 1,000."""

POINT_READ_WAIT_S = 0.005
"""How long :meth:`StoreReplicas.read_now` waits for the lock, which a batch being applied holds
one chunk (:data:`APPLY_CHUNK` records) at a time."""

_POINT_READS = frozenset({"get"})
"""View methods that read one key: they may run between two chunks of a batch being applied."""


class _Whole:
    """``with replicas.whole():`` -- the replica's lock, with no batch half applied."""

    def __init__(self, replicas: StoreReplicas) -> None:
        self._replicas = replicas

    def __enter__(self) -> None:
        changed = self._replicas._changed
        changed.acquire()
        while self._replicas._applying:
            changed.wait()

    def __exit__(self, *exc: object) -> None:
        self._replicas._changed.release()


class _LockedView:
    """A read-only store view whose every call holds the replica's lock (one committed batch)."""

    def __init__(self, view: Any, replicas: StoreReplicas, name: str) -> None:
        self._view = view
        self._replicas = replicas
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def position(self) -> Position:
        """What the store reflects now (per input partition, the last offset included)."""
        return self._replicas.position(self._name)

    def __getattr__(self, method: str) -> Any:
        target = getattr(self._view, method)
        if not callable(target):
            return target

        guard = self._replicas._lock if method in _POINT_READS else self._replicas.whole()

        def call(*args: Any, **kwargs: Any) -> Any:
            self._replicas.check_open(self._name)
            with guard:
                result = target(*args, **kwargs)
                if isinstance(result, KeyValueIterator):
                    return PeekingKeyValueIterator(_drained(result), self._name)
                return result

        return call


def _drained(iterator: KeyValueIterator[Any, Any]) -> Sequence[Any]:
    try:
        return list(iterator)
    finally:
        iterator.close()
