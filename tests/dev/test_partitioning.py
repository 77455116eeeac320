"""Kafka's murmur2 partitioning, checked against Kafka's own test vectors."""

from __future__ import annotations

import pytest

from kspark.processor.internals.partitioning import default_partition, murmur2


def test_murmur2_matches_kafka_utils_test_vectors() -> None:
    # Values from Kafka's UtilsTest.testMurmur2.
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert murmur2(b"abc") == 479470107


def test_default_partition_is_positive_modulo() -> None:
    assert default_partition(b"21", 7) == (-973932308 & 0x7FFFFFFF) % 7
    assert {default_partition(f"k{i}".encode(), 3) for i in range(50)} == {0, 1, 2}
    with pytest.raises(ValueError, match="partitions"):
        default_partition(b"a", 0)
