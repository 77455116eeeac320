"""Serdes for Avro, JSON Schema and Protobuf in the Confluent wire format, with a Schema Registry.

The classes carry the names Kafka Streams users know from Confluent's
``kafka-streams-avro-serde`` and its siblings:

* :class:`GenericAvroSerde` -- Avro records as ``dict`` (Java's ``GenericRecord``),
  read with the schema they were written with;
* :class:`SpecificAvroSerde` -- Avro with a given schema: written with it and read
  *into* it (Avro schema resolution), optionally mapped to your own class with
  ``from_dict`` / ``to_dict`` (Java's generated ``SpecificRecord`` classes);
* :class:`KafkaJsonSchemaSerde` -- JSON validated against a JSON Schema;
* :class:`KafkaProtobufSerde` -- a Protobuf message class.

Every record is framed as Confluent frames it: magic byte ``0``, the 4-byte
big-endian schema id, then the payload. Framing, schema registration and
look-up are done by confluent-kafka's ``schema_registry`` module (its
``AvroSerializer``, ``JSONSerializer``, ``ProtobufSerializer`` and their
deserializers, with fastavro for Avro); kspark adds the configuration, the
errors and, for Avro, a fast path (below).

Configuration is Confluent's, read from the application's config (a dict or
a :class:`kspark.config.StreamsConfig`)::

    config = {
        "application.id": "orders", "bootstrap.servers": "localhost:9092",
        "schema.registry.url": "http://localhost:8081",
        "basic.auth.credentials.source": "USER_INFO",      # or URL, SASL_INHERIT
        "basic.auth.user.info": "user:secret",              # hidden in every repr and error
    }
    orders = GenericAvroSerde(config)                       # or serde.configure(config, is_key=False)

``auto.register.schemas`` (default true), ``use.latest.version`` (default
false; turns auto-registration off unless it is set too),
``normalize.schemas``, ``key.subject.name.strategy`` /
``value.subject.name.strategy`` (``TopicNameStrategy``, the default:
``<topic>-key`` / ``<topic>-value``; ``RecordNameStrategy``,
``TopicRecordNameStrategy``; Java class names work), ``latest.cache.ttl.sec``,
and every client setting under ``schema.registry.`` (``schema.registry.ssl.ca.location``,
``schema.registry.timeout``, ``schema.registry.max.retries`` ...; confluent-kafka's
names, PEM files rather than Java key stores) and ``bearer.auth.*``.

**On Spark.** Serdes are pickled to Spark's Python workers. Only settings are
pickled: the registry client is created lazily in the process that uses it
and cached per process (one per distinct client configuration), so the
workers of an executor share one client and its schema cache.

**Fast path.** Avro records are decoded by fastavro straight from the bytes once
a schema id has been seen: the first record with an id goes through
confluent-kafka's deserializer (which fetches and caches the schema), later
ones are decoded directly with the parsed writer (and reader) schema, 4-5x
the rate of the per-record confluent path (``python -m bench.avro_decode``;
docs/schemas.md). Schemas with references, rule sets (data contracts,
migrations) or ``use.latest.version`` always take confluent-kafka's path.
:meth:`SchemaRegistryDeserializer.deserialize_batch` decodes a list at a time.

A ``mock://NAME`` URL uses confluent-kafka's in-memory mock registry (one per
name and process: it does not reach a Spark worker process, so use it for
unit tests and the TopologyTestDriver only).
"""

from __future__ import annotations

import io
import json
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from kspark.errors import ConfigException, SerializationException
from kspark.serde.api import Deserializer, Serde, Serializer
from kspark.serde.registry import (
    HEADER_SIZE,
    MAGIC_BYTE,
    SCHEMA_REGISTRY_URL,
    RegistrySettings,
    as_bytes,
    failure,
    field_name,
    framing_error,
    registry_settings,
    schema_registry_client,
)

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import SchemaRegistryClient

T = TypeVar("T")

