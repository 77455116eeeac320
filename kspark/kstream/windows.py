"""Window specifications of the DSL: tumbling/hopping, sliding, session and join windows.

These mirror Kafka Streams 4.0's ``TimeWindows``, ``SlidingWindows``,
``SessionWindows`` and ``JoinWindows`` (plus ``EmitStrategy``): immutable
values with Kafka's validation rules and messages. Durations are ``int``
milliseconds or ``datetime.timedelta``.

Grace: Kafka 4.0 has no implicit grace period any more (the old 24 h default
is gone with the deprecated factories). When the keyword form of
shared/API.md omits ``grace``, the grace period is 0 ms, the same as Kafka's
``...WithNoGrace`` factories. ``JoinWindows.of(size)`` follows this rule too
(Kafka's deprecated ``of`` used a 24 h default and disabled the left/outer
join spurious-result fix; kspark always enables it).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import timedelta
from enum import Enum
from typing import Any

from kspark.kstream.windowed import TimeWindow, Window

__all__ = [
    "Windows",
    "TimeWindows",
    "SlidingWindows",
    "SessionWindows",
    "JoinWindows",
    "EmitStrategy",
    "NO_GRACE_PERIOD",
]

NO_GRACE_PERIOD = 0

Duration = int | timedelta


def _millis(value: Any, name: str) -> int:
    """Kafka's ``ApiUtils.validateMillisecondDuration``: a duration as int milliseconds."""
    prefix = f'Invalid value for parameter "{name}" (value was: {value}). '
    if value is None:
        raise ValueError(prefix + "It shouldn't be null.")
    if isinstance(value, timedelta):
        return value // timedelta(milliseconds=1)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(prefix + "It must be a datetime.timedelta or int milliseconds.")
    return value


class Windows(ABC):
    """Fixed-size windows (tumbling, hopping) and join windows: Kafka's ``Windows``."""

    @abstractmethod
    def windows_for(self, timestamp: int) -> dict[int, Window]:
        """All windows containing ``timestamp``, keyed by their start time, in start order."""

    @abstractmethod
    def size(self) -> int:
        """The window size in milliseconds."""

    @abstractmethod
    def grace_period_ms(self) -> int:
        """How long after the window end out-of-order records are still accepted."""


class TimeWindows(Windows):
    """Tumbling (``advance`` None or equal to ``size``) or hopping time windows.

    Windows are aligned to the epoch: ``[n*advance, n*advance + size)``.
    """

    __slots__ = ("advance_ms", "grace_ms", "size_ms")

    def __init__(
        self, size: Duration, grace: Duration | None = None, advance: Duration | None = None
    ) -> None:
        size_ms = _millis(size, "size")
        advance_ms = size_ms if advance is None else _millis(advance, "advance")
        grace_ms = NO_GRACE_PERIOD if grace is None else _millis(grace, "afterWindowEnd")
        if size_ms <= 0:
            raise ValueError("Window size (sizeMs) must be larger than zero.")
        if advance_ms <= 0 or advance_ms > size_ms:
            raise ValueError(
                "Window advancement interval should be more than zero and less than window duration "
                f"which is {size_ms} ms, but given advancement interval is: {advance_ms} ms"
            )
        if grace_ms < 0:
            raise ValueError("Grace period must not be negative.")
        self.size_ms = size_ms
        self.advance_ms = advance_ms
        self.grace_ms = grace_ms

    @classmethod
    def of_size_with_no_grace(cls, size: Duration) -> TimeWindows:
        return cls(size=size, grace=NO_GRACE_PERIOD)

    @classmethod
    def of_size_and_grace(cls, size: Duration, after_window_end: Duration) -> TimeWindows:
        return cls(size=size, grace=after_window_end)

    def advance_by(self, advance: Duration) -> TimeWindows:
        """Hopping windows: a copy that advances by ``advance`` (0 < advance <= size)."""
        return TimeWindows(size=self.size_ms, grace=self.grace_ms, advance=_millis(advance, "advance"))

    def windows_for(self, timestamp: int) -> dict[int, Window]:
        # Java's integer division on a non-negative numerator equals Python's floor division.
        start = (max(0, timestamp - self.size_ms + self.advance_ms) // self.advance_ms) * self.advance_ms
        windows: dict[int, Window] = {}
        while start <= timestamp:
            windows[start] = TimeWindow(start, start + self.size_ms)
            start += self.advance_ms
        return windows

    def size(self) -> int:
        return self.size_ms

    def grace_period_ms(self) -> int:
        return self.grace_ms

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TimeWindows):
            return NotImplemented
        return (self.size_ms, self.advance_ms, self.grace_ms) == (
            other.size_ms,
            other.advance_ms,
            other.grace_ms,
        )

    def __hash__(self) -> int:
        return hash((TimeWindows, self.size_ms, self.advance_ms, self.grace_ms))

    def __repr__(self) -> str:
        return f"TimeWindows{{, sizeMs={self.size_ms}, advanceMs={self.advance_ms}, graceMs={self.grace_ms}}}"


