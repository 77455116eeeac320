"""``Window`` and ``Windowed``: the key type of every windowed result.

Times are epoch milliseconds. A time window is half-open ``[start, end)``; a
session window is closed ``[start, end]`` (Kafka Streams' ``SessionWindow``),
which is why ``overlap`` is defined per kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Window", "TimeWindow", "SessionWindow", "Windowed"]

K = TypeVar("K")


@dataclass(frozen=True, eq=False)
class Window:
    """A window of event time: ``start`` and ``end`` in epoch milliseconds.

    Equality and order look at ``(start, end)`` only, so a user's
    ``Window(0, 5000)`` equals the ``TimeWindow`` a windowed aggregation makes.
    """

    start: int
    end: int

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Window):
            return NotImplemented
        return (self.start, self.end) == (other.start, other.end)

    def __hash__(self) -> int:
        return hash((self.start, self.end))

    def __lt__(self, other: Window) -> bool:
        return (self.start, self.end) < (other.start, other.end)

    def __post_init__(self) -> None:
        if self.start < 0:
            raise ValueError(f"Window start time cannot be negative: {self.start}")
        if self.end < self.start:
            raise ValueError(f"Window end time {self.end} cannot be smaller than start time {self.start}")

    def start_time(self) -> int:
        return self.start

    def end_time(self) -> int:
        return self.end

    def overlap(self, other: Window) -> bool:
        """Whether the two windows share any point in time (half-open windows)."""
        return self.start < other.end and other.start < self.end

    def __repr__(self) -> str:
        return f"Window{{startMs={self.start}, endMs={self.end}}}"


@dataclass(frozen=True, eq=False, repr=False)
class TimeWindow(Window):
    """A half-open window ``[start, end)`` of tumbling, hopping and sliding windows."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.end == self.start:
            raise ValueError(f"Window end time {self.end} must be greater than start time {self.start}")


@dataclass(frozen=True, eq=False, repr=False)
class SessionWindow(Window):
    """A closed window ``[start, end]`` of a session; a single record gives ``start == end``."""

    def overlap(self, other: Window) -> bool:
        return not (other.end < self.start or self.end < other.start)


@dataclass(frozen=True, repr=False)
class Windowed(Generic[K]):
    """A record key together with the window it belongs to."""

    key: K
    window: Window

    def __repr__(self) -> str:
        return f"[{self.key}@{self.window.start}/{self.window.end}]"
