"""Schema Registry settings, clients and errors, for the serdes of :mod:`kspark.serde.schema_registry`.

The serdes read Confluent's setting names from the application's config
(:func:`registry_settings`), share one registry client per process and
settings (:func:`schema_registry_client`: a serde is pickled to Spark's
Python workers with its settings only, and each worker makes its client on
first use), and turn the registry's and the wire format's failures into
:class:`~kspark.errors.SerializationException` messages that name the serde,
the topic and the setting, with every secret removed.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from kspark.errors import ConfigException, SerializationException
from kspark.redaction import HIDDEN

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import SchemaRegistryClient

__all__ = [
    "HEADER_SIZE",
    "MAGIC_BYTE",
    "SCHEMA_REGISTRY_URL",
    "RegistrySettings",
    "as_bytes",
    "failure",
    "field_name",
    "framing_error",
    "registry_settings",
    "schema_registry_client",
]

T = TypeVar("T")

SCHEMA_REGISTRY_URL = "schema.registry.url"
_PREFIX = "schema.registry."
MAGIC_BYTE = 0
HEADER_SIZE = 5  # magic byte + 4-byte schema id

# The settings of confluent-kafka's SchemaRegistryClient that may be given under schema.registry.
# (anything else there is refused, named, before the application starts).
_CLIENT_SETTINGS = frozenset(
    {
        "ssl.ca.location",
        "ssl.key.location",
        "ssl.key.password",
        "ssl.certificate.location",
        "basic.auth.user.info",
        "basic.auth.credentials.source",
        "proxy",
        "timeout",
        "cache.capacity",
        "cache.latest.ttl.sec",
        "max.retries",
        "retries.wait.ms",
        "retries.max.wait.ms",
    }
)
# Java clients read key stores; confluent-kafka's client reads PEM files.
_JAVA_STORES = re.compile(r"ssl\.(trust|key)store\..*")
_STRATEGIES = {
    "topicnamestrategy": "TOPIC",
    "topic": "TOPIC",
    "recordnamestrategy": "RECORD",
    "record": "RECORD",
    "topicrecordnamestrategy": "TOPIC_RECORD",
    "topic_record": "TOPIC_RECORD",
}
_CREDENTIAL_SOURCES = ("USER_INFO", "URL", "SASL_INHERIT")


# ---------------------------------------------------------------------------------- settings
@dataclass(frozen=True)
class RegistrySettings:
    """What a schema-registry serde needs from the application's config, resolved and checked.

    Plain data, so it pickles to Spark's workers; the client it describes is
    made there (:func:`schema_registry_client`).
    """

    url: str
    """The registry's URL(s) without any user info: safe to print."""
    client_config: dict[str, Any] = field(repr=False)
    """confluent-kafka's ``SchemaRegistryClient`` configuration (may hold secrets)."""
    auto_register_schemas: bool = True
    use_latest_version: bool = False
    normalize_schemas: bool = False
    subject_name_strategy: str | Callable[[str | None, bool, str | None], str] = "TOPIC"
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """Secret values to scrub from any message kspark raises."""

    def scrub(self, text: str) -> str:
        """``text`` with every secret replaced by ``[hidden]``."""
        for secret in self.secrets:
            text = text.replace(secret, HIDDEN)
        return text


def _bool(configs: Mapping[str, Any], key: str, default: bool) -> tuple[bool, bool]:
    """(value, whether it was given)."""
    value = configs.get(key)
    if value is None:
        return default, False
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true", True
    if isinstance(value, bool):
        return value, True
    raise ConfigException(f"Invalid value {value!r} for configuration {key}: expected a boolean")


def _without_userinfo(url: str) -> str:
    """``url`` (comma-separated URLs) with any ``user:password@`` removed."""
    out = []
    for one in url.split(","):
        parts = urlsplit(one.strip())
        netloc = parts.netloc.rsplit("@", 1)[-1]
        out.append(urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)))
    return ",".join(out)


def _url_secrets(url: str) -> list[str]:
    found = []
    for one in url.split(","):
        parts = urlsplit(one.strip())
        if parts.password:
            found.append(parts.password)
            found.append(f"{parts.username}:{parts.password}")
    return found


def _jaas_credentials(configs: Mapping[str, Any]) -> str | None:
    """``user:password`` from the Kafka clients' SASL settings (Confluent's SASL_INHERIT)."""
    jaas = configs.get("sasl.jaas.config")
    if isinstance(jaas, str):
        user = re.search(r'username\s*=\s*"([^"]*)"', jaas)
        password = re.search(r'password\s*=\s*"([^"]*)"', jaas)
        if user and password:
            return f"{user.group(1)}:{password.group(1)}"
    user_name, password_value = configs.get("sasl.username"), configs.get("sasl.password")
    if user_name and password_value:
        return f"{user_name}:{password_value}"
    return None


