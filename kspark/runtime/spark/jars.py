"""The Spark Kafka connector's jars, and how to name them to a user.

The connector (``spark-sql-kafka-0-10``) is not part of the pyspark wheel.
kspark puts an explicit list of jars from its cache on ``spark.jars``
(resolved once from Maven Central by :mod:`kspark.jvm.jars`), rather than
``spark.jars.packages``, so a session starts offline and without Ivy.
"""

from __future__ import annotations

from pathlib import Path

from kspark.jvm.jars import BUNDLES, resolve_bundle

__all__ = [
    "CONNECTOR_BUNDLE",
    "CONNECTOR_CLASS",
    "connector_jars",
    "connector_package",
    "connector_version",
]

CONNECTOR_BUNDLE = "spark-kafka-connector"
CONNECTOR_CLASS = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
"""Loaded to check a session can read and write Kafka."""


def connector_version() -> str:
    """The Spark version the cached connector bundle is built for."""
    return BUNDLES[CONNECTOR_BUNDLE].version


def connector_package(spark_version: str | None = None) -> str:
    """The ``spark.jars.packages`` coordinate of the connector for a Spark version."""
    return f"org.apache.spark:spark-sql-kafka-0-10_2.13:{spark_version or connector_version()}"


def connector_jars() -> list[Path]:
    """Absolute paths of the connector jars, downloaded on first use."""
    return resolve_bundle(CONNECTOR_BUNDLE)
