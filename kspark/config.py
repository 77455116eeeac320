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
the password of a URL's ``user:password@``: :mod:`kspark.redaction`) never show in a ``repr``.
Each definition (:data:`CONFIG_DEFS`, :data:`PREFIX_DEFS`) also says which runner
reads the setting and what it does; docs/configuration.md is generated from them
(:mod:`kspark.tools.config_reference`). ``cache.max.bytes.buffering`` is the deprecated alias of
``statestore.cache.max.bytes``. Serde settings take a ``Serde`` instance or a
name (``string``, ``long``, ``integer``, ``double``, ``bytes``, ``json``);
handler settings take ``log_and_continue`` | ``log_and_fail`` | a callable.
"""

from __future__ import annotations

import difflib
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from kspark.errors import ConfigException
from kspark.redaction import is_secret, redacted

__all__ = [
    "StreamsConfig",
    "AT_LEAST_ONCE",
    "EXACTLY_ONCE_V2",
    "CONFIG_NAMES",
    "CONFIG_DEFS",
    "ConfigDef",
    "PASS_THROUGH_PREFIXES",
    "PREFIX_DEFS",
    "PrefixDef",
    "DRIVER",
    "SPARK",
    "is_secret",
    "redacted",
]

AT_LEAST_ONCE = "at_least_once"
EXACTLY_ONCE_V2 = "exactly_once_v2"
DEFAULT_COMMIT_INTERVAL_MS = 30_000
EOS_DEFAULT_COMMIT_INTERVAL_MS = 100
_SERDE_NAMES = ("string", "long", "integer", "double", "bytes", "json")

DRIVER = "driver"
"""The :class:`kspark.testing.TopologyTestDriver` (a value of :attr:`ConfigDef.runners`)."""
SPARK = "spark"
"""``KafkaStreams`` on Spark, with the ``kspark run``, ``reset`` and ``describe`` commands (a value
of :attr:`ConfigDef.runners`)."""
BOTH: tuple[str, ...] = (DRIVER, SPARK)
NEITHER: tuple[str, ...] = ()


@dataclass(frozen=True)
class PrefixDef:
    """A family of settings passed through under a prefix: who reads them and what they do
    (docs/configuration.md is generated from these, :mod:`kspark.tools.config_reference`)."""

    prefix: str
    runners: tuple[str, ...]
    doc: str


PREFIX_DEFS: tuple[PrefixDef, ...] = (
    # How every client connects (security.protocol is a Kafka Streams name too): Kafka Streams
    # gives an unprefixed client setting to all its clients (kspark.runtime.kafka_clients).
    PrefixDef(
        "ssl.",
        (SPARK,),
        "How every Kafka client connects over TLS, in the Java client's names (with "
        "`security.protocol`). Given as they are to Spark's Kafka source and translated for "
        "kspark's librdkafka clients (settings that tune only the JVM's TLS go to Spark's source "
        "only; one kspark cannot translate fails at `KafkaStreams(...)`; docs/operations.md). "
        "A `consumer.`, `producer.` or `admin.` prefixed one wins for that kind of client.",
    ),
    PrefixDef(
        "sasl.",
        (SPARK,),
        "How every Kafka client authenticates (SASL PLAIN, SCRAM, OAUTHBEARER), in the Java "
        "client's names; as `ssl.*` (docs/operations.md). The schema-registry serdes read "
        "`sasl.jaas.config` (or `sasl.username` and `sasl.password`) for "
        "`basic.auth.credentials.source=SASL_INHERIT`.",
    ),
    PrefixDef(
        "consumer.",
        (SPARK,),
        "Settings of kspark's consumers: `kafka.*` options of Spark's Kafka source, and the "
        "direct read's librdkafka consumers when librdkafka knows every one (otherwise stateless "
        "sub-topologies read through Spark's Kafka source; `kspark describe --spark` says so). "
        "`consumer.isolation.level` must stay `read_committed`. `consumer.auto.offset.reset` "
        "(`earliest`, the default, or `latest`) is where a new application starts on a partition "
        "without a committed offset.",
    ),
    PrefixDef(
        "producer.",
        (SPARK,),
        "Settings of the producers that write the application's output, repartition and "
        "changelog records (librdkafka, names as given). Under `exactly_once_v2`, "
        "`producer.enable.idempotence` must stay `true`, `producer.acks` `all`, and "
        "`producer.transactional.id` unset.",
    ),
    PrefixDef(
        "admin.",
        (SPARK,),
        "Connection settings (`security.protocol`, `ssl.*`, `sasl.*`) of kspark's admin clients "
        "only. Other `admin.*` settings have no effect.",
    ),
    PrefixDef(
        "main.consumer.",
        (SPARK,),
        "Kafka Streams' main consumer. kspark's consumers all take `consumer.*`: a connection "
        "setting here is refused, `main.consumer.isolation.level` must stay `read_committed`, "
        "`main.consumer.auto.offset.reset` overrides `consumer.auto.offset.reset`, others have "
        "no effect.",
    ),
    PrefixDef(
        "restore.consumer.",
        NEITHER,
        "Kafka Streams' restore consumer; a connection setting here is refused, others have no effect.",
    ),
    PrefixDef(
        "global.consumer.",
        NEITHER,
        "Kafka Streams' global consumer; a connection setting here is refused, others have no effect.",
    ),
    PrefixDef(
        "topic.",
        NEITHER,
        "Kafka Streams' settings of internal topics. kspark creates repartition topics with the "
        "broker's defaults and changelog topics with its own (compacted; window and session "
        "stores `compact,delete`), and reads none of these.",
    ),
    PrefixDef("client.tag.", NEITHER, "Kafka Streams' client tags for rack-aware standby placement."),
    PrefixDef(
        "spark.",
        (SPARK,),
        "Spark settings of the SparkSession kspark creates, over kspark's defaults (docs/setup.md); "
        "with `KafkaStreams(..., spark=session)` the session keeps its own. `spark.speculation` "
        "must stay `false`. `spark.kspark.*` are the Spark runner's own settings (below).",
    ),
    # The schema-registry serdes' settings, as Confluent's serdes name them
    # (kspark.serde.schema_registry checks them when a serde is configured).
    PrefixDef(
        "schema.registry.",
        BOTH,
        "The schema-registry serdes' settings, as Confluent names them (`schema.registry.url` ...), "
        "read by a serde from the config it is configured with (docs/schemas.md).",
    ),
    PrefixDef("basic.auth.", BOTH, "The schema-registry serdes' basic authentication (docs/schemas.md)."),
    PrefixDef(
        "bearer.auth.", BOTH, "The schema-registry serdes' bearer-token and OAuth settings (docs/schemas.md)."
    ),
)

PASS_THROUGH_PREFIXES: tuple[str, ...] = tuple(p.prefix for p in PREFIX_DEFS)


@dataclass(frozen=True)
class ConfigDef:
    """One Kafka Streams setting: how it is checked, its default, which runners read it
    (:data:`DRIVER`, :data:`SPARK`; none: accepted so that a Kafka Streams config works unchanged,
    without effect) and what it does. docs/configuration.md is generated from these
    (:mod:`kspark.tools.config_reference`)."""

    kind: str  # str|int|long|bool|list|class|serde|handler|extractor|any
    default: Any = None
    choices: tuple[Any, ...] | None = None
    at_least: int | None = None
    required: bool = False
    runners: tuple[str, ...] = ()
    doc: str = ""
    shown_default: str | None = None  # the default in words, where it is computed


def _d(kind: str, default: Any = None, **kw: Any) -> ConfigDef:
    return ConfigDef(kind, default, **kw)


_NO_CLIENT_SETTING = (
    "kspark gives its Kafka clients only `security.protocol`, `ssl.*` and `sasl.*` unprefixed; other "
    "client settings take the `consumer.` or `producer.` prefix."
)


def _client(kafka: str) -> str:
    return f"Kafka Streams: {kafka}, for its clients. {_NO_CLIENT_SETTING}"


_SCHEMA_REGISTRY = (
    "Read by the schema-registry serdes from the config they are configured with (docs/schemas.md)."
)

_DEFS: dict[str, ConfigDef] = {
    "application.id": _d(
        "str",
        required=True,
        runners=BOTH,
        doc="The application's name. Its internal topics (`<application.id>-...-repartition`, "
        "`-changelog`), its consumer group, its transactional ids, its Spark queries and its "
        "directory under `state.dir` are named after it. The TopologyTestDriver makes one up when "
        "it is not given.",
    ),
    "bootstrap.servers": _d(
        "list",
        required=True,
        runners=(SPARK,),
        doc="The Kafka brokers, `host:port`, comma-separated or a list. The TopologyTestDriver "
        "connects to nothing and fills in a dummy one when it is not given.",
    ),
    "num.standby.replicas": _d(
        "int",
        0,
        doc="Kafka Streams: standby replicas per task. kspark keeps none: on Spark a task's "
        "state is in Spark's checkpoint.",
    ),
    "state.dir": _d(
        "str",
        os.path.join(tempfile.gettempdir(), "kafka-streams"),
        runners=(SPARK,),
        shown_default="`kafka-streams` in the system's temporary directory",
        doc="Where an application keeps its local state: `state.dir/<application.id>/` holds the "
        "Spark checkpoints (input offsets and state), the tasks' on-disk stores (`tasks/`, on each "
        "executor; for a `state.dir` on HDFS or S3 they go to the executor's local directory), the "
        "interactive-query replicas' last committed batch and `kspark run`'s log file. On a "
        "cluster it must be storage that every node and a restarted driver reach "
        "(docs/cluster.md). `kspark reset` and "
        "`KafkaStreams.cleanup()` delete the application's directory.",
    ),
    "acceptable.recovery.lag": _d(
        "long",
        10_000,
        at_least=0,
        doc="Kafka Streams: how far behind a client may be and still "
        "count as caught up for a task (task assignment).",
    ),
    "cache.max.bytes.buffering": _d(
        "long",
        10 * 1024 * 1024,
        at_least=0,
        runners=BOTH,
        doc="The deprecated name of `statestore.cache.max.bytes`; read when that is not given.",
    ),
    "statestore.cache.max.bytes": _d(
        "long",
        10 * 1024 * 1024,
        at_least=0,
        runners=BOTH,
        doc="The record cache's size in bytes (KIP-63). Each task has a cache of this size (Kafka "
        "Streams divides it among its threads). A caching store forwards the latest value per key "
        "at each commit: on Spark at the end of each micro-batch, in the TopologyTestDriver after "
        "each input record; earlier when the cache is full. `0` turns caching off (every update is "
        "forwarded) and, on Spark, native lowering with it.",
    ),
    "client.id": _d("str", "", doc="Kafka Streams: the prefix of its clients' `client.id`s."),
    "default.deserialization.exception.handler": _d(
        "handler",
        "log_and_fail",
        runners=BOTH,
        doc="What happens to an input record that cannot be deserialized: `log_and_fail` stops "
        "the application, `log_and_continue` logs and skips the record, a callable "
        "`(context, record, exception) -> HandlerResponse` decides per record. The deprecated "
        "name of `deserialization.exception.handler`, read when that is not given.",
    ),
    "deserialization.exception.handler": _d(
        "handler",
        "log_and_fail",
        runners=BOTH,
        doc="As `default.deserialization.exception.handler` (Kafka 4.0's name; it wins when both are given).",
    ),
    "default.key.serde": _d(
        "serde",
        runners=BOTH,
        doc="The key serde of every source, sink, store and repartition topic given none: a Serde "
        "instance or one of `string`, `long`, `integer`, `double`, `bytes`, `json`. It is "
        "configured with the application's config, as in Kafka Streams. Unset, a node that needs "
        "it fails with a `TopologyException` naming the node.",
    ),
    "default.value.serde": _d("serde", runners=BOTH, doc="As `default.key.serde`, for values."),
    "default.list.key.serde.inner": _d(
        "any", doc="Kafka Streams: the inner serde of a default `ListSerde` key."
    ),
    "default.list.value.serde.inner": _d(
        "any", doc="Kafka Streams: the inner serde of a default `ListSerde` value."
    ),
    "default.list.key.serde.type": _d(
        "any", doc="Kafka Streams: the list class of a default `ListSerde` key."
    ),
    "default.list.value.serde.type": _d(
        "any", doc="Kafka Streams: the list class of a default `ListSerde` value."
    ),
    "default.production.exception.handler": _d(
        "handler",
        "log_and_fail",
        runners=BOTH,
        doc="The deprecated name of `production.exception.handler`, read when that is not given.",
    ),
    "production.exception.handler": _d(
        "handler",
        "log_and_fail",
        runners=BOTH,
        doc="What happens to an output record that cannot be serialized: `log_and_fail`, "
        "`log_and_continue` (drop it) or a callable. A record Kafka refuses to take fails the "
        "Spark task, and the micro-batch runs again.",
    ),
    "default.timestamp.extractor": _d(
        "extractor",
        "FailOnInvalidTimestamp",
        runners=BOTH,
        doc="How a source record's timestamp is chosen: a `TimestampExtractor` (`kspark.processor` "
        "has Kafka's: `FailOnInvalidTimestamp`, `LogAndSkipOnInvalidTimestamp`, "
        "`UsePartitionTimeOnInvalidTimestamp`, `WallclockTimestampExtractor`), its name, or a "
        "callable `(record, partition_time) -> int`.",
    ),
    "max.task.idle.ms": _d(
        "long",
        0,
        doc="Kafka Streams: how long a task waits for data on all its input partitions "
        "before it processes the records it has.",
    ),
    "max.warmup.replicas": _d(
        "int", 2, at_least=1, doc="Kafka Streams: warm-up replicas while tasks move between clients."
    ),
    "num.stream.threads": _d(
        "int",
        1,
        at_least=1,
        doc="Kafka Streams: threads per instance. On Spark the parallelism is one Spark task per "
        "Kafka Streams task (input partition), spread over the executors' cores (docs/cluster.md).",
    ),
    "processing.exception.handler": _d(
        "handler",
        "log_and_fail",
        runners=BOTH,
        doc="What happens when a processor or punctuator raises: `log_and_fail`, "
        "`log_and_continue` (skip the record) or a callable (KIP-1033).",
    ),
    "processing.guarantee": _d(
        "str",
        AT_LEAST_ONCE,
        choices=(AT_LEAST_ONCE, EXACTLY_ONCE_V2),
        runners=(SPARK,),
        doc="`at_least_once`: a micro-batch run again after a failure writes its output again. "
        "`exactly_once_v2`: each task writes a micro-batch's output, changelog records and input "
        "offsets in one Kafka transaction (docs/state-and-guarantees.md); downstream consumers "
        "must read `read_committed`.",
    ),
    "rack.aware.assignment.non_overlap_cost": _d("int", doc="Kafka Streams: rack-aware task assignment."),
    "rack.aware.assignment.strategy": _d(
        "str",
        "none",
        choices=("none", "min_traffic", "balance_subtopology"),
        doc="Kafka Streams: rack-aware task assignment.",
    ),
    "rack.aware.assignment.tags": _d("list", [], doc="Kafka Streams: rack-aware standby placement."),
    "rack.aware.assignment.traffic_cost": _d("int", doc="Kafka Streams: rack-aware task assignment."),
    "task.assignor.class": _d("str", doc="Kafka Streams: a custom task assignor."),
    "replication.factor": _d(
        "int",
        -1,
        doc="Kafka Streams: the replication factor of internal topics. kspark creates them with "
        "the broker's default.",
    ),
    "security.protocol": _d(
        "str",
        "PLAINTEXT",
        choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
        runners=(SPARK,),
        doc="How every Kafka client connects (docs/operations.md); `consumer.`, `producer.` or "
        "`admin.` prefixed, for that kind of client only.",
    ),
    "task.timeout.ms": _d(
        "long",
        300_000,
        at_least=0,
        doc="Kafka Streams: how long a task may stall on client timeouts before it fails.",
    ),
    "topology.optimization": _d(
        "str",
        "none",
        doc="Kafka Streams: DSL optimisations. `StreamsBuilder.build(props)` checks the value it is "
        "given and applies none (Kafka Streams' `none`).",
    ),
    "application.server": _d(
        "str",
        "",
        runners=(SPARK,),
        doc="`host:port` where this instance answers: the interactive-query metadata names it, and "
        "the application serves its stores over HTTP there from `start()` or `process_available()` "
        "to `close()` (docs/interactive-queries.md). Empty: no endpoint.",
    ),
    "buffered.records.per.partition": _d(
        "int", 1000, doc="Kafka Streams: records buffered per input partition."
    ),
    "built.in.metrics.version": _d(
        "str", "latest", choices=("latest",), doc="Kafka Streams: the version of its built-in metrics."
    ),
    "commit.interval.ms": _d(
        "long",
        None,
        at_least=0,
        runners=(SPARK,),
        shown_default="30000 (100 with `exactly_once_v2`)",
        doc="How often tasks commit. On Spark a micro-batch is a commit: this is the trigger "
        "interval of `start()`. The TopologyTestDriver commits after every input record.",
    ),
    "enable.metrics.push": _d(
        "bool", True, doc="Kafka Streams: push client metrics to the broker (KIP-714)."
    ),
    "repartition.purge.interval.ms": _d(
        "long",
        DEFAULT_COMMIT_INTERVAL_MS,
        at_least=0,
        runners=(SPARK,),
        doc="How often the records of repartition topics that their readers have committed are "
        "deleted (the admin client's deleteRecords), as in Kafka Streams. On Spark a committed "
        "micro-batch of the query reading the topic is the commit; the first purge is due one "
        "interval after the start. What a low-latency query reads is not purged.",
    ),
    "connections.max.idle.ms": _d("long", 540_000, doc=_client("idle connections are closed after this")),
    "default.dsl.store": _d(
        "str",
        "rocksDB",
        choices=("rocksDB", "in_memory"),
        doc="Kafka Streams: the kind of store the DSL builds. `rocksDB`: key-value, window and session "
        "stores in RocksDB on disk (window and session stores one database per time segment; the "
        "stores of emit-on-window-close aggregations in memory with the RocksDB stores' retention "
        "rules) (docs/state-and-guarantees.md).",
    ),
    "dsl.store.suppliers.class": _d("any", doc="Kafka Streams: the store suppliers the DSL uses."),
    "default.client.supplier": _d("any", doc="Kafka Streams: a factory of its Kafka clients."),
    "log.summary.interval.ms": _d("long", 120_000, doc="Kafka Streams: how often a thread logs a summary."),
    "metadata.max.age.ms": _d("long", 300_000, at_least=0, doc=_client("how often metadata is refreshed")),
    "metrics.num.samples": _d(
        "int",
        2,
        at_least=1,
        runners=(SPARK,),
        doc="Samples in the window over which `KafkaStreams.metrics()` computes its rates and "
        "latencies (docs/operations.md).",
    ),
    "metric.reporters": _d("list", [], doc="Kafka Streams: classes that receive its metrics."),
    "metrics.recording.level": _d(
        "str",
        "INFO",
        choices=("INFO", "DEBUG", "TRACE"),
        doc="Kafka Streams: which metrics are recorded; `DEBUG` (or `TRACE`) adds the state stores' "
        "`<op>-rate` and `<op>-latency-avg/max`.",
    ),
    "metrics.sample.window.ms": _d(
        "long",
        30_000,
        at_least=0,
        runners=(SPARK,),
        doc="The length of one sample of the rates and latencies of `KafkaStreams.metrics()`.",
    ),
    "poll.ms": _d("long", 100, doc="Kafka Streams: how long a thread blocks waiting for input."),
    "probing.rebalance.interval.ms": _d(
        "long", 600_000, at_least=60_000, doc="Kafka Streams: how often it checks warm-up replicas."
    ),
    "receive.buffer.bytes": _d("int", 32 * 1024, at_least=-1, doc=_client("the TCP receive buffer")),
    "reconnect.backoff.ms": _d("long", 50, at_least=0, doc=_client("the wait before a reconnect")),
    "reconnect.backoff.max.ms": _d(
        "long",
        1000,
        at_least=0,
        doc=_client("the longest wait before a reconnect"),
    ),
    "retry.backoff.ms": _d(
        "long",
        100,
        at_least=0,
        doc=_client("the wait before a failed request is retried"),
    ),
    "request.timeout.ms": _d("int", 40_000, at_least=0, doc=_client("how long a request may take")),
    "rocksdb.config.setter": _d(
        "rocksdb_setter",
        runners=BOTH,
        doc="Tunes the RocksDB options of persistent stores, as in Kafka Streams: a "
        "`kspark.state.RocksDBConfigSetter` subclass (one instance per database), an instance, or a "
        "function `(store_name, options, configs) -> None` that changes the `rocksdict.Options` in "
        "place before each store's (or window segment's) database opens. On Spark it runs in the "
        "executors, so it must be importable or picklable there.",
    ),
    "send.buffer.bytes": _d("int", 128 * 1024, at_least=-1, doc=_client("the TCP send buffer")),
    "state.cleanup.delay.ms": _d(
        "long", 600_000, doc="Kafka Streams: when the state of tasks that moved away is deleted."
    ),
    "upgrade.from": _d("str", doc="Kafka Streams: the version a rolling upgrade starts from."),
    "windowed.inner.class.serde": _d(
        "any", doc="Kafka Streams: the inner serde of a windowed serde made by its class name."
    ),
    "windowstore.changelog.additional.retention.ms": _d(
        "long",
        24 * 60 * 60 * 1000,
        runners=(SPARK,),
        doc="Added to a window or session store's retention for its changelog topic's "
        "`retention.ms`, when kspark creates the topic.",
    ),
    "window.size.ms": _d(
        "long",
        runners=BOTH,
        doc="The window size of a `TimeWindowedDeserializer` made without one, read when it is "
        "configured with the application's config (as a default serde is).",
    ),
    "errors.dead.letter.queue.topic.name": _d(
        "str",
        runners=BOTH,
        doc="A topic for the records an exception handler reports on (KIP-1034): the input "
        "record's key and value with `__streams.errors.*` headers.",
    ),
    # Confluent's schema-registry serde settings (kspark.serde.schema_registry; Confluent's defaults).
    "auto.register.schemas": _d(
        "bool",
        True,
        runners=BOTH,
        doc=f"A serializer registers its schema under the subject. {_SCHEMA_REGISTRY}",
    ),
    "use.latest.version": _d(
        "bool",
        False,
        runners=BOTH,
        doc=f"Write with the subject's latest schema, and read into it. {_SCHEMA_REGISTRY}",
    ),
    "normalize.schemas": _d(
        "bool",
        False,
        runners=BOTH,
        doc=f"Normalize a schema before registering or looking it up. {_SCHEMA_REGISTRY}",
    ),
    "key.subject.name.strategy": _d(
        "any",
        "TopicNameStrategy",
        runners=BOTH,
        doc="How a key schema's subject is named: `TopicNameStrategy`, `RecordNameStrategy`, "
        f"`TopicRecordNameStrategy` or a function. {_SCHEMA_REGISTRY}",
    ),
    "value.subject.name.strategy": _d(
        "any",
        "TopicNameStrategy",
        runners=BOTH,
        doc=f"As `key.subject.name.strategy`, for values. {_SCHEMA_REGISTRY}",
    ),
    "latest.cache.ttl.sec": _d(
        "long",
        -1,
        at_least=-1,
        runners=BOTH,
        doc=f"How long a subject's latest version is cached, in seconds; `-1`: no expiry. {_SCHEMA_REGISTRY}",
    ),
}

CONFIG_NAMES: frozenset[str] = frozenset(_DEFS)
CONFIG_DEFS: Mapping[str, ConfigDef] = MappingProxyType(_DEFS)
"""Every Kafka Streams setting kspark knows, by name (read-only)."""


def _is_internal(key: str) -> bool:
    """Kafka Streams' internal settings (``InternalConfig``) are named ``__...__``; operators read them."""
    return len(key) > 4 and key.startswith("__") and key.endswith("__")


def _fail(key: str, value: Any, allowed: str) -> ConfigException:
    return ConfigException(f"Invalid value {value!r} for configuration {key}: {allowed}")


def _check(key: str, value: Any, d: ConfigDef) -> Any:
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
    elif kind == "rocksdb_setter":
        from kspark.state.rocksdb_config_setter import resolve_config_setter

        resolve_config_setter(value)
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
