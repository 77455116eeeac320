"""Avro values with a real Schema Registry on the Spark runner, checked against the TopologyTestDriver.

The serdes are configured with the application's config and pickled to
Spark's Python workers, which make their own registry client: the registry
must be a real one (the ``schema_registry`` fixture), since confluent-kafka's
``mock://`` registry lives in one process only.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kspark import Consumed, KafkaStreams, Produced, StreamsBuilder, Topology
from kspark.dev.kafka import LocalKafka
from kspark.serde import Serdes
from kspark.serde.schema_registry import GenericAvroSerde, SpecificAvroSerde
from kspark.testing import TopologyTestDriver

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# Spark's Python workers cannot import this test module: its functions travel by value.
pyspark_cloudpickle = pytest.importorskip("pyspark.cloudpickle")
pyspark_cloudpickle.register_pickle_by_value(sys.modules[__name__])

S = Serdes.String()
PAGE_VIEW = json.dumps(
    {
        "type": "record",
        "name": "PageView",
        "namespace": "io.kspark.test",
        "fields": [
            {"name": "user", "type": "string"},
            {"name": "page", "type": "string"},
            {"name": "millis", "type": "long"},
        ],
    }
)
SLOW_VIEW = json.dumps(
    {
        "type": "record",
        "name": "SlowView",
        "namespace": "io.kspark.test",
        "fields": [
            {"name": "page", "type": "string"},
            {"name": "seconds", "type": "double"},
            {"name": "note", "type": ["null", "string"], "default": None},
        ],
    }
)


def _topology(src: str, dst: str, config: dict[str, Any]) -> Topology:
    b = StreamsBuilder()
    (
        b.stream(src, Consumed.with_(S, GenericAvroSerde(config)))
        .filter(lambda user, view: view["millis"] >= 1000)
        .map_values(lambda view: {"page": view["page"], "seconds": view["millis"] / 1000})
        .to(dst, Produced.with_(S, SpecificAvroSerde(SLOW_VIEW, config)))
    )
    return b.build()


def test_avro_in_and_out_through_a_real_registry_matches_the_driver(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path, schema_registry: str
) -> None:
    src, dst = topic_factory("views", partitions=2), topic_factory("slow", partitions=2)
    config = {
        "application.id": "avro-views",
        "bootstrap.servers": kafka.bootstrap_servers,
        "state.dir": str(tmp_path / "state"),
        "schema.registry.url": schema_registry,
    }
    views: list[tuple[str, dict[str, Any]]] = [
        (f"u{i % 7}", {"user": f"u{i % 7}", "page": f"/p{i % 5}", "millis": (i * 137) % 3000})
        for i in range(200)
    ]
    writer = GenericAvroSerde(config, schema=PAGE_VIEW).serializer()
    kafka.produce(src, [(k.encode(), writer.serialize(src, v), 1000 + i) for i, (k, v) in enumerate(views)])

    app = KafkaStreams(_topology(src, dst, config), config, spark=spark)
    try:
        assert app.process_available() == len(views)
    finally:
        app.close()

    expected = sum(1 for _, v in views if v["millis"] >= 1000)
    got = kafka.consume_all(dst, min_records=expected)
    reader = GenericAvroSerde(config).deserializer()
    actual = [((r.key or b"").decode(), reader.deserialize(dst, r.value), r.timestamp) for r in got]
    assert len(actual) == expected

    with TopologyTestDriver(_topology(src, dst, config), config) as d:
        inp = d.create_input_topic(src, S.serializer(), writer)
        for i, (k, v) in enumerate(views):
            inp.pipe_input(k, v, timestamp=1000 + i)
        out = d.create_output_topic(dst, S, GenericAvroSerde(config))
        reference = [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]
    # Records of a key keep their order (a key's records share a partition).
    assert sorted(actual, key=lambda r: (r[0], r[2])) == sorted(reference, key=lambda r: (r[0], r[2]))
    assert reference[0][1] == {
        "page": reference[0][1]["page"],
        "seconds": reference[0][1]["seconds"],
        "note": None,
    }