__all__ = [
    "GenericAvroSerde",
    "GenericAvroSerializer",
    "GenericAvroDeserializer",
    "SpecificAvroSerde",
    "SpecificAvroSerializer",
    "SpecificAvroDeserializer",
    "KafkaJsonSchemaSerde",
    "KafkaJsonSchemaSerializer",
    "KafkaJsonSchemaDeserializer",
    "KafkaProtobufSerde",
    "KafkaProtobufSerializer",
    "KafkaProtobufDeserializer",
    "SchemaRegistrySerde",
    "SchemaRegistrySerializer",
    "SchemaRegistryDeserializer",
    "RegistrySettings",
    "registry_settings",
    "schema_registry_client",
]


# ----------------------------------------------------------------------------- the base classes
class _Configured:
    """What a serializer and a deserializer share: settings, the lazily made client, pickling."""

    _owner = "SchemaRegistrySerde"
    _transient: tuple[str, ...] = ()
    """Attributes made in the process that uses them: never pickled."""

    def __init__(self, configs: Mapping[str, Any] | None, is_key: bool) -> None:
        self.is_key = is_key
        self.settings: RegistrySettings | None = None
        self._reset()
        if configs is not None:
            self.configure(configs, is_key)

    def _reset(self) -> None:
        """Forget everything made from the settings (the client's serde, caches)."""

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        """Read the registry settings from the application's config (a dict or a ``StreamsConfig``).

        The client is made here once to check the settings (no request is
        sent), and again, lazily, in each process that uses this object.
        """
        settings = registry_settings(configs, is_key, self._owner)
        self.is_key = is_key
        self.settings = settings
        self._reset()
        schema_registry_client(settings)

    def _settings_or_fail(self, action: str, topic: str | None) -> RegistrySettings:
        if self.settings is None:
            raise SerializationException(
                f"{self._owner} could not {action} the {field_name(self.is_key)} of topic {topic!r}: it is "
                f"not configured; give it the application's config ({self._owner}(config), with "
                f"{SCHEMA_REGISTRY_URL}) or call configure(config, is_key)"
            )
        return self.settings

    def _context(self, topic: str | None, action: str) -> Any:
        from confluent_kafka.serialization import MessageField, SerializationContext

        if topic is None and self.settings is not None and self.settings.subject_name_strategy != "RECORD":
            raise SerializationException(
                f"{self._owner} could not {action} a {field_name(self.is_key)} without a topic: the subject "
                f"name strategy ({self.settings.subject_name_strategy}) names the subject after the topic"
            )
        return SerializationContext(topic or "", MessageField.KEY if self.is_key else MessageField.VALUE)

    def _strategy_conf(self, settings: RegistrySettings) -> dict[str, Any]:
        strategy = settings.subject_name_strategy
        if callable(strategy):
            is_key = self.is_key

            def subject(ctx: Any, record_name: str | None) -> str:
                return strategy(ctx.topic if ctx is not None else None, is_key, record_name)

            return {"subject.name.strategy": subject}
        return {"subject.name.strategy.type": strategy}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for name in self._transient:
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset()

    def __repr__(self) -> str:
        url = self.settings.url if self.settings is not None else None
        return f"{type(self).__name__}({SCHEMA_REGISTRY_URL}={url!r}, is_key={self.is_key})"


class SchemaRegistrySerializer(_Configured, Serializer[T]):
    """A serializer writing the Confluent wire format through confluent-kafka's serializer."""

    _transient: tuple[str, ...] = ("_inner",)

    def _reset(self) -> None:
        self._inner: Callable[[Any, Any], bytes | None] | None = None

    @abstractmethod
    def _build(
        self, client: SchemaRegistryClient, conf: dict[str, Any]
    ) -> Callable[[Any, Any], bytes | None]:
        """confluent-kafka's serializer for this format."""

    def _open(self, topic: str | None) -> Callable[[Any, Any], bytes | None]:
        settings = self._settings_or_fail("serialize", topic)
        conf = {
            "auto.register.schemas": settings.auto_register_schemas,
            "use.latest.version": settings.use_latest_version,
            "normalize.schemas": settings.normalize_schemas,
            **self._strategy_conf(settings),
        }
        try:
            self._inner = self._build(schema_registry_client(settings), conf)
        except (SerializationException, ConfigException):
            raise
        except Exception as e:
            raise failure(self._owner, "serialize", topic, self.is_key, e, settings) from None
        return self._inner

    def serialize(self, topic: str | None, data: T | None) -> bytes | None:
        if data is None:
            return None
        inner = self._inner or self._open(topic)
        ctx = self._context(topic, "serialize")
        try:
            return inner(data, ctx)
        except Exception as e:
            raise failure(self._owner, "serialize", topic, self.is_key, e, self.settings) from _cause(
                e, self.settings
            )


