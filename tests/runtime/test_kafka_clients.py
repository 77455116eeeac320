"""Kafka Streams' client settings (Java names) to librdkafka's and to Spark's source (kafka_clients.py).

No broker here: tests/runtime/spark/test_secured_kafka.py connects through each
kind of listener for real.
"""

from __future__ import annotations

from typing import Any

import pytest

from kspark.config import StreamsConfig
from kspark.errors import ConfigException
from kspark.runtime.kafka_clients import (
    check_client_settings,
    librdkafka_client,
    librdkafka_security,
    offset_reset,
    parse_jaas,
    prefixed_settings,
    spark_source_options,
)

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
BASE = {"application.id": "app", "bootstrap.servers": "broker:9093"}


def _sasl(mechanism: str, jaas: str, protocol: str = "SASL_SSL", **extra: Any) -> dict[str, Any]:
    return {
        **BASE,
        "security.protocol": protocol,
        "sasl.mechanism": mechanism,
        "sasl.jaas.config": jaas,
        **extra,
    }


def test_jaas_options_are_read_with_quotes_escapes_and_bare_values() -> None:
    module, options = parse_jaas(
        "sasl.jaas.config", f'{SCRAM} required\n  username="al ice"  password="p\\"w;d" tokenauth=true;'
    )
    assert module == SCRAM
    assert options == {"username": "al ice", "password": 'p"w;d', "tokenauth": "true"}


def test_jaas_that_cannot_be_read_is_named_without_its_value() -> None:
    with pytest.raises(ConfigException, match=r"^consumer.sasl.jaas.config is not a JAAS") as info:
        parse_jaas("consumer.sasl.jaas.config", "password=hunter2")
    assert "hunter2" not in str(info.value)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_username_and_password_login_becomes_librdkafkas_settings(mechanism: str) -> None:
    module = PLAIN if mechanism == "PLAIN" else SCRAM
    config = _sasl(mechanism, f'{module} required username="u" password="secret-pw";', "SASL_PLAINTEXT")
    assert librdkafka_security(config, "admin") == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": "u",
        "sasl.password": "secret-pw",
    }


def test_a_prefixed_setting_wins_for_its_kind_of_client_only() -> None:
    config = _sasl(
        "SCRAM-SHA-256",
        f'{SCRAM} required username="everyone" password="a";',
        **{"producer.sasl.jaas.config": f'{SCRAM} required username="writer" password="b";'},
    )
    assert librdkafka_security(config, "producer")["sasl.username"] == "writer"
    assert librdkafka_security(config, "consumer")["sasl.username"] == "everyone"
    assert librdkafka_security(config, "admin")["sasl.username"] == "everyone"


def test_oauthbearer_unsecured_and_oidc_logins() -> None:
    unsecured = _sasl("OAUTHBEARER", f'{OAUTH} required unsecuredLoginStringClaim_sub="svc";')
    assert librdkafka_security(unsecured, "consumer") == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        "enable.sasl.oauthbearer.unsecure.jwt": True,
        "sasl.oauthbearer.config": "principal=svc",
    }
    oidc = _sasl(
        "OAUTHBEARER",
        f'{OAUTH} required clientId="id" clientSecret="cs" scope="kafka";',
        **{
            "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
            "sasl.login.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.X",
        },
    )
    assert librdkafka_security(oidc, "consumer") == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": "id",
        "sasl.oauthbearer.client.secret": "cs",
        "sasl.oauthbearer.scope": "kafka",
    }
    no_endpoint = _sasl("OAUTHBEARER", f'{OAUTH} required clientId="id" clientSecret="cs";')
    with pytest.raises(ConfigException, match=r"sasl\.oauthbearer\.token\.endpoint\.url is not set"):
        librdkafka_security(no_endpoint, "consumer")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({**BASE, "security.protocol": "SASL_SSL"}, r"^sasl.mechanism=GSSAPI \(Kerberos"),
        (_sasl("SCRAM-SHA-256", f'{PLAIN} required username="u" password="p";'), r"names .*PlainLoginModule"),
        (_sasl("SCRAM-SHA-256", f'{SCRAM} required username="u";'), r"has no password"),
        ({**BASE, "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}, r"needs sasl.jaas.config"),
        (_sasl("AWS_MSK_IAM", f"{SCRAM} required;"), r"sasl.mechanism=AWS_MSK_IAM is not a SASL mechanism"),
        (
            {**BASE, "security.protocol": "SSL", "ssl.truststore.location": "/etc/trust.jks"},
            r"^ssl.truststore.location=/etc/trust.jks is a JKS trust store .*ssl.truststore.type=PEM",
        ),
        (
            {**BASE, "ssl.keystore.location": "/k.jks", "ssl.keystore.type": "JKS"},
            r"^ssl.keystore.location=/k.jks is a JKS key store",
        ),
        ({**BASE, "sasl.made.up": "x"}, r"^sasl.made.up: kspark does not know this client setting"),
    ],
)
def test_what_librdkafka_cannot_take_is_named(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigException, match=message) as info:
        librdkafka_security(config, "consumer")
    assert 'p"' not in str(info.value) and 'password="p"' not in str(info.value)


