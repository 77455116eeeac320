"""SparkSession factory for the Spark runner.

:func:`create_spark_session` returns a session set up the way kspark's runner
needs it: the Kafka connector on the classpath (explicit jars from the kspark
cache), RocksDB state store with changelog checkpointing, chained stateful
operators allowed (kspark keeps their correctness itself), Arrow on, quiet
logs. :func:`use_spark_session` checks and completes a session the user built.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shlex
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kspark.jvm.jars import kspark_home
from kspark.runtime.spark.class_data import ArchivePlan, archive_plan, drop, keep_archive_at_exit
from kspark.runtime.spark.jars import (
    CONNECTOR_CLASS,
    connector_jars,
    connector_package,
    connector_version,
)
from kspark.runtime.spark.settings import CLASS_DATA_SHARING, PROCESSING_NICE, RunnerSettings
from kspark.runtime.spark.worker_daemon import DAEMON_MODULE

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_CONF",
    "REQUIRED_SQL_CONF",
    "LOCAL_GC_OPTION",
    "ConnectorMissingError",
    "CHECKPOINT_FILE_MANAGER",
    "FILE_SYSTEM_CHECKPOINTS",
    "create_spark_session",
    "use_local_checkpoint_files",
    "spark_settings",
    "use_spark_session",
    "has_kafka_connector",
    "last_startup_seconds",
    "worker_python",
]

_log = logging.getLogger(__name__)

CHECKPOINT_FILE_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"
"""Spark's (internal) SQL setting naming the class that writes checkpoint files."""

FILE_SYSTEM_CHECKPOINTS = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
)
"""Spark's checkpoint file manager over Hadoop's ``FileSystem`` API (its default uses
``FileContext``)."""

REQUIRED_SQL_CONF: dict[str, str] = {
    # transformWithState only runs on the RocksDB provider.
    "spark.sql.streaming.stateStore.providerClass": (
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
    ),
    # Commit a changelog per batch instead of uploading a full snapshot.
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    # Spark refuses chained stateful operators in update mode unless this is
    # off; kspark owns their correctness with (old, new) pairs and watermarks.
    "spark.sql.streaming.statefulOperator.checkCorrectness.enabled": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Source options shown in plans and errors: Spark's default hides URLs only. Kafka's secrets
    # travel as kafka.* options (sasl.jaas.config, ssl.* keys and passwords), and the direct
    # read's pickled plan holds its consumers' settings.
    "spark.sql.redaction.options.regex": (
        r"(?i)url|password|secret|jaas|token|\.pem|ssl\.key|keystore\.key|certificates|plan"
    ),
}
"""Runtime SQL settings the runner depends on; set on any session kspark uses."""

DEFAULT_CONF: dict[str, str] = {
    "spark.master": "local[*]",
    "spark.app.name": "kspark",
    "spark.ui.enabled": "false",
    # Spark's 200 default makes every tiny micro-batch schedule 200 tasks.
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.showConsoleProgress": "false",
    # Streaming queries run without AQE anyway; leaving it on only makes
    # Spark warn at every stateful query start.
    "spark.sql.adaptive.enabled": "false",
    # Python workers forked with kspark, pandas, pyarrow and pyspark.sql already imported.
    "spark.python.daemon.module": DAEMON_MODULE,
    # Unless this is Int.MaxValue, transformWithState's Arrow writer measures the batch's
    # bytes after every row; for a list column (Kafka headers) that costs O(rows so far),
    # and it was most of the JVM's time in every stateful stage (bench/results/history.md,
    # "kspark alone after the windowed count and the Arrow fix").
    # Arrow batches stay bounded by spark.sql.execution.arrow.maxRecordsPerBatch (10,000).
    "spark.sql.execution.arrow.maxBytesPerBatch": "2147483647",
    # PySpark sends a pickled Python function of more than this many bytes (1 MB by default) as
    # a broadcast variable, which transformWithStateInPandas' workers never load (Spark 4.0:
    # BROADCAST_VARIABLE_NOT_LOADED): an engine stage whose topology pickles to more than 1 MB
    # failed. The function then travels inside Spark's own task binary, itself broadcast.
    "spark.broadcast.UDFCompressionThreshold": "1g",
    **REQUIRED_SQL_CONF,
}
"""Defaults of :func:`create_spark_session`; any ``spark.*`` key given overrides one."""

