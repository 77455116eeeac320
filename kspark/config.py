"""``StreamsConfig``: validates the plain config dict and gives typed access with Kafka's defaults.

Every Kafka Streams config name is known (an unknown name is a
``ConfigException`` naming it); client prefixes (``consumer.``,
``producer.``, ``admin.``, ``main.consumer.``, ``restore.consumer.``,
``global.consumer.``, ``topic.``, ``client.tag.``), the clients' connection
settings (``ssl.*``, ``sasl.*``) and ``spark.*`` pass through unchecked here
(``kspark.runtime.kafka_clients`` checks the connection settings). The
settings of the schema-registry serdes (:mod:`kspark.serde.schema_registry`)
are accepted as Confluent names them: ``schema.registry.*``,
``basic.auth.*``, ``bearer.auth.*`` pass through, and
``auto.register.schemas``, ``use.latest.version``, ``normalize.schemas``,
``key.subject.name.strategy``, ``value.subject.name.strategy`` and
``latest.cache.ttl.sec`` are checked here. Secrets (:func:`is_secret`, and
the password of a URL's ``user:password@``) never show in a ``repr``.
``cache.max.bytes.buffering`` is the deprecated alias of
``statestore.cache.max.bytes``. Serde settings take a ``Serde`` instance or a
name (``string``, ``long``, ``integer``, ``double``, ``bytes``, ``json``);
handler settings take ``log_and_continue`` | ``log_and_fail`` | a callable.
"""

from __future__ import annotations

import difflib
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kspark.errors import ConfigException

__all__ = [
    "StreamsConfig",
    "AT_LEAST_ONCE",
    "EXACTLY_ONCE_V2",
    "CONFIG_NAMES",
    "PASS_THROUGH_PREFIXES",
    "is_secret",
    "redacted",
]

AT_LEAST_ONCE = "at_least_once"
EXACTLY_ONCE_V2 = "exactly_once_v2"
DEFAULT_COMMIT_INTERVAL_MS = 30_000
EOS_DEFAULT_COMMIT_INTERVAL_MS = 100
_SERDE_NAMES = ("string", "long", "integer", "double", "bytes", "json")

PASS_THROUGH_PREFIXES = (
    # How every client connects (security.protocol is a Kafka Streams name too): Kafka Streams
    # gives an unprefixed client setting to all its clients (kspark.runtime.kafka_clients).
    "ssl.",
    "sasl.",
    "consumer.",
    "producer.",
    "admin.",
    "main.consumer.",
    "restore.consumer.",
    "global.consumer.",
    "topic.",
    "client.tag.",
    "spark.",
    # The schema-registry serdes' settings, as Confluent's serdes name them
    # (kspark.serde.schema_registry checks them when a serde is configured).
    "schema.registry.",
    "basic.auth.",
    "bearer.auth.",
)


_SECRET = re.compile(
    r"password|secret|jaas|\.pem$|keystore\.key$|oauthbearer\.config$|token$|user\.info$", re.IGNORECASE
)
# A URL's user info (http://user:password@host), e.g. in schema.registry.url.
_URL_PASSWORD = re.compile(r"(://[^:/@\s]+:)[^@/\s]+@")

HIDDEN = "[hidden]"


def is_secret(name: str) -> bool:
    """Whether the setting ``name`` (any prefix, Java's or librdkafka's name) holds a secret."""
    return bool(_SECRET.search(name))


