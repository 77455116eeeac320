"""``Suppressed`` and ``BufferConfig``: how ``KTable.suppress`` holds back updates.

Mirrors Kafka Streams' ``Suppressed`` and its buffer configs. A buffer config
is *strict* (never emits early: unbounded, or shuts the application down
when full) or *eager* (emits the oldest records early when full).
``Suppressed.until_window_closes`` needs a strict config, because an early
emit would not be a final result; Kafka enforces this with types, kspark with
a ``ValueError``.

``Suppressed.BufferConfig`` is the same class as :class:`BufferConfig`, so
Kafka's spelling ``Suppressed.BufferConfig.max_records(3)`` works as well.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from datetime import timedelta
from enum import Enum
from typing import ClassVar

from kspark.kstream.windows import _millis

__all__ = ["Suppressed", "BufferConfig", "BufferFullStrategy"]

# Kafka's Long.MAX_VALUE: "no bound"
UNBOUNDED = sys.maxsize


class BufferFullStrategy(Enum):
    """What a full suppression buffer does."""

    EMIT = "EMIT"
    SHUT_DOWN = "SHUT_DOWN"


@dataclass(frozen=True)
class BufferConfig:
    """Bounds of the suppression buffer and what happens when they are exceeded."""

    max_records_value: int = UNBOUNDED
    max_bytes_value: int = UNBOUNDED
    buffer_full_strategy: BufferFullStrategy = BufferFullStrategy.SHUT_DOWN
    # None: change-logging disabled; a dict: enabled with these topic configs
    log_config: dict[str, str] | None = field(default_factory=dict)

    @staticmethod
    def unbounded() -> BufferConfig:
        """A strict buffer without bounds (it never emits early)."""
        return BufferConfig()

    @staticmethod
    def max_records(record_limit: int) -> BufferConfig:
        """An eager buffer of at most ``record_limit`` keys; emits the oldest when full."""
        return BufferConfig(_limit(record_limit, "recordLimit"), UNBOUNDED, BufferFullStrategy.EMIT)

    @staticmethod
    def max_bytes(byte_limit: int) -> BufferConfig:
        """An eager buffer of at most ``byte_limit`` bytes; emits the oldest when full."""
        return BufferConfig(UNBOUNDED, _limit(byte_limit, "byteLimit"), BufferFullStrategy.EMIT)

    def with_max_records(self, record_limit: int) -> BufferConfig:
        return replace(self, max_records_value=_limit(record_limit, "recordLimit"))

    def with_max_bytes(self, byte_limit: int) -> BufferConfig:
        return replace(self, max_bytes_value=_limit(byte_limit, "byteLimit"))

    def with_no_bound(self) -> BufferConfig:
        return replace(
            self,
            max_records_value=UNBOUNDED,
            max_bytes_value=UNBOUNDED,
            buffer_full_strategy=BufferFullStrategy.SHUT_DOWN,
        )

    def shut_down_when_full(self) -> BufferConfig:
        return replace(self, buffer_full_strategy=BufferFullStrategy.SHUT_DOWN)

    def emit_early_when_full(self) -> BufferConfig:
        return replace(self, buffer_full_strategy=BufferFullStrategy.EMIT)

    def with_logging_disabled(self) -> BufferConfig:
        return replace(self, log_config=None)

    def with_logging_enabled(self, config: dict[str, str] | None = None) -> BufferConfig:
        return replace(self, log_config=dict(config or {}))

    def is_logging_enabled(self) -> bool:
        return self.log_config is not None

    def is_strict(self) -> bool:
        return self.buffer_full_strategy is BufferFullStrategy.SHUT_DOWN


def _limit(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")
    return value


# the module-level name under another name, for the annotations inside Suppressed (whose class
# attribute BufferConfig would shadow it there)
_BufferConfig = BufferConfig


class TimeDefinition(Enum):
    """Which time a buffered record is due by: its own timestamp or its window's end."""

    RECORD_TIME = "RECORD_TIME"
    WINDOW_END_TIME = "WINDOW_END_TIME"


@dataclass(frozen=True)
class Suppressed:
    """A suppression spec for ``KTable.suppress``; build it with the static factories.

    ``final_results``: ``until_window_closes`` (the wait is the upstream window's
    grace period, resolved when the topology is built). Otherwise
    ``time_to_wait_ms`` is the time limit of ``until_time_limit``.
    """

    name: str | None
    buffer_config: _BufferConfig
    final_results: bool
    time_to_wait_ms: int | None = None

    # Kafka's nested name (Suppressed.BufferConfig.unbounded() ...); not a dataclass field
    BufferConfig: ClassVar[type[_BufferConfig]] = _BufferConfig

    @staticmethod
    def until_window_closes(buffer_config: _BufferConfig | None = None) -> Suppressed:
        """Emit only the final result of each window, once stream time passes end + grace."""
        config = _BufferConfig.unbounded() if buffer_config is None else buffer_config
        if not isinstance(config, _BufferConfig):
            raise TypeError(f"buffer_config must be a BufferConfig, got {config!r}")
        if not config.is_strict():
            raise ValueError(
                "Suppressed.until_window_closes needs a strict buffer config "
                "(BufferConfig.unbounded() or ...shut_down_when_full()); emitting early "
                "would forward results that are not final"
            )
        return Suppressed(None, config, True, None)

    @staticmethod
    def until_time_limit(
        time_to_wait_for_more_events: int | timedelta, buffer_config: _BufferConfig | None = None
    ) -> Suppressed:
        """Emit the latest value of a key once stream time passes its first buffered time + limit."""
        wait = _millis(time_to_wait_for_more_events, "timeToWaitForMoreEvents")
        config = _BufferConfig.unbounded() if buffer_config is None else buffer_config
        if not isinstance(config, _BufferConfig):
            raise TypeError(f"buffer_config must be a BufferConfig, got {config!r}")
        return Suppressed(None, config, False, wait)

    def with_name(self, name: str) -> Suppressed:
        return replace(self, name=name)

    # Kafka's SuppressedInternal views
    def time_definition(self) -> TimeDefinition:
        return TimeDefinition.WINDOW_END_TIME if self.final_results else TimeDefinition.RECORD_TIME

    def safe_to_drop_tombstones(self) -> bool:
        return self.final_results
