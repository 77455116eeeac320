"""LocalKafka(security=True): SASL and TLS listeners with librdkafka and Java clients, restarts, errors.

One secured broker serves the module. librdkafka settings are written here by
hand, in librdkafka's names, so the test does not trust the code under test
to translate them; the Java side runs Kafka's own ConfigCommand with the
settings :meth:`LocalKafka.client_settings` returns.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from kspark.dev import LocalKafka
from kspark.dev.errors import DevToolsError
from kspark.dev.kafka_security import SecurityError
from kspark.jvm.jars import find_java, resolve_bundle
from tests.dev.cli_process import dev_kafka

integration = pytest.mark.integration

# (listener, SASL mechanism or None): every mechanism on SASL_PLAINTEXT, one inside TLS.
ROUTES = [
    ("SASL_PLAINTEXT", "PLAIN"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
    ("SASL_PLAINTEXT", "OAUTHBEARER"),
    ("SASL_SSL", "SCRAM-SHA-512"),
    ("SSL", None),
    ("MTLS", None),
]


@pytest.fixture(scope="module")
def secure_kafka() -> Iterator[LocalKafka]:
    with LocalKafka(security=True) as broker:
        yield broker


def _rdkafka(
    kafka: LocalKafka,
    listener: str,
    mechanism: str | None,
    *,
    password: str | None = None,
    client_cert: bool = True,
) -> dict[str, object]:
    """librdkafka settings for a secured listener, from LocalKafka's public facts only."""
    conf: dict[str, object] = {
        "bootstrap.servers": kafka.secured_bootstrap(listener),
        "security.protocol": "SSL" if listener == "MTLS" else listener,
    }
    if mechanism == "OAUTHBEARER":
        conf |= {
            "sasl.mechanisms": "OAUTHBEARER",
            "enable.sasl.oauthbearer.unsecure.jwt": True,
            "sasl.oauthbearer.config": "principal=kspark",
        }
    elif mechanism is not None:
        conf |= {
            "sasl.mechanisms": mechanism,
            "sasl.username": kafka.user,
            "sasl.password": kafka.password if password is None else password,
        }
    if listener in ("SSL", "MTLS", "SASL_SSL"):
        conf["ssl.ca.location"] = str(kafka.ca_path)
    if listener == "MTLS" and client_cert:
        # The Java keystore file (PKCS#8 key, then the certificate) also serves
        # librdkafka as both its certificate and its key file.
        both = kafka.client_settings("MTLS")["ssl.keystore.location"]
        conf |= {"ssl.certificate.location": both, "ssl.key.location": both}
    return conf


