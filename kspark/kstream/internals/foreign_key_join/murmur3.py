"""MurmurHash3 x64 128-bit, as Kafka Streams' ``Murmur3.hash128`` (seed 104729), through mmh3.

A foreign-key join stamps every subscription with the hash of the left
value it was made from and drops a response whose hash no longer matches
the left table's current value (a stale response). The hash travels in the
internal topics, so it is Kafka's exactly: two signed 64-bit longs, which is
what ``mmh3.hash64`` returns for the x64 variant (tests/kstream/
test_foreign_key_join.py checks hashes Kafka 4.1.1 printed).
"""

from __future__ import annotations

import mmh3

__all__ = ["hash128", "DEFAULT_SEED"]

DEFAULT_SEED = 104729


def hash128(data: bytes, seed: int = DEFAULT_SEED) -> tuple[int, int]:
    """The two (signed) longs of ``Murmur3.hash128(data)``."""
    return mmh3.hash64(data, seed=seed, x64arch=True, signed=True)
