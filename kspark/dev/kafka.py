"""A real Apache Kafka broker on loopback, for tests, the demo and benchmarks.

:class:`LocalKafka` formats a single-node KRaft cluster (one JVM, combined
broker and controller) in a temporary directory, starts it on free ports of
127.0.0.1, waits until it serves metadata, and removes everything on exit. The
main classes are the ones Kafka's own scripts run: ``kafka.tools.StorageTool``
(``bin/kafka-storage.sh format``) and ``kafka.Kafka``
(``bin/kafka-server-start.sh``), with the jars of the ``kafka-broker`` bundle.

Broker settings are chosen for one fast, disposable test node; see
:data:`BROKER_DEFAULTS` and docs/setup.md. ``LocalKafka(security=True)`` adds
SASL and TLS listeners beside the PLAINTEXT one (:mod:`kspark.dev.kafka_security`).
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import NamedTuple

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from kspark.dev import kafka_security
from kspark.dev.errors import KafkaStartError, PortInUseError
from kspark.jvm.jars import find_java, resolve_bundle

__all__ = [
    "BROKER_DEFAULTS",
    "KafkaRecord",
    "LocalKafka",
    "ProduceRecord",
    "free_port",
    "free_ports",
]

BROKER_DEFAULTS: dict[str, str] = {
    # One node: internal topics can only have one replica.
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "min.insync.replicas": "1",
    # Creating 50 partitions each for offsets and transaction state on first
    # use costs seconds on 2 cores; a test broker never needs that many.
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.num.partitions": "4",
    # Consumer groups (Spark, tests) start at once instead of after 3 s.
    "group.initial.rebalance.delay.ms": "0",
    # Tests create topics explicitly so a typo fails instead of silently
    # creating a 1-partition topic.
    "auto.create.topics.enable": "false",
    "num.partitions": "1",
    "num.network.threads": "2",
    "num.io.threads": "4",
    "num.recovery.threads.per.data.dir": "1",
    "log.retention.hours": "-1",
    "log.retention.check.interval.ms": "300000",
}

# Kafka's own bin/kafka-run-class.sh performance flags, with a small heap.
_JVM_FLAGS = (
    "-Xms128m",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-Djava.awt.headless=true",
)

_LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = {level}
rootLogger.appenderRef.out.ref = STDOUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""

_PR_SET_PDEATHSIG = 1
# librdkafka logs transient states (e.g. "coordinator load in progress" while
# the broker creates its internal topics) to stderr by default; route them to
# logging so the demo's output stays readable and pytest captures them.
_CLIENT_LOG = logging.getLogger("kspark.dev.kafka.client")
# Without any handler, logging's last resort would print warnings to stderr
# anyway; records still propagate to handlers the application installs.
_CLIENT_LOG.addHandler(logging.NullHandler())


class ProduceRecord(NamedTuple):
    """A record for :meth:`LocalKafka.produce`; plain tuples work too."""

    key: bytes | None
    value: bytes | None
    timestamp: int | None = None
    partition: int | None = None
    headers: Sequence[tuple[str, bytes]] | None = None


class KafkaRecord(NamedTuple):
    """A record read back by :meth:`LocalKafka.consume_all`."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...]


def _headers(raw: object) -> tuple[tuple[str, bytes | None], ...]:
    """librdkafka hands headers back as a list of (name, bytes or None)."""
    if not raw:
        return ()
    items = raw.items() if isinstance(raw, dict) else raw
    out: list[tuple[str, bytes | None]] = []
    for name, value in items:  # type: ignore[attr-defined]
        out.append((str(name), value.encode() if isinstance(value, str) else value))
    return tuple(out)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for a broker, a registry, an endpoint)."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports on 127.0.0.1 that nothing listens on now. All are bound at
    once: ports taken one after another can repeat (the kernel may hand a just-closed port out
    again), and a broker whose two listeners got the same port does not start."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(s)
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _cluster_id() -> str:
    # Kafka's Uuid.toString: URL-safe base64 of 16 random bytes, no padding;
    # Kafka rejects ids that start with '-'.
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL the broker if the process that started it dies.

    Covers the case no finaliser can: the Python process killed with SIGKILL
    (CI timeout, OOM). Runs in the child between fork and exec.
    """
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _stop_process(proc: subprocess.Popen[bytes], workdir: Path | None, timeout: float) -> None:
    """SIGTERM (Kafka shuts down cleanly on it), then SIGKILL after ``timeout``."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(timeout=30)
    if workdir is not None:
        shutil.rmtree(workdir, ignore_errors=True)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"(no broker log at {path}: {exc})"
    return "\n".join(text.splitlines()[-lines:])


