"""PyFlink (bench/requirements-pyflink.txt): the workloads as a Flink user writes them in Python.

Runs in its own virtualenv under ``--flink-python`` (apache-flink pins its own
Beam, pyarrow and pandas), so nothing here imports kspark. Two systems:

* ``pyflink``: the DataStream API with Python functions. ``KafkaSource`` and
  ``KafkaSink``; W1 ``map``/``filter``; W2 ``key_by().reduce()`` (PyFlink's
  word-count example); W3 ``key_by().window(TumblingEventTimeWindows(5 s))``
  with ``CountTrigger.of(1)`` (an updated count per record, as Kafka Streams
  emits without suppression) over watermarks of bounded out-of-orderness
  30 s, the grace of the other systems (allowed lateness 0: a record is dropped
  once the watermark passes its window's end, when Kafka Streams' grace would
  drop it); W4 the events and the ``users`` topic keyed by user and connected,
  a ``KeyedCoProcessFunction`` keeping each user's tier in keyed ``ValueState``
  and buffering the events that arrive before their user's row.
* ``pyflink-sql`` (W2, W3): the same as SQL, as Flink's docs write aggregations
  (no Python function runs): ``GROUP BY`` into an ``upsert-kafka`` sink; W3 a
  ``GROUP BY TUMBLE`` window with the early-fire emit strategy every
  ``commit_ms`` (``table.exec.emit.early-fire.*``, experimental, the only way
  Flink SQL emits a window before its end: on an unbounded input the last
  windows would otherwise never close) and the same 30 s watermark.

PyFlink's ``KafkaSource`` gives Python the record value only, so W2/W3 take
the key from the value's ``user`` field (the same as the Kafka key), and its
``KafkaSink`` serializes the whole element for the key as for the value, so W2/W3 write
through the Table API's Kafka connector (``key.format=raw``: the key as text;
``value.format=raw``: the count as an 8-byte big-endian BIGINT, Kafka's
LongSerializer's bytes).

Settings: Flink's defaults (local MiniCluster in this process's JVM, heap
state backend) but for two of its Python settings, chosen for speed (``PERFORMANCE``):
``python.execution-mode=thread`` (Python functions run in the JVM through
PemJa, not in separate worker processes that every record crosses a socket
to) and ``python.state.cache-size`` 100,000 (keyed state cached in Python for
more keys than W2-W4 have; the default 1,000 reads most of it from the JVM
per record). W4 at 200,000 records ran at 1,610 rec/s with Flink's defaults,
4,909 with the cache alone and 13,903 with both (bench/results/pyflink-thread-mode/).
Parallelism ``partitions`` (one source reader per input partition),
checkpointing every ``commit_ms`` (at-least-once: the sources commit offsets
and the sinks flush on each checkpoint; under ``--guarantee exactly_once_v2``
exactly-once checkpoints and transactional Kafka sinks committed at each
checkpoint) and the sources reading from the earliest offset.
``$BENCH_PYFLINK_CONF`` (``key=value,...``) adds Flink settings for an
experiment (``python.execution-mode=process`` restores Flink's default); the
result reports them with ``PERFORMANCE`` (``extra.flink_conf``).

The start (``first_input_ms``) is when the first source's Kafka consumer was
positioned on the input, just before its first fetch, as Flink's log says
(:func:`first_input_ms`). Flink's Kafka connector
jar (``flink-sql-connector-kafka``, with its Kafka client shaded in) is
downloaded from Maven Central on first use into
``${KSPARK_HOME:-~/.cache/kspark}/bench/`` and checked against its SHA-1.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import site
import sys
import threading
import urllib.request
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.systems.common import report, spec_from_argv, wait_for_stop

__all__ = ["CONNECTOR_VERSION", "PERFORMANCE", "connector_jar", "main"]

CONNECTOR_VERSION = "5.0.0-2.2"
"""``org.apache.flink:flink-sql-connector-kafka``: the newest on Maven Central, built for Flink 2.2."""
_MAVEN = "https://repo1.maven.org/maven2"
PERFORMANCE = {"python.execution-mode": "thread", "python.state.cache-size": "100000"}
"""Flink settings every run starts from: two Python settings chosen for speed (module docstring)."""
_WINDOW_MS = 5_000
_GRACE_MS = 30_000


def connector_jar() -> Path:
    """The Kafka connector's fat jar, downloaded once and checked against Maven Central's SHA-1."""
    from pyflink.version import __version__ as flink_version

    built_for = CONNECTOR_VERSION.rsplit("-", 1)[1]
    if not flink_version.startswith(built_for + "."):
        raise RuntimeError(
            f"flink-sql-connector-kafka {CONNECTOR_VERSION} is not for apache-flink {flink_version}"
        )
    home = os.environ.get("KSPARK_HOME")
    cache = (Path(home).expanduser() if home else Path.home() / ".cache" / "kspark") / "bench"
    name = f"flink-sql-connector-kafka-{CONNECTOR_VERSION}.jar"
    path = cache / name
    if path.exists():
        return path
    url = f"{_MAVEN}/org/apache/flink/flink-sql-connector-kafka/{CONNECTOR_VERSION}/{name}"
    with urllib.request.urlopen(url, timeout=300) as r:
        data = r.read()
    with urllib.request.urlopen(url + ".sha1", timeout=60) as r:
        want = r.read().decode().split()[0]
    if hashlib.sha1(data).hexdigest() != want:
        raise RuntimeError(f"{url}: SHA-1 differs from Maven Central's {want}")
    cache.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    # Renamed only when complete: a download cut short never looks finished.
    tmp.replace(path)
    return path


def _kafka_options(spec: dict[str, Any], topic: str) -> str:
    return (
        f"'connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{spec['bootstrap']}'"
    )


def _sink_guarantee(spec: dict[str, Any]) -> str:
    """The Table API Kafka sink's delivery options under the harness's guarantee."""
    if spec.get("guarantee") == "exactly_once_v2":
        return (
            "'sink.delivery-guarantee' = 'exactly-once', "
            f"'sink.transactional-id-prefix' = '{spec['app_id']}', "
            # Flink's default (1 h) is above the broker's transaction.max.timeout.ms (15 min).
            "'properties.transaction.timeout.ms' = '900000'"
        )
    return "'sink.delivery-guarantee' = 'at-least-once'"


def _keyed_sink(t_env: Any, spec: dict[str, Any]) -> None:
    """Table ``sink``: an append-only Kafka sink of rows (k STRING, c BIGINT), k the record key."""
    t_env.execute_sql(
        f"""CREATE TABLE sink (k STRING, c BIGINT) WITH ({_kafka_options(spec, spec["output"])},
            'key.format' = 'raw', 'key.fields' = 'k', 'value.format' = 'raw',
            'value.fields-include' = 'EXCEPT_KEY', {_sink_guarantee(spec)})"""
    )


def datastream_job(env: Any, spec: dict[str, Any]) -> Any:
    """Build and submit the DataStream job; returns its JobClient."""
    from pyflink.common import Duration, Row, Time, Types, WatermarkStrategy
    from pyflink.common.serialization import SimpleStringSchema
    from pyflink.datastream.connectors.base import DeliveryGuarantee
    from pyflink.datastream.connectors.kafka import (
        KafkaOffsetsInitializer,
        KafkaRecordSerializationSchema,
        KafkaSink,
        KafkaSource,
    )
    from pyflink.datastream.functions import (
        AggregateFunction,
        KeyedCoProcessFunction,
        ProcessWindowFunction,
        RuntimeContext,
    )
    from pyflink.datastream.state import ListStateDescriptor, ValueStateDescriptor
    from pyflink.datastream.window import CountTrigger, TumblingEventTimeWindows
    from pyflink.table import StreamTableEnvironment

    w = spec["workload"]
    exactly_once = spec.get("guarantee") == "exactly_once_v2"

    def source(topic: str, name: str) -> Any:
        return (
            KafkaSource.builder()
            .set_bootstrap_servers(spec["bootstrap"])
            .set_topics(topic)
            .set_group_id(f"{spec['app_id']}-{name}")
            .set_starting_offsets(KafkaOffsetsInitializer.earliest())
            .set_value_only_deserializer(SimpleStringSchema())
            # Distinct client ids: two sources in one JVM would otherwise clash in JMX.
            .set_property("client.id.prefix", f"{spec['app_id']}-{name}")
            .build()
        )

    def kafka_sink() -> Any:
        builder = (
            KafkaSink.builder()
            .set_bootstrap_servers(spec["bootstrap"])
            .set_record_serializer(
                KafkaRecordSerializationSchema.builder()
                .set_topic(spec["output"])
                .set_value_serialization_schema(SimpleStringSchema())
                .build()
            )
        )
        if exactly_once:
            return (
                builder.set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
                .set_transactional_id_prefix(spec["app_id"])
                .set_property("transaction.timeout.ms", "900000")
                .build()
            )
        return builder.set_delivery_guarantee(DeliveryGuarantee.AT_LEAST_ONCE).build()

    watermarks = (
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(_GRACE_MS))
        if w == "W3"
        else WatermarkStrategy.no_watermarks()
    )
    events = env.from_source(source(spec["input"], "events"), watermarks, "events")
    if w == "W1":
        (
            events.map(json.loads)
            .filter(lambda v: v["amount"] >= 50)
            .map(
                lambda v: json.dumps({"id": v["id"], "user": v["user"], "score": v["amount"] * 2}),
                output_type=Types.STRING(),
            )
            .sink_to(kafka_sink())
        )
        return env.execute_async(f"pyflink-{w}")
    if w == "W4":

        class Enrich(KeyedCoProcessFunction):
            """Events (input 1) joined with their user's latest row (input 2), both keyed by user."""

            def open(self, runtime_context: RuntimeContext) -> None:
                self.tier = runtime_context.get_state(ValueStateDescriptor("tier", Types.STRING()))
                # Events read before their user's row (the two topics are read concurrently).
                self.pending = runtime_context.get_list_state(
                    ListStateDescriptor("pending", Types.PICKLED_BYTE_ARRAY())
                )

            def process_element1(self, e: dict[str, Any], ctx: Any) -> Iterator[str]:
                tier = self.tier.value()
                if tier is None:
                    self.pending.add(e)
                else:
                    yield json.dumps({"id": e["id"], "amount": e["amount"], "tier": tier})

            def process_element2(self, u: dict[str, Any], ctx: Any) -> Iterator[str]:
                self.tier.update(u["tier"])
                for e in self.pending.get() or ():
                    yield json.dumps({"id": e["id"], "amount": e["amount"], "tier": u["tier"]})
                self.pending.clear()

        users = env.from_source(source(spec["table"], "users"), WatermarkStrategy.no_watermarks(), "users")
        (
            events.map(json.loads)
            .key_by(lambda e: e["user"], key_type=Types.STRING())
            .connect(users.map(json.loads).key_by(lambda u: u["user"], key_type=Types.STRING()))
            .process(Enrich(), output_type=Types.STRING())
            .sink_to(kafka_sink())
        )
        return env.execute_async(f"pyflink-{w}")

    row = Types.ROW_NAMED(["k", "c"], [Types.STRING(), Types.LONG()])
    if w == "W2":
        counts = (
            events.map(
                lambda s: (json.loads(s)["user"], 1), output_type=Types.TUPLE([Types.STRING(), Types.LONG()])
            )
            .key_by(lambda t: t[0], key_type=Types.STRING())
            .reduce(lambda a, b: (a[0], a[1] + b[1]))
            .map(lambda t: Row(t[0], t[1]), output_type=row)
        )
    elif w == "W3":

        class Count(AggregateFunction):
            def create_accumulator(self) -> int:
                return 0

            def add(self, value: Any, accumulator: int) -> int:
                return accumulator + 1

            def get_result(self, accumulator: int) -> int:
                return accumulator

            def merge(self, a: int, b: int) -> int:
                return a + b

        class WindowKey(ProcessWindowFunction):
            def process(self, key: str, context: Any, elements: Any) -> Iterator[Any]:
                for count in elements:
                    yield Row(f"{key}@{context.window().start}", count)

        counts = (
            events.map(lambda s: json.loads(s)["user"], output_type=Types.STRING())
            .key_by(lambda k: k, key_type=Types.STRING())
            .window(TumblingEventTimeWindows.of(Time.milliseconds(_WINDOW_MS)))
            .trigger(CountTrigger.of(1))
            .aggregate(Count(), WindowKey(), accumulator_type=Types.LONG(), output_type=row)
        )
    else:
        raise ValueError(f"unknown or unsupported workload {w}")
    t_env = StreamTableEnvironment.create(env)
    _keyed_sink(t_env, spec)
    return t_env.from_data_stream(counts).execute_insert("sink").get_job_client()


