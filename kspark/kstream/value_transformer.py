"""``ValueTransformerWithKey``: the user function of ``KTable.transform_values``.

Kafka Streams' ``ValueTransformerWithKey``: a stateful value mapper that sees
the (read-only) key, may read and write the state stores it was connected to
and schedule punctuations, and returns the new value. It cannot forward
records itself (the framework forwards what ``transform`` returns, so the key
cannot change): its context's ``forward`` raises.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Generic, TypeVar

from kspark.processor.api import ProcessorContext

__all__ = ["ValueTransformerWithKey"]

K = TypeVar("K")
V = TypeVar("V")
VR = TypeVar("VR")


class ValueTransformerWithKey(ABC, Generic[K, V, VR]):
    """Maps ``(read_only_key, value)`` to a new value; ``value`` is ``None`` for a tombstone.

    A supplier (a zero-argument callable, such as the class itself) returns a new
    instance per task, as in Kafka Streams; ``init`` receives the task's context.
    """

    def init(self, context: ProcessorContext) -> None:
        """Called once before the first ``transform``; keep ``context`` to reach stores."""

    @abstractmethod
    def transform(self, read_only_key: K, value: V | None) -> VR | None:
        """The new value for ``read_only_key`` (``None``: a tombstone downstream)."""

    def close(self) -> None:
        """Called when the task closes."""