def _strategy(
    configs: Mapping[str, Any], is_key: bool
) -> str | Callable[[str | None, bool, str | None], str]:
    key = f"{'key' if is_key else 'value'}.subject.name.strategy"
    value = configs.get(key)
    if value is None:
        return "TOPIC"
    if callable(value):
        return value  # type: ignore[no-any-return]
    if isinstance(value, str):
        name = value.strip().rsplit(".", 1)[-1].lower()
        resolved = _STRATEGIES.get(name)
        if resolved is not None:
            return resolved
    raise ConfigException(
        f"Invalid value {value!r} for configuration {key}: expected TopicNameStrategy, RecordNameStrategy, "
        "TopicRecordNameStrategy (Confluent's class names work too) or a callable "
        "(topic, is_key, record_name) -> subject"
    )


def registry_settings(configs: Mapping[str, Any], is_key: bool, owner: str = "serde") -> RegistrySettings:
    """The schema-registry settings of an application config, checked; errors name the key.

    ``configs`` is the application's config: a dict or a ``StreamsConfig``
    (its :meth:`~kspark.config.StreamsConfig.originals` are read).
    """
    if hasattr(configs, "originals"):
        configs = configs.originals()
    if not isinstance(configs, Mapping):
        raise ConfigException(f"{owner}: the config must be a dict of settings, got {type(configs).__name__}")
    url = configs.get(SCHEMA_REGISTRY_URL)
    if not url:
        raise ConfigException(
            f"{owner} needs {SCHEMA_REGISTRY_URL!r} in its config (e.g. 'http://localhost:8081'; "
            "'mock://NAME' for confluent-kafka's in-memory registry in tests)"
        )
    if not isinstance(url, str):
        raise ConfigException(
            f"Invalid value {url!r} for configuration {SCHEMA_REGISTRY_URL}: expected a string"
        )
    for one in url.split(","):
        scheme = urlsplit(one.strip()).scheme
        if scheme not in ("http", "https", "mock"):
            raise ConfigException(
                f"Invalid value {_without_userinfo(url)!r} for configuration {SCHEMA_REGISTRY_URL}: "
                "expected http://HOST:PORT or https://HOST:PORT (comma-separated for several), or mock://NAME"
            )
    client: dict[str, Any] = {"url": url}
    secrets: list[str] = _url_secrets(url)

    for key, value in configs.items():
        if not key.startswith(_PREFIX) or key == SCHEMA_REGISTRY_URL or value is None:
            continue
        name = key[len(_PREFIX) :]
        if _JAVA_STORES.fullmatch(name):
            raise ConfigException(
                f"{key}: confluent-kafka's registry client reads PEM files, not Java key stores: give "
                f"{_PREFIX}ssl.ca.location (and {_PREFIX}ssl.certificate.location, "
                f"{_PREFIX}ssl.key.location) instead"
            )
        if name not in _CLIENT_SETTINGS and not name.startswith("bearer.auth."):
            known = ", ".join(sorted(_PREFIX + s for s in _CLIENT_SETTINGS))
            raise ConfigException(
                f"Unknown schema registry client setting {key!r}; known: {known}, bearer.auth.*"
            )
        client[name] = value
    # Confluent's unprefixed names (what a Java application's config has).
    for key, value in configs.items():
        if key.startswith("bearer.auth.") and value is not None:
            client.setdefault(key, value)
    for name in ("basic.auth.credentials.source", "basic.auth.user.info"):
        if configs.get(name) is not None:
            client.setdefault(name, configs[name])
    ttl = configs.get("latest.cache.ttl.sec")
    if ttl is not None and int(ttl) >= 0:  # Java's -1: no expiry, confluent-kafka's None
        client.setdefault("cache.latest.ttl.sec", int(ttl))

    # Basic auth as Confluent's clients resolve it. confluent-kafka's client reads the user info
    # itself, and the URL's; kspark resolves the source so that SASL_INHERIT works and a
    # user info given without a source is not silently ignored (Java's default source is URL).
    source = client.pop("basic.auth.credentials.source", None)
    user_info = client.pop("basic.auth.user.info", None)
    if source is not None:
        source = str(source).strip().upper()
        if source not in _CREDENTIAL_SOURCES:
            raise ConfigException(
                f"Invalid value {source!r} for configuration basic.auth.credentials.source: "
                f"expected one of {', '.join(_CREDENTIAL_SOURCES)}"
            )
    elif user_info:
        source = "USER_INFO"
    if source == "USER_INFO":
        if not user_info or ":" not in str(user_info):
            raise ConfigException(
                "basic.auth.credentials.source is USER_INFO: basic.auth.user.info must be 'user:password'"
            )
        client["basic.auth.user.info"] = str(user_info)
    elif source == "SASL_INHERIT":
        inherited = _jaas_credentials(configs)
        if inherited is None:
            raise ConfigException(
                "basic.auth.credentials.source is SASL_INHERIT but no username and password were found in "
                "sasl.jaas.config (or sasl.username / sasl.password)"
            )
        client["basic.auth.user.info"] = inherited
    elif source == "URL" and not _url_secrets(url):
        raise ConfigException(
            f"basic.auth.credentials.source is URL but {SCHEMA_REGISTRY_URL} has no user:password@"
        )
    if "basic.auth.user.info" in client:
        info = client["basic.auth.user.info"]
        secrets += [info, info.split(":", 1)[1]]
        if _url_secrets(url):
            # confluent-kafka's client refuses both; say which keys to choose between.
            raise ConfigException(
                f"{SCHEMA_REGISTRY_URL} carries user:password@ and basic.auth.user.info is set too: keep one"
            )
    for name in ("bearer.auth.token", "bearer.auth.client.secret", "ssl.key.password"):
        if client.get(name):
            secrets.append(str(client[name]))

    auto_register, auto_given = _bool(configs, "auto.register.schemas", True)
    use_latest, _ = _bool(configs, "use.latest.version", False)
    normalize, _ = _bool(configs, "normalize.schemas", False)
    if use_latest and auto_register:
        if auto_given:
            raise ConfigException(
                "use.latest.version and auto.register.schemas are both true: a serializer either "
                "registers its own schema or writes with the subject's latest one; set "
                "auto.register.schemas=false"
            )
        auto_register = False
    return RegistrySettings(
        url=_without_userinfo(url),
        client_config=client,
        auto_register_schemas=auto_register,
        use_latest_version=use_latest,
        normalize_schemas=normalize,
        subject_name_strategy=_strategy(configs, is_key),
        # Longest first, so that a password inside "user:password" is not replaced first.
        secrets=tuple(sorted({s for s in secrets if s}, key=len, reverse=True)),
    )