def sql_job(env: Any, spec: dict[str, Any]) -> Any:
    """Build and submit the SQL job (W2, W3); returns its JobClient."""
    from pyflink.table import StreamTableEnvironment

    w = spec["workload"]
    t_env = StreamTableEnvironment.create(env)
    config = t_env.get_config()
    watermark = ""
    if w == "W3":
        watermark = f", WATERMARK FOR rt AS rt - INTERVAL '{_GRACE_MS // 1000}' SECOND"
        config.set("table.exec.emit.early-fire.enabled", "true")
        config.set("table.exec.emit.early-fire.delay", f"{spec['commit_ms']} ms")
        # Window starts to epoch milliseconds through UNIX_TIMESTAMP, which reads the session zone.
        config.set("table.local-time-zone", "UTC")
        # The sink's key (key@start) is a function of the window's grouping key, and one key's
        # updates all come from one task: the sink needs no upsert materializer (extra state).
        config.set("table.exec.sink.upsert-materialize", "NONE")
    elif w != "W2":
        raise ValueError(f"unknown or unsupported workload {w}")
    t_env.execute_sql(
        f"""CREATE TABLE events (
              k STRING, v BYTES, rt TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'{watermark}
            ) WITH ({_kafka_options(spec, spec["input"])},
              'properties.group.id' = '{spec["app_id"]}', 'scan.startup.mode' = 'earliest-offset',
              'key.format' = 'raw', 'key.fields' = 'k', 'value.format' = 'raw',
              'value.fields-include' = 'EXCEPT_KEY')"""
    )
    t_env.execute_sql(
        f"""CREATE TABLE sink (k STRING, c BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH (
              'connector' = 'upsert-kafka', 'topic' = '{spec["output"]}',
              'properties.bootstrap.servers' = '{spec["bootstrap"]}',
              'key.format' = 'raw', 'value.format' = 'raw', 'value.fields-include' = 'EXCEPT_KEY',
              {_sink_guarantee(spec)})"""
    )
    if w == "W2":
        query = "INSERT INTO sink SELECT k, COUNT(*) FROM events GROUP BY k"
    else:
        start = f"TUMBLE_START(rt, INTERVAL '{_WINDOW_MS // 1000}' SECOND)"
        query = (
            f"INSERT INTO sink SELECT CONCAT(k, '@', CAST(UNIX_TIMESTAMP(DATE_FORMAT({start}, "
            f"'yyyy-MM-dd HH:mm:ss')) * 1000 AS STRING)), COUNT(*) FROM events "
            f"GROUP BY k, TUMBLE(rt, INTERVAL '{_WINDOW_MS // 1000}' SECOND)"
        )
    return t_env.execute_sql(query).get_job_client()