class LocalKafka:
    """A single-node Apache Kafka (KRaft) on 127.0.0.1, as a context manager.

    ``port=None`` picks a free port. ``heap`` is the JVM's ``-Xmx``;
    ``jvm_options`` go after kspark's own flags (a later ``-Xms`` wins).
    ``broker_config`` overrides or extends :data:`BROKER_DEFAULTS`.
    ``data_dir`` keeps the log directory (and broker log) there instead of a
    temporary directory that is deleted on stop.

    ``security=True`` (needs the ``trustme`` package) adds four listeners on
    their own ports beside PLAINTEXT: ``SASL_PLAINTEXT`` and ``SASL_SSL`` (SASL
    PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER with unsecured JWTs),
    ``SSL`` (server-authenticated TLS) and ``MTLS`` (TLS with a client
    certificate). One user, :attr:`user`, has a random :attr:`password`; there
    is no authorizer. The TLS files are PEM, made for this broker by a test CA
    (:attr:`ca_path`). :meth:`secured_bootstrap` and :meth:`client_settings`
    tell clients where and how to connect; the helpers (:meth:`admin`,
    :meth:`produce`, ...) keep using PLAINTEXT.
    """

    def __init__(
        self,
        port: int | None = None,
        *,
        heap: str = "512m",
        broker_config: Mapping[str, str] | None = None,
        start_timeout: float = 90.0,
        stop_timeout: float = 20.0,
        log_level: str = "INFO",
        data_dir: str | os.PathLike[str] | None = None,
        security: bool = False,
        jvm_options: Sequence[str] = (),
    ) -> None:
        if security:
            kafka_security.require_trustme()  # fail here, not after the JVM started
        self._requested_port = port
        self._heap = heap
        self._jvm_options = tuple(jvm_options)
        self._broker_config = dict(broker_config or {})
        self._start_timeout = start_timeout
        self._stop_timeout = stop_timeout
        self._log_level = log_level
        self._data_dir = Path(data_dir) if data_dir is not None else None
        self._proc: subprocess.Popen[bytes] | None = None
        self._workdir: Path | None = None
        self._port: int | None = None
        self._finalizer: weakref.finalize[..., LocalKafka] | None = None
        self._controller_port = 0
        self._owned = True
        # Password per instance: the same across stop/start and restarts.
        self._password = kafka_security.new_password() if security else None
        self._security: kafka_security.BrokerSecurity | None = None
        self.startup_seconds: float | None = None
        """Wall time of the last :meth:`start`, from launch to serving metadata."""

    # -- lifecycle -----------------------------------------------------------

    def __enter__(self) -> LocalKafka:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """Process id of the broker JVM while it runs."""
        return self._proc.pid if self._proc is not None else None

    @property
    def bootstrap_servers(self) -> str:
        """``"127.0.0.1:PORT"``; only valid while the broker runs."""
        if self._port is None:
            raise KafkaStartError("LocalKafka is not started; use it as `with LocalKafka() as kafka:`")
        return f"127.0.0.1:{self._port}"

    @property
    def log_path(self) -> Path:
        """The broker's combined stdout/stderr and log4j output."""
        if self._workdir is None:
            raise KafkaStartError("LocalKafka is not started")
        return self._workdir / "logs" / "kafka.out"

    # -- secured listeners ---------------------------------------------------

    def _password_or_raise(self) -> str:
        if self._password is None:
            raise kafka_security.SecurityError(
                "this LocalKafka has only a PLAINTEXT listener; create it with LocalKafka(security=True)"
            )
        return self._password

    def _secured(self) -> kafka_security.BrokerSecurity:
        self._password_or_raise()
        if self._security is None:
            raise KafkaStartError("LocalKafka is not started; use it as `with LocalKafka() as kafka:`")
        return self._security

    @property
    def user(self) -> str:
        """The secured listeners' one user, ``"kspark"`` (``security=True`` only)."""
        self._password_or_raise()
        return kafka_security.USER

    @property
    def password(self) -> str:
        """The user's password for SASL PLAIN and SCRAM: random per LocalKafka, kept across
        :meth:`restart` and stop/start (``security=True`` only)."""
        return self._password_or_raise()

    @property
    def ca_path(self) -> Path:
        """The test CA's certificate (PEM) that signed the broker's and the client's certificates;
        a client's trust store for the ``SSL``, ``MTLS`` and ``SASL_SSL`` listeners. Valid while the
        broker runs."""
        return self._secured().tls.ca

    def secured_bootstrap(self, listener: str) -> str:
        """``"127.0.0.1:PORT"`` of a secured listener: ``"SASL_PLAINTEXT"``, ``"SSL"``, ``"MTLS"``
        or ``"SASL_SSL"``. Raises :class:`~kspark.dev.kafka_security.SecurityError` (a ValueError)
        without ``security=True`` or for another name; valid while the broker runs."""
        return self._secured().bootstrap(listener)

    def client_settings(
        self, listener: str, mechanism: str = "SCRAM-SHA-256", password: str | None = None
    ) -> dict[str, str]:
        """The settings a Kafka Streams (Java client) user writes to connect through ``listener``.

        Always ``bootstrap.servers`` and ``security.protocol``. For ``SASL_PLAINTEXT`` and
        ``SASL_SSL``: ``sasl.mechanism`` (``mechanism``: ``PLAIN``, ``SCRAM-SHA-256``,
        ``SCRAM-SHA-512`` or ``OAUTHBEARER``) and ``sasl.jaas.config`` (username ``kspark`` and
        :attr:`password`, or ``password`` instead, e.g. a wrong one; OAUTHBEARER claims subject
        ``kspark`` in an unsecured JWT). For ``SSL``, ``MTLS`` and ``SASL_SSL``:
        ``ssl.truststore.type=PEM`` and ``ssl.truststore.location`` (:attr:`ca_path`). For
        ``MTLS`` also ``ssl.keystore.type=PEM`` and ``ssl.keystore.location``, a file with the
        client's PKCS#8 private key and its certificate. ``mechanism`` and ``password`` are
        ignored for the TLS-only listeners. Valid while the broker runs.
        """
        return self._secured().client_settings(listener, mechanism, password)

    def start(self) -> LocalKafka:
        """Format storage, launch the broker and wait until it serves metadata."""
        if self._proc is not None:
            raise KafkaStartError("LocalKafka is already started")
        java = find_java()
        jars = resolve_bundle("kafka-broker")
        cp = os.pathsep.join(str(j) for j in jars)
        fixed = self._requested_port is not None
        if fixed and not _port_free(self._requested_port):  # type: ignore[arg-type]
            raise PortInUseError(
                f"port {self._requested_port} on 127.0.0.1 is already in use; "
                "stop whatever listens there or use LocalKafka() to pick a free port"
            )
        # Free ports are picked by binding and releasing, so another process
        # may grab one in between: retry on a bind failure.
        attempts = 1 if fixed else 3
        for attempt in range(attempts):
            try:
                self._launch(java, cp)
                return self
            except KafkaStartError as exc:
                if attempt + 1 < attempts and "Address already in use" in str(exc):
                    continue
                raise
        raise AssertionError("unreachable")

    def _launch(self, java: Path, cp: str, again: tuple[Path, int, int, bool] | None = None) -> None:
        """Start the broker; ``again``: (workdir, port, controller port, owned) of the run that
        :meth:`restart` continues, whose data is kept and whose storage is formatted already."""
        started = time.monotonic()
        security = self._security if again is not None else None
        spare: list[int] = []  # ports drawn for this start and not taken yet
        if again is not None:
            workdir, port, controller_port, owned = again
        else:
            # One draw for every listener, so that none shares a port with another.
            spare = free_ports(2 + len(kafka_security.LISTENERS))
            if self._requested_port is not None:
                spare = [p for p in spare if p != self._requested_port]
                port = self._requested_port
            else:
                port = spare.pop()
            controller_port = spare.pop()
            del spare[len(kafka_security.LISTENERS) :]  # one each for the secured listeners
            if self._data_dir is not None:
                self._data_dir.mkdir(parents=True, exist_ok=True)
                workdir = self._data_dir
                owned = False
            else:
                workdir = Path(tempfile.mkdtemp(prefix="kspark-kafka-"))
                owned = True
        logs = workdir / "logs"
        logs.mkdir(exist_ok=True)
        advertised = [f"PLAINTEXT://127.0.0.1:{port}"]
        protocol_map = ["CONTROLLER:PLAINTEXT", "PLAINTEXT:PLAINTEXT"]
        secured_props: dict[str, str] = {}
        try:
            if self._password is not None and security is None:
                security = kafka_security.BrokerSecurity(
                    user=kafka_security.USER,
                    password=self._password,
                    ports=dict(zip(kafka_security.LISTENERS, spare, strict=True)),
                    tls=kafka_security.generate_tls(workdir / "tls"),
                )
        except BaseException:
            if owned:
                shutil.rmtree(workdir, ignore_errors=True)
            raise
        if security is not None:
            advertised += security.listeners()
            protocol_map += security.protocol_map()
            secured_props = security.broker_properties()
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
            "listeners": ",".join([*advertised, f"CONTROLLER://127.0.0.1:{controller_port}"]),
            "advertised.listeners": ",".join(advertised),
            "inter.broker.listener.name": "PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": ",".join(protocol_map),
            "log.dirs": str(workdir / "data"),
            **secured_props,
            **BROKER_DEFAULTS,
            **self._broker_config,
        }
        config = workdir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        log4j = workdir / "log4j2.properties"
        log4j.write_text(_LOG4J2.format(level=self._log_level))
        log_path = logs / "kafka.out"
        jvm = [
            str(java),
            f"-Xmx{self._heap}",
            *_JVM_FLAGS,
            *self._jvm_options,
            f"-Dlog4j2.configurationFile={log4j}",
            f"-Dkafka.logs.dir={logs}",
            "-cp",
            cp,
        ]
        try:
            if again is None:  # a restarted broker's storage is formatted already
                # SCRAM credentials live in the metadata log, so they are part of formatting.
                scram = security.scram_format_args() if security is not None else []
                storage_tool = [*jvm, "kafka.tools.StorageTool", "format", "-t", _cluster_id()]
                fmt = subprocess.run(
                    [*storage_tool, "-c", str(config), *scram],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    timeout=120,
                    check=False,
                )
                if fmt.returncode != 0:
                    raise KafkaStartError(
                        f"formatting Kafka storage in {workdir} failed (exit {fmt.returncode}):\n"
                        + "\n".join(fmt.stdout.splitlines()[-30:])
                    )
            main_thread = threading.current_thread() is threading.main_thread()
            with open(log_path, "ab") as out:
                proc = subprocess.Popen(
                    [*jvm, "kafka.Kafka", str(config)],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd=workdir,
                    # Own session: a terminal's Ctrl-C reaches Python, which
                    # then stops the broker in order, not both at once.
                    start_new_session=True,
                    # PDEATHSIG fires when the starting *thread* exits, so only
                    # arm it from the main thread.
                    preexec_fn=_die_with_parent if main_thread else None,
                )
        except BaseException:
            if owned:
                shutil.rmtree(workdir, ignore_errors=True)
            raise
        self._proc = proc
        self._workdir = workdir
        self._port = port
        self._controller_port = controller_port
        self._owned = owned
        self._security = security
        self._finalizer = weakref.finalize(
            self, _stop_process, proc, workdir if owned else None, self._stop_timeout
        )
        try:
            self._wait_ready(started)
        except BaseException:
            # The error already carries the log tail; the files go with the broker.
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started

    def _wait_ready(self, started: float) -> None:
        assert self._proc is not None and self._port is not None
        deadline = started + self._start_timeout
        admin: AdminClient | None = None
        last_error: str = "no connection yet"
        while time.monotonic() < deadline:
            code = self._proc.poll()
            if code is not None:
                raise KafkaStartError(
                    f"Kafka broker exited with code {code} during start-up; "
                    f"last lines of {self.log_path}:\n{_tail(self.log_path)}"
                )
            try:
                # A plain TCP probe first, so librdkafka does not log connection
                # refusals while the JVM is still booting.
                with socket.create_connection(("127.0.0.1", self._port), timeout=0.5):
                    pass
                if admin is None:
                    admin = self.admin()
                md = admin.list_topics(timeout=2)
                if md.brokers:
                    # The secured listeners' acceptors open with PLAINTEXT's; a TCP probe of
                    # each makes sure before a test connects.
                    for name, port in (self._security.ports if self._security else {}).items():
                        try:
                            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                                pass
                        except OSError as exc:
                            raise OSError(f"listener {name} on 127.0.0.1:{port}: {exc}") from exc
                    return
                last_error = "metadata lists no brokers"
            except OSError as exc:
                last_error = str(exc)
            except KafkaException as exc:
                last_error = str(exc)
            time.sleep(0.2)
        raise KafkaStartError(
            f"Kafka broker did not serve metadata on {self.bootstrap_servers} within "
            f"{self._start_timeout:.0f} s ({last_error}); last lines of {self.log_path}:\n"
            f"{_tail(self.log_path)}"
        )

    def restart(self, down_seconds: float = 0.0, *, kill: bool = False) -> None:
        """Stop the broker and start it again on the same port with the same data, as an
        operator's rolling restart (or, with ``kill``, a crash: SIGKILL) would; it stays down
        ``down_seconds``. For fault tests."""
        proc, workdir, port = self._proc, self._workdir, self._port
        if proc is None or workdir is None or port is None:
            raise KafkaStartError("LocalKafka is not started")
        if self._finalizer is not None:
            self._finalizer.detach()  # keep the files: the broker comes back with them
            self._finalizer = None
        if kill:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(timeout=30)
        else:
            _stop_process(proc, None, self._stop_timeout)
        self._proc = None
        time.sleep(down_seconds)
        self._launch(
            find_java(),
            os.pathsep.join(str(j) for j in resolve_bundle("kafka-broker")),
            again=(workdir, port, self._controller_port, self._owned),
        )

    def stop(self) -> None:
        """Stop the broker (SIGTERM, then SIGKILL) and delete its files. Idempotent."""
        if self._finalizer is not None:
            self._finalizer()  # runs _stop_process at most once
            self._finalizer = None
        self._proc = None
        self._port = None
        self._workdir = None
        self._security = None

    # -- admin ---------------------------------------------------------------

    def admin(self) -> AdminClient:
        """A confluent-kafka AdminClient for this broker."""
        return AdminClient({"bootstrap.servers": self.bootstrap_servers}, logger=_CLIENT_LOG)

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        config: Mapping[str, str] | None = None,
        *,
        timeout: float = 30.0,
    ) -> None:
        """Create a topic and wait until every partition has a leader."""
        admin = self.admin()
        topic = NewTopic(name, num_partitions=partitions, replication_factor=1, config=dict(config or {}))
        futures = admin.create_topics([topic], operation_timeout=timeout, request_timeout=timeout)
        futures[name].result(timeout=timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            md = admin.list_topics(topic=name, timeout=timeout).topics.get(name)
            if (
                md is not None
                and md.error is None
                and len(md.partitions) == partitions
                and all(p.leader >= 0 for p in md.partitions.values())
            ):
                return
            time.sleep(0.05)
        raise KafkaStartError(
            f"topic {name!r} has no leader for all {partitions} partitions after {timeout} s"
        )

    def delete_topic(self, name: str, *, timeout: float = 30.0) -> None:
        """Delete a topic and wait for the broker to confirm."""
        # Keep the client referenced until the result arrives: a collected
        # AdminClient fails its pending futures with _DESTROY.
        admin = self.admin()
        futures = admin.delete_topics([name], operation_timeout=timeout, request_timeout=timeout)
        futures[name].result(timeout=timeout)
        deadline = time.monotonic() + timeout
        while name in admin.list_topics(timeout=timeout).topics:
            if time.monotonic() > deadline:
                raise KafkaStartError(f"topic {name!r} still listed {timeout} s after deletion")
            time.sleep(0.05)

    def list_topics(self) -> list[str]:
        """Names of the topics on the broker, internal ones excluded."""
        md = self.admin().list_topics(timeout=10)
        return sorted(t for t in md.topics if not t.startswith("__"))

    # -- data ----------------------------------------------------------------

    def produce(
        self,
        topic: str,
        records: Iterable[ProduceRecord | tuple[object, ...]],
        *,
        timeout: float = 30.0,
    ) -> int:
        """Write records with an idempotent producer; returns how many.

        Each record is ``(key, value, timestamp_ms[, partition[, headers]])``;
        ``timestamp_ms`` or ``partition`` may be None for the producer's
        default (librdkafka's producer takes a timestamp of 0 as "now" too).
        Raises on the first delivery failure.
        """
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap_servers,
                "enable.idempotence": True,
                "linger.ms": 5,
                "logger": _CLIENT_LOG,
            }
        )
        errors: list[str] = []

        def on_delivery(err: KafkaError | None, _msg: object) -> None:
            if err is not None:
                errors.append(str(err))

        count = 0
        for raw in records:
            rec = ProduceRecord(*raw)
            kwargs: dict[str, object] = {"key": rec.key, "value": rec.value, "on_delivery": on_delivery}
            if rec.timestamp is not None:
                kwargs["timestamp"] = int(rec.timestamp)
            if rec.partition is not None:
                kwargs["partition"] = int(rec.partition)
            if rec.headers:
                kwargs["headers"] = list(rec.headers)
            while True:
                try:
                    producer.produce(topic, **kwargs)  # type: ignore[arg-type]
                    break
                except BufferError:
                    producer.poll(0.1)
            count += 1
        remaining = producer.flush(timeout)
        if remaining:
            raise KafkaException(f"{remaining} records to {topic!r} not delivered within {timeout} s")
        if errors:
            raise KafkaException(f"producing to {topic!r} failed: {errors[0]} ({len(errors)} failures)")
        return count

    def consume_all(
        self,
        topic: str,
        *,
        read_committed: bool = False,
        min_records: int = 0,
        timeout: float = 30.0,
    ) -> list[KafkaRecord]:
        """Every record of ``topic``, sorted by (partition, offset).

        Reads from the beginning up to the end offsets seen when called (the
        last stable offset with ``read_committed``). With ``min_records``,
        keeps reading until at least that many arrived, for output that a
        running application is still writing; raises TimeoutError otherwise.
        """
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap_servers,
                "group.id": f"kspark-consume-all-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "enable.partition.eof": True,
                "isolation.level": "read_committed" if read_committed else "read_uncommitted",
                "logger": _CLIENT_LOG,
            }
        )
        try:
            md = consumer.list_topics(topic, timeout=10).topics.get(topic)
            if md is None or md.error is not None:
                raise KafkaException(f"cannot read topic {topic!r}: {md.error if md else 'not found'}")
            parts = sorted(md.partitions)
            ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts}
            consumer.assign([TopicPartition(topic, p, 0) for p in parts])
            out: list[KafkaRecord] = []
            at_end: set[int] = set()
            deadline = time.monotonic() + timeout
            while len(at_end) < len(parts) or len(out) < min_records:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"read {len(out)} records from {topic!r} in {timeout} s; "
                        f"wanted at least {min_records}, end offsets {ends}, "
                        f"partitions at end {sorted(at_end)}"
                    )
                msg = consumer.poll(0.2)
                if msg is None:
                    continue
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        p = msg.partition()
                        offset = msg.offset()
                        if p is not None and offset is not None and offset >= ends.get(p, 0):
                            at_end.add(p)
                        continue
                    raise KafkaException(err)
                _ts_type, ts = msg.timestamp()
                out.append(
                    KafkaRecord(
                        topic=topic,
                        partition=int(msg.partition() or 0),
                        offset=int(msg.offset() or 0),
                        key=msg.key(),
                        value=msg.value(),
                        timestamp=int(ts),
                        headers=_headers(msg.headers()),
                    )
                )
            out.sort(key=lambda r: (r.partition, r.offset))
            return out
        finally:
            consumer.close()
