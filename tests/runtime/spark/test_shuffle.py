"""Grouping keys of stateful stages: Spark's Murmur3 reproduced, one shuffle partition per task."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from kspark.runtime.spark.shuffle import SALT_BASE, spark_hash_int, task_grouping_key, task_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# `SELECT id, pmod(hash(CAST(id AS INT)), n) FROM range(8)` on Spark 4.2
SPARK_PMOD_4 = [3, 3, 2, 3, 2, 2, 1, 3]
SPARK_PMOD_2 = [1, 1, 0, 1, 0, 0, 1, 1]


def test_hash_matches_spark_vectors() -> None:
    assert [spark_hash_int(i) % 4 for i in range(8)] == SPARK_PMOD_4
    assert [spark_hash_int(i) % 2 for i in range(8)] == SPARK_PMOD_2


def test_bare_partition_numbers_collide_which_is_why_keys_are_salted() -> None:
    assert spark_hash_int(0) % 2 == spark_hash_int(1) % 2


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 16, 64])
def test_every_task_gets_its_own_shuffle_partition(n: int) -> None:
    keys = [task_grouping_key(p, n) for p in range(n)]
    assert [spark_hash_int(k) % n for k in keys] == list(range(n))
    assert [task_of(k) for k in keys] == list(range(n))


def test_keys_are_stable_and_bounded() -> None:
    assert task_grouping_key(5, 8) == task_grouping_key(5, 8)
    assert 5 * SALT_BASE <= task_grouping_key(5, 8) < 6 * SALT_BASE
    with pytest.raises(ValueError, match="partition"):
        task_grouping_key(-1, 2)
    with pytest.raises(ValueError, match="beyond"):
        task_grouping_key(1 << 15, 2)


@pytest.mark.integration
def test_spark_agrees(spark: SparkSession) -> None:
    values = [-7, 0, 1, 2, 65_536, 131_077, 2**31 - 1, -(2**31)]
    rows = spark.sql(
        "SELECT v, hash(v) AS h FROM VALUES " + ", ".join(f"(CAST({v} AS INT))" for v in values) + " AS t(v)"
    ).collect()
    assert {int(r["v"]): int(r["h"]) for r in rows} == {v: spark_hash_int(v) for v in values}
