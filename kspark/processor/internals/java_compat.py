"""Java collection behaviour that Kafka Streams' observable output depends on.

Two places in Kafka Streams leak the iteration order of Java collections into
what users see: ``TopologyDescription`` prints sets that were ``HashSet``s
(topics of a source, stores of a processor) and computes node sizes while
walking a ``HashMap``; and ``java.util.PriorityQueue`` (a binary heap) decides
which of two equally-timestamped partitions or punctuations goes first. To
print and process exactly as Kafka Streams does we reproduce both here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

__all__ = ["java_string_hash", "java_hash_order", "JavaPriorityQueue"]

T = TypeVar("T")


def java_string_hash(s: str) -> int:
    """``String.hashCode()``: 31-polynomial over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _table_size_for(cap: int) -> int:
    n = 1
    while n < cap:
        n <<= 1
    return n


def java_hash_order(items: Iterable[str], initial_capacity: int = 16) -> list[str]:
    """The iteration order of a ``HashSet``/``HashMap`` into which ``items`` were added in order.

    ``initial_capacity`` mirrors the constructor used (16 by default; a copy
    constructor ``new HashSet<>(c)`` uses ``max(len(c) / .75 + 1, 16)``).
    Duplicates keep their first position. Resizing splits buckets keeping the
    relative insertion order, so the final order is a stable sort by bucket
    index in the final table (treeified buckets of 8+ colliding names are not
    modelled).
    """
    unique = list(dict.fromkeys(items))
    cap = _table_size_for(max(initial_capacity, 1))
    while len(unique) > cap * 0.75:
        cap <<= 1

    def bucket(s: str) -> int:
        h = java_string_hash(s) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (cap - 1)

    return sorted(unique, key=bucket)


def java_hash_set_copy_order(items: list[str]) -> list[str]:
    """Order of ``new HashSet<>(collection)``."""
    return java_hash_order(items, max(int(len(items) / 0.75) + 1, 16))


class JavaPriorityQueue(Generic[T]):
    """A binary min-heap with ``java.util.PriorityQueue``'s exact sift rules.

    Python's ``heapq`` uses different sift-down rules, so items that compare
    equal would come out in another order than in Kafka Streams.
    """

    def __init__(self, less: Callable[[T, T], bool]) -> None:
        self._q: list[T] = []
        self._less = less

    def __len__(self) -> int:
        return len(self._q)

    def __iter__(self) -> Iterator[T]:
        return iter(self._q)

    def peek(self) -> T | None:
        return self._q[0] if self._q else None

    def offer(self, item: T) -> None:
        q = self._q
        q.append(item)
        k = len(q) - 1
        while k > 0:
            parent = (k - 1) >> 1
            e = q[parent]
            # Java: if (key.compareTo(e) >= 0) break;
            if not self._less(item, e):
                break
            q[k] = e
            k = parent
        q[k] = item

    def poll(self) -> T | None:
        q = self._q
        if not q:
            return None
        result = q[0]
        last = q.pop()
        if q:
            self._sift_down(0, last)
        return result

    def remove_if(self, pred: Callable[[T], bool]) -> None:
        kept = [x for x in self._q if not pred(x)]
        self._q = []
        for x in kept:
            self.offer(x)

    def clear(self) -> None:
        self._q.clear()

    def _sift_down(self, k: int, item: T) -> None:
        q = self._q
        n = len(q)
        half = n >> 1
        while k < half:
            child = 2 * k + 1
            c = q[child]
            right = child + 1
            # Java: if (right < n && c.compareTo(es[right]) > 0) c = es[child = right];
            if right < n and self._less(q[right], c):
                child = right
                c = q[child]
            # Java: if (key.compareTo(c) <= 0) break;
            if not self._less(c, item):
                break
            q[k] = c
            k = child
        q[k] = item