# ------------------------------------------------------------------------- clients, per process
_CLIENTS: dict[tuple[int, str], SchemaRegistryClient] = {}
_CLIENTS_LOCK = threading.Lock()


def schema_registry_client(settings: RegistrySettings) -> SchemaRegistryClient:
    """This process's registry client for ``settings`` (created on first use, then shared).

    Keyed by process id too: a Spark worker forked from a daemon that already
    had a client must not share its HTTP connections.
    """
    key = (os.getpid(), json.dumps(settings.client_config, sort_keys=True, default=repr))
    client = _CLIENTS.get(key)
    if client is not None:
        return client
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            from confluent_kafka.schema_registry import SchemaRegistryClient

            try:
                client = SchemaRegistryClient.new_client(dict(settings.client_config))
            except (ValueError, TypeError) as e:
                raise ConfigException(
                    f"The schema registry client for {settings.url} refused its settings: "
                    f"{settings.scrub(str(e))}"
                ) from None
            _CLIENTS[key] = client
    return client


# ------------------------------------------------------------------------------------ errors
def field_name(is_key: bool) -> str:
    return "key" if is_key else "value"


def _describe(e: BaseException, settings: RegistrySettings) -> str:
    """The cause in words a user can act on."""
    name = type(e).__name__
    text = str(e)
    if name in ("ConnectError", "ConnectTimeout", "ReadTimeout", "TimeoutException", "NetworkError"):
        return (
            f"could not reach the schema registry at {settings.url} ({SCHEMA_REGISTRY_URL}): "
            f"{name}: {text or 'no answer'}"
        )
    if name == "SchemaRegistryError":
        status = getattr(e, "http_status_code", None)
        code = getattr(e, "error_code", None)
        message = getattr(e, "error_message", text)
        return f"the schema registry at {settings.url} answered {status} (error {code}): {message}"
    return f"{name}: {text}"


def failure(
    owner: str,
    action: str,
    topic: str | None,
    is_key: bool,
    e: BaseException,
    settings: RegistrySettings | None,
) -> SerializationException:
    cause = _describe(e, settings) if settings is not None else f"{type(e).__name__}: {e}"
    if settings is not None:
        cause = settings.scrub(cause)
    return SerializationException(
        f"{owner} could not {action} the {field_name(is_key)} of topic {topic!r}: {cause}"
    )


def framing_error(owner: str, topic: str | None, is_key: bool, data: bytes) -> SerializationException | None:
    """Why ``data`` is not in the Confluent wire format, or None when it could be."""
    where = f"{owner} could not deserialize the {field_name(is_key)} of topic {topic!r}"
    layout = "the Confluent wire format is magic byte 0, a 4-byte schema id, then the payload"
    if len(data) < HEADER_SIZE:
        return SerializationException(
            f"{where}: {len(data)} bytes is too short for the Confluent wire format ({layout})"
        )
    # Magic byte 1 (a 16-byte schema GUID instead of the id) is confluent-kafka's newer framing:
    # its deserializer reads it.
    if data[0] not in (MAGIC_BYTE, 1):
        return SerializationException(
            f"{where}: unknown magic byte 0x{data[0]:02x}, expected 0x00 ({layout}); "
            "was it written by a schema registry serializer?"
        )
    return None


def as_bytes(data: Any) -> bytes:
    return data if type(data) is bytes else bytes(data)
