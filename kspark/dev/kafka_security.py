"""Secured listeners for :class:`kspark.dev.kafka.LocalKafka`: SASL and TLS on loopback.

``LocalKafka(security=True)`` keeps its PLAINTEXT listener (inter-broker
traffic and LocalKafka's own helpers use it) and adds four more, each on its
own port of 127.0.0.1:

========================  ==============  ==========================================
listener name             protocol        authentication
========================  ==============  ==========================================
``SASL_PLAINTEXT``        SASL_PLAINTEXT  PLAIN, SCRAM-SHA-256/512, OAUTHBEARER
``SSL``                   SSL             none (the client checks the broker's cert)
``MTLS``                  SSL             a client certificate from the test CA
``SASL_SSL``              SASL_SSL        as SASL_PLAINTEXT, inside TLS
========================  ==============  ==========================================

There is one user, :data:`USER`, with a random password per broker: SCRAM
credentials are written into the metadata log when the storage is formatted
(``StorageTool format --add-scram``), PLAIN's password sits in the listener's
JAAS config, and OAUTHBEARER uses the broker's default validator of unsecured
JWTs (any client may claim any principal: for tests only). There is no
authorizer, so any authenticated client may do anything.

TLS material is made per broker with ``trustme`` (an optional dependency,
imported only here and only when asked for): a CA, a server certificate for
127.0.0.1 and localhost, and a client certificate for the MTLS listener. The
files are PEM. Kafka's Java PEM key store accepts private keys only in PKCS#8
(``BEGIN PRIVATE KEY``), while trustme writes SEC1 EC keys (``BEGIN EC PRIVATE
KEY``), so keys are re-encoded; librdkafka (OpenSSL) reads either.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kspark.dev.errors import DevToolsError

__all__ = [
    "LISTENERS",
    "SASL_MECHANISMS",
    "USER",
    "SecurityError",
    "TlsFiles",
    "BrokerSecurity",
    "check_listener",
    "require_trustme",
    "new_password",
    "generate_tls",
]

USER = "kspark"
"""The one user of a secured LocalKafka."""

# Listener name -> security protocol. MTLS is a second SSL listener that
# demands client certificates; Kafka allows any listener name to map to any
# protocol.
LISTENERS: dict[str, str] = {
    "SASL_PLAINTEXT": "SASL_PLAINTEXT",
    "SSL": "SSL",
    "MTLS": "SSL",
    "SASL_SSL": "SASL_SSL",
}

SASL_MECHANISMS: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")

_SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
_PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
_OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


class SecurityError(DevToolsError, ValueError):
    """A secured-listener call that cannot work: security off, or an unknown listener or mechanism."""


def require_trustme() -> None:
    """Fail early, with the fix in the message, when ``trustme`` is not installed."""
    try:
        import trustme  # noqa: F401
    except ImportError as exc:
        raise DevToolsError(
            "LocalKafka(security=True) makes its TLS certificates with the trustme package, "
            "which is not installed: pip install trustme (or pip install 'kspark[dev]')"
        ) from exc


def new_password() -> str:
    """A fresh random password for :data:`USER`."""
    # token_urlsafe's alphabet ([A-Za-z0-9_-]) needs no quoting in JAAS
    # configs, properties files or StorageTool's --add-scram syntax.
    return secrets.token_urlsafe(18)


@dataclass(frozen=True)
class TlsFiles:
    """PEM files of one secured broker."""

    ca: Path
    """The test CA's certificate: the trust store of clients and of the broker."""
    broker: Path
    """The broker's PKCS#8 private key and certificate chain (127.0.0.1, localhost)."""
    client: Path
    """A client's PKCS#8 private key and certificate, for the MTLS listener. The Java client's
    PEM key store; librdkafka takes the same file as ``ssl.certificate.location`` and
    ``ssl.key.location``."""


def _pkcs8(key_pem: bytes) -> bytes:
    """Re-encode a PEM private key as unencrypted PKCS#8, the only form Kafka's PEM store reads."""
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(key_pem, password=None)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write_private(path: Path, data: bytes) -> None:
    # Keys are throwaway, but another local user has no business reading them.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def generate_tls(directory: Path) -> TlsFiles:
    """Make a CA, a server and a client certificate with trustme and write them as PEM files."""
    require_trustme()
    import trustme

    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    ca = trustme.CA(organization_name="kspark LocalKafka test CA")
    server = ca.issue_cert("127.0.0.1", "localhost", common_name="localhost")
    # A client certificate needs no host name, but a certificate with an empty
    # subjectAltName extension is malformed; trustme always adds one.
    client = ca.issue_cert(f"{USER}.client.invalid", common_name=USER)

    files = TlsFiles(
        ca=directory / "ca.pem",
        broker=directory / "broker.pem",
        client=directory / "client.pem",
    )
    files.ca.write_bytes(ca.cert_pem.bytes())
    server_chain = b"".join(blob.bytes() for blob in server.cert_chain_pems)
    _write_private(files.broker, _pkcs8(server.private_key_pem.bytes()) + server_chain)
    client_chain = b"".join(blob.bytes() for blob in client.cert_chain_pems)
    _write_private(files.client, _pkcs8(client.private_key_pem.bytes()) + client_chain)
    return files


