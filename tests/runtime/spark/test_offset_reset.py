"""``consumer.auto.offset.reset=latest`` on Spark: a new application skips what its input held.

Kafka Streams starts a new application at its main consumer's ``auto.offset.reset``
(``earliest`` unless set). kspark gives it to both ways a query reads Kafka: its own direct read
(a stateless sub-topology) and Spark's Kafka source (here, a count), as ``startingOffsets``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kspark import Consumed, KafkaStreams, Produced, StreamsBuilder, Topology
from kspark.dev.kafka import LocalKafka
from kspark.serde import Serdes

pytestmark = [pytest.mark.integration, pytest.mark.slow]

S, L = Serdes.String(), Serdes.Long()


def _topology(src: str, copies: str, counts: str) -> Topology:
    b = StreamsBuilder()
    stream = b.stream(src, Consumed.with_(S, S))
    stream.map_values(str.upper).to(copies, Produced.with_(S, S))  # direct read
    stream.group_by_key().count().to_stream().to(counts, Produced.with_(S, L))  # Spark's source
    return b.build()


def test_latest_skips_the_records_before_the_start_on_both_kinds_of_read(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    pytest.importorskip("pyspark.cloudpickle").register_pickle_by_value(sys.modules[__name__])
    src, copies, counts = topic_factory("in", partitions=2), topic_factory("copies"), topic_factory("counts")
    kafka.produce(src, [(b"old", b"before", 1_000 + i, i % 2) for i in range(6)])
    config = {
        "application.id": f"reset-{src}",
        "bootstrap.servers": kafka.bootstrap_servers,
        "state.dir": str(tmp_path / "state"),
        "commit.interval.ms": 200,
        "consumer.auto.offset.reset": "latest",
    }
    app = KafkaStreams(_topology(src, copies, counts), config, spark=spark)
    app.start()
    try:
        # The queries take "latest" when they first run: new records go on until some come out.
        sent = 0
        deadline = time.monotonic() + 120
        while not kafka.consume_all(copies, timeout=30) or not kafka.consume_all(counts, timeout=30):
            assert time.monotonic() < deadline, "no output within 120 s"
            kafka.produce(src, [(b"new", b"after-%d" % sent, 10_000 + sent, sent % 2)])
            sent += 1
            time.sleep(0.5)
    finally:
        app.close()
    copied = [r.value for r in kafka.consume_all(copies, timeout=5)]
    assert copied and b"BEFORE" not in copied
    assert all(value.startswith(b"AFTER-") for value in copied)
    counted = [
        (r.key, L.deserializer().deserialize("", r.value)) for r in kafka.consume_all(counts, timeout=5)
    ]
    assert counted and all(key == b"new" for key, _ in counted)  # "old" was never counted
    assert max(count for _, count in counted) <= sent