class SlidingWindows:
    """Sliding windows of a fixed maximum time difference between records, both ends inclusive.

    A window is defined by the records it holds: ``[t - time_difference, t]``
    for each record time ``t`` and ``[t + 1, t + 1 + time_difference]`` right
    after it, created only when they are non-empty.
    """

    __slots__ = ("grace_ms", "time_difference_ms_value")

    def __init__(self, time_difference: Duration, grace: Duration | None = None) -> None:
        diff = _millis(time_difference, "timeDifference")
        grace_ms = NO_GRACE_PERIOD if grace is None else _millis(grace, "afterWindowEnd")
        if diff < 0:
            raise ValueError("Window time difference must not be negative.")
        if grace_ms < 0:
            raise ValueError("Window grace period must not be negative.")
        self.time_difference_ms_value = diff
        self.grace_ms = grace_ms

    @classmethod
    def of_time_difference_with_no_grace(cls, time_difference: Duration) -> SlidingWindows:
        return cls(time_difference=time_difference, grace=NO_GRACE_PERIOD)

    @classmethod
    def of_time_difference_and_grace(
        cls, time_difference: Duration, after_window_end: Duration
    ) -> SlidingWindows:
        return cls(time_difference=time_difference, grace=after_window_end)

    def time_difference_ms(self) -> int:
        return self.time_difference_ms_value

    def grace_period_ms(self) -> int:
        return self.grace_ms

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SlidingWindows):
            return NotImplemented
        return (self.time_difference_ms_value, self.grace_ms) == (
            other.time_difference_ms_value,
            other.grace_ms,
        )

    def __hash__(self) -> int:
        return hash((SlidingWindows, self.time_difference_ms_value, self.grace_ms))

    def __repr__(self) -> str:
        return f"SlidingWindows{{, sizeMs={self.time_difference_ms_value}, graceMs={self.grace_ms}}}"


class SessionWindows:
    """Session windows: records of a key closer than ``gap`` to each other form one session."""

    __slots__ = ("gap_ms", "grace_ms")

    def __init__(self, gap: Duration, grace: Duration | None = None) -> None:
        gap_ms = _millis(gap, "inactivityGap")
        grace_ms = NO_GRACE_PERIOD if grace is None else _millis(grace, "afterWindowEnd")
        if gap_ms <= 0:
            raise ValueError("Gap time cannot be zero or negative.")
        if grace_ms < 0:
            raise ValueError("Grace period must not be negative.")
        self.gap_ms = gap_ms
        self.grace_ms = grace_ms

    @classmethod
    def of_inactivity_gap_with_no_grace(cls, inactivity_gap: Duration) -> SessionWindows:
        return cls(gap=inactivity_gap, grace=NO_GRACE_PERIOD)

    @classmethod
    def of_inactivity_gap_and_grace(
        cls, inactivity_gap: Duration, after_window_end: Duration
    ) -> SessionWindows:
        return cls(gap=inactivity_gap, grace=after_window_end)

    with_inactivity_gap_and_grace = of_inactivity_gap_and_grace

    def inactivity_gap(self) -> int:
        return self.gap_ms

    def grace_period_ms(self) -> int:
        return self.grace_ms

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SessionWindows):
            return NotImplemented
        return (self.gap_ms, self.grace_ms) == (other.gap_ms, other.grace_ms)

    def __hash__(self) -> int:
        return hash((SessionWindows, self.gap_ms, self.grace_ms))

    def __repr__(self) -> str:
        return f"SessionWindows{{gapMs={self.gap_ms}, graceMs={self.grace_ms}}}"