LOCAL_GC_OPTION = "-XX:+UseParallelGC"
"""The driver JVM's collector in local mode (where it also runs every task)."""

_LOG4J2 = """\
# Written by kspark.runtime.spark.session: Spark's driver logs at {level}.
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n%ex
# Harmless on every machine without Hadoop's native libraries.
logger.nativecode.name = org.apache.hadoop.util.NativeCodeLoader
logger.nativecode.level = ERROR
logger.kafka.name = org.apache.kafka
logger.kafka.level = {kafka_level}
# Spark's pooled Kafka producers outlive a stopped broker in tests and
# report every reconnect attempt.
logger.kafkanet.name = org.apache.kafka.clients.NetworkClient
logger.kafkanet.level = ERROR
"""

_last_startup: float | None = None


class ConnectorMissingError(RuntimeError):
    """A SparkSession cannot load Spark's Kafka connector."""


def last_startup_seconds() -> float | None:
    """Wall time of the last session :func:`create_spark_session` started, if any."""
    return _last_startup


def _log4j_file(level: str) -> Path:
    """A log4j2 config for the driver JVM, written once per level into the cache."""
    kafka_level = "ERROR" if level.upper() in ("ERROR", "FATAL", "OFF") else "WARN"
    text = _LOG4J2.format(level=level.upper(), kafka_level=kafka_level)
    conf_dir = kspark_home() / "conf"
    conf_dir.mkdir(parents=True, exist_ok=True)
    path = conf_dir / f"log4j2-spark-{level.lower()}.properties"
    if not path.exists() or path.read_text() != text:
        fd, tmp = tempfile.mkstemp(dir=conf_dir, prefix=".tmp-log4j2-")
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    return path


def create_spark_session(
    conf: Mapping[str, str] | None = None,
    *,
    log_level: str = "WARN",
) -> SparkSession:
    """Get or create the SparkSession kspark runs on.

    ``conf`` holds ``spark.*`` settings that override :data:`DEFAULT_CONF`;
    ``spark.jars`` given here are added to the connector jars rather than
    replacing them. A key outside ``spark.*`` is an error. As with
    ``SparkSession.builder.getOrCreate()``, an already active session is
    returned (with the runner's SQL settings applied), and it must then
    already have the connector. ``spark.driver.extraJavaOptions`` defaults
    to a log4j2 config at ``log_level`` (and, with a ``local`` master, the
    parallel collector, :data:`LOCAL_GC_OPTION`, and the class-data archive of
    :mod:`~kspark.runtime.spark.class_data`); giving it replaces that.
    """
    global _last_startup
    settings, archive = _settings_and_archive(conf, log_level)
    from pyspark.sql import SparkSession  # deferred: pyspark is slow to import

    # Python workers must be this interpreter, the one that has kspark and
    # the user's modules; Spark would otherwise pick whatever `python3` is.
    os.environ["PYSPARK_PYTHON"] = worker_python(settings["spark.master"])
    # The driver-side workers (offset planning, state schemas) start from this one.
    os.environ["PYSPARK_DRIVER_PYTHON"] = worker_python("local")
    if settings["spark.master"].startswith("local"):
        # A local session talks only to itself; without this Spark resolves
        # the host name, warns when it maps to loopback, and may bind to a
        # public interface.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    from pyspark import SparkContext

    existing = SparkSession.getActiveSession()
    launches_jvm = SparkContext._gateway is None
    started = time.monotonic()
    nice = RunnerSettings.of(conf or {}).processing_nice
    if nice is not None and not (launches_jvm and settings["spark.master"].startswith("local")):
        _log.warning("%s is ignored: kspark starts no local Spark JVM here", PROCESSING_NICE)
        nice = None
    try:
        spark = _get_or_create(settings, nice)
    except Exception as e:
        # A JVM that cannot map the archive must not stop the application; any other failure
        # (a JVM that started, or one started without an archive) is the caller's.
        if archive is None or archive.writing is not None or SparkContext._gateway is not None:
            raise
        drop(archive, e)
        settings, archive = _settings_and_archive({**(conf or {}), CLASS_DATA_SHARING: "false"}, log_level)
        spark = _get_or_create(settings, nice)
    if archive is not None and launches_jvm:
        keep_archive_at_exit(archive, getattr(SparkContext._gateway, "proc", None))
    if existing is None:
        _last_startup = time.monotonic() - started
        _log.info("Spark session started in %.1f s", _last_startup)
    spark.sparkContext.setLogLevel(log_level.upper())
    overrides = {k: v for k, v in (conf or {}).items() if k in REQUIRED_SQL_CONF}
    return use_spark_session(spark, sql_conf=overrides)


