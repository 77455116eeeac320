"""A low-latency task's lone count or reduce, kept between two commits as Spark's native count is.

A low-latency query (:mod:`~kspark.runtime.spark.low_latency`) runs a stateful
task's records through the engine one at a time, and commits every
``commit.interval.ms``. With the record cache on, a count then costs, per
input record, a source node, the aggregation's store read and write through
four store layers, and at the commit one cache flush, a changelog record and
an output record, each through the processor nodes: about 190 Python calls
a record (``python -m bench.engine --workload W2 --commit-every 1000
--profile``). A sub-topology the physical plan would lower to Spark's own
count or reduce in micro-batches (:func:`~kspark.runtime.spark.lowering.lower`:
a lone ``count()``, or ``reduce`` with ``operator.add``, ``min`` or ``max``
over Long or Integer values, on a source, its table only ``toStream()`` into
stateless operators and sinks, the cache on) runs it here instead, with the
engine's store and what follows it unchanged (a reduce's aggregate stands
where a count's count does below):

* between two commits the :class:`CountLine` keeps each changed key's
  count, largest timestamp, and the offset and headers of its latest record,
  reading a key's count from the store (below its record cache) the first
  time it changes;
* at the commit (:meth:`CountLine.flush`, before the task's own) it writes
  the changed keys to the store below the cache in one write batch --
  RocksDB and the changelog, the value and timestamp as the engine's
  timestamped store writes them -- and forwards each to what follows the
  count (the task's fused tail, as the micro-batch native count does), in
  the order the record cache would flush them (the order of their latest
  updates);
* the stream time and partition time advance as the task's queue would
  advance them; a record with a null key or value is dropped and counted as
  the aggregation drops it;
* a record the engine judges is left to the task's own path: one with a
  negative timestamp (its timestamp extractor decides: fail, skip, or
  partition time), a reduce's value of the wrong size (its deserializer
  fails, with the log-and-fail handler the lowering requires) and a sum out
  of the value's range (the store's serializer fails). The pending
  aggregates are written first, and the engine's cache is flushed after
  it, so that the two never hold different aggregates of a key.

The output is the engine's with the record cache on as long as the cache
would not have filled between two commits: the cache then forwards early
(Kafka Streams flushes a full cache's dirty entries when it evicts), this
line only at the commit. Every forwarded count is a count the engine could
have forwarded, and the latest one per key is the same. The store's
operation metrics (``metrics.recording.level=DEBUG``) and the record cache's
do not see the line's reads and writes, as they do not see Spark's native
count's in micro-batches; the dropped records and end-to-end latencies are
recorded as the engine records them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark.errors import StreamsException
from kspark.runtime.spark.task_input import FeedChunk
from kspark.state.internals.caching import CachingLayer

if TYPE_CHECKING:
    from kspark.processor.api import Headers
    from kspark.processor.internals.task import StreamTask
    from kspark.runtime.spark.lowering import NativeCount, Tail

__all__ = ["CountLine"]

_DROPPED = "Skipping record due to null key or value."


def _below_cache(store: Any, name: str) -> Any:
    """The layer under ``store``'s record cache: its bytes store, changelog included."""
    layer = store
    while not isinstance(layer, CachingLayer):
        layer = getattr(layer, "wrapped", None)
        if layer is None:
            raise StreamsException(f"store {name} of a native count has no record cache")
    return layer.wrapped


