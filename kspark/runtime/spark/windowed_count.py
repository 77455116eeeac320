"""Native windowed count: ``groupByKey().windowedBy(TimeWindows).count()`` per task, without the engine.

The engine runs a windowed count through its store layers (metered,
caching, change-logging, segmented window store) at ~88 µs per record of
one core (bench/results/history.md, "kspark alone after the windowed count and
the Arrow fix"); this stage computes the same thing for a whole micro-batch
of a task at once. It is a ``transformWithStateInPandas``
grouped by task like :class:`~kspark.runtime.spark.tasks.TaskStage` (one
call per task per batch, records in offset order), and keeps the same two
pieces of Spark state: ``meta`` (epoch, observed stream time, changelog
rows) and ``changelog`` (one row per batch of the counts it changed,
compacted every ``COMPACT_AFTER_ROWS``). The counts live in the Python
worker between batches and are restored from ``changelog`` when the task
was not warm here, as Kafka Streams restores a store from its changelog.

Kafka Streams' semantics, per task (``KStreamWindowAggregate``):

* a record with a null key is skipped (logged); it does not move time;
* the observed stream time is the largest timestamp of the records seen so
  far, this one included; a record is added to each of its windows whose
  end is after ``observed stream time - grace`` and dropped (logged, as the
  engine logs it) for the others;
* a window's count carries the largest timestamp of its records (KIP-258);
* with the record cache on (the only case that is lowered) the count
  forwards, at commit, one record per changed window with its latest count,
  in the record context of its latest record; a micro-batch is a commit.
  When the changed windows outgrow ``statestore.cache.max.bytes`` (counted
  as the engine's cache counts entries) they are forwarded before the
  commit, as a full cache forwards: the batch is counted one Arrow batch of
  records at a time, so memory stays bounded however large the micro-batch.
  Which intermediate counts a full cache forwards depends on its eviction
  order (Kafka Streams evicts the least recently used entry first, this
  stage all changed windows at once); the last count of every window is
  the same.

Spark's watermark cannot do this: it is one time for the whole query,
computed at batch boundaries, while Kafka Streams drops per task, record by
record. A window is forgotten once no record can reach it any more (its end
plus grace at or before the observed stream time): the state is bounded as
the engine's window store is by its retention.

What follows the count (``toStream()`` and stateless operations) runs in the
engine (:meth:`~kspark.processor.internals.task.StreamTask.forward_from`),
and the stage writes the output itself, as every stage does.

Spark hands the stage whether each record had headers, not the headers: a
list column costs the shuffle, the Arrow hand-over and a Python object per
record, and most topics have none. A forwarded window whose latest record
had headers gets them read back from Kafka by offset
(:class:`~kspark.runtime.spark.kafka_io.HeaderReader`), as the plain native
count does.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from kspark.kstream.windowed import TimeWindow
from kspark.processor.internals.records import OutputRecord
from kspark.runtime.spark.kafka_io import HeaderReader
from kspark.runtime.spark.shuffle import task_of
from kspark.runtime.spark.task_input import in_offset_order
from kspark.runtime.spark.task_state import (
    Latest,
    TaskMeta,
    persist_changelog,
    restored_changelog,
    task_state,
)
from kspark.runtime.spark.tasks import (
    Sender,
    TopologySpec,
    stateful_processor_base,
)
from kspark.runtime.spark.warm import (
    WarmTask,
    current_warm,
    evict_warm,
    keep_warm,
    new_task_metrics,
    refresh_wall_clock,
    written_frame,
)
from kspark.serde.windowed import window_store_key_to_binary
from kspark.state.internals.cache import ENTRY_OVERHEAD_BYTES, configured_cache_max_bytes

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from kspark.kstream.windows import TimeWindows
    from kspark.runtime.spark.lowering import NativeCount

__all__ = ["WindowedCountStage", "window_slots"]

_log = logging.getLogger("kspark.kstream.internals.window_aggregate")  # where the engine logs drops


def window_slots(
    timestamps: np.ndarray, observed: np.ndarray, windows: TimeWindows
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per window slot: (window starts, admitted, expired) of a task's records in offset order.

    ``observed`` is the observed stream time at each record (that record
    included). A record has one window per slot whose start is at or before
    its timestamp (``TimeWindows.windows_for``); ``admitted`` marks the
    records that window takes, ``expired`` those it drops, as
    ``KStreamWindowAggregate`` decides record by record.
    """
    import numpy as np

    size, advance = windows.size(), windows.advance_ms
    close_time = observed - windows.grace_period_ms()
    # Java's integer division on a non-negative numerator equals floor division.
    first = (np.maximum(0, timestamps - size + advance) // advance) * advance
    for slot in range(-(-size // advance)):
        starts = first + slot * advance
        exists = starts <= timestamps
        open_ = exists & (starts + size > close_time)
        yield starts, open_, exists & ~open_


class WindowedCountStage(stateful_processor_base()):  # type: ignore[misc]
    """``transformWithStateInPandas`` body of a lowered windowed count: one task per grouping key.

    Its rows: ``key`` (as the store holds it), ``timestamp``, ``offset`` and ``has_headers``
    (the value is never read, only counted; the headers: module doc).
    """

    def __init__(self, spec: TopologySpec, native: NativeCount, topic: str) -> None:
        assert native.windows is not None
        self.spec = spec
        self.native = native
        self.topic = topic
        self.windows = native.windows
        # a window no record can reach any more: start + retired_after <= observed stream time
        self.retired_after = native.windows.size() + native.windows.grace_period_ms()

    def init(self, handle: Any) -> None:
        self._meta, self._changelog = task_state(handle)

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any
    ) -> Iterator[pd.DataFrame]:

        partition = task_of(int(key[0]))
        meta, warm = self._warm(partition)
        try:
            written = self._commit(partition, meta, warm, [f for f in rows if len(f)])
        except BaseException:
            evict_warm(self.spec, partition)  # its counts may hold part of the failed batch
            raise
        yield written_frame(written, new_task_metrics([warm]))

    def close(self) -> None:
        pass

    def _warm(self, partition: int) -> tuple[TaskMeta, WarmTask]:
        """The counts warm from the last batch, or restored from the changelog state."""
        meta, warm = current_warm(self.spec, partition, self._meta)
        if warm is not None:
            return meta, warm
        counts = restored_changelog(self._changelog, meta)
        self._forget_closed(counts, meta.stream_time)
        return meta, WarmTask(meta.epoch, self.spec.build_task(partition), counts)

    def _forget_closed(self, counts: Latest, stream_time: int) -> None:
        """Drop the windows no record can reach any more (they would be dropped as expired)."""
        for start in [s for s in counts if s + self.retired_after <= stream_time]:
            del counts[start]

    def _commit(self, partition: int, meta: TaskMeta, warm: WarmTask, frames: list[pd.DataFrame]) -> int:
        """Count a task's micro-batch, forward every changed window, persist; returns records written."""
        self.spec.global_replica()
        # Exactly-once: one transaction, and a batch Kafka committed only rebuilds (task_commit.py).
        commit = self.spec.task_commit(partition)
        last = max((int(f["offset"].max()) for f in frames), default=None)
        commit.begin({} if last is None else {(self.topic, partition): last + 1})
        batch = _Batch(self, partition, meta, warm, commit)
        try:
            for chunk in in_offset_order(frames):
                batch.count(chunk)
                if batch.pending_bytes > batch.budget:
                    batch.flush()  # the engine's cache, full, forwards before the commit too
            batch.flush()
            written = commit.commit()
        except BaseException:
            commit.abort()
            raise
        finally:
            batch.headers.close()
        epoch = meta.epoch + 1
        self._meta.update((epoch, batch.stream_time, None, -1, batch.rows, None, None))
        warm.epoch = epoch
        keep_warm(self.spec, partition, warm)
        return written

    def _where(self, partition: int, offset: int) -> str:
        return f"topic=[{self.topic}] partition=[{partition}] offset=[{offset}]"

    def _log_skipped(self, reason: str) -> None:
        _log.warning("Skipping record: %s", reason)

    def _log_expired(self, partition: int, offset: int, timestamp: int, start: int, stream_time: int) -> None:
        size, grace = self.windows.size(), self.windows.grace_period_ms()
        self._log_skipped(
            f"record for expired window: timestamp=[{timestamp}] window=[{start},{start + size})"
            f" expiration=[{stream_time - grace}] streamTime=[{stream_time}] {self._where(partition, offset)}"
        )


class _Batch:
    """One micro-batch of a task's windowed count, counted chunk by chunk.

    ``pending`` holds the windows changed since the last forward, each with
    the offset of its latest record, its start (so that the values alone sort
    in forwarding order), and that record's timestamp and has-headers flag
    (the context the cache forwards it in). When their size by the engine cache's accounting
    passes ``statestore.cache.max.bytes`` they are forwarded and persisted
    before the commit, as the engine's full cache forwards (the last count of
    every window is the same); memory stays bounded however large the batch.
    """

    def __init__(
        self, stage: WindowedCountStage, partition: int, meta: TaskMeta, warm: WarmTask, sender: Sender
    ) -> None:
        self.stage = stage
        self.partition = partition
        self.warm = warm
        self.counts = warm.latest
        self.stream_time = meta.stream_time
        self.rows = meta.changelog_rows
        self.budget = configured_cache_max_bytes(warm.task.context)
        self.sender = sender
        self.tail = stage.native.tail(warm.task)
        # The source node's record-e2e-latency: the records are counted here, not by the task.
        (source,) = {s.name: s for s in warm.task.topology.sources_by_topic.values()}
        self.source_e2e = warm.task.e2e[source]
        self.pending: dict[tuple[int, bytes], tuple[int, int, int, bool]] = {}
        self.pending_bytes = 0
        self.headers = HeaderReader.of_application(stage.spec.config)

    def count(self, data: pd.DataFrame) -> None:
        """Count one chunk of records in offset order into the windows they reach."""
        import numpy as np

        stage, partition = self.stage, self.partition
        keys = data["key"].to_numpy(dtype=object)
        offsets = data["offset"].to_numpy(dtype=np.int64)
        timestamps = data["timestamp"].to_numpy(dtype=np.int64)
        flags = data["has_headers"].to_numpy(dtype=bool)
        refresh_wall_clock(self.warm.task)
        if len(timestamps):
            self.source_e2e.record_tally(
                self.warm.task.wall_clock_ms(),
                len(timestamps),
                int(timestamps.sum()),
                int(timestamps.min()),
                int(timestamps.max()),
            )
        missing = data["key"].isna().to_numpy()
        if missing.any():
            for row in np.flatnonzero(missing).tolist():
                stage._log_skipped(f"null key {stage._where(partition, int(offsets[row]))}")
                self.warm.task.record_dropped("null key")
            keyed = ~missing
            keys, offsets, timestamps, flags = (
                keys[keyed],
                offsets[keyed],
                timestamps[keyed],
                flags[keyed],
            )
        if not len(keys):
            return
        counts, pending = self.counts, self.pending
        observed = np.maximum.accumulate(np.maximum(timestamps, self.stream_time))
        for starts, open_, expired in window_slots(timestamps, observed, stage.windows):
            for row in np.flatnonzero(expired).tolist():
                stage._log_expired(
                    partition, int(offsets[row]), int(timestamps[row]), int(starts[row]), int(observed[row])
                )
                self.warm.task.record_dropped("expired window")
            for i, start, key, ts in zip(
                np.flatnonzero(open_).tolist(),
                starts[open_].tolist(),
                keys[open_].tolist(),
                timestamps[open_].tolist(),
                strict=True,
            ):
                window = counts.get(start)
                if window is None:
                    window = counts[start] = {}
                old = window.get(key)
                window[key] = (1, ts) if old is None else (old[0] + 1, ts if ts > old[1] else old[1])
                offset = int(offsets[i])
                latest = pending.get((start, key))
                if latest is None:
                    self.pending_bytes += len(key) + _PENDING_ENTRY_BYTES
                # hopping windows: a later slot may hold an earlier record of the same window
                if latest is None or latest[0] < offset:
                    pending[(start, key)] = (offset, start, int(timestamps[i]), bool(flags[i]))
        self.stream_time = int(observed[-1])

    def flush(self) -> None:
        """Forward each pending window's count in the order of its latest record, as the cache
        flushes; then forget closed windows and persist the changelog."""
        stage, task = self.stage, self.warm.task
        changelog: list[tuple[int, bytes, int, int]] = []
        windows: dict[int, TimeWindow] = {}  # one per window start: a batch has few
        size = stage.windows.size()
        wanted = [offset for offset, _, _, has_headers in self.pending.values() if has_headers]
        headers_of = self.headers.read(stage.topic, self.partition, wanted) if wanted else {}
        forward = stage.native.windowed_forwarder(self.tail, stage.topic, self.partition)
        # Every changed window to the store's changelog topic too, as the engine's window store
        # logs it (key + start + sequence number 0, the plain count, the count's timestamp).
        changelog_topic = stage.native.changelog(stage.spec)
        logged: list[OutputRecord] = []
        # A window closed by now takes no more records and a restore would forget it at once
        # (_forget_closed): only open ones go to the changelog state. In W3 that is nearly all
        # of a batch's windows, pickled and unpickled for nothing (~10% of its Python time).
        closed_from = self.stream_time - stage.retired_after
        for n, ((start, key), (offset, _, record_ts, has_headers)) in enumerate(
            sorted(self.pending.items(), key=itemgetter(1)), 1
        ):
            count, ts = self.counts[start][key]
            if start > closed_from:
                changelog.append((start, key, count, ts))
            window = windows.get(start)
            if window is None:
                window = windows[start] = TimeWindow(start, start + size)
            forward(
                key, window, count, ts, record_ts, offset, headers_of.get(offset) if has_headers else None
            )
            if changelog_topic is not None:
                logged.append(
                    OutputRecord(
                        changelog_topic,
                        self.partition,
                        window_store_key_to_binary(key, start, 0),
                        count.to_bytes(8, "big", signed=True),
                        ts,
                    )
                )
            if n % 1000 == 0:
                self.sender.send(task.drain_output())
                self.sender.send(logged)
                logged = []
        self.sender.send(task.drain_output())
        self.sender.send(logged)
        self.pending.clear()
        self.pending_bytes = 0
        stage._forget_closed(self.counts, self.stream_time)
        self.rows = persist_changelog(stage._changelog, self.rows, self.counts, changelog)


_PENDING_ENTRY_BYTES = 12 + 16 + ENTRY_OVERHEAD_BYTES
"""A pending window's size besides its key, as the engine's cache counts a windowed count's entry:
window start and sequence number in the key, count and timestamp in the value, fixed overhead."""