class SchemaRegistryDeserializer(_Configured, Deserializer[T]):
    """A deserializer reading the Confluent wire format through confluent-kafka's deserializer."""

    _transient: tuple[str, ...] = ("_inner",)

    def _reset(self) -> None:
        self._inner: Callable[[bytes, Any], Any] | None = None

    @abstractmethod
    def _build(self, client: SchemaRegistryClient, conf: dict[str, Any]) -> Callable[[bytes, Any], Any]:
        """confluent-kafka's deserializer for this format."""

    def _open(self, topic: str | None) -> Callable[[bytes, Any], Any]:
        settings = self._settings_or_fail("deserialize", topic)
        conf = {"use.latest.version": settings.use_latest_version, **self._strategy_conf(settings)}
        try:
            self._inner = self._build(schema_registry_client(settings), conf)
        except (SerializationException, ConfigException):
            raise
        except Exception as e:
            raise failure(self._owner, "deserialize", topic, self.is_key, e, settings) from None
        return self._inner

    def _slow(self, topic: str | None, data: bytes) -> Any:
        """One record through confluent-kafka's deserializer, its errors in kspark's words."""
        error = framing_error(self._owner, topic, self.is_key, data)
        if error is not None:
            raise error
        inner = self._inner or self._open(topic)
        ctx = self._context(topic, "deserialize")
        try:
            return inner(data, ctx)
        except Exception as e:
            raise failure(self._owner, "deserialize", topic, self.is_key, e, self.settings) from _cause(
                e, self.settings
            )

    def deserialize(self, topic: str | None, data: bytes | None) -> T | None:
        if data is None:
            return None
        value: T = self._slow(topic, as_bytes(data))
        return value

    def deserialize_batch(self, topic: str | None, datas: Sequence[bytes | None]) -> list[T | None]:
        """The records of one topic, decoded in order (``None`` stays ``None``)."""
        deserialize = self.deserialize
        return [deserialize(topic, data) for data in datas]


def _cause(e: BaseException, settings: RegistrySettings | None) -> BaseException | None:
    """``e`` as the cause to chain, unless its text carries a secret."""
    if settings is not None and settings.scrub(str(e)) != str(e):
        return None
    return e


class SchemaRegistrySerde(Serde[T], Generic[T]):
    """A serializer and a deserializer configured alike (Confluent's ``*Serde`` classes)."""

    def __init__(self, ser: SchemaRegistrySerializer[T], de: SchemaRegistryDeserializer[T]) -> None:
        self._serializer = ser
        self._deserializer = de

    def serializer(self) -> SchemaRegistrySerializer[T]:
        return self._serializer

    def deserializer(self) -> SchemaRegistryDeserializer[T]:
        return self._deserializer

    @property
    def is_key(self) -> bool:
        return self._serializer.is_key

    def __repr__(self) -> str:
        settings = self._serializer.settings
        url = settings.url if settings is not None else None
        return f"{type(self).__name__}({SCHEMA_REGISTRY_URL}={url!r}, is_key={self.is_key})"