def test_pem_and_pkcs12_stores_become_librdkafkas_files_and_strings() -> None:
    pem = {
        **BASE,
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/ca.pem",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": "/client.pem",
        "ssl.key.password": "kp",
        "ssl.endpoint.identification.algorithm": "",
        "ssl.enabled.protocols": "TLSv1.3",  # the JVM's only
    }
    assert librdkafka_security(pem, "producer") == {
        "security.protocol": "SSL",
        "ssl.key.password": "kp",
        "ssl.endpoint.identification.algorithm": "none",
        "ssl.ca.location": "/ca.pem",
        "ssl.key.location": "/client.pem",
        "ssl.certificate.location": "/client.pem",
    }
    inline = {
        **BASE,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": "CA",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.key": "KEY",
        "ssl.keystore.certificate.chain": "CHAIN",
    }
    assert librdkafka_security(inline, "admin") == {
        "ssl.ca.pem": "CA",
        "ssl.key.pem": "KEY",
        "ssl.certificate.pem": "CHAIN",
    }
    pkcs12 = {
        **BASE,
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": "/k.p12",
        "ssl.keystore.password": "sp",
    }
    assert librdkafka_security(pkcs12, "admin") == {
        "ssl.keystore.location": "/k.p12",
        "ssl.keystore.password": "sp",
    }


def test_spark_source_gets_the_java_names_as_given_and_the_consumer_settings() -> None:
    config = _sasl(
        "SCRAM-SHA-256",
        f'{SCRAM} required username="u" password="p";',
        **{"ssl.enabled.protocols": "TLSv1.3", "consumer.max.poll.records": 7, "producer.linger.ms": 1},
    )
    assert spark_source_options(config) == {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-256",
        "kafka.sasl.jaas.config": f'{SCRAM} required username="u" password="p";',
        "kafka.ssl.enabled.protocols": "TLSv1.3",
        "kafka.max.poll.records": "7",
    }


def test_the_offset_reset_is_the_main_consumers_and_never_reaches_sparks_source() -> None:
    assert offset_reset({}) == "earliest"  # Kafka Streams' default
    assert offset_reset({"consumer.auto.offset.reset": "LATEST"}) == "latest"
    both = {"consumer.auto.offset.reset": "latest", "main.consumer.auto.offset.reset": "earliest"}
    assert offset_reset(both) == "earliest"  # main.consumer. wins, as in Kafka Streams
    # Spark's source refuses the option: a query's start is its startingOffsets.
    assert "kafka.auto.offset.reset" not in spark_source_options({"consumer.auto.offset.reset": "latest"})
    with pytest.raises(ConfigException, match=r"consumer.auto.offset.reset='none'.*earliest, latest"):
        offset_reset({"consumer.auto.offset.reset": "none"})
    with pytest.raises(ConfigException, match=r"main\.consumer\.auto\.offset\.reset='newest'"):
        check_client_settings({"main.consumer.auto.offset.reset": "newest"})