def _round_trip(conf: dict[str, object], topic: str, value: bytes) -> None:
    """Produce ``value`` to ``topic`` and read it back, both through ``conf``'s listener."""
    errors: list[KafkaError] = []
    producer = Producer({**conf, "error_cb": errors.append})
    delivered: list[KafkaError | None] = []
    producer.produce(topic, value=value, on_delivery=lambda err, _msg: delivered.append(err))
    assert producer.flush(20) == 0, f"not delivered; client errors: {errors}"
    assert len(delivered) == 1 and delivered[0] is None, delivered
    consumer = Consumer(
        {
            **conf,
            "group.id": f"sec-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "error_cb": errors.append,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        seen: list[bytes | None] = []
        deadline = time.monotonic() + 20
        while value not in seen:
            assert time.monotonic() < deadline, f"read {seen}; client errors: {errors}"
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                seen.append(msg.value())
    finally:
        consumer.close()


def _first_error(conf: dict[str, object], topic: str, timeout: float = 30.0) -> KafkaError:
    """The first error librdkafka reports for a client that should not get in; fails on a delivery."""
    errors: list[KafkaError] = []
    delivered: list[KafkaError | None] = []
    producer = Producer({**conf, "error_cb": errors.append, "message.timeout.ms": int(timeout * 1000)})
    producer.produce(topic, value=b"must not arrive", on_delivery=lambda err, _m: delivered.append(err))
    deadline = time.monotonic() + timeout
    while not errors and time.monotonic() < deadline:
        producer.poll(0.1)
    producer.purge()
    producer.flush(1)
    # Not `None in delivered`: KafkaError's == against None leaves a TypeError pending in
    # confluent-kafka, which surfaces at the next call as a SystemError.
    assert all(err is not None for err in delivered), "the record was delivered"
    assert errors, f"no error within {timeout} s"
    return errors[0]


@integration
@pytest.mark.parametrize(("listener", "mechanism"), ROUTES)
def test_produce_and_consume_through_each_listener(
    secure_kafka: LocalKafka, listener: str, mechanism: str | None
) -> None:
    topic = f"sec-{listener}-{mechanism}-{uuid.uuid4().hex[:8]}"
    secure_kafka.create_topic(topic)
    _round_trip(_rdkafka(secure_kafka, listener, mechanism), topic, f"via {listener}".encode())
    # LocalKafka's own helpers stay on PLAINTEXT.
    assert [r.value for r in secure_kafka.consume_all(topic)] == [f"via {listener}".encode()]


@integration
def test_wrong_scram_password_is_an_authentication_error(secure_kafka: LocalKafka) -> None:
    topic = f"sec-wrong-{uuid.uuid4().hex[:8]}"
    secure_kafka.create_topic(topic)
    started = time.monotonic()
    conf = _rdkafka(secure_kafka, "SASL_PLAINTEXT", "SCRAM-SHA-256", password="not-the-password")
    err = _first_error(conf, topic)
    assert err.code() == KafkaError._AUTHENTICATION, err
    assert "invalid credentials" in err.str()
    assert time.monotonic() - started < 30


@integration
def test_mtls_without_client_certificate_is_refused(secure_kafka: LocalKafka) -> None:
    topic = f"sec-nocert-{uuid.uuid4().hex[:8]}"
    secure_kafka.create_topic(topic)
    err = _first_error(_rdkafka(secure_kafka, "MTLS", None, client_cert=False), topic)
    # With TLS 1.3 the server's refusal arrives as an alert after the client's handshake.
    assert err.code() in (KafkaError._TRANSPORT, KafkaError._SSL, KafkaError._ALL_BROKERS_DOWN), err
    assert "certificate" in err.str() or err.code() == KafkaError._ALL_BROKERS_DOWN, err


@integration
def test_client_settings_and_files(secure_kafka: LocalKafka) -> None:
    kafka = secure_kafka
    password = kafka.password
    assert kafka.user == "kspark" and len(password) >= 16
    bootstraps = {
        name: kafka.secured_bootstrap(name) for name in ("SASL_PLAINTEXT", "SSL", "MTLS", "SASL_SSL")
    }
    assert len({*bootstraps.values(), kafka.bootstrap_servers}) == 5
    ca = str(kafka.ca_path)
    assert kafka.client_settings("SASL_PLAINTEXT", "PLAIN") == {
        "bootstrap.servers": bootstraps["SASL_PLAINTEXT"],
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="kspark" password="{password}";',
    }
    assert kafka.client_settings("SASL_SSL", "SCRAM-SHA-512", password="x") == {
        "bootstrap.servers": bootstraps["SASL_SSL"],
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="kspark" password="x";',
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": ca,
    }
    oauth = kafka.client_settings("SASL_PLAINTEXT", "OAUTHBEARER")["sasl.jaas.config"]
    assert oauth == (
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        'unsecuredLoginStringClaim_sub="kspark";'
    )
    assert kafka.client_settings("SSL") == {
        "bootstrap.servers": bootstraps["SSL"],
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": ca,
    }
    mtls = kafka.client_settings("MTLS")
    assert mtls["security.protocol"] == "SSL" and mtls["ssl.keystore.type"] == "PEM"
    # Kafka's PEM key store reads PKCS#8 keys only; the key files are private to the user.
    keystore = Path(mtls["ssl.keystore.location"])
    text = keystore.read_text()
    assert text.startswith("-----BEGIN PRIVATE KEY-----") and "BEGIN CERTIFICATE" in text
    assert stat.S_IMODE(keystore.stat().st_mode) == 0o600
    assert kafka.ca_path.read_text().startswith("-----BEGIN CERTIFICATE-----")
    with pytest.raises(SecurityError, match="unknown secured listener 'PLAINTEXT'"):
        kafka.secured_bootstrap("PLAINTEXT")
    with pytest.raises(SecurityError, match="unknown SASL mechanism 'GSSAPI'"):
        kafka.client_settings("SASL_SSL", "GSSAPI")


def _java_config_command(kafka: LocalKafka, settings: dict[str, str], tmp_path: Path) -> str:
    """Run Kafka's ConfigCommand (Java admin client) with ``settings``; returns its output."""
    props = tmp_path / f"client-{uuid.uuid4().hex[:8]}.properties"
    # Java properties files treat backslashes as escapes.
    props.write_text("".join(f"{k}={v.replace(chr(92), chr(92) * 2)}\n" for k, v in settings.items()))
    cp = os.pathsep.join(str(j) for j in resolve_bundle("kafka-broker"))
    command = ["kafka.admin.ConfigCommand", "--describe", "--entity-type", "topics"]
    connect = ["--bootstrap-server", settings["bootstrap.servers"], "--command-config", str(props)]
    run = subprocess.run(
        [str(find_java()), "-Xmx128m", "-cp", cp, *command, *connect],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return f"exit {run.returncode}\n{run.stdout}\n{run.stderr}"


@integration
@pytest.mark.parametrize(
    ("listener", "mechanism"),
    [("SASL_SSL", "SCRAM-SHA-256"), ("MTLS", "SCRAM-SHA-256"), ("SASL_PLAINTEXT", "OAUTHBEARER")],
)
def test_java_client_accepts_client_settings(
    secure_kafka: LocalKafka, tmp_path: Path, listener: str, mechanism: str
) -> None:
    topic = f"sec-java-{uuid.uuid4().hex[:8]}"
    secure_kafka.create_topic(topic)
    out = _java_config_command(secure_kafka, secure_kafka.client_settings(listener, mechanism), tmp_path)
    assert out.startswith("exit 0") and f"configs for topic {topic} are" in out, out


@integration
def test_java_client_with_wrong_password_fails(secure_kafka: LocalKafka, tmp_path: Path) -> None:
    settings = secure_kafka.client_settings("SASL_SSL", "SCRAM-SHA-256", password="wrong")
    out = _java_config_command(secure_kafka, settings, tmp_path)
    assert not out.startswith("exit 0") and "SaslAuthenticationException" in out, out


def test_security_needs_trustme(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "trustme", None)  # makes `import trustme` fail
    with pytest.raises(DevToolsError, match="pip install trustme"):
        LocalKafka(security=True)


def test_secured_calls_without_security_say_so() -> None:
    kafka = LocalKafka()
    for call in (
        lambda: kafka.secured_bootstrap("SSL"),
        lambda: kafka.client_settings("SSL"),
        lambda: kafka.password,
        lambda: kafka.ca_path,
    ):
        with pytest.raises(SecurityError, match=r"security=True"):
            call()


@integration
def test_dev_kafka_secure_prints_listener_settings() -> None:
    with dev_kafka("--secure") as (proc, text):
        line = next(x for x in text.splitlines() if x.startswith("secured listeners:"))
        password = line.split("password ")[1].split(",")[0]
        for listener in ("SASL_PLAINTEXT", "SSL", "MTLS", "SASL_SSL"):
            assert f"[{listener}] 127.0.0.1:" in text, text
        assert f'password="{password}";' in text, text
        assert "  ssl.keystore.type=PEM" in text and "  security.protocol=SASL_SSL" in text, text
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0


# Last in the module: it restarts the shared broker.
@integration
def test_restart_keeps_secured_listeners(secure_kafka: LocalKafka) -> None:
    before = {name: secure_kafka.secured_bootstrap(name) for name in ("SASL_SSL", "MTLS")}
    password, ca = secure_kafka.password, secure_kafka.ca_path.read_bytes()
    topic = f"sec-restart-{uuid.uuid4().hex[:8]}"
    secure_kafka.create_topic(topic)
    secure_kafka.restart()
    assert {name: secure_kafka.secured_bootstrap(name) for name in before} == before
    assert secure_kafka.password == password and secure_kafka.ca_path.read_bytes() == ca
    _round_trip(_rdkafka(secure_kafka, "SASL_SSL", "SCRAM-SHA-512"), topic, b"after restart, SASL_SSL")
    _round_trip(_rdkafka(secure_kafka, "MTLS", None), topic, b"after restart, MTLS")
