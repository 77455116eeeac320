"""Schema Registry serdes: Confluent's wire format, subjects, evolution, errors, secrets, pickling.

These run against confluent-kafka's in-memory ``mock://`` registry (one per
URL and process), except the last ones: basic-auth headers checked on a tiny
loopback HTTP server, and a round trip with a real Confluent-compatible
registry (the ``schema_registry`` fixture: Apicurio Registry), marked
``integration``.
"""

from __future__ import annotations

import base64
import http.server
import io
import itertools
import json
import pickle
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_writer

from kspark import Consumed, Produced, StreamsBuilder
from kspark.config import StreamsConfig
from kspark.errors import ConfigException, SerializationException
from kspark.serde import Serdes
from kspark.serde.schema_registry import (
    GenericAvroSerde,
    KafkaJsonSchemaSerde,
    KafkaProtobufSerde,
    SpecificAvroSerde,
    registry_settings,
    schema_registry_client,
)
from kspark.testing import TopologyTestDriver

USER_V1 = json.dumps(
    {
        "type": "record",
        "name": "User",
        "namespace": "io.kspark.test",
        "fields": [{"name": "name", "type": "string"}, {"name": "visits", "type": "long"}],
    }
)
# v2 adds a field with a default: BACKWARD compatible (a v2 reader reads v1 records).
USER_V2 = json.dumps(
    {
        "type": "record",
        "name": "User",
        "namespace": "io.kspark.test",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "visits", "type": "long"},
            {"name": "email", "type": ["null", "string"], "default": None},
        ],
    }
)

_names = itertools.count()


@pytest.fixture
def cfg() -> dict[str, Any]:
    """A config with a fresh mock registry (its own URL: confluent-kafka keeps one store per client)."""
    return {"schema.registry.url": f"mock://kspark-{next(_names)}"}


def client_of(config: dict[str, Any]) -> Any:
    return schema_registry_client(registry_settings(config, False))


def header(schema_id: int) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big")


