"""MurmurHash3 x64 128-bit, as Kafka Streams' ``Murmur3.hash128`` (seed 104729).

A foreign-key join stamps every subscription with the hash of the left
value it was made from and drops a response whose hash no longer matches
the left table's current value (a stale response). The hash travels in the
internal topics, so it is computed exactly as Kafka does: two signed 64-bit
longs.
"""

from __future__ import annotations

__all__ = ["hash128", "DEFAULT_SEED"]

DEFAULT_SEED = 104729
_MASK = (1 << 64) - 1
_C1 = 0x87C37B91114253D5
_C2 = 0x4CF5AD432745937F


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK


def _fmix(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & _MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & _MASK
    h ^= h >> 33
    return h


def _signed(x: int) -> int:
    return x - (1 << 64) if x >= 1 << 63 else x


def _mix_k1(k1: int) -> int:
    return (_rotl((k1 * _C1) & _MASK, 31) * _C2) & _MASK


def _mix_k2(k2: int) -> int:
    return (_rotl((k2 * _C2) & _MASK, 33) * _C1) & _MASK


def hash128(data: bytes, seed: int = DEFAULT_SEED) -> tuple[int, int]:
    """The two (signed) longs of ``Murmur3.hash128(data)``."""
    length = len(data)
    h1 = h2 = seed & _MASK
    nblocks = length >> 4
    for i in range(nblocks):
        k1 = int.from_bytes(data[i * 16 : i * 16 + 8], "little")
        k2 = int.from_bytes(data[i * 16 + 8 : i * 16 + 16], "little")
        h1 ^= _mix_k1(k1)
        h1 = (_rotl(h1, 27) + h2) & _MASK
        h1 = (h1 * 5 + 0x52DCE729) & _MASK
        h2 ^= _mix_k2(k2)
        h2 = (_rotl(h2, 31) + h1) & _MASK
        h2 = (h2 * 5 + 0x38495AB5) & _MASK
    tail = data[nblocks * 16 :]
    if len(tail) > 8:
        h2 ^= _mix_k2(int.from_bytes(tail[8:], "little"))
    if tail:
        h1 ^= _mix_k1(int.from_bytes(tail[:8], "little"))
    h1 ^= length
    h2 ^= length
    h1 = (h1 + h2) & _MASK
    h2 = (h2 + h1) & _MASK
    h1 = _fmix(h1)
    h2 = _fmix(h2)
    h1 = (h1 + h2) & _MASK
    h2 = (h2 + h1) & _MASK
    return _signed(h1), _signed(h2)