def redacted(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` with every secret's value replaced by ``[hidden]``, and the password of any
    URL's ``user:password@``."""
    return {
        k: HIDDEN
        if is_secret(k) and v not in (None, "")
        else _URL_PASSWORD.sub(rf"\g<1>{HIDDEN}@", v)
        if isinstance(v, str)
        else v
        for k, v in settings.items()
    }


@dataclass(frozen=True)
class _Def:
    kind: str  # str|int|long|bool|list|class|serde|handler|extractor|any
    default: Any = None
    choices: tuple[Any, ...] | None = None
    at_least: int | None = None
    required: bool = False


def _d(kind: str, default: Any = None, **kw: Any) -> _Def:
    return _Def(kind, default, **kw)


_HANDLER_HELP = (
    "'log_and_continue', 'log_and_fail' or a callable (context, record, exception) -> HandlerResponse"
)

_DEFS: dict[str, _Def] = {
    "application.id": _d("str", required=True),
    "bootstrap.servers": _d("list", required=True),
    "num.standby.replicas": _d("int", 0),
    "state.dir": _d("str", os.path.join(tempfile.gettempdir(), "kafka-streams")),
    "acceptable.recovery.lag": _d("long", 10_000, at_least=0),
    "cache.max.bytes.buffering": _d("long", 10 * 1024 * 1024, at_least=0),
    "statestore.cache.max.bytes": _d("long", 10 * 1024 * 1024, at_least=0),
    "client.id": _d("str", ""),
    "default.deserialization.exception.handler": _d("handler", "log_and_fail"),
    "deserialization.exception.handler": _d("handler", "log_and_fail"),
    "default.key.serde": _d("serde"),
    "default.value.serde": _d("serde"),
    "default.list.key.serde.inner": _d("any"),
    "default.list.value.serde.inner": _d("any"),
    "default.list.key.serde.type": _d("any"),
    "default.list.value.serde.type": _d("any"),
    "default.production.exception.handler": _d("handler", "log_and_fail"),
    "production.exception.handler": _d("handler", "log_and_fail"),
    "default.timestamp.extractor": _d("extractor", "FailOnInvalidTimestamp"),
    "max.task.idle.ms": _d("long", 0),
    "max.warmup.replicas": _d("int", 2, at_least=1),
    "num.stream.threads": _d("int", 1, at_least=1),
    "processing.exception.handler": _d("handler", "log_and_fail"),
    "processing.guarantee": _d("str", AT_LEAST_ONCE, choices=(AT_LEAST_ONCE, EXACTLY_ONCE_V2)),
    "rack.aware.assignment.non_overlap_cost": _d("int"),
    "rack.aware.assignment.strategy": _d(
        "str", "none", choices=("none", "min_traffic", "balance_subtopology")
    ),
    "rack.aware.assignment.tags": _d("list", []),
    "rack.aware.assignment.traffic_cost": _d("int"),
    "task.assignor.class": _d("str"),
    "replication.factor": _d("int", -1),
    "security.protocol": _d("str", "PLAINTEXT", choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")),
    "task.timeout.ms": _d("long", 300_000, at_least=0),
    "topology.optimization": _d("str", "none"),
    "application.server": _d("str", ""),
    "buffered.records.per.partition": _d("int", 1000),
    "built.in.metrics.version": _d("str", "latest", choices=("latest",)),
    "commit.interval.ms": _d("long", None, at_least=0),
    "enable.metrics.push": _d("bool", True),
    "repartition.purge.interval.ms": _d("long", DEFAULT_COMMIT_INTERVAL_MS, at_least=0),
    "connections.max.idle.ms": _d("long", 540_000),
    "default.dsl.store": _d("str", "rocksDB", choices=("rocksDB", "in_memory")),
    "dsl.store.suppliers.class": _d("any"),
    "default.client.supplier": _d("any"),
    "log.summary.interval.ms": _d("long", 120_000),
    "metadata.max.age.ms": _d("long", 300_000, at_least=0),
    "metrics.num.samples": _d("int", 2, at_least=1),
    "metric.reporters": _d("list", []),
    "metrics.recording.level": _d("str", "INFO", choices=("INFO", "DEBUG", "TRACE")),
    "metrics.sample.window.ms": _d("long", 30_000, at_least=0),
    "poll.ms": _d("long", 100),
    "probing.rebalance.interval.ms": _d("long", 600_000, at_least=60_000),
    "receive.buffer.bytes": _d("int", 32 * 1024, at_least=-1),
    "reconnect.backoff.ms": _d("long", 50, at_least=0),
    "reconnect.backoff.max.ms": _d("long", 1000, at_least=0),
    "retry.backoff.ms": _d("long", 100, at_least=0),
    "request.timeout.ms": _d("int", 40_000, at_least=0),
    "rocksdb.config.setter": _d("any"),
    "send.buffer.bytes": _d("int", 128 * 1024, at_least=-1),
    "state.cleanup.delay.ms": _d("long", 600_000),
    "upgrade.from": _d("str"),
    "windowed.inner.class.serde": _d("any"),
    "windowstore.changelog.additional.retention.ms": _d("long", 24 * 60 * 60 * 1000),
    "window.size.ms": _d("long"),
    "errors.dead.letter.queue.topic.name": _d("str"),
    # Confluent's schema-registry serde settings (kspark.serde.schema_registry; Confluent's defaults).
    "auto.register.schemas": _d("bool", True),
    "use.latest.version": _d("bool", False),
    "normalize.schemas": _d("bool", False),
    "key.subject.name.strategy": _d("any", "TopicNameStrategy"),
    "value.subject.name.strategy": _d("any", "TopicNameStrategy"),
    "latest.cache.ttl.sec": _d("long", -1, at_least=-1),
}

CONFIG_NAMES: frozenset[str] = frozenset(_DEFS)


def _is_internal(key: str) -> bool:
    """Kafka Streams' internal settings (``InternalConfig``) are named ``__...__``; operators read them."""
    return len(key) > 4 and key.startswith("__") and key.endswith("__")


def _fail(key: str, value: Any, allowed: str) -> ConfigException:
    return ConfigException(f"Invalid value {value!r} for configuration {key}: {allowed}")


def _check(key: str, value: Any, d: _Def) -> Any:
    if value is None:
        if d.required:
            raise ConfigException(f"Missing required configuration {key!r} which has no default value.")
        return None
    kind = d.kind
    if kind == "str":
        if not isinstance(value, str):
            raise _fail(key, value, "expected a string")
    elif kind in ("int", "long"):
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise _fail(key, value, "expected an integer")
        if d.at_least is not None and value < d.at_least:
            raise _fail(key, value, f"value must be at least {d.at_least}")
    elif kind == "bool":
        if isinstance(value, str) and value.lower() in ("true", "false"):
            value = value.lower() == "true"
        if not isinstance(value, bool):
            raise _fail(key, value, "expected a boolean")
    elif kind == "list":
        if isinstance(value, str):
            value = [s.strip() for s in value.split(",") if s.strip()]
        elif isinstance(value, list | tuple):
            value = list(value)
        else:
            raise _fail(key, value, "expected a comma-separated string or a list of strings")
    elif kind == "serde":
        _resolve_serde(key, value)
    elif kind == "handler":
        from kspark.processor.internals.exception_handlers import resolve_exception_handler

        resolve_exception_handler(value, key)
    elif kind == "extractor":
        from kspark.processor.internals.timestamp_extractors import resolve_timestamp_extractor

        resolve_timestamp_extractor(value, key)
    if d.choices is not None and value not in d.choices:
        raise _fail(key, value, f"String must be one of: {', '.join(str(c) for c in d.choices)}")
    return value


def _resolve_serde(key: str, value: Any) -> Any:
    from kspark.serde.api import Serde

    allowed = f"expected a Serde instance or one of {', '.join(_SERDE_NAMES)}"
    if isinstance(value, Serde):
        return value
    if isinstance(value, type) and issubclass(value, Serde):
        return value()
    if isinstance(value, str):
        from kspark.serde import Serdes

        try:
            return Serdes.from_name(value)
        except Exception as e:
            raise _fail(key, value, allowed) from e
    raise _fail(key, value, allowed)


class StreamsConfig(Mapping[str, Any]):
    """A validated, read-only view of a Kafka Streams config dict.

    ``StreamsConfig(cfg)`` raises ``ConfigException`` for an unknown key, a
    bad value, or (unless ``require_mandatory=False``) a missing
    ``application.id``/``bootstrap.servers``. ``config[key]`` returns the
    given value or Kafka's default; typed accessors resolve serdes, handlers
    and the timestamp extractor.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, *, require_mandatory: bool = True) -> None:
        if config is not None and not isinstance(config, Mapping):
            raise ConfigException(f"The config must be a dict of Kafka Streams config names, got {config!r}")
        given = dict(config or {})
        values: dict[str, Any] = {}
        for key, value in given.items():
            if not isinstance(key, str):
                raise ConfigException(f"Config keys must be strings, got {key!r}")
            if key.startswith(PASS_THROUGH_PREFIXES) or _is_internal(key):
                values[key] = value
                continue
            d = _DEFS.get(key)
            if d is None:
                close = difflib.get_close_matches(key, _DEFS, n=1, cutoff=0.75)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise ConfigException(
                    f"Unknown configuration {key!r}: {hint}not a Kafka Streams config name; client settings "
                    f"take a prefix ({', '.join(PASS_THROUGH_PREFIXES)})"
                )
            values[key] = _check(key, value, d)
        if require_mandatory:
            for key, d in _DEFS.items():
                if d.required and values.get(key) is None:
                    raise ConfigException(
                        f"Missing required configuration {key!r} which has no default value."
                    )
        self._values = values
        self._serde_cache: dict[str, Any] = {}

    # Mapping protocol: the effective value (given or default) of every known key.
    def __getitem__(self, key: str) -> Any:
        if key in self._values:
            return self._values[key]
        if key == "statestore.cache.max.bytes" and "cache.max.bytes.buffering" in self._values:
            return self._values["cache.max.bytes.buffering"]
        if key == "commit.interval.ms":
            return self.commit_interval_ms()
        d = _DEFS.get(key)
        if d is None:
            raise KeyError(key)
        return d.default

    def __iter__(self) -> Any:
        return iter(dict.fromkeys([*_DEFS, *self._values]))

    def __len__(self) -> int:
        return len(set(_DEFS) | set(self._values))

    def originals(self) -> dict[str, Any]:
        """The keys and values the user gave, as given (after normalisation)."""
        return dict(self._values)

    def prefixed(self, prefix: str) -> dict[str, Any]:
        """Settings under ``prefix`` with the prefix removed (``consumer.``, ``spark.`` ...)."""
        return {k[len(prefix) :]: v for k, v in self._values.items() if k.startswith(prefix)}

    # typed accessors
    def application_id(self) -> str:
        return str(self["application.id"])

    def bootstrap_servers(self) -> list[str]:
        return list(self["bootstrap.servers"] or [])

    def processing_guarantee(self) -> str:
        return str(self["processing.guarantee"])

    def exactly_once(self) -> bool:
        return self.processing_guarantee() == EXACTLY_ONCE_V2

    def commit_interval_ms(self) -> int:
        given = self._values.get("commit.interval.ms")
        if given is not None:
            return int(given)
        return EOS_DEFAULT_COMMIT_INTERVAL_MS if self.exactly_once() else DEFAULT_COMMIT_INTERVAL_MS

    def cache_max_bytes(self) -> int:
        return int(self["statestore.cache.max.bytes"])

    def num_stream_threads(self) -> int:
        return int(self["num.stream.threads"])

    def state_dir(self) -> str:
        return str(self["state.dir"])

    def application_server(self) -> str:
        return str(self["application.server"])

    def max_task_idle_ms(self) -> int:
        return int(self["max.task.idle.ms"])

    def dead_letter_queue_topic(self) -> str | None:
        value = self._values.get("errors.dead.letter.queue.topic.name")
        return str(value) if value else None

    def default_key_serde(self) -> Any:
        """The ``default.key.serde`` as a Serde, or None when not configured."""
        return self._serde("default.key.serde")

    def default_value_serde(self) -> Any:
        return self._serde("default.value.serde")

    def _serde(self, key: str) -> Any:
        value = self._values.get(key)
        if value is None:
            return None
        if key not in self._serde_cache:
            serde = _resolve_serde(key, value)
            configure = getattr(serde, "configure", None)
            if callable(configure):  # as Kafka's defaultKeySerde/defaultValueSerde configure theirs
                configure(dict(self.originals()), key == "default.key.serde")
            self._serde_cache[key] = serde
        return self._serde_cache[key]

    def default_timestamp_extractor(self) -> Any:
        from kspark.processor.internals.timestamp_extractors import resolve_timestamp_extractor

        return resolve_timestamp_extractor(self["default.timestamp.extractor"], "default.timestamp.extractor")

    def deserialization_exception_handler(self) -> Callable[..., Any]:
        # The non-deprecated name wins when both are given, as in Kafka.
        key = (
            "deserialization.exception.handler"
            if "deserialization.exception.handler" in self._values
            else "default.deserialization.exception.handler"
        )
        return self._handler(key)

    def production_exception_handler(self) -> Callable[..., Any]:
        key = (
            "production.exception.handler"
            if "production.exception.handler" in self._values
            else "default.production.exception.handler"
        )
        return self._handler(key)

    def processing_exception_handler(self) -> Callable[..., Any]:
        return self._handler("processing.exception.handler")

    def _handler(self, key: str) -> Callable[..., Any]:
        from kspark.processor.internals.exception_handlers import resolve_exception_handler

        return resolve_exception_handler(self[key], key)

    def __repr__(self) -> str:
        return f"StreamsConfig({redacted(self._values)!r})"
