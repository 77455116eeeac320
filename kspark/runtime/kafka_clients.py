"""The connection settings of every Kafka client kspark starts, from one Kafka Streams config.

Kafka Streams takes its clients' settings in the Java client's names: a
setting given without a prefix goes to every client, one with a
``consumer.``, ``producer.`` or ``admin.`` prefix to that kind of client only,
and wins over the unprefixed one. kspark does the same for the settings that
say how to connect: ``security.protocol`` and every ``ssl.*`` and ``sasl.*``
name (:func:`is_connection_setting`). Other client settings take a prefix.

kspark's clients are of two kinds:

* **librdkafka** (``confluent_kafka``) in the application process and the
  Spark Python workers: admin clients, sink and transactional producers, the
  direct read's and the header readers' consumers, global-store replicas. The
  Java names are translated (:func:`librdkafka_security`): a PLAIN or SCRAM
  ``sasl.jaas.config`` becomes ``sasl.username`` / ``sasl.password``, an
  OAUTHBEARER one librdkafka's OIDC or unsecured-JWT settings, a PEM trust or
  key store librdkafka's ``ssl.ca.*`` / ``ssl.certificate.*`` / ``ssl.key.*``,
  a PKCS#12 key store stays as it is. What librdkafka cannot take (a JKS
  store, a PKCS#12 trust store, Kerberos) is a :class:`ConfigException`
  naming the setting, raised when the application is created.
* **Java's**, in Spark's Kafka source: the settings as given, as ``kafka.*``
  options (:func:`spark_source_options`). Settings that only tune the JVM's
  TLS (protocol versions, providers, cipher names, which differ from
  OpenSSL's) go there only.

Secrets (passwords, keys, JAAS configs, client secrets) never reach a log or
an error: ``kspark.redaction.redacted`` hides them, and ``is_secret`` names them.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any, Literal

from kspark.errors import ConfigException, StreamsException
from kspark.redaction import redacted

__all__ = [
    "ClientKind",
    "is_connection_setting",
    "connection_settings",
    "librdkafka_security",
    "librdkafka_client",
    "prefixed_settings",
    "spark_source_options",
    "check_client_settings",
    "offset_reset",
    "cluster_metadata",
]

ClientKind = Literal["consumer", "producer", "admin"]

# Java client names that tune only the JVM's TLS or SASL machinery: Spark's source gets them,
# librdkafka (OpenSSL, its own SASL) has no equivalent and uses its defaults (TLS 1.2 and up).
_JVM_ONLY = re.compile(
    r"ssl\.(protocol|enabled\.protocols|provider|cipher\.suites|keymanager\.algorithm|"
    r"trustmanager\.algorithm|secure\.random\.implementation|engine\.factory\.class|truststore\.password)$"
    r"|sasl\.(login|client\.callback|kerberos)\..*"
    r"|sasl\.oauthbearer\.(scope\.claim\.name|sub\.claim\.name|expected\.audience|expected\.issuer|"
    r"clock\.skew\.seconds|jwks\.endpoint\..*|header\.urlencode|assertion\..*|jwt\..*)$"
)

# librdkafka's own names, accepted as they are (an application may know them already).
_LIBRDKAFKA_SAME = re.compile(
    r"security\.protocol|sasl\.mechanisms?|sasl\.username|sasl\.password|sasl\.oauthbearer\.(method|"
    r"client\.id|client\.secret|scope|extensions|token\.endpoint\.url|config)|"
    r"enable\.sasl\.oauthbearer\.unsecure\.jwt|ssl\.(ca|certificate|key|crl)\.(location|pem)|"
    r"ssl\.key\.password|ssl\.keystore\.(location|password)|ssl\.ca\.certificate\.stores|ssl\.sigalgs\.list|"
    r"ssl\.curves\.list|ssl\.cipher\.suites|ssl_engine_.*|ssl\.engine\..*"
)


def is_connection_setting(name: str) -> bool:
    """Whether ``name`` (unprefixed) says how a client connects: it goes to every client."""
    return name == "security.protocol" or name.startswith(("ssl.", "sasl."))


def connection_settings(config: Mapping[str, Any], kind: ClientKind) -> dict[str, tuple[str, Any]]:
    """The Java connection settings of a ``kind`` client: name -> (the key as given, value); a
    ``kind.``-prefixed setting wins over the unprefixed one."""
    out: dict[str, tuple[str, Any]] = {}
    for key, value in config.items():
        if is_connection_setting(key) and value is not None:
            out[key] = (key, value)
    prefix = f"{kind}."
    for key, value in config.items():
        name = key[len(prefix) :]
        if key.startswith(prefix) and is_connection_setting(name) and value is not None:
            out[name] = (key, value)
    return out


def librdkafka_security(config: Mapping[str, Any], kind: ClientKind) -> dict[str, Any]:
    """The connection settings of a ``kind`` client of ``config`` (Kafka Streams settings, Java
    names) in librdkafka's names (see the module docstring)."""
    java = connection_settings(config, kind)
    out: dict[str, Any] = {}
    for name, (key, value) in java.items():
        if _JVM_ONLY.fullmatch(name) or name in _HANDLED:
            continue
        if name == "ssl.endpoint.identification.algorithm":
            out[name] = str(value).lower() or "none"  # Java's "" turns it off; librdkafka says "none"
        elif _LIBRDKAFKA_SAME.fullmatch(name):
            out[name] = value
        else:
            raise ConfigException(
                f"{key}: kspark does not know this client setting, so it cannot give it to its "
                "librdkafka clients (security.protocol, sasl.mechanism, sasl.jaas.config, "
                "sasl.oauthbearer.token.endpoint.url and the ssl.truststore.*, ssl.keystore.* and "
                "ssl.key.password settings are translated; librdkafka's own names pass as they are)"
            )
    out.update(_sasl(java))
    out.update(_truststore(java))
    out.update(_keystore(java))
    return out


