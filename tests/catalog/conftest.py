"""Fixtures of the catalog's Spark tests: one :class:`~.spark.CatalogRunner` per test run (it writes
each scenario's inputs once for every configuration that runs it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kspark.dev.kafka import LocalKafka

from .spark import CatalogRunner


@pytest.fixture(scope="session")
def catalog_runner(kafka: LocalKafka, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> CatalogRunner:
    """Runs catalog cases on the run's broker and SparkSession."""
    return CatalogRunner(kafka, spark, Path(tmp_path_factory.mktemp("catalog-spark")))