class CountLine:
    """Task ``task``'s count or reduce (``native``, not windowed) of its one source topic ``topic``."""

    def __init__(self, task: StreamTask, native: NativeCount, topic: str, partition: int) -> None:
        if native.windows is not None:
            raise StreamsException(f"{native.aggregate}: a windowed count does not run as a count line")
        reduce = native.reduce
        # A count adds 1 a record; a reduce combines the value, a Long or Integer of this size:
        # a sum adds it, a minimum or maximum picks.
        self._counting = reduce is None
        self._size = 8 if reduce is None else reduce.size
        self._pick: Callable[[int, int], int] | None = None
        if reduce is not None and reduce.function != "sum":
            self._pick = min if reduce.function == "min" else max
        self._limit = 1 << (8 * self._size - 1)  # a sum outside [-limit, limit) fails the store
        node = task.node(native.aggregate)
        assert node is not None, native.aggregate
        (store_name,) = node.state_store_names
        self._task = task
        self._native = native
        self._topic = topic
        self._partition = partition
        self._store = task.stores[store_name]
        self._below = _below_cache(self._store, store_name)
        self._queue = task.input_queue(topic, partition)
        self._tail: Tail = native.tail(task)
        self._utf8 = native.utf8_keys
        # Key bytes as read -> as the store holds them (String keys: invalid UTF-8 replaced).
        self._store_keys: dict[bytes, bytes] = {}
        # Store key -> [aggregate, timestamp, offset, headers as read] of its latest record.
        self._pending: dict[bytes, list[Any]] = {}
        self._to_headers: Callable[[Any], Headers] | None = None

    def process(self, chunk: FeedChunk) -> None:
        """Count (or reduce) records of the task's partition of its topic, in offset order."""
        self._to_headers = chunk.to_headers
        offsets, timestamps, keys, values, headers = (
            chunk.offsets,
            chunk.timestamps,
            chunk.keys,
            chunk.values,
            chunk.headers,
        )
        task, queue = self._task, self._queue
        pending = self._pending
        below_get = self._below.get
        store_key = self._store_key
        counting, pick = self._counting, self._pick
        size, limit = self._size, self._limit
        partition_time = queue.partition_time
        n = len(offsets)
        i = 0
        while i < n:
            timestamp = timestamps[i]
            if timestamp < 0:
                break
            key, value = keys[i], values[i]
            if not counting and value is not None and len(value) != size:
                break  # the engine's deserializer fails on it (null key or not), with its handler's error
            if key is not None and value is not None:
                x = 1 if counting else int.from_bytes(value, "big", signed=True)
                k = store_key(key)
                entry = pending.get(k)
                if entry is None:
                    stored = below_get(k)
                    if stored is not None:
                        # The timestamped store's bytes: the timestamp (8 bytes), then the value.
                        before = int.from_bytes(stored[:8], "big", signed=True)
                        entry = [int.from_bytes(stored[8:], "big", signed=True), before, 0, None]
                if entry is None:
                    entry = [x, timestamp, offsets[i], headers[i]]
                else:
                    if pick is None:
                        aggregate = entry[0] + x
                        if not -limit <= aggregate < limit:
                            break  # the engine's store fails to serialize it, with its error
                    else:
                        aggregate = pick(entry[0], x)
                    entry[0] = aggregate
                    if timestamp > entry[1]:
                        entry[1] = timestamp
                    entry[2] = offsets[i]
                    entry[3] = headers[i]
                    pending.pop(k, None)
                pending[k] = entry  # last: a flush takes keys in the order of their latest updates
            else:
                task.record_dropped(_DROPPED)
            if timestamp > partition_time:
                partition_time = timestamp
            i += 1
        task.take_time(queue, partition_time)
        task.e2e[self._queue.source.name].record_timestamps(task.wall_clock_ms(), timestamps[:i])
        if i < n:
            self._engine_path(chunk, i)

    def _engine_path(self, chunk: FeedChunk, first: int) -> None:
        """The chunk's records from ``first`` on through the task's own path; then back to this
        line for the next poll. The first is one the engine judges: a negative timestamp (its
        extractor decides), a reduce's value of the wrong size or a sum out of range (it fails)."""
        self.flush()
        task = self._task
        rest = FeedChunk(
            chunk.topic,
            chunk.partition,
            chunk.offsets[first:],
            chunk.timestamps[first:],
            chunk.keys[first:],
            chunk.values[first:],
            chunk.headers[first:],
            chunk.to_headers,
        )
        task.add_records(self._topic, self._partition, rest.records())
        while task.process():
            task.maybe_punctuate_stream_time()
        self._store.flush()  # the engine's cache forwards what it counted: the store is current

    def _store_key(self, key: bytes) -> bytes:
        if not self._utf8:
            return key
        k = self._store_keys.get(key)
        if k is None:
            k = self._store_keys[key] = key.decode("utf-8", "replace").encode("utf-8")
        return k

    def flush(self) -> None:
        """Write every changed key's count to the store and forward it to what follows the count,
        as the record cache's flush at a commit would; the output is in the task's collector."""
        pending, self._pending = self._pending, {}
        self._store_keys.clear()
        if not pending:
            return
        size = self._size
        # One write batch: a put each was one WAL write each, the line's largest cost under load
        # (py-spy, W2 at 20,000 rec/s). The changelog records then all precede the outputs,
        # where the cache's flush alternates them: two topics, each in the same order.
        self._below.put_all(
            [
                (key, timestamp.to_bytes(8, "big", signed=True) + value.to_bytes(size, "big", signed=True))
                for key, (value, timestamp, _, _) in pending.items()
            ]
        )
        forward, tail = self._native.forward, self._tail
        topic, partition = self._topic, self._partition
        to_headers = self._to_headers
        assert to_headers is not None
        for key, (count, timestamp, offset, raw_headers) in pending.items():
            headers = to_headers(raw_headers) if raw_headers else None
            forward(tail, key, count, timestamp, topic, partition, offset, headers)
