"""``KafkaStreams``: runs a topology on Spark Structured Streaming over real Kafka.

The lifecycle and names are Kafka Streams' (``start``, ``close``,
``cleanup``, ``state``, state listener, uncaught-exception handler);
``process_available`` is kspark's addition: process everything the input
topics hold now, then return (Spark's ``availableNow`` trigger), which is
what tests, batch back-fills and the demo want. pyspark is imported only
here and in :mod:`kspark.runtime.spark`, never by the model.
"""

from __future__ import annotations

import enum
import logging
import math
import shutil
import threading
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kspark.config import StreamsConfig
from kspark.errors import InvalidStateStoreException, StreamsException, StreamsNotStartedException
from kspark.metrics import MetricName
from kspark.query import HostInfo, StoreQueryParameters
from kspark.runtime.discovery import Discovery, DiscoveryCalls
from kspark.runtime.kafka_clients import check_client_settings
from kspark.runtime.spark.settings import RunnerSettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kspark.processor.topology import Topology
    from kspark.runtime.prometheus import MetricsEndpoint
    from kspark.runtime.query_server import QueryServer
    from kspark.runtime.spark.plan import PhysicalPlan
    from kspark.runtime.spark.replica import StoreReplicas
    from kspark.runtime.spark.runner import SparkRunner
    from kspark.runtime.spark.serving import ServingProcess

__all__ = ["KafkaStreams", "StreamsUncaughtExceptionHandler"]

_log = logging.getLogger(__name__)


class _State(enum.Enum):
    CREATED = "CREATED"
    REBALANCING = "REBALANCING"
    RUNNING = "RUNNING"
    PENDING_SHUTDOWN = "PENDING_SHUTDOWN"
    NOT_RUNNING = "NOT_RUNNING"
    PENDING_ERROR = "PENDING_ERROR"
    ERROR = "ERROR"

    def is_running_or_rebalancing(self) -> bool:
        return self in (_State.RUNNING, _State.REBALANCING)

    def has_started_or_finished_shutting_down(self) -> bool:
        return self in (_State.PENDING_SHUTDOWN, _State.NOT_RUNNING, _State.PENDING_ERROR, _State.ERROR)


# Kafka Streams' allowed transitions (KafkaStreams.State#validTransition).
_VALID: dict[_State, set[_State]] = {
    _State.CREATED: {_State.REBALANCING, _State.PENDING_ERROR, _State.PENDING_SHUTDOWN},
    _State.REBALANCING: {_State.RUNNING, _State.REBALANCING, _State.PENDING_ERROR, _State.PENDING_SHUTDOWN},
    _State.RUNNING: {_State.REBALANCING, _State.RUNNING, _State.PENDING_ERROR, _State.PENDING_SHUTDOWN},
    _State.PENDING_SHUTDOWN: {_State.NOT_RUNNING},
    _State.NOT_RUNNING: set(),
    _State.PENDING_ERROR: {_State.ERROR},
    _State.ERROR: set(),
}


class StreamsUncaughtExceptionHandler(enum.Enum):
    """What to do after a processing failure: Kafka Streams' handler responses."""

    REPLACE_THREAD = "REPLACE_THREAD"
    SHUTDOWN_CLIENT = "SHUTDOWN_CLIENT"
    SHUTDOWN_APPLICATION = "SHUTDOWN_APPLICATION"