# ----------------------------------------------------------------------------------------- Avro
def _parse_avro(schema_str: str) -> Any:
    """The schema parsed by fastavro, or None where only confluent-kafka's path is right (a bare
    ``bytes`` schema, which confluent-kafka writes unframed, or a schema it cannot parse alone)."""
    from fastavro import parse_schema

    try:
        schema = json.loads(schema_str)
    except ValueError:
        schema = schema_str.strip()  # a primitive type's bare name
    if schema == "bytes" or (isinstance(schema, dict) and schema.get("type") == "bytes"):
        return None
    try:
        return parse_schema(schema, named_schemas={})
    except Exception:
        return None


def _check_avro_schema(owner: str, schema: str | None) -> None:
    if schema is None:
        return
    if not isinstance(schema, str):
        raise ConfigException(f"{owner}: schema must be an Avro schema as a JSON string, got {schema!r:.80}")
    from fastavro import parse_schema

    try:
        parse_schema(json.loads(schema), named_schemas={})
    except Exception as e:
        raise ConfigException(f"{owner}: the schema is not a valid Avro schema: {e}") from None


def _with_ctx(fn: Callable[[Any], Any] | None) -> Callable[[Any, Any], Any] | None:
    """A one-argument mapping as confluent-kafka calls it (with the serialization context)."""
    if fn is None:
        return None
    return lambda value, _ctx: fn(value)


class _AvroSerializer(SchemaRegistrySerializer[T]):
    _transient = ("_inner", "_fast", "_parsed")

    def __init__(
        self,
        configs: Mapping[str, Any] | None = None,
        *,
        is_key: bool = False,
        schema: str | None = None,
        to_dict: Callable[[Any], dict[str, Any]] | None = None,
    ) -> None:
        _check_avro_schema(self._owner, schema)
        self.schema = schema
        self.to_dict = to_dict
        super().__init__(configs, is_key)

    def _reset(self) -> None:
        super()._reset()
        # topic -> (the 5 header bytes, fastavro's parsed writer schema, fastavro's writer): known
        # once a record of the topic went through confluent-kafka's serializer (which registered
        # or looked the schema up).
        self._fast: dict[str | None, tuple[bytes, Any, Callable[..., Any]]] = {}
        self._parsed: Any = None

    def _build(
        self, client: SchemaRegistryClient, conf: dict[str, Any]
    ) -> Callable[[Any, Any], bytes | None]:
        from confluent_kafka.schema_registry.avro import AvroSerializer

        if self.schema is None and not conf["use.latest.version"]:
            raise ConfigException(
                f"{self._owner} has no schema to write with: give schema=... or set use.latest.version=true "
                "to write with the subject's latest registered schema"
            )
        if self.schema is not None and not conf["use.latest.version"]:
            self._parsed = _parse_avro(self.schema)
        serializer: Callable[[Any, Any], bytes | None] = AvroSerializer(
            client, self.schema, to_dict=_with_ctx(self.to_dict), conf=conf
        )
        return serializer

    def serialize(self, topic: str | None, data: T | None) -> bytes | None:
        if data is None:
            return None
        fast = self._fast.get(topic)
        if fast is not None:
            header, parsed, write = fast
            out = io.BytesIO()
            out.write(header)
            try:
                write(out, parsed, self.to_dict(data) if self.to_dict is not None else data)
            except Exception as e:
                raise failure(self._owner, "serialize", topic, self.is_key, e, self.settings) from e
            return out.getvalue()
        raw = super().serialize(topic, data)
        # Without use.latest.version confluent-kafka runs no rules on write: what it writes is
        # the header of the registered schema id and fastavro's encoding, which the fast path
        # writes from now on.
        if raw is not None and self._parsed is not None and raw[0] == MAGIC_BYTE:
            from fastavro import schemaless_writer

            self._fast[topic] = (raw[:HEADER_SIZE], self._parsed, schemaless_writer)
        return raw