_LAUNCHER = """#!/bin/sh
# Written by kspark (kspark.runtime.spark.session.worker_python): Spark's Python workers, with
# pyspark imported from the installed, byte-compiled package instead of Spark's pyspark.zip.
PYTHONPATH=$(printf '%s' "$PYTHONPATH" | tr ':' '\\n' \\
    | grep -v -e '/pyspark\\.zip$' -e '/py4j-[^/]*-src\\.zip$' | paste -sd: -)
export PYTHONPATH
exec {python} "$@"
"""


def worker_python(master: str) -> str:
    """The executable Spark runs its Python workers with: this interpreter.

    Spark puts its ``python/lib/pyspark.zip`` first on every worker's ``PYTHONPATH``, and Python
    cannot keep byte code for modules imported from a zip: a worker Spark starts on its own (the
    driver-side ones that plan a direct read's offsets or check transformWithState's state
    schemas) compiled pyspark anew, ~1.5 s of CPU and 3 s on this 2-core machine, against 0.3 s
    from the installed package. Spark gives such a worker 10 s to connect back; on a busy machine
    it missed them and failed its query. So with pyspark installed as a package of this
    interpreter, the driver's workers, and with a local master every worker, run through a
    two-line launcher that drops the zips from ``PYTHONPATH`` (written once into the kspark
    cache). On a cluster, executors have their own Python: this interpreter's path is used.
    """
    import pyspark

    installed = Path(pyspark.__file__).parent.is_dir() and ".zip" not in pyspark.__file__
    if not master.startswith("local") or not installed or os.name != "posix":
        return sys.executable
    text = _LAUNCHER.format(python=shlex.quote(sys.executable))
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    bin_dir = kspark_home() / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / f"python-{digest}"
    if not path.exists():
        fd, tmp = tempfile.mkstemp(dir=bin_dir, prefix=".tmp-python-")
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.chmod(tmp, 0o755)
        os.replace(tmp, path)
    return str(path)


def spark_settings(conf: Mapping[str, str] | None = None, *, log_level: str = "WARN") -> dict[str, str]:
    """The full ``spark.*`` settings :func:`create_spark_session` starts a session with.

    Resolves the connector jars (downloading them on first use).
    """
    return _settings_and_archive(conf, log_level)[0]


