"""Windowed stream-stream joins (Kafka's ``KStreamImplJoin`` and ``KStreamKStreamJoin``).

Each side first goes through a ``KSTREAM-WINDOWED`` processor that puts its
records into its own window store (duplicates retained), then a join
processor (``KSTREAM-JOINTHIS`` / ``KSTREAM-JOINOTHER``, or ``OUTERTHIS`` /
``OUTEROTHER``) looks the record up in the *other* side's store; both feed a
``KSTREAM-MERGE`` pass-through. A left record at ``t`` matches right records
in ``[t - before, t + after]``; the result carries the larger timestamp.

Left/outer joins (Kafka 3.1+): an unmatched record is parked in a shared
"outer" store and emitted with ``None`` for the missing side only once its
window closed (stream time > t + after/before + grace), throttled by the wall
clock (``__emit.interval.ms.kstreams.outer.join.spurious.results.fix__``,
default 1000 ms), as Kafka does.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kspark.key_value import KeyValue
from kspark.kstream.internals.window_aggregate import TimeTracker, emit_interval_ms, record_dropped
from kspark.kstream.windows import JoinWindows
from kspark.processor.api import Processor, ProcessorContext, Record
from kspark.state.api import StateStore, StoreBuilder

__all__ = [
    "EMIT_INTERVAL_MS_OUTER_JOIN",
    "JoinWindowProcessor",
    "StreamStreamJoinSide",
    "PassThrough",
    "TimestampedKeyAndJoinSide",
    "LeftOrRightValue",
    "OuterJoinStore",
    "OuterJoinStoreBuilder",
    "TimeTrackerSupplier",
    "build_stream_stream_join",
]

EMIT_INTERVAL_MS_OUTER_JOIN = "__emit.interval.ms.kstreams.outer.join.spurious.results.fix__"

Joiner = Callable[[Any, Any], Any]


class JoinWindowProcessor(Processor[Any, Any]):
    """``KStreamJoinWindow``: forwards the record, then remembers it in this side's window store."""

    def __init__(self, store_name: str) -> None:
        self.store_name = store_name
        self.context: ProcessorContext = None  # type: ignore[assignment]
        self.store: Any = None

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store(self.store_name)

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(record)
        # a null key can never join, so it needs no window entry
        if record.key is not None:
            self.store.put(record.key, record.value, record.timestamp)


class PassThrough(Processor[Any, Any]):
    """The ``KSTREAM-MERGE`` node joining both sides' results into one stream."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(record)


@dataclass(frozen=True)
class TimestampedKeyAndJoinSide:
    """Key of the outer-join store: ordered by timestamp, then side (right before left), then key bytes."""

    key: Any
    timestamp: int
    left_side: bool


@dataclass(frozen=True)
class LeftOrRightValue:
    """A parked unmatched value of one side."""

    left_value: Any
    right_value: Any


class TimeTrackerSupplier:
    """One ``TimeTracker`` per task, shared by the two join processors of that task."""

    def __init__(self) -> None:
        self._trackers: dict[str, TimeTracker] = {}

    def get(self, task_id: str) -> TimeTracker:
        return self._trackers.setdefault(task_id, TimeTracker())

    def remove(self, task_id: str) -> None:
        self._trackers.pop(task_id, None)


class OuterJoinStore(StateStore):
    """Kafka's ``ListValueStore`` for the outer join: each key holds the list of parked values.

    Kept in memory and ordered as Kafka's byte layout orders it:
    ``<8-byte timestamp><side byte: left=1, right=0><serialized key>``.
    """

    def __init__(self, name: str, key_serde: Any) -> None:
        self._name = name
        self._key_serde = key_serde
        self._sort_keys: list[tuple[int, int, bytes]] = []
        self._entries: dict[
            tuple[int, int, bytes], tuple[TimestampedKeyAndJoinSide, list[LeftOrRightValue]]
        ] = {}
        self._open = False
        self._serializer: Any = None

    @property
    def name(self) -> str:
        return self._name

    def init(self, context: ProcessorContext, root: StateStore) -> None:
        serde = self._key_serde if self._key_serde is not None else context.key_serde()
        self._serializer = serde.serializer() if serde is not None else None
        self._open = True
        register = getattr(context, "register", None)
        if register is not None:
            register(root, None)

    def _sort_key(self, key: TimestampedKeyAndJoinSide) -> tuple[int, int, bytes]:
        raw = (
            self._serializer.serialize(None, key.key)
            if self._serializer is not None
            else repr(key.key).encode()
        )
        return (key.timestamp, 1 if key.left_side else 0, raw or b"")

    def put(self, key: TimestampedKeyAndJoinSide, value: LeftOrRightValue | None) -> None:
        """Append ``value`` to the key's list; ``None`` deletes the whole list."""
        sk = self._sort_key(key)
        if value is None:
            if self._entries.pop(sk, None) is not None:
                self._sort_keys.pop(bisect.bisect_left(self._sort_keys, sk))
            return
        entry = self._entries.get(sk)
        if entry is None:
            self._entries[sk] = (key, [value])
            bisect.insort(self._sort_keys, sk)
        else:
            entry[1].append(value)

    def put_if_absent(self, key: TimestampedKeyAndJoinSide, value: LeftOrRightValue | None) -> None:
        """As Kafka's ``ListValueStore.putIfAbsent``: acts only if the key *is* present."""
        sk = self._sort_key(key)
        if sk in self._entries:
            self.put(key, value)

    def all(self) -> Iterator[KeyValue[TimestampedKeyAndJoinSide, LeftOrRightValue]]:
        """Every parked value, one pair per list element, in key order (a snapshot)."""
        for sk in list(self._sort_keys):
            entry = self._entries.get(sk)
            if entry is None:
                continue
            for value in list(entry[1]):
                yield KeyValue(entry[0], value)

    def approximate_num_entries(self) -> int:
        return len(self._entries)

    def close(self) -> None:
        self._open = False

    def persistent(self) -> bool:
        return False

    def is_open(self) -> bool:
        return self._open