def first_input_ms(log_dir: str, topic: str) -> int:
    """When a source's Kafka consumer was first positioned on ``topic``, from Flink's log (0: never).

    Kafka's consumer logs ``Resetting offset for partition <topic>-<n>`` (INFO, Flink's default
    level) when it has looked up the earliest offset, just before its first fetch of that
    partition: the start of processing, a fetch earlier than the first record. (Flink's metric
    reporters are plugins its local MiniCluster does not load, and Java 17 keeps the JVM's
    MBean server from py4j.)
    """
    marker = re.compile(rf"^(\S+ \S+) .*Resetting offset for partition {re.escape(topic)}-\d+ ")
    starts = []
    for log in Path(log_dir).glob("flink-*.log"):
        with open(log, errors="replace") as f:
            for line in f:
                m = marker.match(line)
                if m:
                    # Log4j's local-time stamp, read in this process's time zone (the JVM's).
                    starts.append(datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp())
    return int(min(starts) * 1000) if starts else 0


def main() -> None:
    from pyflink.common import Configuration
    from pyflink.datastream import CheckpointingMode, StreamExecutionEnvironment

    spec = spec_from_argv()
    sql = "--sql" in sys.argv[2:]
    jar = connector_jar()
    # Flink's own log (the MiniCluster's, INFO) beside the harness's logs of this run (the cwd).
    os.environ.setdefault("FLINK_LOG_DIR", os.getcwd())
    # The JVM's embedded interpreter (python.execution-mode=thread, PemJa) starts without this
    # virtualenv's site-packages on its path, so it would not find pemja itself.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [*site.getsitepackages(), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    config = Configuration()
    # Extra Flink settings for an experiment ("key=value,key=value"); reported with the result.
    extra = dict(kv.split("=", 1) for kv in os.environ.get("BENCH_PYFLINK_CONF", "").split(",") if kv)
    for key, value in {**PERFORMANCE, **extra}.items():
        config.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.add_jars(jar.as_uri())
    env.set_parallelism(int(spec["partitions"]))
    env.set_python_executable(sys.executable)
    exactly_once = spec.get("guarantee") == "exactly_once_v2"
    env.enable_checkpointing(
        int(spec["commit_ms"]),
        CheckpointingMode.EXACTLY_ONCE if exactly_once else CheckpointingMode.AT_LEAST_ONCE,
    )
    job = sql_job(env, spec) if sql else datastream_job(env, spec)
    stop = threading.Event()
    wait_for_stop(stop.set, background=True)
    status = ""
    while not stop.wait(1.0):
        # A failing job restarts (Flink's default restart strategy under checkpointing); the log
        # says so, and the harness stops the run when it stays idle.
        now = job.get_job_status().result().name
        if now != status:
            print(f"job status {now}", file=sys.stderr, flush=True)
            status = now
        if now in ("FAILED", "FINISHED", "CANCELED"):
            try:
                job.get_job_execution_result().result()
            except Exception as e:  # the job's failure, for the harness's stderr log
                print(str(e)[:4000], file=sys.stderr, flush=True)
            sys.exit(f"the Flink job ended ({now}) before the harness stopped it")
    with contextlib.suppress(Exception):
        job.cancel().result()
    report(
        first_input_ms=first_input_ms(os.environ["FLINK_LOG_DIR"], spec["input"]),
        flink_conf={**PERFORMANCE, **extra},
    )


if __name__ == "__main__":
    main()