def _get_or_create(settings: Mapping[str, str], nice: int | None = None) -> SparkSession:
    """The session of ``settings``; with ``nice`` (spark.kspark.processingNice), the JVM it
    launches runs at that nice value, in a session of its own (:func:`_launch_jvm_apart`).

    Linux keeps a nice value per thread and a process starts with its parent thread's, so the
    JVM is launched from a thread of its own that first lowers its own priority: the JVM's
    threads, and the Python workers they start, inherit it; this process keeps its own (nothing
    can raise a priority back without privileges). PySpark installs its Ctrl-C handler (cancel
    every job) only from the main thread, so it is installed here afterwards."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    if nice is None:
        return builder.getOrCreate()
    if not sys.platform.startswith("linux"):
        _log.warning("%s is ignored: a priority per thread is Linux's", PROCESSING_NICE)
        return builder.getOrCreate()
    made: list[SparkSession] = []
    failed: list[BaseException] = []

    def launch() -> None:
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)  # this thread only
            _launch_jvm_apart(settings, nice)
            made.append(builder.getOrCreate())
        except BaseException as e:  # the caller's to raise, in its own thread
            failed.append(e)

    launcher = threading.Thread(target=launch, name="kspark-spark-launch")
    launcher.start()
    launcher.join()
    if failed:
        raise failed[0]
    spark = made[0]
    if threading.current_thread() is threading.main_thread():
        context = spark.sparkContext

        def cancel(_signal: int, _frame: Any) -> None:
            context.cancelAllJobs()
            raise KeyboardInterrupt()

        signal.signal(signal.SIGINT, cancel)
    return spark


def _launch_jvm_apart(settings: Mapping[str, str], nice: int) -> None:
    """Launch Spark's JVM (PySpark's gateway) in a session of its own and, where Linux schedules
    sessions as groups, give its group the nice value ``nice``.

    Why: with autogroup (``kernel.sched_autogroup_enabled``, on in most distributions' kernels)
    Linux first shares the cores among sessions, each session one group, and only then among a
    group's threads by their nice values. A JVM at nice 10 in the application's session was below
    the application only inside that group, which as a whole, with every task in it, counted as
    the heaviest one against the other sessions (a broker's, a client's): a process of the
    application that woke up (the HTTP endpoint's serving process) waited behind them. In a
    session of its own the JVM's group yields to the application's, which is then light. Without
    autogroup the threads' nice does it alone. The JVM still ends with the application: PySpark's
    gateway exits when its standard input, the application's pipe, closes."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    conf = SparkConf()
    conf.setAll(list(settings.items()))
    gateway = launch_gateway(conf, popen_kwargs={"start_new_session": True})  # type: ignore[no-untyped-call]
    SparkContext._ensure_initialized(gateway=gateway)
    autogroup = Path(f"/proc/{gateway.proc.pid}/autogroup")
    if not autogroup.exists():  # a kernel without autogroup: the threads' nice does it alone
        return
    for attempt in range(3):
        try:
            autogroup.write_text(str(nice))
            return
        except BlockingIOError:  # Linux takes one unprivileged write a tenth of a second
            time.sleep(0.11 * (attempt + 1))
        except OSError as e:  # not allowed here: the threads' nice still ranks it in its group
            _log.warning("%s: could not lower the priority of Spark's JVM's session: %s", PROCESSING_NICE, e)
            return
    _log.warning("%s: Linux refused three times to lower the JVM's session's priority", PROCESSING_NICE)


def _settings_and_archive(
    conf: Mapping[str, str] | None, log_level: str
) -> tuple[dict[str, str], ArchivePlan | None]:
    """:func:`spark_settings`, and the driver's class-data archive they use, if any
    (:mod:`~kspark.runtime.spark.class_data`)."""
    conf = dict(conf or {})
    bad = sorted(k for k in conf if not k.startswith("spark."))
    if bad:
        raise ValueError(
            f"create_spark_session takes only spark.* settings; got {', '.join(bad)} "
            "(kspark settings belong in the KafkaStreams config)"
        )
    jars = [str(p) for p in connector_jars()]
    user_jars = [j.strip() for j in conf.pop("spark.jars", "").split(",") if j.strip()]
    settings = {**DEFAULT_CONF, **conf, "spark.jars": ",".join(jars + user_jars)}
    java_options = f"-Dlog4j2.configurationFile=file:{_log4j_file(log_level)}"
    if settings["spark.master"].startswith("local"):
        # The driver is the executor here: a throughput collector, as for a batch job. G1's
        # concurrent work competed with the tasks and JIT for the cores (docs/spark-runner.md).
        java_options += " " + LOCAL_GC_OPTION
    archive = None
    if "spark.driver.extraJavaOptions" not in settings:
        if settings["spark.master"].startswith("local") and RunnerSettings.of(conf).class_data_sharing:
            archive = archive_plan(settings.get("spark.driver.extraClassPath", ""))
        if archive is not None:
            java_options += " " + archive.java_options()
        settings["spark.driver.extraJavaOptions"] = java_options
    return settings, archive


def use_local_checkpoint_files(spark: SparkSession, state_dir: str) -> None:
    """Write the checkpoints under a local ``state_dir`` through Hadoop's ``FileSystem`` API.

    Spark writes a checkpoint file (the offset and commit logs, each stateful task's state
    changelog) to a temporary file it then renames. Its default file manager renames through
    Hadoop's ``FileContext``, which on the local file system asks each path's link status, and
    without Hadoop's native library that forks ``readlink`` from the driver's JVM (a thread dump
    shows ``Shell.execCommand`` under ``FileUtil.readLink``), several times a file. At p50 the
    offset log took 46 ms of a W1 micro-batch and the commit log 41, through ``FileSystem`` 13
    and 10 (W1 at 20,000 records/s and a 100 ms trigger, a batch 232 -> 168 ms; W2 405 -> 287
    ms: ``python -m bench.batch_floor``, bench/results/latency-100ms-trigger). A local rename
    is atomic either way; the ``FileSystem`` manager checks that a log file does not exist
    before its rename instead of in it, which differs only when two drivers write one
    checkpoint at once. Remote checkpoints (``hdfs://``, ``s3a://``) and a class the session
    already names are left alone.
    """
    from urllib.parse import urlparse

    if urlparse(state_dir).scheme not in ("", "file"):
        return
    if spark.conf.get(CHECKPOINT_FILE_MANAGER, None) is not None:
        return  # the user's choice
    spark.conf.set(CHECKPOINT_FILE_MANAGER, FILE_SYSTEM_CHECKPOINTS)


def has_kafka_connector(spark: SparkSession) -> bool:
    """True when the session's driver can load Spark's Kafka source."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        # Spark Connect: no driver JVM here to ask; the server must have it.
        return True
    from py4j.protocol import Py4JJavaError

    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        loader.loadClass(CONNECTOR_CLASS)
    except Py4JJavaError:
        return False
    return True


def use_spark_session(spark: SparkSession, *, sql_conf: Mapping[str, str] | None = None) -> SparkSession:
    """Check a SparkSession can run kspark and apply the runner's SQL settings.

    Raises :class:`ConnectorMissingError`, naming what to add, when the
    Kafka connector is not on its classpath. Sets :data:`REQUIRED_SQL_CONF`
    (runtime settings, so this works on a running session); ``sql_conf``
    overrides any of them deliberately.
    """
    version = spark.version
    if not has_kafka_connector(spark):
        jars = ",".join(str(p) for p in connector_jars())
        raise ConnectorMissingError(
            f"this SparkSession cannot load {CONNECTOR_CLASS}: Spark's Kafka connector is not on "
            f"its classpath. Build the session with "
            f"spark.jars.packages={connector_package(version)} "
            f"or spark.jars={jars} (kspark's cached jars for Spark {connector_version()}), "
            "or let kspark create it with kspark.runtime.spark.session.create_spark_session()"
        )
    for key, value in {**REQUIRED_SQL_CONF, **(sql_conf or {})}.items():
        spark.conf.set(key, value)
    return spark
