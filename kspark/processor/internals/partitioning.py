"""Kafka's default partitioning for keyed records: ``murmur2(key) & 0x7fffffff % partitions``.

The Java producer (and so Kafka Streams) places a keyed record this way;
kspark's Spark sink gets the same placement from librdkafka's
``murmur2_random`` partitioner. Tests and the demo use this to produce
input where Kafka Streams would put it and to predict output placement.
"""

from __future__ import annotations

__all__ = ["murmur2", "default_partition"]

_M = 0x5BD1E995
_SEED = 0x9747B28C


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: a signed 32-bit hash of ``data``."""
    h = (_SEED ^ len(data)) & 0xFFFFFFFF
    for i in range(len(data) // 4):
        k = int.from_bytes(data[i * 4 : i * 4 + 4], "little")
        k = (k * _M) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * _M) & 0xFFFFFFFF
        h = ((h * _M) & 0xFFFFFFFF) ^ k
    tail, rem = len(data) & ~3, len(data) % 4
    if rem == 3:
        h ^= data[tail + 2] << 16
    if rem >= 2:
        h ^= data[tail + 1] << 8
    if rem >= 1:
        h ^= data[tail]
        h = (h * _M) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * _M) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def default_partition(key: bytes, partitions: int) -> int:
    """The partition the Java producer's default partitioner gives a non-null ``key``."""
    if partitions < 1:
        raise ValueError(f"partitions must be >= 1, got {partitions}")
    return (murmur2(key) & 0x7FFFFFFF) % partitions