class _AvroDeserializer(SchemaRegistryDeserializer[T]):
    _transient = ("_inner", "_by_id", "_slow_ids", "_reader")

    def __init__(
        self,
        configs: Mapping[str, Any] | None = None,
        *,
        is_key: bool = False,
        schema: str | None = None,
        from_dict: Callable[[dict[str, Any]], Any] | None = None,
    ) -> None:
        _check_avro_schema(self._owner, schema)
        self.schema = schema
        self.from_dict = from_dict
        super().__init__(configs, is_key)

    def _reset(self) -> None:
        super()._reset()
        # The 4 schema-id bytes -> (fastavro's schemaless reader, parsed writer schema, parsed
        # reader schema or None): ids whose records fastavro decodes directly.
        self._by_id: dict[bytes, tuple[Callable[..., Any], Any, Any]] = {}
        self._slow_ids: set[bytes] = set()  # ids found to need confluent-kafka's path
        self._reader: Any = None

    def _build(self, client: SchemaRegistryClient, conf: dict[str, Any]) -> Callable[[bytes, Any], Any]:
        from confluent_kafka.schema_registry.avro import AvroDeserializer

        if self.schema is not None:
            self._reader = _parse_avro(self.schema)
        deserializer: Callable[[bytes, Any], Any] = AvroDeserializer(
            client, self.schema, from_dict=_with_ctx(self.from_dict), conf=conf
        )
        return deserializer

    def _learn(self, data: bytes) -> None:
        """After confluent-kafka decoded a record: may its schema id take the fast path?"""
        settings = self.settings
        if settings is None or settings.use_latest_version:
            return
        if self.schema is not None and self._reader is None:
            return  # a reader schema fastavro cannot parse alone: confluent-kafka's path only
        id_bytes = data[1:HEADER_SIZE]
        if id_bytes in self._slow_ids or data[0] != MAGIC_BYTE:
            return
        try:
            writer = schema_registry_client(settings).get_schema(int.from_bytes(id_bytes, "big"))
        except Exception:
            return  # confluent-kafka's path just read it; try again with the next record
        parsed = None
        if not writer.references and writer.rule_set is None and writer.schema_type in (None, "AVRO"):
            parsed = _parse_avro(writer.schema_str) if writer.schema_str is not None else None
        if parsed is None:
            self._slow_ids.add(id_bytes)
            return
        from fastavro import schemaless_reader

        self._by_id[id_bytes] = (schemaless_reader, parsed, self._reader)

    def deserialize(self, topic: str | None, data: bytes | None) -> T | None:
        if data is None:
            return None
        raw = data if type(data) is bytes else bytes(data)
        fast = self._by_id.get(raw[1:HEADER_SIZE]) if raw[:1] == b"\x00" else None
        if fast is None:
            value: T = self._slow(topic, raw)
            self._learn(raw)
            return value
        # The Spark runner's fused chains call this per record: kept to a dict look-up, a
        # stream over the bytes (no copy) and fastavro's reader.
        stream = io.BytesIO(raw)
        stream.seek(HEADER_SIZE)
        try:
            record = fast[0](stream, fast[1], fast[2])
        except Exception as e:
            raise failure(self._owner, "deserialize", topic, self.is_key, e, self.settings) from e
        return record if self.from_dict is None else self.from_dict(record)  # type: ignore[no-any-return]

    def deserialize_batch(self, topic: str | None, datas: Sequence[bytes | None]) -> list[T | None]:
        """The records of one topic, decoded in order: each schema id's first record through
        confluent-kafka, the rest by fastavro directly with the cached schemas."""
        by_id = self._by_id
        from_dict = self.from_dict
        out: list[T | None] = []
        append = out.append
        BytesIO = io.BytesIO
        for data in datas:
            if data is None:
                append(None)
                continue
            raw = data if type(data) is bytes else bytes(data)
            fast = by_id.get(raw[1:HEADER_SIZE]) if raw[:1] == b"\x00" else None
            if fast is None:
                append(self.deserialize(topic, raw))
                continue
            stream = BytesIO(raw)
            stream.seek(HEADER_SIZE)
            try:
                record = fast[0](stream, fast[1], fast[2])
            except Exception as e:
                raise failure(self._owner, "deserialize", topic, self.is_key, e, self.settings) from e
            append(record if from_dict is None else from_dict(record))
        return out