_HANDLED = frozenset(
    {
        "sasl.jaas.config",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.certificates",
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
    }
)
"""Java names translated by the functions below rather than passed on."""

_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "OAUTHBEARER": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
}

_JAAS = re.compile(r"\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\s*(.*?)\s*;?\s*", re.DOTALL)
_JAAS_OPTION = re.compile(r'\s*([\w.]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s";]+))')


def parse_jaas(key: str, text: str) -> tuple[str, dict[str, str]]:
    """A ``sasl.jaas.config`` value: its login module and options. Errors never show the value."""
    match = _JAAS.fullmatch(text)
    if match is None:
        raise ConfigException(
            f"{key} is not a JAAS configuration of the form '<LoginModule> required name=\"value\" ...;'"
        )
    module, _, body = match.groups()
    options: dict[str, str] = {}
    position = 0
    while position < len(body):
        option = _JAAS_OPTION.match(body, position)
        if option is None:
            raise ConfigException(
                f'{key}: cannot read the options of {module} at character {position} (expected name="value")'
            )
        name, quoted, bare = option.groups()
        options[name] = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
        position = option.end()
        while position < len(body) and body[position] in " \t\r\n":
            position += 1
    return module, options


def _sasl(java: Mapping[str, tuple[str, Any]]) -> dict[str, Any]:
    protocol = str(java.get("security.protocol", ("", "PLAINTEXT"))[1]).upper()
    mechanism_key, mechanism = java.get("sasl.mechanism", ("sasl.mechanism", "GSSAPI"))
    mechanism = str(mechanism).upper()
    if not protocol.startswith("SASL_"):
        return {}
    if mechanism == "GSSAPI":
        raise ConfigException(
            f"{mechanism_key}=GSSAPI (Kerberos, Kafka's default mechanism) is not supported by kspark; "
            "set sasl.mechanism to PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"
        )
    if mechanism not in _LOGIN_MODULES:
        raise ConfigException(
            f"{mechanism_key}={mechanism} is not a SASL mechanism kspark supports "
            f"({', '.join(_LOGIN_MODULES)})"
        )
    out: dict[str, Any] = {"sasl.mechanism": mechanism}
    if "sasl.jaas.config" not in java:
        if mechanism == "OAUTHBEARER" or "sasl.username" in java:
            return out  # librdkafka's own names given, or OIDC settings alone
        raise ConfigException(
            f"security.protocol={protocol} with sasl.mechanism={mechanism} needs sasl.jaas.config "
            f'({_LOGIN_MODULES[mechanism]} required username="..." password="...";)'
        )
    key, text = java["sasl.jaas.config"]
    module, options = parse_jaas(key, str(text))
    if module != _LOGIN_MODULES[mechanism]:
        raise ConfigException(
            f"{key} names {module}, but sasl.mechanism={mechanism} needs {_LOGIN_MODULES[mechanism]}"
        )
    if mechanism != "OAUTHBEARER":
        missing = [o for o in ("username", "password") if o not in options]
        if missing:
            raise ConfigException(f"{key} has no {' and no '.join(missing)}")
        return {**out, "sasl.username": options["username"], "sasl.password": options["password"]}
    if "unsecuredLoginStringClaim_sub" in options:
        # Kafka's unsecured JWTs (development brokers): librdkafka builds the same kind of token.
        claims = [f"principal={options['unsecuredLoginStringClaim_sub']}"]
        claims += [
            f"{name[len('unsecuredLoginStringClaim_') :]}={value}"
            for name, value in options.items()
            if name.startswith("unsecuredLoginStringClaim_") and name != "unsecuredLoginStringClaim_sub"
        ]
        return {
            **out,
            "enable.sasl.oauthbearer.unsecure.jwt": True,
            "sasl.oauthbearer.config": " ".join(claims),
        }
    if "clientId" in options and "clientSecret" in options:
        if "sasl.oauthbearer.token.endpoint.url" not in java:
            raise ConfigException(
                f"{key} names an OAuth client, but sasl.oauthbearer.token.endpoint.url is not set"
            )
        oidc = {
            "sasl.oauthbearer.method": "oidc",
            "sasl.oauthbearer.client.id": options["clientId"],
            "sasl.oauthbearer.client.secret": options["clientSecret"],
        }
        if "scope" in options:
            oidc["sasl.oauthbearer.scope"] = options["scope"]
        return {**out, **oidc}
    raise ConfigException(
        f"{key}: an OAUTHBEARER login needs clientId and clientSecret (with "
        "sasl.oauthbearer.token.endpoint.url), or unsecuredLoginStringClaim_sub"
    )


