"""LocalKafka against a real broker: data round trips, transactions, errors, clean stop."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kspark.dev import LocalKafka
from kspark.dev.errors import KafkaStartError, PortInUseError
from kspark.dev.kafka import free_ports
from kspark.jvm.errors import JavaNotFoundError

integration = pytest.mark.integration


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is dead for our purposes.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@integration
def test_produce_and_consume_all_round_trip(kafka: LocalKafka, topic_factory: Callable[..., str]) -> None:
    assert kafka.bootstrap_servers.startswith("127.0.0.1:")
    topic = topic_factory("rt", partitions=3)
    records = [
        (b"a", b"1", 1_000, 0, [("h", b"x")]),
        (b"b", b"2", 2_000, 1),
        (None, b"3", 3_000, 2),
        (b"c", None, 500, 0),
    ]
    assert kafka.produce(topic, records) == 4
    got = kafka.consume_all(topic)
    assert [(r.key, r.value, r.timestamp, r.partition, r.offset) for r in got] == [
        (b"a", b"1", 1_000, 0, 0),
        (b"c", None, 500, 0, 1),
        (b"b", b"2", 2_000, 1, 0),
        (None, b"3", 3_000, 2, 0),
    ]
    assert got[0].headers == (("h", b"x"),)
    assert topic in kafka.list_topics()


@integration
def test_topics_are_not_auto_created(kafka: LocalKafka) -> None:
    with pytest.raises(Exception, match=r"(?i)unknown|not found|not available"):
        kafka.consume_all(f"missing-{uuid.uuid4().hex}", timeout=5)


@integration
def test_delete_topic(kafka: LocalKafka, topic_factory: Callable[..., str]) -> None:
    topic = topic_factory("del")
    kafka.delete_topic(topic)
    assert topic not in kafka.list_topics()


@integration
def test_transactions_commit_and_abort(kafka: LocalKafka, topic_factory: Callable[..., str]) -> None:
    topic = topic_factory("txn", partitions=2)
    producer = Producer(
        {"bootstrap.servers": kafka.bootstrap_servers, "transactional.id": f"t-{uuid.uuid4().hex}"}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, key=b"k", value=b"aborted", partition=0)
    producer.flush(30)  # really write it, so there is something to abort
    producer.abort_transaction(30)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, key=b"k%d" % i, value=b"committed", partition=i % 2)
    producer.commit_transaction(30)

    committed = kafka.consume_all(topic, read_committed=True)
    assert sorted(r.key for r in committed if r.key) == [b"k0", b"k1", b"k2", b"k3", b"k4"]
    assert all(r.value == b"committed" for r in committed)
    # read_uncommitted also sees the aborted record.
    assert b"aborted" in {r.value for r in kafka.consume_all(topic)}


@integration
def test_consume_all_waits_for_min_records(kafka: LocalKafka, topic_factory: Callable[..., str]) -> None:
    topic = topic_factory("wait")
    with pytest.raises(TimeoutError, match="wanted at least 1"):
        kafka.consume_all(topic, min_records=1, timeout=2)


@integration
@pytest.mark.slow
def test_stop_leaves_no_process_or_files() -> None:
    with LocalKafka() as broker:
        pid = broker.pid
        workdir = broker.log_path.parent.parent
        assert pid is not None and _alive(pid)
        assert broker.startup_seconds is not None and broker.startup_seconds < 90
        port = int(broker.bootstrap_servers.rsplit(":", 1)[1])
    assert not _alive(pid)
    assert not workdir.exists()
    # The port is released.
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


@integration
@pytest.mark.slow
def test_exception_inside_with_block_still_stops_broker() -> None:
    pid = None
    with pytest.raises(RuntimeError, match="boom"), LocalKafka() as broker:
        pid = broker.pid
        raise RuntimeError("boom")
    assert pid is not None and not _alive(pid)


@integration
def test_fixed_port_in_use_is_a_clear_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        with pytest.raises(PortInUseError, match=f"port {port} .* already in use"):
            LocalKafka(port=port).start()


@integration
@pytest.mark.slow
def test_broker_that_cannot_start_reports_its_log_tail() -> None:
    # An invalid setting makes kafka.Kafka exit during start-up.
    broker = LocalKafka(broker_config={"num.io.threads": "-5"}, start_timeout=60)
    with pytest.raises(KafkaStartError) as info:
        broker.start()
    msg = str(info.value)
    assert "num.io.threads" in msg
    assert not broker.running


def test_no_java_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(JavaNotFoundError, match="Install Java 17"):
        LocalKafka().start()


def test_bootstrap_servers_before_start_is_a_clear_error() -> None:
    with pytest.raises(KafkaStartError, match="not started"):
        _ = LocalKafka().bootstrap_servers


@pytest.mark.integration
def test_restart_keeps_the_port_and_the_data(tmp_path: Path) -> None:
    with LocalKafka() as kafka:
        kafka.create_topic("kept", partitions=2)
        kafka.produce("kept", [(b"k", b"before", 1_700_000_000_000)])
        address = kafka.bootstrap_servers
        kafka.restart(down_seconds=1.0)
        assert kafka.bootstrap_servers == address
        kafka.produce("kept", [(b"k", b"after", 1_700_000_000_001)])
        assert [r.value for r in kafka.consume_all("kept")] == [b"before", b"after"]
        kafka.restart(kill=True)  # a crash: SIGKILL, then the same broker again
        assert [r.value for r in kafka.consume_all("kept")] == [b"before", b"after"]


def test_free_ports_are_distinct_and_free() -> None:
    # Drawn one at a time, two ports could repeat, and a broker whose listeners share a port
    # fails to format its storage ("two listeners on the same port").
    ports = free_ports(64)
    assert len(set(ports)) == 64
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", port))