class OuterJoinStoreBuilder(StoreBuilder[Any, Any]):
    """Builds the outer-join shared store (caching is never used; logging is not implemented)."""

    def __init__(self, name: str, key_serde: Any) -> None:
        self._name = name
        self._key_serde = key_serde
        self._logging = False

    @property
    def name(self) -> str:
        return self._name

    def build(self) -> StateStore:
        return OuterJoinStore(self._name, self._key_serde)

    def with_caching_enabled(self) -> OuterJoinStoreBuilder:
        return self

    def with_caching_disabled(self) -> OuterJoinStoreBuilder:
        return self

    def with_logging_enabled(self, config: dict[str, str] | None = None) -> OuterJoinStoreBuilder:
        return self

    def with_logging_disabled(self) -> OuterJoinStoreBuilder:
        return self

    def logging_enabled(self) -> bool:
        return self._logging

    def log_config(self) -> dict[str, str]:
        return {}


class StreamStreamJoinSide:
    """Supplier of one side's join processor (``KStreamKStreamJoinLeftSide`` / ``RightSide``).

    ``joiner`` receives ``(this_value, other_value)``; the right side is given
    the reversed joiner so results always read ``joiner(left, right)``.
    """

    def __init__(
        self,
        *,
        left_side: bool,
        other_window_name: str,
        windows: JoinWindows,
        joiner: Joiner,
        outer: bool,
        outer_join_store_name: str | None,
        time_tracker_supplier: TimeTrackerSupplier,
    ) -> None:
        self.left_side = left_side
        self.other_window_name = other_window_name
        self.windows = windows
        self.joiner = joiner
        self.outer = outer
        self.outer_join_store_name = outer_join_store_name
        self.time_tracker_supplier = time_tracker_supplier
        # the left side looks back `before` and forward `after`; the right side the reverse
        self.join_before_ms = windows.before_ms if left_side else windows.after_ms
        self.join_after_ms = windows.after_ms if left_side else windows.before_ms

    def __call__(self) -> Processor[Any, Any]:
        return _StreamStreamJoinProcessor(self)


