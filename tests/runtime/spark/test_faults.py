"""Faults an operator meets: an input or repartition topic deleted under a running application."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kspark import Consumed, Grouped, KafkaStreams, Produced, StreamsBuilder
from kspark.dev.kafka import LocalKafka
from kspark.kafka_streams import StreamsUncaughtExceptionHandler
from kspark.serde import Serdes

pytestmark = [pytest.mark.integration, pytest.mark.slow]

pyspark_cloudpickle = pytest.importorskip("pyspark.cloudpickle")
pyspark_cloudpickle.register_pickle_by_value(sys.modules[__name__])

S = Serdes.String()


def test_an_input_topic_deleted_while_running_fails_the_application_naming_it(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    """Through Spark's source, whose consumer says only "does not host this topic-partition" (the
    direct read's error goes through the same explanation: failures.py, ``explained``)."""
    src, dst = topic_factory("doomed", partitions=2), topic_factory("survivor", partitions=2)
    b = StreamsBuilder()
    counts = b.stream(src, Consumed.with_(S, S)).group_by_key().count()
    counts.to_stream().to(dst, Produced.with_(S, Serdes.Long()))
    config = {
        "application.id": f"faults-{src}",
        "bootstrap.servers": kafka.bootstrap_servers,
        "state.dir": str(tmp_path / "state"),
    }
    app = KafkaStreams(b.build(), config, spark=spark)
    errors: list[BaseException] = []
    app.set_uncaught_exception_handler(
        lambda e: (errors.append(e), StreamsUncaughtExceptionHandler.SHUTDOWN_CLIENT)[1]
    )
    kafka.produce(src, [(b"k", b"v", 1_000)])
    app.start()
    try:
        kafka.consume_all(dst, min_records=1, timeout=90)
        kafka.delete_topic(src)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and app.state() is not KafkaStreams.State.ERROR:
            time.sleep(0.5)
        assert app.state() is KafkaStreams.State.ERROR
    finally:
        app.close()
    assert errors and f"its input topics ['{src}'] no longer exist" in str(errors[0]), errors


def test_a_repartition_topic_deleted_while_running_fails_the_application_naming_it(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    """The query that reads the repartition topic, or the one that writes it, fails; either error
    names the topic (kspark creates repartition topics only at start, as Kafka Streams does)."""
    src, dst = topic_factory("events", partitions=2), topic_factory("by-value", partitions=2)
    app_id = f"faults-{src}"
    b = StreamsBuilder()
    counts = b.stream(src, Consumed.with_(S, S)).group_by(lambda k, v: v, Grouped.with_(S, S)).count()
    counts.to_stream().to(dst, Produced.with_(S, Serdes.Long()))
    config = {
        "application.id": app_id,
        "bootstrap.servers": kafka.bootstrap_servers,
        "state.dir": str(tmp_path / "state"),
    }
    app = KafkaStreams(b.build(), config, spark=spark)
    errors: list[BaseException] = []
    app.set_uncaught_exception_handler(
        lambda e: (errors.append(e), StreamsUncaughtExceptionHandler.SHUTDOWN_CLIENT)[1]
    )
    kafka.produce(src, [(b"k", b"v", 1_000)])
    app.start()
    try:
        kafka.consume_all(dst, min_records=1, timeout=90)
        [repartition] = [
            t
            for t in kafka.admin().list_topics().topics
            if t.startswith(app_id) and t.endswith("-repartition")
        ]
        kafka.delete_topic(repartition)
        for i in range(20):
            kafka.produce(src, [(b"k", b"w%d" % i, 2_000 + i)])
            time.sleep(0.5)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and app.state() is not KafkaStreams.State.ERROR:
            time.sleep(0.5)
        assert app.state() is KafkaStreams.State.ERROR
    finally:
        app.close()
    assert errors and repartition in str(errors[0]), errors


def test_a_query_stopped_under_the_application_fails_it_instead_of_leaving_it_waiting(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    """Spark's queries stopped by someone else (what Spark's shutdown does when spark-submit's JVM
    is signalled: test_standalone_cluster.py): the application goes to ERROR, the handler says
    why, and the state listener hears it."""
    src, dst = topic_factory("stopped-in", partitions=1), topic_factory("stopped-out", partitions=1)
    b = StreamsBuilder()
    b.stream(src, Consumed.with_(S, S)).map_values(str.upper).to(dst, Produced.with_(S, S))
    config = {
        "application.id": f"faults-{src}",
        "bootstrap.servers": kafka.bootstrap_servers,
        "state.dir": str(tmp_path / "state"),
    }
    app = KafkaStreams(b.build(), config, spark=spark)
    errors: list[BaseException] = []
    states: list[KafkaStreams.State] = []
    app.set_uncaught_exception_handler(
        lambda e: (errors.append(e), StreamsUncaughtExceptionHandler.SHUTDOWN_CLIENT)[1]
    )
    app.set_state_listener(lambda new, old: states.append(new))
    kafka.produce(src, [(b"k", b"v", 1_000)])
    app.start()
    try:
        kafka.consume_all(dst, min_records=1, timeout=90)
        name = app.physical_plan().queries[0].name
        (query,) = [q for q in spark.streams.active if q.name == name]
        query.stop()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and app.state() is not KafkaStreams.State.ERROR:
            time.sleep(0.2)
        assert app.state() is KafkaStreams.State.ERROR
        assert states[-1] is KafkaStreams.State.ERROR
    finally:
        app.close()
    assert len(errors) == 1 and "stopped without an error while the application ran" in str(errors[0]), errors