def _store_type(java: Mapping[str, tuple[str, Any]], store: str) -> str:
    return str(java.get(f"ssl.{store}.type", ("", "JKS"))[1]).upper()


def _truststore(java: Mapping[str, tuple[str, Any]]) -> dict[str, Any]:
    if "ssl.truststore.certificates" in java:
        return {"ssl.ca.pem": java["ssl.truststore.certificates"][1]}
    if "ssl.truststore.location" not in java:
        return {}  # the system's CAs, as the JVM's default trust store
    key, location = java["ssl.truststore.location"]
    kind = _store_type(java, "truststore")
    if kind != "PEM":
        raise ConfigException(
            f"{key}={location} is a {kind} trust store (ssl.truststore.type); kspark's Python clients "
            "(librdkafka) read PEM trust stores only: export the CA certificates as PEM "
            "(keytool -exportcert -rfc) and set ssl.truststore.type=PEM"
        )
    return {"ssl.ca.location": str(location)}


def _keystore(java: Mapping[str, tuple[str, Any]]) -> dict[str, Any]:
    kind = _store_type(java, "keystore")
    out: dict[str, Any] = {}
    if "ssl.keystore.key" in java or "ssl.keystore.certificate.chain" in java:
        if "ssl.keystore.key" not in java or "ssl.keystore.certificate.chain" not in java:
            raise ConfigException(
                "ssl.keystore.key and ssl.keystore.certificate.chain go together (PEM key store)"
            )
        out["ssl.key.pem"] = java["ssl.keystore.key"][1]
        out["ssl.certificate.pem"] = java["ssl.keystore.certificate.chain"][1]
    elif "ssl.keystore.location" in java:
        key, location = java["ssl.keystore.location"]
        if kind == "PEM":
            # One file with the private key and the certificate chain, as Java's PEM key store.
            out["ssl.key.location"] = out["ssl.certificate.location"] = str(location)
        elif kind == "PKCS12":
            out["ssl.keystore.location"] = str(location)
            if "ssl.keystore.password" in java:
                out["ssl.keystore.password"] = java["ssl.keystore.password"][1]
        else:
            raise ConfigException(
                f"{key}={location} is a {kind} key store (ssl.keystore.type); kspark's Python clients "
                "(librdkafka) read PEM and PKCS12 key stores: convert it (keytool -importkeystore "
                "-deststoretype PKCS12) and set ssl.keystore.type"
            )
    return out