def _jaas_quote(value: str) -> str:
    # Kafka parses JAAS values with a StreamTokenizer: backslash escapes inside quotes.
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class BrokerSecurity:
    """What a secured broker needs across restarts: its user, password, ports and TLS files."""

    user: str
    password: str
    ports: Mapping[str, int]
    """Listener name (a key of :data:`LISTENERS`) -> port on 127.0.0.1."""
    tls: TlsFiles

    def listeners(self) -> list[str]:
        """Entries for ``listeners`` and ``advertised.listeners``."""
        return [f"{name}://127.0.0.1:{self.ports[name]}" for name in LISTENERS]

    def protocol_map(self) -> list[str]:
        """Entries for ``listener.security.protocol.map``."""
        return [f"{name}:{protocol}" for name, protocol in LISTENERS.items()]

    def broker_properties(self) -> dict[str, str]:
        """Broker settings for the secured listeners, beside ``listeners`` and the protocol map."""
        props: dict[str, str] = {
            # One key store and trust store for every TLS listener; MTLS
            # differs only in demanding a client certificate.
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.tls.broker),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.tls.ca),
            "ssl.client.auth": "none",
            "listener.name.mtls.ssl.client.auth": "required",
        }
        mechanisms = ",".join(SASL_MECHANISMS)
        for name, protocol in LISTENERS.items():
            if not protocol.startswith("SASL_"):
                continue
            prefix = f"listener.name.{name.lower()}."
            props[prefix + "sasl.enabled.mechanisms"] = mechanisms
            props[prefix + "plain.sasl.jaas.config"] = (
                f"{_PLAIN_MODULE} required user_{self.user}={_jaas_quote(self.password)};"
            )
            for scram in _SCRAM_MECHANISMS:
                # The credentials themselves are in the metadata log (see scram_format_args).
                props[prefix + f"{scram.lower()}.sasl.jaas.config"] = f"{_SCRAM_MODULE} required;"
            # The broker logs in too when it builds the listener; with the default
            # (unsecured) login handler that needs a subject.
            props[prefix + "oauthbearer.sasl.jaas.config"] = (
                f"{_OAUTH_MODULE} required unsecuredLoginStringClaim_sub={_jaas_quote(self.user)};"
            )
        return props

    def scram_format_args(self) -> list[str]:
        """``StorageTool format`` arguments that add the user's SCRAM credentials."""
        args: list[str] = []
        for scram in _SCRAM_MECHANISMS:
            args += ["--add-scram", f'{scram}=[name={self.user},password="{self.password}"]']
        return args

    def bootstrap(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[check_listener(listener)]}"

    def client_settings(
        self, listener: str, mechanism: str = "SCRAM-SHA-256", password: str | None = None
    ) -> dict[str, str]:
        """Java client settings (Kafka's config names) for ``listener``; see LocalKafka.client_settings."""
        protocol = LISTENERS[check_listener(listener)]
        settings = {"bootstrap.servers": self.bootstrap(listener), "security.protocol": protocol}
        if protocol.startswith("SASL_"):
            if mechanism not in SASL_MECHANISMS:
                raise SecurityError(
                    f"unknown SASL mechanism {mechanism!r}; the broker enables {', '.join(SASL_MECHANISMS)}"
                )
            secret = _jaas_quote(self.password if password is None else password)
            user = _jaas_quote(self.user)
            if mechanism == "PLAIN":
                jaas = f"{_PLAIN_MODULE} required username={user} password={secret};"
            elif mechanism == "OAUTHBEARER":
                jaas = f"{_OAUTH_MODULE} required unsecuredLoginStringClaim_sub={user};"
            else:
                jaas = f"{_SCRAM_MODULE} required username={user} password={secret};"
            settings["sasl.mechanism"] = mechanism
            settings["sasl.jaas.config"] = jaas
        if protocol.endswith("SSL"):
            settings["ssl.truststore.type"] = "PEM"
            settings["ssl.truststore.location"] = str(self.tls.ca)
        if listener == "MTLS":
            settings["ssl.keystore.type"] = "PEM"
            settings["ssl.keystore.location"] = str(self.tls.client)
        return settings


def check_listener(listener: str) -> str:
    """``listener`` if it names a secured listener, else a :class:`SecurityError`."""
    if listener not in LISTENERS:
        raise SecurityError(
            f"unknown secured listener {listener!r}; LocalKafka(security=True) has {', '.join(LISTENERS)}"
        )
    return listener