class GenericAvroSerializer(_AvroSerializer[Any]):
    """Writes ``dict`` records with ``schema`` (or, with ``use.latest.version``, the subject's latest)."""

    _owner = "GenericAvroSerializer"


class GenericAvroDeserializer(_AvroDeserializer[Any]):
    """Reads records as ``dict`` in the schema they were written with."""

    _owner = "GenericAvroDeserializer"


class GenericAvroSerde(SchemaRegistrySerde[Any]):
    """Confluent's ``GenericAvroSerde``: Avro records as ``dict`` (and a primitive schema's values).

    Reading gives each record in the schema it was written with (as Java's
    ``GenericRecord``). A ``dict`` carries no schema, so writing needs one:
    ``schema`` (an Avro schema as JSON text, registered under the subject
    unless ``auto.register.schemas=false``) or ``use.latest.version=true``.
    """

    def __init__(
        self, configs: Mapping[str, Any] | None = None, *, is_key: bool = False, schema: str | None = None
    ) -> None:
        super().__init__(
            GenericAvroSerializer(configs, is_key=is_key, schema=schema),
            GenericAvroDeserializer(configs, is_key=is_key),
        )


class SpecificAvroSerializer(_AvroSerializer[T]):
    """Writes with the given schema; ``to_dict`` maps your object to the record ``dict``."""

    _owner = "SpecificAvroSerializer"


class SpecificAvroDeserializer(_AvroDeserializer[T]):
    """Reads into the given schema (Avro resolution from the writer's); ``from_dict`` maps the result."""

    _owner = "SpecificAvroDeserializer"


class SpecificAvroSerde(SchemaRegistrySerde[T]):
    """Confluent's ``SpecificAvroSerde``: Avro with one schema, the application's own.

    Records are written with ``schema`` and read *into* it, whatever
    compatible version they were written with (a field added with a default
    appears with its default; one removed is dropped), as Java's generated
    classes read. ``from_dict`` / ``to_dict`` map between the record ``dict``
    and your own type (a dataclass, say); without them values are ``dict``.
    """

    def __init__(
        self,
        schema: str,
        configs: Mapping[str, Any] | None = None,
        *,
        is_key: bool = False,
        from_dict: Callable[[dict[str, Any]], T] | None = None,
        to_dict: Callable[[T], dict[str, Any]] | None = None,
    ) -> None:
        if schema is None:
            raise ConfigException("SpecificAvroSerde needs the schema (an Avro schema as JSON text)")
        super().__init__(
            SpecificAvroSerializer(configs, is_key=is_key, schema=schema, to_dict=to_dict),
            SpecificAvroDeserializer(configs, is_key=is_key, schema=schema, from_dict=from_dict),
        )


# ---------------------------------------------------------------------------------- JSON Schema
class KafkaJsonSchemaSerializer(SchemaRegistrySerializer[T]):
    """JSON checked against ``schema`` (a JSON Schema as text), Confluent-framed."""

    _owner = "KafkaJsonSchemaSerializer"

    def __init__(
        self,
        configs: Mapping[str, Any] | None = None,
        *,
        is_key: bool = False,
        schema: str | None = None,
        to_dict: Callable[[T], Any] | None = None,
    ) -> None:
        self.schema = schema
        self.to_dict = to_dict
        super().__init__(configs, is_key)

    def _build(
        self, client: SchemaRegistryClient, conf: dict[str, Any]
    ) -> Callable[[Any, Any], bytes | None]:
        from confluent_kafka.schema_registry.json_schema import JSONSerializer

        if self.schema is None and not conf["use.latest.version"]:
            raise ConfigException(
                f"{self._owner} has no schema to write with: give schema=... or set use.latest.version=true"
            )
        serializer: Callable[[Any, Any], bytes | None] = JSONSerializer(
            self.schema, client, to_dict=_with_ctx(self.to_dict), conf=conf
        )
        return serializer


