"""Java behaviour we reproduce: String.hashCode, HashSet iteration order, PriorityQueue ties."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kspark.processor.internals.java_compat import JavaPriorityQueue, java_hash_order, java_string_hash


def test_string_hash_matches_java() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == -(2**31)


def test_hash_order_is_bucket_order_with_insertion_order_for_collisions() -> None:
    assert java_hash_order(["BB", "Aa"]) == ["BB", "Aa"]
    assert java_hash_order(["Aa", "BB"]) == ["Aa", "BB"]
    assert java_hash_order(["b", "a"]) == ["a", "b"]


@given(st.lists(st.integers(0, 5), max_size=40))
def test_priority_queue_is_a_min_queue(values: list[int]) -> None:
    q: JavaPriorityQueue[int] = JavaPriorityQueue(lambda a, b: a < b)
    for v in values:
        q.offer(v)
    out = []
    while len(q):
        out.append(q.poll())
    assert out == sorted(values)


def test_priority_queue_ties_follow_java_heap_not_fifo() -> None:
    # java.util.PriorityQueue: offer a,b,c (equal) then poll -> a, then c (moved to root), then b
    q: JavaPriorityQueue[tuple[int, str]] = JavaPriorityQueue(lambda a, b: a[0] < b[0])
    for item in [(1, "a"), (1, "b"), (1, "c")]:
        q.offer(item)
    assert [q.poll(), q.poll(), q.poll()] == [(1, "a"), (1, "c"), (1, "b")]
