"""Shared fixtures: one real Kafka broker and one SparkSession per test run.

Both start lazily, only when a test asks for them, so a unit-test run starts
no JVM. Tests that use them are marked ``integration``.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest

from kspark.dev.kafka import LocalKafka

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__: list[str] = []


@pytest.fixture(scope="session")
def kafka() -> Iterator[LocalKafka]:
    """A local Apache Kafka broker shared by the whole run."""
    with LocalKafka() as broker:
        yield broker


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The run's SparkSession, made by kspark's own factory."""
    from kspark.runtime.spark.session import create_spark_session
    from tests.spark_conf import TEST_SPARK_CONF

    session = create_spark_session(TEST_SPARK_CONF)
    yield session
    session.stop()


_topic_counter = itertools.count()


@pytest.fixture
def topic_factory(kafka: LocalKafka, request: pytest.FixtureRequest) -> Callable[..., str]:
    """Create a topic whose name is unique in the run: ``topic_factory("in", partitions=4)``.

    Tests share one broker, so names carry the test's name and a counter.
    """

    def make(prefix: str = "t", partitions: int = 1, config: dict[str, str] | None = None) -> str:
        test = re.sub(r"[^A-Za-z0-9._-]", "-", request.node.name)[:80]
        name = f"{prefix}-{test}-{next(_topic_counter)}"
        kafka.create_topic(name, partitions=partitions, config=config)
        return name

    return make


@pytest.fixture(scope="session")
def schema_registry() -> Iterator[str]:
    """The URL of a real Confluent-compatible Schema Registry shared by the run.

    Apicurio Registry's Confluent API (tests/serde/apicurio.py builds it from
    Maven Central once and starts it in ~6 s), or the registry at
    ``KSPARK_SCHEMA_REGISTRY_URL`` when that is set.
    """
    given = os.environ.get("KSPARK_SCHEMA_REGISTRY_URL")
    if given:
        yield given
        return
    from tests.serde.apicurio import ApicurioRegistry

    with ApicurioRegistry() as registry:
        yield registry.url