def test_client_settings_combine_bootstrap_other_prefixed_settings_and_the_connection() -> None:
    config = {
        **BASE,
        "security.protocol": "SSL",
        "producer.linger.ms": 1,
        "producer.security.protocol": "SSL",
    }
    assert prefixed_settings(config, "producer") == {"linger.ms": 1}
    assert librdkafka_client(config, "producer", prefixed=True) == {
        "bootstrap.servers": "broker:9093",
        "linger.ms": 1,
        "security.protocol": "SSL",
    }
    assert librdkafka_client({**BASE, "bootstrap.servers": ["a:1", "b:2"]}, "admin") == {
        "bootstrap.servers": "a:1,b:2"
    }


def test_secrets_never_show_in_a_config_repr() -> None:
    config = StreamsConfig(
        _sasl(
            "SCRAM-SHA-256",
            f'{SCRAM} required username="u" password="topsecret";',
            **{
                "ssl.key.password": "kp-secret",
                "ssl.keystore.key": "KEY-secret",
                "consumer.sasl.password": "x-secret",
            },
        )
    )
    text = repr(config)
    assert "secret" not in text.replace("[hidden]", ""), text
    assert "SCRAM-SHA-256" in text


def test_settings_librdkafka_refuses_fail_at_creation_naming_the_clients_not_the_secret() -> None:
    bad = {
        **BASE,
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": "not a certificate",
        "ssl.key.password": "do-not-print",
    }
    with pytest.raises(
        ConfigException, match=r"the consumer clients' connection settings .*ssl.ca.pem"
    ) as info:
        check_client_settings(bad)
    assert "do-not-print" not in str(info.value)
    check_client_settings({**BASE, "security.protocol": "PLAINTEXT"})  # nothing to check


def test_connection_settings_for_one_of_kafka_streams_consumers_are_refused_not_ignored() -> None:
    with pytest.raises(ConfigException, match=r"^global.consumer.ssl.truststore.location: .*consumer.ssl"):
        check_client_settings({**BASE, "global.consumer.ssl.truststore.location": "/ca.pem"})


def test_a_broker_that_does_not_answer_is_a_clear_error_after_the_timeout() -> None:
    import socket
    import time

    from kspark.errors import StreamsException
    from kspark.runtime.kafka_clients import cluster_metadata

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(StreamsException, match=rf"Kafka at 127.0.0.1:{port} did not answer within 2 s"):
        cluster_metadata({"bootstrap.servers": f"127.0.0.1:{port}"}, timeout=2)
    assert time.monotonic() - started < 10


def test_java_names_librdkafka_has_under_another_name_are_translated() -> None:
    config = {**BASE, "consumer.receive.buffer.bytes": 1 << 20, "producer.max.request.size": 2 << 20}
    assert prefixed_settings(config, "consumer") == {"socket.receive.buffer.bytes": 1 << 20}
    assert prefixed_settings(config, "producer") == {"message.max.bytes": 2 << 20}
    # Spark's Kafka source is a Java consumer: it takes the Java name as given.
    assert spark_source_options(config)["kafka.receive.buffer.bytes"] == str(1 << 20)
    check_client_settings(config)


def test_a_producer_setting_librdkafka_does_not_take_fails_when_the_application_is_made() -> None:
    with pytest.raises(ConfigException, match=r"producer\.buffer\.memory: kspark's producers \(librdkafka\)"):
        check_client_settings({**BASE, "producer.buffer.memory": 33554432})
    check_client_settings({**BASE, "producer.linger.ms": 20, "consumer.max.poll.records": 10_000})


def test_the_exactly_once_marker_reader_takes_only_the_connection_settings() -> None:
    from kspark.runtime.spark.task_commit import TaskCommit

    config = {**BASE, "consumer.max.poll.records": 10_000, "security.protocol": "SSL"}
    commit = TaskCommit(config, {}, "app-0_0", [("in", 0)])
    assert commit.consumer_config == librdkafka_security(config, "consumer")
    assert "max.poll.records" not in commit.consumer_config
