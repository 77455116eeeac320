"""``KeyValue``: a key and a value, as Kafka Streams' ``KeyValue`` pair.

It is a 2-tuple as well, so ``k, v = kv`` and ``mapper`` functions that return
plain tuples work everywhere a ``KeyValue`` is expected.
"""

from __future__ import annotations

from typing import Any, Generic, NamedTuple, TypeVar

__all__ = ["KeyValue"]

K = TypeVar("K")
V = TypeVar("V")


class KeyValue(NamedTuple, Generic[K, V]):
    """An immutable (key, value) pair; ``KeyValue.pair(k, v)`` mirrors the Java factory."""

    key: K
    value: V

    @staticmethod
    def pair(key: Any, value: Any) -> KeyValue[Any, Any]:
        return KeyValue(key, value)

    def __repr__(self) -> str:
        return f"KeyValue({self.key!r}, {self.value!r})"