def librdkafka_client(
    config: Mapping[str, Any], kind: ClientKind, *, prefixed: bool = False
) -> dict[str, Any]:
    """A ``kind`` client's librdkafka settings from Kafka Streams settings: ``bootstrap.servers``
    and the connection settings; with ``prefixed``, the other ``kind.*`` settings too, as given
    (librdkafka shares most of the Java client's names)."""
    servers = config.get("bootstrap.servers")
    bootstrap = servers if isinstance(servers, str) else ",".join(str(s) for s in servers or ())
    others = prefixed_settings(config, kind) if prefixed else {}
    return {"bootstrap.servers": bootstrap, **others, **librdkafka_security(config, kind)}


# The Java client's names of settings librdkafka has under another name.
_LIBRDKAFKA_NAMES = {
    "receive.buffer.bytes": "socket.receive.buffer.bytes",
    "send.buffer.bytes": "socket.send.buffer.bytes",
    "max.request.size": "message.max.bytes",
}


def prefixed_settings(config: Mapping[str, Any], kind: ClientKind) -> dict[str, Any]:
    """The ``kind.*`` settings of ``config`` but the connection settings, the prefix removed and
    the Java names librdkafka has under another name translated (``receive.buffer.bytes`` is its
    ``socket.receive.buffer.bytes``)."""
    prefix = f"{kind}."
    return {
        _LIBRDKAFKA_NAMES.get(k[len(prefix) :], k[len(prefix) :]): v
        for k, v in config.items()
        if k.startswith(prefix) and not is_connection_setting(k[len(prefix) :])
    }


def spark_source_options(config: Mapping[str, Any]) -> dict[str, str]:
    """The ``kafka.*`` options of Spark's Kafka source (a Java consumer): the connection settings
    as given, then every ``consumer.*`` setting but ``auto.offset.reset``, which Spark refuses
    (a query's start is its ``startingOffsets``: :func:`offset_reset`)."""
    java = {name: value for name, (_, value) in connection_settings(config, "consumer").items()}
    for key, value in config.items():
        if key.startswith("consumer.") and value is not None and key != "consumer.auto.offset.reset":
            java[key[len("consumer.") :]] = value
    return {f"kafka.{k}": str(v) for k, v in java.items()}


OFFSET_RESETS = ("earliest", "latest")


def offset_reset(config: Mapping[str, Any]) -> str:
    """Where an application starts reading a partition it has no committed offset for: its main
    consumer's ``auto.offset.reset`` (``main.consumer.`` over ``consumer.``, as in Kafka
    Streams), ``earliest`` by default as Kafka Streams sets it. Raises ``ConfigException`` for
    another value ("none", which fails a start without offsets, is not supported)."""
    for key in ("main.consumer.auto.offset.reset", "consumer.auto.offset.reset"):
        value = config.get(key)
        if value is None:
            continue
        reset = str(value).strip().lower()
        if reset not in OFFSET_RESETS:
            raise ConfigException(f"{key}={value!r}: kspark starts at one of {', '.join(OFFSET_RESETS)}")
        return reset
    return "earliest"