class KafkaJsonSchemaDeserializer(SchemaRegistryDeserializer[T]):
    """JSON validated against ``schema`` if given, else against the schema it was written with."""

    _owner = "KafkaJsonSchemaDeserializer"

    def __init__(
        self,
        configs: Mapping[str, Any] | None = None,
        *,
        is_key: bool = False,
        schema: str | None = None,
        from_dict: Callable[[Any], T] | None = None,
    ) -> None:
        self.schema = schema
        self.from_dict = from_dict
        super().__init__(configs, is_key)

    def _build(self, client: SchemaRegistryClient, conf: dict[str, Any]) -> Callable[[bytes, Any], Any]:
        from confluent_kafka.schema_registry.json_schema import JSONDeserializer

        deserializer: Callable[[bytes, Any], Any] = JSONDeserializer(
            self.schema, from_dict=_with_ctx(self.from_dict), schema_registry_client=client, conf=conf
        )
        return deserializer


class KafkaJsonSchemaSerde(SchemaRegistrySerde[T]):
    """Confluent's ``KafkaJsonSchemaSerde``: JSON values checked against a JSON Schema.

    Writing needs ``schema`` (or ``use.latest.version=true``); reading
    validates against ``schema`` when given, else against the writer's schema
    from the registry. ``from_dict`` / ``to_dict`` map to and from your type.
    """

    def __init__(
        self,
        schema: str | None = None,
        configs: Mapping[str, Any] | None = None,
        *,
        is_key: bool = False,
        from_dict: Callable[[Any], T] | None = None,
        to_dict: Callable[[T], Any] | None = None,
    ) -> None:
        super().__init__(
            KafkaJsonSchemaSerializer(configs, is_key=is_key, schema=schema, to_dict=to_dict),
            KafkaJsonSchemaDeserializer(configs, is_key=is_key, schema=schema, from_dict=from_dict),
        )


# ------------------------------------------------------------------------------------- Protobuf
class KafkaProtobufSerializer(SchemaRegistrySerializer[T]):
    """A Protobuf message of ``message_type``, Confluent-framed (message indexes included)."""

    _owner = "KafkaProtobufSerializer"

    def __init__(
        self, message_type: type, configs: Mapping[str, Any] | None = None, *, is_key: bool = False
    ) -> None:
        self.message_type = message_type
        super().__init__(configs, is_key)

    def _build(
        self, client: SchemaRegistryClient, conf: dict[str, Any]
    ) -> Callable[[Any, Any], bytes | None]:
        from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

        serializer: Callable[[Any, Any], bytes | None] = ProtobufSerializer(
            self.message_type, client, conf=conf
        )
        return serializer


class KafkaProtobufDeserializer(SchemaRegistryDeserializer[T]):
    """Reads messages of ``message_type`` (the registry is asked only for rules and latest versions)."""

    _owner = "KafkaProtobufDeserializer"

    def __init__(
        self, message_type: type, configs: Mapping[str, Any] | None = None, *, is_key: bool = False
    ) -> None:
        self.message_type = message_type
        super().__init__(configs, is_key)

    def _build(self, client: SchemaRegistryClient, conf: dict[str, Any]) -> Callable[[bytes, Any], Any]:
        from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer

        deserializer: Callable[[bytes, Any], Any] = ProtobufDeserializer(
            self.message_type, conf=conf, schema_registry_client=client
        )
        return deserializer


class KafkaProtobufSerde(SchemaRegistrySerde[T]):
    """Confluent's ``KafkaProtobufSerde``: messages of one generated Protobuf class.

    Needs ``googleapis-common-protos`` (confluent-kafka's Protobuf support
    imports it); kspark installs it.
    """

    def __init__(
        self, message_type: type, configs: Mapping[str, Any] | None = None, *, is_key: bool = False
    ) -> None:
        super().__init__(
            KafkaProtobufSerializer(message_type, configs, is_key=is_key),
            KafkaProtobufDeserializer(message_type, configs, is_key=is_key),
        )