class KafkaStreams(DiscoveryCalls):
    """A Kafka Streams application, executed as Spark Structured Streaming queries."""

    State = _State

    def __init__(
        self,
        topology: Topology,
        config: Mapping[str, Any] | StreamsConfig,
        *,
        spark: SparkSession | None = None,
    ) -> None:
        # Validate before anything starts: a bad key fails here, naming it.
        self._config = config if isinstance(config, StreamsConfig) else StreamsConfig(config)
        check_client_settings(self._config.originals())  # security settings every client can take
        _check_guarantee(self._config)
        RunnerSettings.of(self._config)  # an unknown or mistyped spark.kspark.* key fails here
        self._topology = topology
        topology.internal_builder.set_application_id(self._config.application_id())
        topology.internal_builder.validate()
        self._spark = spark
        self._runner: SparkRunner | None = None
        self._state = _State.CREATED
        self._lock = threading.RLock()
        self._state_listener: Callable[[_State, _State], None] | None = None
        self._exception_handler: Callable[[BaseException], StreamsUncaughtExceptionHandler] | None = None
        self._monitor: threading.Thread | None = None
        self._stop_monitor = threading.Event()
        self._metrics_endpoint: MetricsEndpoint | None = None
        self._query_server: QueryServer | ServingProcess | None = None

    # ------------------------------------------------------------------ state
    def state(self) -> _State:
        return self._state

    def _set_state(self, new: _State) -> None:
        with self._lock:
            old = self._state
            if new not in _VALID[old] and new is not old:
                raise StreamsException(f"Invalid transition from {old.value} to {new.value}")
            self._state = new
        if self._query_server is not None and new is not old:
            self._query_server.on_state(new)
        if self._state_listener is not None and new is not old:
            self._state_listener(new, old)

    def set_state_listener(self, listener: Callable[[_State, _State], None]) -> None:
        """``listener(new_state, old_state)``; only before ``start``, as in Kafka Streams."""
        if self._state is not _State.CREATED:
            raise StreamsException("Can only set a state listener in CREATED state")
        self._state_listener = listener

    def set_uncaught_exception_handler(
        self, handler: Callable[[BaseException], StreamsUncaughtExceptionHandler]
    ) -> None:
        if self._state is not _State.CREATED:
            raise StreamsException("Can only set an uncaught exception handler in CREATED state")
        self._exception_handler = handler

    # ------------------------------------------------------------------ running
    def _ensure_runner(self) -> SparkRunner:
        if self._runner is None:
            from kspark.runtime.spark.runner import SparkRunner
            from kspark.runtime.spark.session import create_spark_session, use_spark_session

            spark_conf = {k: str(v) for k, v in self._config.originals().items() if k.startswith("spark.")}
            spark = (
                use_spark_session(self._spark)
                if self._spark is not None
                else create_spark_session(spark_conf)
            )
            self._runner = SparkRunner(self._topology, self._config, spark)
            server = self._query_server
            if server is not None:  # a serving process follows the replicas
                self._runner.on_replicas.append(lambda replicas: server.attach(self, replicas))
        return self._runner

    def _ensure_metrics_endpoint(self) -> None:
        port = RunnerSettings.of(self._config).prometheus_port
        if port is not None and self._metrics_endpoint is None:
            from kspark.runtime.prometheus import MetricsEndpoint

            self._metrics_endpoint = MetricsEndpoint(port, self._config.application_id(), self.metrics)

    def _ensure_query_server(self) -> None:
        """The HTTP endpoint of interactive queries, on ``application.server`` when it is set."""
        server = self._config.application_server()
        if server and self._query_server is None:
            from kspark.runtime.query_server import QueryServer
            from kspark.runtime.spark.serving import ServingProcess

            own_process = RunnerSettings.of(self._config).query_server_process
            kind = ServingProcess if own_process else QueryServer
            self._query_server = kind(self, HostInfo.parse(server))
            self._query_server.on_state(self._state)

    def metrics(self) -> dict[MetricName, float]:
        """Kafka Streams' metrics of the running application, by ``MetricName`` (name, group, tags):
        per Spark query (a Kafka Streams thread here) processed records, commits and their
        latency, and input lag per partition (kspark/runtime/spark/metrics.py). Empty before
        ``start()`` or ``process_available()``."""
        return self._runner.metrics() if self._runner is not None else {}

    def start(self) -> None:
        """Start processing continuously; returns once the queries are running."""
        if self._state is not _State.CREATED:
            raise StreamsException(f"KafkaStreams is not in CREATED state (it is {self._state.value})")
        self._set_state(_State.REBALANCING)
        try:
            # The endpoints bind their ports first: a port picked free just before start() is
            # taken before Spark's JVM starts and opens ports of its own.
            self._ensure_query_server()
            self._ensure_metrics_endpoint()
            self._ensure_runner().start()
        except BaseException:
            self._fail()
            raise
        self._set_state(_State.RUNNING)
        self._monitor = threading.Thread(target=self._watch, name="kspark-monitor", daemon=True)
        self._monitor.start()

    def process_available(self) -> int:
        """Process every record available in the input topics now, then return (returns input count)."""
        if self._state.has_started_or_finished_shutting_down():
            raise StreamsException(f"KafkaStreams is {self._state.value}")
        if self._monitor is not None:
            raise StreamsException("process_available() cannot run while start() keeps queries running")
        if self._state is _State.CREATED:
            self._set_state(_State.REBALANCING)
        try:
            self._ensure_query_server()  # before Spark's JVM opens ports: see start()
            self._ensure_metrics_endpoint()
            count = self._ensure_runner().process_available()
        except BaseException as e:
            self._handle_failure(e, can_replace=False)
            raise
        if self._state is not _State.RUNNING:
            self._set_state(_State.RUNNING)
        return count

    def _watch(self) -> None:
        runner = self._runner
        assert runner is not None
        while not self._stop_monitor.wait(0.5):
            exc = runner.failure()
            if exc is None or runner.restart_transient_failures():
                continue
            if not self._handle_failure(exc, can_replace=True):
                return

    def _handle_failure(self, exc: BaseException, *, can_replace: bool) -> bool:
        """Ask the handler what to do; True if the queries were replaced and keep running."""
        _log.error("kspark application %s failed: %s", self._config.application_id(), exc)
        if self._exception_handler is not None:
            response = self._exception_handler(exc)
            if response is StreamsUncaughtExceptionHandler.REPLACE_THREAD and self._runner is not None:
                if can_replace:
                    # As Kafka Streams replaces a stream thread: the work resumes from the last commit.
                    _log.warning("REPLACE_THREAD: restarting the failed queries from their checkpoints")
                    try:
                        self._runner.stop()
                        self._runner.start()
                        return True
                    except Exception as e:  # e.g. Spark's JVM is gone: nothing left to restart on
                        _log.error("REPLACE_THREAD: restarting the queries failed, shutting down: %s", e)
                else:
                    _log.warning("REPLACE_THREAD does not apply to process_available(); shutting down")
        self._fail()
        return False

    def _fail(self) -> None:
        if self._runner is not None:
            try:
                self._runner.stop()
            except StreamsException as e:
                _log.error("while shutting down after a failure: %s", e)
        if self._state is not _State.ERROR:
            if self._state is not _State.PENDING_ERROR:
                self._set_state(_State.PENDING_ERROR)
            self._set_state(_State.ERROR)

    def close(self, timeout: timedelta | float | None = None) -> bool:
        """Stop all queries after their running micro-batches finish and commit.

        With a ``timeout``, a batch still running when it is up is cancelled (it runs
        again at the next start) and, as in Kafka Streams, ``close`` returns False.
        """
        if self._state in (_State.NOT_RUNNING, _State.ERROR):
            self._close_metrics_endpoint()  # kept open after a failure, for whoever investigates
            self._close_query_server()
            return True
        self._stop_monitor.set()
        self._set_state(_State.PENDING_SHUTDOWN)
        seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
        in_time = True
        if self._runner is not None:
            # As Kafka Streams finishes the records in hand and commits on close.
            in_time = self._runner.stop(drain_seconds=math.inf if seconds is None else max(seconds, 0.0))
        if self._monitor is not None and self._monitor is not threading.current_thread():
            self._monitor.join(seconds)
            in_time = in_time and not self._monitor.is_alive()
        self._close_metrics_endpoint()
        if self._runner is not None:
            self._runner.close_replicas()
        self._close_query_server()  # after the replicas: a read still waiting fails at once (409)
        self._set_state(_State.NOT_RUNNING)
        return in_time

    def _close_metrics_endpoint(self) -> None:
        if self._metrics_endpoint is not None:
            self._metrics_endpoint.close()
            self._metrics_endpoint = None

    def _close_query_server(self) -> None:
        if self._query_server is not None:
            self._query_server.close()
            self._query_server = None

    def cleanup(self) -> None:
        """Delete this application's local state (checkpoints); only while not running."""
        if self._state.is_running_or_rebalancing():
            raise StreamsException("Cannot clean up while running; call close() first")
        shutil.rmtree(Path(self._config.state_dir()) / self._config.application_id(), ignore_errors=True)

    def physical_plan(self) -> PhysicalPlan:
        """What the topology becomes on Spark (``kspark describe --spark`` prints it): per
        sub-topology its stage and why each optimisation applied or not, and the queries. Before
        ``start()`` the partition counts are not known (tasks are per input partition); after,
        it is the plan the runner executes."""
        from kspark.runtime.spark.plan import physical_plan

        if self._runner is not None and self._runner.physical is not None:
            return self._runner.physical
        return physical_plan(self._topology, self._config)

    # ------------------------------------------------------------------ queries
    def store(self, params: StoreQueryParameters | str, store_type: Any = None) -> Any:
        """A read-only view of a store (``StoreQueryParameters``, or a name and a
        ``QueryableStoreTypes`` type), read from the driver's replica of it
        (kspark/runtime/spark/replica.py): every call sees the state as of one committed
        micro-batch; ``view.position()`` says which. A position bound in ``params`` waits for
        the store to reach it (``with_position_bound``)."""
        if isinstance(params, str):
            params = StoreQueryParameters.from_name_and_type(params, store_type)
        return self._replicas(params.store_name).view(params)

    def _validate_is_running_or_rebalancing(self, what: str = "") -> None:
        validate_running(self._state, what)

    def _replicas(self, name: str) -> StoreReplicas:
        self._validate_is_running_or_rebalancing(f"Cannot get state store {name}: ")
        replicas = self._runner.replicas if self._runner is not None else None
        if replicas is None:
            raise InvalidStateStoreException(
                f"Cannot get state store {name}: the application is still starting"
            )
        return replicas

    def _host(self) -> HostInfo:
        server = self._config.application_server()
        return HostInfo.parse(server) if server else HostInfo.unavailable()

    def _discovery(self) -> Discovery | None:
        """What discovery answers from (None while the application is still starting)."""
        runner = self._runner
        if runner is None or runner.replicas is None:
            return None
        return Discovery.of(
            self._host(), runner.plan(), runner.replicas.homes, runner.builder.global_store_names()
        )

    def __enter__(self) -> KafkaStreams:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_GUARANTEE_SETTINGS: dict[str, tuple[str, ...]] = {
    # key: the values that keep the guarantee (case-insensitive)
    "consumer.isolation.level": ("read_committed",),
    "main.consumer.isolation.level": ("read_committed",),
    "spark.speculation": ("false",),
}
_EXACTLY_ONCE_SETTINGS: dict[str, tuple[str, ...]] = {
    "producer.enable.idempotence": ("true",),
    "producer.acks": ("all", "-1"),
}