class _StreamStreamJoinProcessor(Processor[Any, Any]):
    def __init__(self, s: StreamStreamJoinSide) -> None:
        self.s = s
        self.grace_ms = s.windows.grace_period_ms()
        self.context: ProcessorContext = None  # type: ignore[assignment]
        self.other_store: Any = None
        self.outer_store: OuterJoinStore | None = None
        self.tracker: TimeTracker = TimeTracker()

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.other_store = context.get_state_store(self.s.other_window_name)
        self.tracker = self.s.time_tracker_supplier.get(context.task_id())
        if self.s.outer_join_store_name is not None:
            self.outer_store = context.get_state_store(self.s.outer_join_store_name)  # type: ignore[assignment]
        self.tracker.emit_interval_ms = emit_interval_ms(context, EMIT_INTERVAL_MS_OUTER_JOIN)

    def close(self) -> None:
        if self.context is not None:
            self.s.time_tracker_supplier.remove(self.context.task_id())

    def _join(self, key: Any, this_value: Any, other_value: Any) -> Any:
        return self.s.joiner(this_value, other_value)

    def process(self, record: Record[Any, Any]) -> None:
        ts = record.timestamp
        self.tracker.advance_stream_time(ts)
        if self.s.outer and record.key is None and record.value is not None:
            self.context.forward(record.with_value(self._join(record.key, record.value, None)))
            return
        if record.key is None or record.value is None:
            record_dropped(self.context, "null key or value")
            return
        if ts == self.tracker.stream_time and self.outer_store is not None:
            self._emit_non_joined_outer_records(record)
        time_from = max(0, ts - self.s.join_before_ms)
        time_to = max(0, ts + self.s.join_after_ms)
        with self.other_store.fetch(record.key, time_from, time_to) as it:
            matches = list(it)
        for other in matches:
            self._emit_inner_join(record, other.key, other.value)
        if self.s.outer and not matches:
            # a record whose window already closed (out of order) is emitted at once
            if self.outer_store is None or time_to < self.tracker.stream_time:
                self.context.forward(record.with_value(self._join(record.key, record.value, None)))
            else:
                self.tracker.update_min_time(ts)
                self.outer_store.put(
                    TimestampedKeyAndJoinSide(record.key, ts, self.s.left_side),
                    self._this_value(record.value),
                )

    def _this_value(self, value: Any) -> LeftOrRightValue:
        return LeftOrRightValue(value, None) if self.s.left_side else LeftOrRightValue(None, value)

    def _emit_inner_join(self, record: Record[Any, Any], other_ts: int, other_value: Any) -> None:
        if self.outer_store is not None:
            # the other side's parked record found a partner: it must not be emitted as unmatched
            self.outer_store.put_if_absent(
                TimestampedKeyAndJoinSide(record.key, other_ts, not self.s.left_side), None
            )
        self.context.forward(
            record.with_value(self._join(record.key, record.value, other_value)).with_timestamp(
                max(record.timestamp, other_ts)
            )
        )

    def _emit_non_joined_outer_records(self, record: Record[Any, Any]) -> None:
        store = self.outer_store
        assert store is not None
        tracker = self.tracker
        # cheap check first: nothing parked can have closed yet
        if tracker.min_time + self.s.join_after_ms + self.grace_ms >= tracker.stream_time:
            return
        now = self.context.current_system_time_ms()
        if now < tracker.next_time_to_emit:
            return
        tracker.next_time_to_emit = now
        tracker.advance_next_time_to_emit()
        tracker.min_time = 2**63 - 1
        prev_key: TimestampedKeyAndJoinSide | None = None
        left_open = right_open = False
        for kv in store.all():
            key: TimestampedKeyAndJoinSide = kv.key
            tracker.min_time = key.timestamp
            if left_open and right_open:
                break
            # left records look `after` ahead, right records `before`
            look_back = self.s.windows.after_ms if key.left_side else self.s.windows.before_ms
            if tracker.min_time + look_back + self.grace_ms >= tracker.stream_time:
                if key.left_side:
                    left_open = True
                else:
                    right_open = True
                continue
            this_value = kv.value.left_value if self.s.left_side else kv.value.right_value
            other_value = kv.value.right_value if self.s.left_side else kv.value.left_value
            self.context.forward(
                record.with_key(key.key)
                .with_value(self._join(key.key, this_value, other_value))
                .with_timestamp(key.timestamp)
            )
            if prev_key is not None and prev_key != key:
                store.put(prev_key, None)
            prev_key = key
        if prev_key is not None:
            store.put(prev_key, None)


def build_stream_stream_join(
    left: Any,
    right: Any,
    joiner: Joiner,
    windows: JoinWindows,
    stream_joined: Any,
    join_type: str,
    named: Any = None,
) -> Any:
    """Wire a windowed stream-stream join into the DSL graph; returns the joined ``KStream``."""
    from kspark.kstream.internals.stream_stream_join_wiring import wire_stream_stream_join

    return wire_stream_stream_join(left, right, joiner, windows, stream_joined, join_type, named)
