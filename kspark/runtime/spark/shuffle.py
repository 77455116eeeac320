"""Grouping keys that give every Kafka Streams task of a stateful stage its own Spark shuffle partition.

A stateful stage groups its input by task (the input partition number) and
Spark hash-partitions the groups over ``spark.sql.shuffle.partitions`` with
Murmur3 (seed 42). Grouped by the bare partition number, tasks collide:
``pmod(hash(0), 2) == pmod(hash(1), 2) == 1`` and with 4 shuffle partitions
both land in partition 3, so a two-partition topology ran all its state on
one core. Instead each task ``p`` is grouped under ``p * SALT_BASE + s``,
with the smallest salt ``s`` that hashes the key to shuffle partition
``p mod n``; the runner runs the stage with ``n`` = its task count, so task
``p`` is Spark task ``p``. The salt depends only on ``(p, n)``, so the
grouping key -- under which Spark keeps the task's state -- is the same on
every restart from the checkpoint (which also keeps ``n``).
"""

from __future__ import annotations

__all__ = ["SALT_BASE", "spark_hash_int", "task_grouping_key", "task_of"]

SALT_BASE = 1 << 16
"""Keys of task ``p`` lie in ``[p * SALT_BASE, (p + 1) * SALT_BASE)``."""

_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def spark_hash_int(value: int, seed: int = 42) -> int:
    """Spark's ``hash()`` of an ``int`` column value (``Murmur3_x86_32.hashInt``), as a signed 32-bit int."""
    k1 = (value & _M32) * 0xCC9E2D51 & _M32
    k1 = _rotl(k1, 15) * 0x1B873593 & _M32
    h1 = (seed & _M32) ^ k1
    h1 = (_rotl(h1, 13) * 5 + 0xE6546B64) & _M32
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _M32
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _M32
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def task_grouping_key(partition: int, shuffle_partitions: int) -> int:
    """The grouping key of task ``partition`` when the stage has ``shuffle_partitions`` partitions."""
    if partition < 0 or shuffle_partitions < 1:
        raise ValueError(
            f"partition must be >= 0 and shuffle partitions >= 1, got {partition}, {shuffle_partitions}"
        )
    if (partition + 1) * SALT_BASE > 2**31:
        raise ValueError(f"partition {partition} is beyond what an int grouping key can hold")
    want = partition % shuffle_partitions
    base = partition * SALT_BASE
    for salt in range(SALT_BASE):
        if spark_hash_int(base + salt) % shuffle_partitions == want:
            return base + salt
    # Murmur3 spreads consecutive ints evenly; 65,536 misses in a row do not happen for n < 65,536.
    raise ValueError(f"no grouping key for partition {partition} lands in shuffle partition {want}")


def task_of(grouping_key: int) -> int:
    """The task's partition number from its grouping key."""
    return grouping_key // SALT_BASE