def validate_running(state: _State, what: str = "") -> None:
    """Kafka Streams' check before every query and metadata call: not yet started, or no
    longer running (closed, failed), is refused rather than answered from stale state.
    ``what``: what was asked for, to start the message with."""
    if state is _State.CREATED:
        raise StreamsNotStartedException(
            f"{what}KafkaStreams has not been started (state CREATED), you can retry after calling start()"
        )
    if not state.is_running_or_rebalancing():
        # Kafka Streams raises IllegalStateException here; kspark's errors are StreamsExceptions
        raise InvalidStateStoreException(f"{what}KafkaStreams is not running. State is {state.value}.")


def _check_guarantee(config: StreamsConfig) -> None:
    """Refuse settings that would break the processing guarantee, naming them.

    Every consumer reads ``read_committed`` under both guarantees; exactly-once
    also needs Spark's speculative execution off (two attempts of one task would
    fence each other's transactions) and the producer settings kspark makes
    (idempotence, ``acks=all``, its own ``transactional.id`` per task).
    """
    wanted = dict(_GUARANTEE_SETTINGS)
    if config.exactly_once():
        wanted.update(_EXACTLY_ONCE_SETTINGS)
    for key, value in config.originals().items():
        allowed = wanted.get(key)
        if allowed is not None and str(value).strip().lower() not in allowed:
            raise StreamsException(
                f"{key}={value} would break processing.guarantee={config.processing_guarantee()}: "
                f"it must be {' or '.join(allowed)} (or left unset)"
            )
        if config.exactly_once() and key == "producer.transactional.id":
            raise StreamsException(
                "producer.transactional.id must not be set: under exactly_once_v2 kspark gives each "
                "task its own (<application.id>-<sub-topology>_<partition>)"
            )
