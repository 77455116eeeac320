"""Exceptions raised by kspark's developer tooling (the local Kafka broker).

Each names what went wrong and what to do about it, because the usual reader
is someone on a fresh machine running ``./dev test`` for the first time.
Finding Java and resolving jars raise :mod:`kspark.jvm.errors`' exceptions.
"""

from __future__ import annotations

__all__ = ["DevToolsError", "KafkaStartError", "PortInUseError"]


class DevToolsError(RuntimeError):
    """Base class of every error raised by :mod:`kspark.dev`."""


class KafkaStartError(DevToolsError):
    """The local Kafka broker did not come up; the message carries its log tail."""


class PortInUseError(KafkaStartError):
    """A fixed port requested for the local broker is already taken."""
