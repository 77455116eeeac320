"""Exceptions raised by kspark's developer tooling (JVM bundles, local Kafka).

Each names what went wrong and what to do about it, because the usual reader
is someone on a fresh machine running ``./dev test`` for the first time.
"""

from __future__ import annotations

__all__ = [
    "DevToolsError",
    "JavaNotFoundError",
    "ArtifactResolutionError",
    "KafkaStartError",
    "PortInUseError",
]


class DevToolsError(RuntimeError):
    """Base class of every error raised by :mod:`kspark.dev`."""


class JavaNotFoundError(DevToolsError):
    """No usable ``java`` executable: kspark's JVM parts need Java 17+."""


class ArtifactResolutionError(DevToolsError):
    """A JVM bundle (or Maven itself) could not be downloaded or verified."""


class KafkaStartError(DevToolsError):
    """The local Kafka broker did not come up; the message carries its log tail."""


class PortInUseError(KafkaStartError):
    """A fixed port requested for the local broker is already taken."""
