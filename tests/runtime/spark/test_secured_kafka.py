"""A stateful application on Spark through each kind of secured listener (TLS, mutual TLS, SASL).

``LocalKafka(security=True)`` runs a broker with SASL_PLAINTEXT, SSL, MTLS and
SASL_SSL listeners (its own CA and certificates, one user with a random
password). The application is configured as a Kafka Streams user would,
with the Java client's names (``LocalKafka.client_settings``), and its
every client goes through the secured listener: the admin client, the direct
read of a stateless sub-topology and its global-store replica, Spark's Kafka source under a
native count,
the sink producers and, under exactly_once_v2, the transactional producers and
the marker reader. The test's own input and output go through PLAINTEXT.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kspark import Consumed, KafkaStreams, Produced, StreamsBuilder, Topology
from kspark.dev.kafka import LocalKafka
from kspark.errors import StreamsException
from kspark.serde import Serdes

pytestmark = [pytest.mark.integration, pytest.mark.slow]

pytest.importorskip("trustme")
pyspark_cloudpickle = pytest.importorskip("pyspark.cloudpickle")
pyspark_cloudpickle.register_pickle_by_value(sys.modules[__name__])

S = Serdes.String()
KEYS = [f"user-{i}" for i in range(7)]


@pytest.fixture(scope="module")
def secured() -> Iterator[LocalKafka]:
    with LocalKafka(security=True) as kafka:
        yield kafka


def _topology(src: str, mid: str, out: str) -> Topology:
    builder = StreamsBuilder()
    # Stateless (the direct read, with a global-store replica) into a topic, counted from there
    # (Spark's source, a native count).
    users = builder.global_table(f"{src}-users", Consumed.with_(S, S))
    builder.stream(src, Consumed.with_(S, S)).filter(lambda k, v: v != "drop").join(
        users, lambda k, v: k, lambda v, region: f"{v}@{region}"
    ).to(mid, Produced.with_(S, S))
    counts = builder.stream(mid, Consumed.with_(S, S)).group_by_key().count()
    counts.to_stream().to(out, Produced.with_(S, Serdes.Long()))
    return builder.build()


def _topics(kafka: LocalKafka, name: str) -> tuple[str, str, str]:
    topics = (f"{name}-in", f"{name}-mid", f"{name}-out")
    for topic in topics:
        kafka.create_topic(topic, partitions=2)
    kafka.create_topic(f"{name}-in-users", partitions=1)
    kafka.produce(f"{name}-in-users", [(k.encode(), b"eu", 1) for k in KEYS])
    return topics


@pytest.mark.parametrize(
    ("listener", "mechanism", "guarantee"),
    [
        # PLAIN and OAUTHBEARER: the same clients, another translation of the login (librdkafka's
        # side in tests/dev/test_local_kafka_security.py and tests/runtime/test_kafka_clients.py).
        ("SASL_PLAINTEXT", "SCRAM-SHA-256", "at_least_once"),
        ("SSL", None, "exactly_once_v2"),
        ("MTLS", None, "at_least_once"),
        ("SASL_SSL", "SCRAM-SHA-512", "exactly_once_v2"),
    ],
)
def test_a_stateful_application_runs_through_a_secured_listener(
    secured: LocalKafka, spark: Any, tmp_path: Path, listener: str, mechanism: str | None, guarantee: str
) -> None:
    name = f"{listener.lower()}-{(mechanism or 'tls').lower()}-{guarantee[:5]}".replace("_", "-")
    src, mid, out = _topics(secured, name)
    values = [(KEYS[i % len(KEYS)], "drop" if i % 5 == 0 else f"v{i}") for i in range(200)]
    secured.produce(src, [(k.encode(), v.encode(), 1_000 + i) for i, (k, v) in enumerate(values)])
    client = secured.client_settings(listener, **({"mechanism": mechanism} if mechanism else {}))
    config = {
        **client,
        "application.id": name,
        "state.dir": str(tmp_path / "state"),
        "processing.guarantee": guarantee,
    }
    assert config["bootstrap.servers"] != secured.bootstrap_servers  # not the PLAINTEXT listener
    app = KafkaStreams(_topology(src, mid, out), config, spark=spark)
    try:
        assert app.process_available() > 0
    finally:
        app.close()
    expected = Counter(k for k, v in values if v != "drop")
    latest: dict[str, int] = {}
    for record in secured.consume_all(out, read_committed=True):
        assert record.key is not None and record.value is not None
        latest[record.key.decode()] = int.from_bytes(record.value, "big", signed=True)
    assert latest == dict(expected)


def test_a_wrong_password_fails_fast_saying_authentication_failed(
    secured: LocalKafka, spark: Any, tmp_path: Path
) -> None:
    src, mid, out = _topics(secured, "wrong-password")
    config = {
        **secured.client_settings("SASL_SSL", mechanism="SCRAM-SHA-256", password="not-the-password"),
        "application.id": "wrong-password",
        "state.dir": str(tmp_path / "state"),
    }
    app = KafkaStreams(_topology(src, mid, out), config, spark=spark)
    started = time.monotonic()
    try:
        with pytest.raises(StreamsException, match=r"(?i)authentication failed") as info:
            app.process_available()
    finally:
        app.close()
    assert time.monotonic() - started < 30
    assert "not-the-password" not in str(info.value)
