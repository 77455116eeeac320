"""Punctuation schedules and queues, as Kafka Streams' ``PunctuationSchedule``/``PunctuationQueue``.

Stream-time schedules start aligned to 0 (first fire as soon as stream time is
known); wall-clock schedules start at ``now + interval``. A schedule fires
with the *current* time (not its due time), and after a gap of several
intervals the missed ones are skipped, the next due time staying aligned.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark.processor.api import Cancellable, PunctuationType, Punctuator
from kspark.processor.internals.java_compat import JavaPriorityQueue

__all__ = ["PunctuationSchedule", "PunctuationQueue"]


class _RepointableCancellable(Cancellable):
    def __init__(self) -> None:
        self.schedule: PunctuationSchedule | None = None

    def cancel(self) -> None:
        if self.schedule is not None:
            self.schedule.cancelled = True


class PunctuationSchedule:
    """One due time of a recurring punctuation of a node."""

    __slots__ = ("cancellable", "cancelled", "interval", "node", "punctuator", "timestamp")

    def __init__(
        self,
        node: Any,
        timestamp: int,
        interval: int,
        punctuator: Punctuator,
        cancellable: _RepointableCancellable | None = None,
    ) -> None:
        self.node = node
        self.timestamp = timestamp
        self.interval = interval
        self.punctuator = punctuator
        self.cancelled = False
        self.cancellable = cancellable or _RepointableCancellable()
        self.cancellable.schedule = self

    def next(self, current_timestamp: int) -> PunctuationSchedule:
        next_time = self.timestamp + self.interval
        if current_timestamp >= next_time:
            missed = (current_timestamp - self.timestamp) // self.interval
            next_time = self.timestamp + (missed + 1) * self.interval
        return PunctuationSchedule(self.node, next_time, self.interval, self.punctuator, self.cancellable)


class PunctuationQueue:
    """Schedules ordered by due time (ties as ``java.util.PriorityQueue`` breaks them)."""

    def __init__(self) -> None:
        self._pq: JavaPriorityQueue[PunctuationSchedule] = JavaPriorityQueue(
            lambda a, b: a.timestamp < b.timestamp
        )

    def schedule(self, sched: PunctuationSchedule) -> Cancellable:
        self._pq.offer(sched)
        return sched.cancellable

    def close(self) -> None:
        self._pq.clear()

    def may_punctuate(
        self,
        timestamp: int,
        punctuation_type: PunctuationType,
        punctuate: Callable[[Any, int, PunctuationType, Punctuator], None],
    ) -> bool:
        """Fire every schedule due at ``timestamp``; True if any fired."""
        punctuated = False
        top = self._pq.peek()
        while top is not None and top.timestamp <= timestamp:
            sched = top
            self._pq.poll()
            if not sched.cancelled:
                punctuate(sched.node, timestamp, punctuation_type, sched.punctuator)
                # the punctuator may cancel its own schedule
                if not sched.cancelled:
                    self._pq.offer(sched.next(timestamp))
                punctuated = True
            top = self._pq.peek()
        return punctuated

    def can_punctuate(self, timestamp: int) -> bool:
        top = self._pq.peek()
        while top is not None and top.timestamp <= timestamp:
            if not top.cancelled:
                return True
            self._pq.poll()
            top = self._pq.peek()
        return False

    def next_due(self) -> int | None:
        """When the earliest live schedule is due (None if there is none)."""
        live = [s.timestamp for s in self._pq if not s.cancelled]
        return min(live) if live else None

    def due_times(self) -> list[tuple[str, int, int]]:
        """(node name, interval, next due time) of every live schedule, sorted."""
        return sorted((s.node.name, s.interval, s.timestamp) for s in self._pq if not s.cancelled)

    def restore_due_times(self, due_times: list[tuple[str, int, int]]) -> None:
        """Move live schedules to the due times :meth:`due_times` gave for another instance of this task.

        Schedules are matched by node and interval (in due-time order when a
        node has several with one interval); a schedule with no counterpart
        keeps its own due time.
        """
        wanted: dict[tuple[str, int], list[int]] = {}
        for name, interval, due in sorted(due_times):
            wanted.setdefault((name, interval), []).append(due)
        live = sorted(
            (s for s in self._pq if not s.cancelled), key=lambda s: (s.node.name, s.interval, s.timestamp)
        )
        for sched in live:
            dues = wanted.get((sched.node.name, sched.interval))
            if dues:
                sched.timestamp = dues.pop(0)
        self._pq.clear()
        for sched in live:
            self._pq.offer(sched)

    def __len__(self) -> int:
        return sum(1 for s in self._pq if not s.cancelled)