_QUIET = logging.getLogger("kspark.settings-check")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def check_client_settings(config: Mapping[str, Any]) -> None:
    """Translate every kind of client's connection settings and let librdkafka check them (names,
    values, that key and certificate files load), without connecting: a mistake fails here, named,
    instead of in a Spark task later."""
    from confluent_kafka import KafkaException, Producer

    offset_reset(config)
    for key in config:
        for prefix in ("main.consumer.", "restore.consumer.", "global.consumer."):
            if key.startswith(prefix) and is_connection_setting(key[len(prefix) :]):
                raise ConfigException(
                    f"{key}: kspark's consumers all take their connection settings from consumer.* "
                    f"(or unprefixed); give it as consumer.{key[len(prefix) :]}"
                )
    kinds: tuple[ClientKind, ...] = ("consumer", "producer", "admin")
    for kind in kinds:
        settings = librdkafka_security(config, kind)
        if not settings:
            continue
        try:
            # No bootstrap.servers: it connects to nothing (and says so at a level the logger drops).
            Producer({**settings, "logger": _QUIET}).flush(0)
        except (KafkaException, ValueError, TypeError) as e:
            names = ", ".join(sorted(redacted(settings)))
            raise ConfigException(
                f"the {kind} clients' connection settings ({names}) are refused: {e}"
            ) from None
    # kspark's producers are all librdkafka's: a producer.* setting it does not take would fail
    # every Spark task that writes. (A consumer.* one Spark's Java source takes: kspark's own
    # consumers read with the connection settings, the direct read only with settings it knows.)
    for name, value in prefixed_settings(config, "producer").items():
        try:
            Producer({name: value, "logger": _QUIET}).flush(0)
        except (KafkaException, ValueError, TypeError) as e:
            raise ConfigException(
                f"producer.{name}: kspark's producers (librdkafka) do not take it ({e}); "
                "see https://github.com/confluentinc/librdkafka/blob/master/CONFIGURATION.md"
            ) from None


_CLIENT_LOG = logging.getLogger("kspark.admin")


def cluster_metadata(settings: Mapping[str, Any], timeout: float = 30.0) -> Any:
    """The cluster's metadata through an admin client of ``settings`` (librdkafka's). A refused
    login or TLS handshake fails at once, saying so (librdkafka retries them until the timeout
    otherwise, and reports only "broker transport failure"); other errors after ``timeout``."""
    import time

    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    refused: list[KafkaError] = []

    def on_error(error: KafkaError) -> None:
        if error.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL):
            refused.append(error)

    conf: dict[str, Any] = {**settings, "error_cb": on_error, "logger": _CLIENT_LOG}
    admin = AdminClient(conf)
    bootstrap = settings.get("bootstrap.servers")
    deadline = time.monotonic() + timeout
    while True:
        try:
            return admin.list_topics(timeout=min(2.0, max(0.1, deadline - time.monotonic())))
        except KafkaException as e:
            admin.poll(0)  # serves error_cb
            if refused:
                what = (
                    "Authentication failed"
                    if refused[0].code() == KafkaError._AUTHENTICATION
                    else "TLS failed"
                )
                raise StreamsException(f"{what} on {bootstrap}: {refused[0].str()}") from None
            if time.monotonic() >= deadline:
                raise StreamsException(
                    f"Kafka at {bootstrap} did not answer within {timeout:.0f} s: {e}"
                ) from e


def create_topics(settings: Mapping[str, Any], topics: list[Any], kind: str) -> None:
    """Create ``topics`` (confluent-kafka ``NewTopic``s) with an admin client of ``settings``;
    one that exists already (a racing instance made it) is fine; any other failure raises,
    naming the ``kind`` of topic ("internal", "changelog") and the topic."""
    from confluent_kafka.admin import AdminClient

    if not topics:
        return
    admin = AdminClient(dict(settings))  # referenced until its futures are done
    for topic, future in admin.create_topics(topics).items():
        try:
            future.result()
        except Exception as e:  # the error's text is the only place its code shows
            if "TOPIC_ALREADY_EXISTS" not in str(e):
                raise StreamsException(f"Could not create {kind} topic {topic}: {e}") from e