def avro(schema: str, record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    schemaless_writer(out, parse_schema(json.loads(schema)), record)
    return out.getvalue()


# ------------------------------------------------------------------------------- wire format
def test_generic_avro_round_trip_and_wire_format(cfg: dict[str, Any]) -> None:
    serde = GenericAvroSerde(cfg, schema=USER_V1)
    raw = serde.serializer().serialize("users", {"name": "ann", "visits": 3})
    assert raw is not None
    schema_id = client_of(cfg).get_latest_version("users-value").schema_id
    # Magic byte 0, the 4-byte big-endian id the registry gave, then Avro's binary encoding
    # ("ann": zig-zag length 3 -> 0x06; visits 3 -> 0x06).
    assert raw[:5] == header(schema_id)
    assert raw[5:] == b"\x06ann\x06" == avro(USER_V1, {"name": "ann", "visits": 3})
    assert serde.deserializer().deserialize("users", raw) == {"name": "ann", "visits": 3}
    assert serde.serializer().serialize("users", None) is None
    assert serde.deserializer().deserialize("users", None) is None


def test_the_fast_path_writes_and_reads_what_confluent_kafka_does(cfg: dict[str, Any]) -> None:
    """After a topic's first record kspark encodes and decodes with fastavro directly: the bytes
    and values must be those of confluent-kafka's serializer and deserializer."""
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    schema = json.dumps(
        {
            "type": "record",
            "name": "Event",
            "fields": [
                {"name": "s", "type": "string"},
                {"name": "l", "type": "long"},
                {"name": "d", "type": "double"},
                {"name": "o", "type": ["null", "int"], "default": None},
                {"name": "a", "type": {"type": "array", "items": "string"}},
                {"name": "m", "type": {"type": "map", "values": "long"}},
                {"name": "e", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
            ],
        }
    )
    records = [
        {
            "s": s,
            "l": n,
            "d": n / 7,
            "o": None if n % 2 else n % 1000,
            "a": [s] * (n % 3),
            "m": {s: n},
            "e": "AB"[n % 2],
        }
        for n, s in zip(
            [0, 1, -1, 2**62, -(2**63), 300], ["", "é", "日本", "x" * 1000, "a\x00b", "z"], strict=True
        )
    ]
    ours = GenericAvroSerde(cfg, schema=schema)
    ctx = SerializationContext("events", MessageField.VALUE)
    client = client_of(cfg)
    theirs = AvroSerializer(client, schema, conf={"subject.name.strategy.type": "TOPIC"})
    their_reader = AvroDeserializer(client, conf={"subject.name.strategy.type": "TOPIC"})
    written = [ours.serializer().serialize("events", r) for r in records]
    assert ours.serializer()._fast  # type: ignore[attr-defined]  # the fast path was taken
    assert written == [theirs(r, ctx) for r in records]
    read = [ours.deserializer().deserialize("events", raw) for raw in written]
    assert ours.deserializer()._by_id  # type: ignore[attr-defined]
    assert read == [their_reader(raw, ctx) for raw in written] == records
    assert ours.deserializer().deserialize_batch("events", [*written, None]) == [*records, None]


def test_primitive_schemas_and_confluents_unframed_bytes(cfg: dict[str, Any]) -> None:
    """A primitive schema takes the fast path; ``bytes``, which confluent-kafka writes as the raw
    bytes (as Confluent's Java serializer does), always takes confluent-kafka's path."""
    strings = GenericAvroSerde(cfg, schema='"string"')
    raws = [strings.serializer().serialize("s", text) for text in ("a", "é", "")]
    assert [strings.deserializer().deserialize("s", r) for r in raws] == ["a", "é", ""]
    assert strings.deserializer()._by_id  # type: ignore[attr-defined]
    blobs = GenericAvroSerde(cfg, schema='"bytes"')
    raw = blobs.serializer().serialize("b", b"\x00\xffabc")
    assert raw is not None and raw[5:] == b"\x00\xffabc"
    assert blobs.deserializer().deserialize_batch("b", [raw, raw]) == [b"\x00\xffabc"] * 2
    assert not blobs.deserializer()._by_id and blobs.deserializer()._slow_ids  # type: ignore[attr-defined]


def test_key_serde_and_subject_name_strategies(cfg: dict[str, Any]) -> None:
    GenericAvroSerde(cfg, is_key=True, schema=USER_V1).serializer().serialize(
        "t1", {"name": "a", "visits": 1}
    )
    GenericAvroSerde(cfg, schema=USER_V1).serializer().serialize("t1", {"name": "a", "visits": 1})
    record = {
        **cfg,
        "value.subject.name.strategy": "io.confluent.kafka.serializers.subject.RecordNameStrategy",
    }
    GenericAvroSerde(record, schema=USER_V1).serializer().serialize("t2", {"name": "a", "visits": 1})
    topic_record = {**cfg, "value.subject.name.strategy": "TopicRecordNameStrategy"}
    GenericAvroSerde(topic_record, schema=USER_V1).serializer().serialize("t3", {"name": "a", "visits": 1})
    custom = {**cfg, "value.subject.name.strategy": lambda topic, is_key, name: f"custom.{topic}.{is_key}"}
    GenericAvroSerde(custom, schema=USER_V1).serializer().serialize("t4", {"name": "a", "visits": 1})
    assert sorted(client_of(cfg).get_subjects()) == [
        "custom.t4.False",
        "io.kspark.test.User",
        "t1-key",
        "t1-value",
        "t3-io.kspark.test.User",
    ]


# ----------------------------------------------------------------------------- schema evolution
def test_a_new_version_is_read_in_its_own_schema_or_into_the_readers(cfg: dict[str, Any]) -> None:
    v1 = GenericAvroSerde(cfg, schema=USER_V1).serializer().serialize("users", {"name": "a", "visits": 1})
    v2 = (
        GenericAvroSerde(cfg, schema=USER_V2)
        .serializer()
        .serialize("users", {"name": "b", "visits": 2, "email": "b@x"})
    )
    assert v1 is not None and v2 is not None
    client = client_of(cfg)
    assert sorted(client.get_versions("users-value")) == [1, 2]
    assert v1[:5] != v2[:5]  # two schema ids

    generic = GenericAvroSerde(cfg).deserializer()
    assert generic.deserialize_batch("users", [v1, v2]) == [
        {"name": "a", "visits": 1},
        {"name": "b", "visits": 2, "email": "b@x"},
    ]
    # SpecificAvroSerde reads into its own schema: the new field's default for old records...
    assert SpecificAvroSerde(USER_V2, cfg).deserializer().deserialize_batch("users", [v1, v2, v1]) == [
        {"name": "a", "visits": 1, "email": None},
        {"name": "b", "visits": 2, "email": "b@x"},
        {"name": "a", "visits": 1, "email": None},
    ]
    # ...and an old reader drops the field it does not know.
    assert SpecificAvroSerde(USER_V1, cfg).deserializer().deserialize("users", v2) == {
        "name": "b",
        "visits": 2,
    }


def test_use_latest_version_writes_and_reads_with_the_subjects_latest_schema(cfg: dict[str, Any]) -> None:
    GenericAvroSerde(cfg, schema=USER_V1).serializer().serialize("users", {"name": "a", "visits": 1})
    from confluent_kafka.schema_registry import Schema

    client = client_of(cfg)
    latest_id = client.register_schema("users-value", Schema(USER_V2, "AVRO"))
    latest = {**cfg, "use.latest.version": "true"}
    raw = GenericAvroSerde(latest).serializer().serialize("users", {"name": "c", "visits": 3, "email": None})
    assert raw is not None and raw[:5] == header(latest_id)
    old = GenericAvroSerde(cfg, schema=USER_V1).serializer().serialize("users", {"name": "a", "visits": 1})
    assert GenericAvroSerde(latest).deserializer().deserialize("users", old) == {
        "name": "a",
        "visits": 1,
        "email": None,
    }
    # An explicit contradiction is refused, naming both settings.
    with pytest.raises(
        ConfigException, match=r"use\.latest\.version and auto\.register\.schemas are both true"
    ):
        GenericAvroSerde({**latest, "auto.register.schemas": True})


def test_auto_register_off_needs_the_schema_registered(cfg: dict[str, Any]) -> None:
    serde = GenericAvroSerde({**cfg, "auto.register.schemas": "false"}, schema=USER_V1)
    with pytest.raises(SerializationException, match=r"could not serialize the value of topic 'users'.*404"):
        serde.serializer().serialize("users", {"name": "a", "visits": 1})


def test_specific_avro_serde_maps_to_your_own_class(cfg: dict[str, Any]) -> None:
    @dataclass
    class User:
        name: str
        visits: int

    serde = SpecificAvroSerde(USER_V1, cfg, from_dict=lambda d: User(**d), to_dict=lambda u: vars(u))
    raws = [serde.serializer().serialize("users", User("ann", n)) for n in range(3)]
    assert [serde.deserializer().deserialize("users", r) for r in raws] == [User("ann", n) for n in range(3)]
    assert serde.deserializer().deserialize_batch("users", raws) == [User("ann", n) for n in range(3)]


# ------------------------------------------------------------------------ JSON Schema, Protobuf
def test_json_schema_round_trip_and_validation(cfg: dict[str, Any]) -> None:
    schema = json.dumps(
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "title": "Order",
            "type": "object",
            "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
            "required": ["id"],
        }
    )
    serde: KafkaJsonSchemaSerde[Any] = KafkaJsonSchemaSerde(schema, cfg)
    raw = serde.serializer().serialize("orders", {"id": 7, "item": "pen"})
    assert raw is not None
    assert raw[:5] == header(client_of(cfg).get_latest_version("orders-value").schema_id)
    assert json.loads(raw[5:]) == {"id": 7, "item": "pen"}
    assert serde.deserializer().deserialize("orders", raw) == {"id": 7, "item": "pen"}
    # Reading without a schema of its own validates against the writer's, from the registry.
    assert KafkaJsonSchemaSerde(None, cfg).deserializer().deserialize("orders", raw) == {
        "id": 7,
        "item": "pen",
    }
    with pytest.raises(
        SerializationException, match=r"KafkaJsonSchemaSerializer could not serialize.*'orders'"
    ):
        serde.serializer().serialize("orders", {"item": "no id"})


def _order_message() -> Any:
    """A Protobuf message class, as protoc would generate (built here: no protoc needed)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # type: ignore[import-untyped]

    pool = descriptor_pool.Default()
    try:
        return message_factory.GetMessageClass(pool.FindMessageTypeByName("kspark.test.Order"))
    except KeyError:
        pass
    proto = descriptor_pb2.FileDescriptorProto(
        name="kspark_test_order.proto", package="kspark.test", syntax="proto3"
    )
    message = proto.message_type.add(name="Order")
    message.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64)
    message.field.add(name="item", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING)
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("kspark.test.Order"))


def test_protobuf_round_trip(cfg: dict[str, Any]) -> None:
    order = _order_message()
    serde: KafkaProtobufSerde[Any] = KafkaProtobufSerde(order, cfg)
    raw = serde.serializer().serialize("orders", order(id=7, item="pen"))
    assert raw is not None
    # Confluent's Protobuf framing: header, then the message indexes (0: the file's first message).
    assert raw[:6] == header(client_of(cfg).get_latest_version("orders-value").schema_id) + b"\x00"
    assert raw[6:] == order(id=7, item="pen").SerializeToString()
    assert serde.deserializer().deserialize("orders", raw) == order(id=7, item="pen")


# --------------------------------------------------------------------------------------- errors
def test_a_record_not_in_the_wire_format_names_the_topic_and_the_problem(cfg: dict[str, Any]) -> None:
    de = GenericAvroSerde(cfg).deserializer()
    with pytest.raises(
        SerializationException,
        match=r"GenericAvroDeserializer could not deserialize the value of topic 'clicks': "
        r"unknown magic byte 0x7b, expected 0x00 .*written by a schema registry serializer",
    ):
        de.deserialize("clicks", b'{"json": true}')
    with pytest.raises(
        SerializationException, match=r"topic 'clicks': 3 bytes is too short for the Confluent"
    ):
        de.deserialize("clicks", b"\x00\x00\x01")
    with pytest.raises(
        SerializationException, match=r"topic 'clicks': the schema registry at mock://.* answered 404"
    ):
        de.deserialize("clicks", header(4242) + b"\x02")
    # The batch path raises the same.
    with pytest.raises(SerializationException, match=r"unknown magic byte 0x7b"):
        de.deserialize_batch("clicks", [None, b'{"json": true}'])


def test_a_payload_that_does_not_match_its_schema_is_a_serialization_error(cfg: dict[str, Any]) -> None:
    serde = GenericAvroSerde(cfg, schema=USER_V1)
    good = serde.serializer().serialize("users", {"name": "a", "visits": 1})
    assert good is not None and serde.deserializer().deserialize("users", good)  # learns the id
    with pytest.raises(SerializationException, match=r"could not deserialize the value of topic 'users'"):
        serde.deserializer().deserialize("users", good[:5] + b"\x7f")  # a string longer than the data
    with pytest.raises(SerializationException, match=r"could not serialize the value of topic 'users'"):
        serde.serializer().serialize("users", {"name": 5, "visits": "x"})


def test_configuration_errors_name_the_setting() -> None:
    with pytest.raises(ConfigException, match=r"GenericAvroSerializer needs 'schema\.registry\.url'"):
        GenericAvroSerde({"application.id": "x"}, schema=USER_V1)
    with pytest.raises(ConfigException, match=r"schema\.registry\.url: expected http://HOST:PORT"):
        GenericAvroSerde({"schema.registry.url": "ftp://registry:8081"})
    with pytest.raises(
        ConfigException, match=r"Unknown schema registry client setting 'schema\.registry\.colour'"
    ):
        GenericAvroSerde({"schema.registry.url": "http://h:1", "schema.registry.colour": "blue"})
    with pytest.raises(ConfigException, match=r"reads PEM files, not Java key stores"):
        GenericAvroSerde(
            {"schema.registry.url": "http://h:1", "schema.registry.ssl.truststore.location": "x"}
        )
    with pytest.raises(ConfigException, match=r"value\.subject\.name\.strategy"):
        GenericAvroSerde({"schema.registry.url": "http://h:1", "value.subject.name.strategy": "Nope"})
    with pytest.raises(ConfigException, match=r"basic\.auth\.credentials\.source: expected one of"):
        GenericAvroSerde({"schema.registry.url": "http://h:1", "basic.auth.credentials.source": "TOKEN"})
    with pytest.raises(
        ConfigException, match=r"SpecificAvroSerializer: the schema is not a valid Avro schema"
    ):
        SpecificAvroSerde('{"type": "record"}', {"schema.registry.url": "http://h:1"})
    with pytest.raises(ConfigException, match=r"GenericAvroSerializer has no schema to write with"):
        GenericAvroSerde({"schema.registry.url": "mock://no-schema"}).serializer().serialize("t", {"a": 1})


def test_an_unconfigured_serde_says_how_to_configure_it() -> None:
    serde = GenericAvroSerde(schema=USER_V1)
    with pytest.raises(
        SerializationException, match=r"it is not configured; give it the application's config"
    ):
        serde.serializer().serialize("t", {"name": "a", "visits": 1})
    serde.configure({"schema.registry.url": "mock://later"}, is_key=False)  # Kafka's Serde.configure
    assert serde.serializer().serialize("t", {"name": "a", "visits": 1}) is not None


def test_an_unreachable_registry_is_named() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    serde = GenericAvroSerde(
        {"schema.registry.url": f"http://127.0.0.1:{port}", "schema.registry.max.retries": 0}, schema=USER_V1
    )
    with pytest.raises(
        SerializationException,
        match=rf"could not reach the schema registry at http://127\.0\.0\.1:{port} \(schema\.registry\.url\)",
    ):
        serde.serializer().serialize("users", {"name": "a", "visits": 1})


# ------------------------------------------------------------------------ config and secrets
def test_streams_config_accepts_confluents_settings_and_hides_the_secrets() -> None:
    config = StreamsConfig(
        {
            "application.id": "app",
            "bootstrap.servers": "localhost:9092",
            "schema.registry.url": "http://registry:8081",
            "basic.auth.credentials.source": "USER_INFO",
            "basic.auth.user.info": "alice:s3cret-pw",
            "auto.register.schemas": "false",
            "use.latest.version": "true",
            "normalize.schemas": False,
            "value.subject.name.strategy": "io.confluent.kafka.serializers.subject.RecordNameStrategy",
            "latest.cache.ttl.sec": 60,
            "schema.registry.timeout": 5,
        }
    )
    assert "s3cret" not in repr(config)
    serde = GenericAvroSerde(config)
    settings = serde.serializer().settings
    assert settings is not None
    assert settings.client_config["basic.auth.user.info"] == "alice:s3cret-pw"
    assert settings.client_config["cache.latest.ttl.sec"] == 60
    assert (settings.subject_name_strategy, settings.use_latest_version, settings.auto_register_schemas) == (
        "RECORD",
        True,
        False,
    )
    for text in (repr(serde), repr(serde.serializer()), repr(settings)):
        assert "s3cret" not in text and "alice" not in text
    bearer = GenericAvroSerde(
        {
            "schema.registry.url": "http://registry:8081",
            "bearer.auth.credentials.source": "STATIC_TOKEN",
            "bearer.auth.token": "tok-s3cret",
            "bearer.auth.logical.cluster": "lsrc-1",
        }
    )
    assert (
        "tok-s3cret" not in repr(bearer)
        and "tok-s3cret" in (bearer.serializer().settings or settings).secrets
    )
    with pytest.raises(
        ConfigException, match=r"refused its settings: Unrecognized properties: bearer\.auth\.scope"
    ):
        GenericAvroSerde({"schema.registry.url": "http://registry:8081", "bearer.auth.scope": "x"})
    with pytest.raises(ConfigException, match=r"auto\.register\.schemas: expected a boolean"):
        StreamsConfig({"application.id": "a", "bootstrap.servers": "x:1", "auto.register.schemas": "maybe"})


def test_a_urls_password_is_hidden_too() -> None:
    url = "http://bob:hunter2@127.0.0.1:1"
    config = StreamsConfig({"application.id": "a", "bootstrap.servers": "x:1", "schema.registry.url": url})
    assert "hunter2" not in repr(config) and "bob:[hidden]@127.0.0.1:1" in repr(config)
    serde = GenericAvroSerde({"schema.registry.url": url, "schema.registry.max.retries": 0}, schema=USER_V1)
    assert "hunter2" not in repr(serde)
    with pytest.raises(SerializationException) as failure:
        serde.serializer().serialize("t", {"name": "a", "visits": 1})
    assert "hunter2" not in str(failure.value) and "at http://127.0.0.1:1" in str(failure.value)


class _AuthRegistry(http.server.BaseHTTPRequestHandler):
    """Answers schema registration like a registry that wants HTTP basic auth."""

    expected = ""
    seen: list[str | None] = []  # noqa: RUF012 -- set per test, read after

    def do_POST(self) -> None:
        auth = self.headers.get("Authorization")
        type(self).seen.append(auth)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        ok = auth == self.expected
        body = json.dumps({"id": 42} if ok else {"error_code": 401, "message": "Unauthorized"}).encode()
        self.send_response(200 if ok else 401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def auth_registry() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _AuthRegistry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "auth",
    [
        {"basic.auth.credentials.source": "USER_INFO", "basic.auth.user.info": "alice:pw-1"},
        {"schema.registry.basic.auth.user.info": "alice:pw-1"},
        {
            "basic.auth.credentials.source": "SASL_INHERIT",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
            'username="alice" password="pw-1";',
        },
    ],
    ids=["user-info", "prefixed", "sasl-inherit"],
)
def test_basic_auth_is_sent_as_configured(auth_registry: str, auth: dict[str, str]) -> None:
    _AuthRegistry.expected = "Basic " + base64.b64encode(b"alice:pw-1").decode()
    _AuthRegistry.seen = []
    serde = GenericAvroSerde({"schema.registry.url": auth_registry, **auth}, schema=USER_V1)
    raw = serde.serializer().serialize("users", {"name": "a", "visits": 1})
    assert raw is not None and raw[:5] == header(42)
    assert _AuthRegistry.seen == [_AuthRegistry.expected]


def test_a_refused_password_is_reported_without_it(auth_registry: str) -> None:
    _AuthRegistry.expected = "Basic " + base64.b64encode(b"alice:right").decode()
    config = {
        "schema.registry.url": auth_registry,
        "basic.auth.user.info": "alice:wrong-pw",
        "schema.registry.max.retries": 0,
    }
    with pytest.raises(SerializationException, match=r"answered 401") as failure:
        GenericAvroSerde(config, schema=USER_V1).serializer().serialize("users", {"name": "a", "visits": 1})
    assert "wrong-pw" not in str(failure.value)
    assert failure.value.__cause__ is None or "wrong-pw" not in str(failure.value.__cause__)


# ----------------------------------------------------------------------------------- pickling
def test_pickling_carries_settings_not_the_client(cfg: dict[str, Any]) -> None:
    serde = GenericAvroSerde(cfg, schema=USER_V1)
    raw = serde.serializer().serialize("users", {"name": "a", "visits": 1})
    assert serde.deserializer().deserialize("users", raw) == {"name": "a", "visits": 1}
    state = serde.deserializer().__getstate__()
    assert "_inner" not in state and "_by_id" not in state
    from pyspark import cloudpickle

    for dumps in (pickle.dumps, cloudpickle.dumps):
        copy = pickle.loads(dumps(serde))
        assert copy.deserializer()._inner is None  # made on first use
        assert copy.deserializer().deserialize("users", raw) == {"name": "a", "visits": 1}
        # One client per process and configuration, shared by every copy.
        ours: Any = serde.deserializer()._inner
        theirs: Any = copy.deserializer()._inner
        assert theirs._registry is ours._registry


# ---------------------------------------------------------------------- on the reference runner
def test_a_topology_reads_and_writes_avro_on_the_topology_test_driver(cfg: dict[str, Any]) -> None:
    config = {"application.id": "avro", "bootstrap.servers": "unused:9092", **cfg}
    b = StreamsBuilder()
    (
        b.stream("users", Consumed.with_(Serdes.String(), GenericAvroSerde(config)))
        .filter(lambda k, v: v["visits"] > 1)
        .map_values(lambda v: {**v, "email": f"{v['name']}@example.com"})
        .to("contacts", Produced.with_(Serdes.String(), SpecificAvroSerde(USER_V2, config)))
    )
    writer = GenericAvroSerde(config, schema=USER_V1).serializer()
    with TopologyTestDriver(b.build(), config) as d:
        inp = d.create_input_topic("users", Serdes.String().serializer(), writer)
        out = d.create_output_topic("contacts", Serdes.String(), GenericAvroSerde(config))
        inp.pipe_input("a", {"name": "ann", "visits": 2})
        inp.pipe_input("b", {"name": "bob", "visits": 1})
        assert out.read_key_values_to_list() == [
            ("a", {"name": "ann", "visits": 2, "email": "ann@example.com"})
        ]
    assert sorted(client_of(config).get_subjects()) == ["contacts-value", "users-value"]


# ------------------------------------------------------------------ a real registry (Apicurio)
@pytest.mark.integration
def test_a_real_confluent_compatible_registry(schema_registry: str) -> None:
    """Registration, ids, evolution and errors over HTTP with a real registry's Confluent API."""
    import urllib.request
    import uuid

    cfg = {"schema.registry.url": schema_registry}
    topic = f"users-{uuid.uuid4().hex[:8]}"
    v1 = GenericAvroSerde(cfg, schema=USER_V1).serializer().serialize(topic, {"name": "a", "visits": 1})
    v2 = (
        GenericAvroSerde(cfg, schema=USER_V2)
        .serializer()
        .serialize(topic, {"name": "b", "visits": 2, "email": "e"})
    )
    assert v1 is not None and v2 is not None

    def get(path: str) -> Any:
        with urllib.request.urlopen(f"{schema_registry}{path}", timeout=10) as resp:
            return json.loads(resp.read())

    assert get(f"/subjects/{topic}-value/versions") == [1, 2]
    assert v2[:5] == header(get(f"/subjects/{topic}-value/versions/latest")["id"])
    assert v1[:5] == header(get(f"/subjects/{topic}-value/versions/1")["id"])
    assert GenericAvroSerde(cfg).deserializer().deserialize_batch(topic, [v1, v2, None]) == [
        {"name": "a", "visits": 1},
        {"name": "b", "visits": 2, "email": "e"},
        None,
    ]
    assert SpecificAvroSerde(USER_V2, cfg).deserializer().deserialize(topic, v1) == {
        "name": "a",
        "visits": 1,
        "email": None,
    }
    with pytest.raises(SerializationException, match=rf"topic 'never-{topic}'.*answered 404"):
        GenericAvroSerde({**cfg, "auto.register.schemas": False}, schema=USER_V1).serializer().serialize(
            f"never-{topic}", {"name": "a", "visits": 1}
        )