class JoinWindows(Windows):
    """The time bounds of a stream-stream join.

    A left record at ``t`` joins right records in ``[t - before, t + after]``;
    ``before`` and ``after`` may differ (and one may be negative as long as
    ``before + after >= 0``).
    """

    __slots__ = ("after_ms", "before_ms", "grace_ms")

    def __init__(
        self, before: Duration, after: Duration | None = None, grace: Duration | None = None
    ) -> None:
        before_ms = _millis(before, "timeDifference")
        after_ms = before_ms if after is None else _millis(after, "timeDifference")
        grace_ms = NO_GRACE_PERIOD if grace is None else _millis(grace, "afterWindowEnd")
        if before_ms + after_ms < 0:
            raise ValueError("Window interval (ie, beforeMs+afterMs) must not be negative.")
        if grace_ms < 0:
            raise ValueError("Grace period must not be negative.")
        self.before_ms = before_ms
        self.after_ms = after_ms
        self.grace_ms = grace_ms

    @classmethod
    def of(cls, size: Duration, grace: Duration | None = None) -> JoinWindows:
        """Symmetric window of ``size`` each side; no grace unless given (see module doc)."""
        return cls(before=size, after=size, grace=grace)

    @classmethod
    def of_time_difference_and_grace(
        cls, time_difference: Duration, after_window_end: Duration
    ) -> JoinWindows:
        return cls(before=time_difference, after=time_difference, grace=after_window_end)

    @classmethod
    def of_time_difference_without_grace(cls, time_difference: Duration) -> JoinWindows:
        return cls(before=time_difference, after=time_difference, grace=NO_GRACE_PERIOD)

    of_time_difference_with_no_grace = of_time_difference_without_grace

    def before(self, time_difference: Duration) -> JoinWindows:
        """A copy whose lower bound is ``time_difference`` before the left record."""
        return JoinWindows(
            before=_millis(time_difference, "timeDifference"), after=self.after_ms, grace=self.grace_ms
        )

    def after(self, time_difference: Duration) -> JoinWindows:
        """A copy whose upper bound is ``time_difference`` after the left record."""
        return JoinWindows(
            before=self.before_ms, after=_millis(time_difference, "timeDifference"), grace=self.grace_ms
        )

    def windows_for(self, timestamp: int) -> dict[int, Window]:
        raise NotImplementedError("windowsFor() is not supported by JoinWindows.")

    def size(self) -> int:
        return self.before_ms + self.after_ms

    def grace_period_ms(self) -> int:
        return self.grace_ms

    def spurious_result_fix_enabled(self) -> bool:
        """Left/outer joins emit unmatched records only once the window closed (always on)."""
        return True

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JoinWindows):
            return NotImplemented
        return (self.before_ms, self.after_ms, self.grace_ms) == (
            other.before_ms,
            other.after_ms,
            other.grace_ms,
        )

    def __hash__(self) -> int:
        return hash((JoinWindows, self.before_ms, self.after_ms, self.grace_ms))

    def __repr__(self) -> str:
        return f"JoinWindows{{beforeMs={self.before_ms}, afterMs={self.after_ms}, graceMs={self.grace_ms}}}"


class EmitStrategy:
    """When a windowed aggregation emits: on every update (default) or once per closed window."""

    class StrategyType(Enum):
        ON_WINDOW_UPDATE = "ON_WINDOW_UPDATE"
        ON_WINDOW_CLOSE = "ON_WINDOW_CLOSE"

    __slots__ = ("_type",)

    def __init__(self, strategy_type: EmitStrategy.StrategyType) -> None:
        self._type = strategy_type

    @classmethod
    def on_window_update(cls) -> EmitStrategy:
        return cls(cls.StrategyType.ON_WINDOW_UPDATE)

    @classmethod
    def on_window_close(cls) -> EmitStrategy:
        return cls(cls.StrategyType.ON_WINDOW_CLOSE)

    def type(self) -> EmitStrategy.StrategyType:
        return self._type

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EmitStrategy) and other._type is self._type

    def __hash__(self) -> int:
        return hash(self._type)

    def __repr__(self) -> str:
        return f"EmitStrategy.{self._type.value.lower()}()"
