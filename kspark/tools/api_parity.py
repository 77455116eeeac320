"""docs/kafka-streams-api.md: Kafka Streams 4.1's DSL and Processor API, name by name, in kspark.

:data:`ROWS` holds one row per public method of the Kafka Streams classes a
user writes against (overloads folded into one name): kspark's name for it
and whether it works on each runner. The page is rendered from the rows::

    python -m kspark.tools.api_parity > docs/kafka-streams-api.md

``tests/tools/test_api_parity.py`` checks that the page is current, that
every kspark name given here exists, and that the rows list exactly the
methods ``javap`` finds in the kafka-streams 4.1.1 jar: a method Kafka adds
or kspark drops cannot go unnoticed.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Row", "ROWS", "CLASSES", "render", "main", "java_to_python"]

COMMAND = "python -m kspark.tools.api_parity > docs/kafka-streams-api.md"

# Kafka Streams class (relative to org.apache.kafka.streams) -> kspark's class, as importable
# "module:Name" (None: kspark has no class of its own for it).
CLASSES: dict[str, str | None] = {
    "StreamsBuilder": "kspark.kstream.builder:StreamsBuilder",
    "Topology": "kspark.processor.topology:Topology",
    "KafkaStreams": "kspark.kafka_streams:KafkaStreams",
    "kstream.KStream": "kspark.kstream.kstream:KStream",
    "kstream.BranchedKStream": "kspark.kstream.kstream:BranchedKStream",
    "kstream.KTable": "kspark.kstream.ktable:KTable",
    "kstream.GlobalKTable": "kspark.kstream.global_ktable:GlobalKTable",
    "kstream.KGroupedStream": "kspark.kstream.kgrouped_stream:KGroupedStream",
    "kstream.KGroupedTable": "kspark.kstream.kgrouped_table:KGroupedTable",
    "kstream.TimeWindowedKStream": "kspark.kstream.time_windowed_kstream:TimeWindowedKStream",
    "kstream.SessionWindowedKStream": "kspark.kstream.session_windowed_kstream:SessionWindowedKStream",
    "kstream.CogroupedKStream": "kspark.kstream.cogrouped_kstream:CogroupedKStream",
    "kstream.TimeWindowedCogroupedKStream": "kspark.kstream.cogrouped_kstream:TimeWindowedCogroupedKStream",
    "kstream.SessionWindowedCogroupedKStream": (
        "kspark.kstream.cogrouped_kstream:SessionWindowedCogroupedKStream"
    ),
    "kstream.Consumed": "kspark.kstream.config_objects:Consumed",
    "kstream.Produced": "kspark.kstream.config_objects:Produced",
    "kstream.Grouped": "kspark.kstream.config_objects:Grouped",
    "kstream.Materialized": "kspark.kstream.config_objects:Materialized",
    "kstream.Joined": "kspark.kstream.config_objects:Joined",
    "kstream.StreamJoined": "kspark.kstream.config_objects:StreamJoined",
    "kstream.TableJoined": "kspark.kstream.table_joined:TableJoined",
    "kstream.Repartitioned": "kspark.kstream.config_objects:Repartitioned",
    "kstream.Branched": "kspark.kstream.config_objects:Branched",
    "kstream.Named": "kspark.kstream.config_objects:Named",
    "kstream.Printed": "kspark.kstream.config_objects:Printed",
    "kstream.Suppressed": "kspark.kstream.suppressed:Suppressed",
    "kstream.Suppressed$BufferConfig": "kspark.kstream.suppressed:BufferConfig",
    "kstream.TimeWindows": "kspark.kstream.windows:TimeWindows",
    "kstream.SlidingWindows": "kspark.kstream.windows:SlidingWindows",
    "kstream.SessionWindows": "kspark.kstream.windows:SessionWindows",
    "kstream.JoinWindows": "kspark.kstream.windows:JoinWindows",
    "kstream.EmitStrategy": "kspark.kstream.windows:EmitStrategy",
    "kstream.ValueTransformerWithKey": "kspark.kstream.value_transformer:ValueTransformerWithKey",
    "processor.api.Processor": "kspark.processor.api:Processor",
    "processor.api.FixedKeyProcessor": "kspark.processor.api:FixedKeyProcessor",
    "processor.api.ProcessingContext": "kspark.processor.api:ProcessorContext",
    "processor.api.ProcessorContext": "kspark.processor.api:ProcessorContext",
    "processor.api.FixedKeyProcessorContext": "kspark.processor.api:ProcessorContext",
    "processor.api.Record": "kspark.processor.api:Record",
    "processor.api.FixedKeyRecord": "kspark.processor.api:Record",
    "processor.api.RecordMetadata": "kspark.processor.api:RecordMetadata",
    "processor.StateStore": "kspark.state.api:StateStore",
    "state.Stores": "kspark.state.stores:Stores",
    "state.ReadOnlyKeyValueStore": "kspark.state.api:ReadOnlyKeyValueStore",
    "state.KeyValueStore": "kspark.state.api:KeyValueStore",
    "state.ReadOnlyWindowStore": "kspark.state.api:ReadOnlyWindowStore",
    "state.WindowStore": "kspark.state.api:WindowStore",
    "state.ReadOnlySessionStore": "kspark.state.api:ReadOnlySessionStore",
    "state.SessionStore": "kspark.state.api:SessionStore",
    "state.VersionedKeyValueStore": "kspark.state.versioned:VersionedKeyValueStore",
}

YES, NO, NA = "yes", "no", "n/a"


@dataclass(frozen=True)
class Row:
    """One Kafka Streams method: kspark's name (``None``: not provided) and its status per runner.

    ``driver``/``spark``: :data:`YES`, :data:`NO` or :data:`NA` (the runner has no use for it).
    """

    java_class: str
    method: str
    kspark: str | None
    driver: str
    spark: str
    note: str = ""


def java_to_python(name: str) -> str:
    """Kafka's camelCase method name in kspark's snake_case (``as``/``with`` get a trailing ``_``)."""
    if name in ("as", "with"):
        return name + "_"
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _rows(java_class: str, spec: str, driver: str = YES, spark: str = YES, note: str = "") -> list[Row]:
    """Rows for the space-separated ``spec`` methods, each with kspark's usual name for it."""
    return [Row(java_class, m, java_to_python(m), driver, spark, note) for m in spec.split()]


def _factory(java_class: str, method: str) -> Row:
    """A static factory whose snake_case name is a field of the object: kspark adds ``_``."""
    field = java_to_python(method)
    return Row(java_class, method, field + "_", YES, YES, f"static factory; `{field}` is the field")


def _missing(java_class: str, spec: str, note: str, driver: str = NO, spark: str = NO) -> list[Row]:
    return [Row(java_class, m, None, driver, spark, note) for m in spec.split()]


_ONE_PROCESS = "Spark schedules the work: there are no stream threads to add or remove"

ROWS: list[Row] = [
    # -- building a topology
    *_rows("StreamsBuilder", "stream table globalTable addStateStore addGlobalStore build"),
    *_rows("Topology", "addSource addSink addProcessor addStateStore addGlobalStore"),
    *_rows("Topology", "connectProcessorAndStateStores describe"),
    *_rows(
        "Topology",
        "addReadOnlyStateStore",
        note="KIP-813; on Spark the store's updates are kept in its task's changelog state (no "
        "changelog topic), and it is not interactively queryable there",
    ),
    # -- KStream
    *_rows("kstream.KStream", "filter filterNot selectKey mapValues map flatMap flatMapValues"),
    *_rows("kstream.KStream", "print foreach peek split merge", note="stateless: fused on Spark"),
    *_rows("kstream.KStream", "repartition to toTable groupByKey groupBy"),
    *_rows(
        "kstream.KStream",
        "join leftJoin outerJoin",
        note="stream-stream (JoinWindows, StreamJoined), stream-table and stream-GlobalKTable",
    ),
    *_rows("kstream.KStream", "process processValues", note="with state stores on both runners"),
    *_rows("kstream.BranchedKStream", "branch defaultBranch noDefaultBranch"),
    # -- KTable
    *_rows("kstream.KTable", "filter filterNot mapValues toStream suppress groupBy outerJoin"),
    *_rows("kstream.KTable", "transformValues", note="a ValueTransformerWithKey with connected stores"),
    *_rows(
        "kstream.KTable",
        "join leftJoin",
        note="table-table joins, on the key or on a foreign key (KIP-213)",
    ),
    *_rows("kstream.KTable", "queryableStoreName", spark=NA),
    *_rows("kstream.GlobalKTable", "queryableStoreName", spark=NA),
    # -- grouped and windowed
    *_rows("kstream.KGroupedStream", "count reduce aggregate windowedBy cogroup"),
    *_rows("kstream.KGroupedTable", "count reduce aggregate"),
    *_rows("kstream.TimeWindowedKStream", "count reduce aggregate emitStrategy"),
    *_rows("kstream.SessionWindowedKStream", "count reduce aggregate emitStrategy"),
    *_rows(
        "kstream.CogroupedKStream", "cogroup aggregate windowedBy", note="KIP-150; one store for all streams"
    ),
    *_rows("kstream.TimeWindowedCogroupedKStream", "aggregate", note="TimeWindows and SlidingWindows"),
    *_rows("kstream.SessionWindowedCogroupedKStream", "aggregate"),
    # -- configuration objects
    *_rows("kstream.Consumed", "with as withKeySerde withValueSerde withTimestampExtractor withName"),
    Row(
        "kstream.Consumed",
        "withOffsetResetPolicy",
        "with_offset_reset_policy",
        YES,
        YES,
        "per-source reset policy",
    ),
    *_rows("kstream.Produced", "with as withKeySerde withValueSerde withStreamPartitioner withName"),
    *_rows("kstream.Produced", "streamPartitioner"),
    _factory("kstream.Produced", "keySerde"),
    _factory("kstream.Produced", "valueSerde"),
    *_rows("kstream.Grouped", "as with withName withKeySerde withValueSerde"),
    _factory("kstream.Grouped", "keySerde"),
    _factory("kstream.Grouped", "valueSerde"),
    *_rows("kstream.Materialized", "as with withKeySerde withValueSerde withRetention"),
    *_rows("kstream.Materialized", "withLoggingEnabled withLoggingDisabled"),
    *_rows("kstream.Materialized", "withCachingEnabled withCachingDisabled"),
    *_rows(
        "kstream.Materialized",
        "withStoreType",
        note="KIP-954: picks Kafka's suppliers (persistent and in-memory window and session stores "
        "keep Kafka's different retention rules); every store lives in worker memory",
    ),
    *_rows("kstream.Joined", "with as withKeySerde withValueSerde withOtherValueSerde withName"),
    _factory("kstream.Joined", "keySerde"),
    _factory("kstream.Joined", "valueSerde"),
    _factory("kstream.Joined", "otherValueSerde"),
    *_rows("kstream.Joined", "withGracePeriod", note="stream-table joins of versioned tables (KIP-914)"),
    _factory("kstream.Joined", "gracePeriod"),
    *_rows("kstream.StreamJoined", "with as withName withStoreName withKeySerde withValueSerde"),
    *_rows("kstream.StreamJoined", "withOtherValueSerde withThisStoreSupplier withOtherStoreSupplier"),
    *_rows("kstream.StreamJoined", "withLoggingEnabled withLoggingDisabled"),
    *_rows(
        "kstream.StreamJoined",
        "withDslStoreSuppliers",
        note="KIP-954: picks Kafka's suppliers; every store lives in worker memory",
    ),
    *_rows("kstream.TableJoined", "with as withPartitioner withOtherPartitioner withName"),
    *_rows("kstream.Repartitioned", "as with withName withNumberOfPartitions withKeySerde withValueSerde"),
    *_rows("kstream.Repartitioned", "numberOfPartitions streamPartitioner withStreamPartitioner"),
    *_rows("kstream.Branched", "as withFunction withConsumer withName"),
    *_rows("kstream.Named", "as withName"),
    *_rows("kstream.Printed", "toFile toSysOut withLabel withKeyValueMapper withName"),
    *_rows("kstream.Suppressed", "untilWindowCloses untilTimeLimit withName"),
    *_rows("kstream.Suppressed$BufferConfig", "maxRecords withMaxRecords maxBytes withMaxBytes unbounded"),
    *_rows(
        "kstream.Suppressed$BufferConfig",
        "withNoBound shutDownWhenFull emitEarlyWhenFull withLoggingDisabled withLoggingEnabled",
    ),
    *_rows("kstream.TimeWindows", "ofSizeWithNoGrace ofSizeAndGrace advanceBy"),
    *_rows("kstream.TimeWindows", "windowsFor size gracePeriodMs"),
    *_rows("kstream.SlidingWindows", "ofTimeDifferenceWithNoGrace ofTimeDifferenceAndGrace"),
    *_rows("kstream.SlidingWindows", "timeDifferenceMs gracePeriodMs"),
    *_rows("kstream.SessionWindows", "ofInactivityGapWithNoGrace ofInactivityGapAndGrace"),
    *_rows("kstream.SessionWindows", "gracePeriodMs inactivityGap"),
    *_rows("kstream.JoinWindows", "ofTimeDifferenceAndGrace ofTimeDifferenceWithNoGrace of before after"),
    *_rows("kstream.JoinWindows", "windowsFor size gracePeriodMs"),
    *_missing(
        "kstream.JoinWindows",
        "grace",
        "deprecated since Kafka 3.0; use of_time_difference_and_grace",
        driver=NA,
        spark=NA,
    ),
    *_rows("kstream.EmitStrategy", "onWindowClose onWindowUpdate type"),
    *_rows("kstream.ValueTransformerWithKey", "init transform close"),
    # -- Processor API
    *_rows("processor.api.Processor", "init process close"),
    *_rows("processor.api.FixedKeyProcessor", "init process close", note="given to process_values"),
    *_rows("processor.api.ProcessingContext", "applicationId taskId recordMetadata keySerde valueSerde"),
    *_rows("processor.api.ProcessingContext", "getStateStore schedule"),
    *_rows("processor.api.ProcessingContext", "commit appConfigs appConfigsWithPrefix"),
    *_rows("processor.api.ProcessingContext", "currentSystemTimeMs currentStreamTimeMs"),
    *_missing(
        "processor.api.ProcessingContext",
        "stateDir",
        "stores live in worker memory on Spark; there is no task state directory to hand out",
    ),
    *_missing(
        "processor.api.ProcessingContext",
        "metrics",
        "no per-processor custom metrics yet (the application's metrics: KafkaStreams.metrics)",
    ),
    *_rows("processor.api.ProcessorContext", "forward"),
    *_rows("processor.api.FixedKeyProcessorContext", "forward", note="a changed key is refused"),
    *_rows("processor.api.Record", "key value timestamp headers"),
    *_rows("processor.api.Record", "withKey withValue withTimestamp withHeaders"),
    *_rows(
        "processor.api.FixedKeyRecord",
        "key value timestamp headers withValue withTimestamp withHeaders",
        note="kspark passes a Record; process_values refuses a forward that changes its key",
    ),
    *_rows("processor.api.RecordMetadata", "topic partition offset"),
    *_rows("processor.StateStore", "name init flush close persistent isOpen"),
    *_missing(
        "processor.StateStore",
        "query getPosition",
        "IQv2's store-level query; kspark's position-bound reads go through KafkaStreams.store",
    ),
    # -- stores
    *_rows("state.Stores", "persistentKeyValueStore"),
    *_rows("state.Stores", "persistentTimestampedKeyValueStore inMemoryKeyValueStore"),
    *_rows("state.Stores", "persistentWindowStore persistentTimestampedWindowStore inMemoryWindowStore"),
    *_rows(
        "state.Stores",
        "lruMap",
        note="evicts the least recently used entry (a tombstone in the changelog when logged)",
    ),
    *_rows("state.Stores", "persistentSessionStore inMemorySessionStore keyValueStoreBuilder"),
    *_rows("state.Stores", "timestampedKeyValueStoreBuilder"),
    *_rows("state.Stores", "windowStoreBuilder timestampedWindowStoreBuilder"),
    *_rows("state.Stores", "sessionStoreBuilder"),
    *_rows(
        "state.Stores",
        "persistentVersionedKeyValueStore versionedKeyValueStoreBuilder",
        note="versioned stores (KIP-889); kept in worker memory like every kspark store",
    ),
    *_rows("state.ReadOnlyKeyValueStore", "get range reverseRange"),
    *_rows("state.ReadOnlyKeyValueStore", "all reverseAll prefixScan approximateNumEntries"),
    *_rows("state.KeyValueStore", "put putIfAbsent putAll delete"),
    *_rows("state.ReadOnlyWindowStore", "fetch backwardFetch all backwardAll fetchAll backwardFetchAll"),
    *_rows("state.WindowStore", "put fetch backwardFetch fetchAll backwardFetchAll"),
    *_rows("state.ReadOnlySessionStore", "findSessions backwardFindSessions"),
    *_rows("state.ReadOnlySessionStore", "fetchSession fetch backwardFetch"),
    *_rows("state.SessionStore", "findSessions backwardFindSessions fetchSession remove put"),
    *_rows("state.VersionedKeyValueStore", "put delete", note="KIP-889"),
    Row(
        "state.VersionedKeyValueStore",
        "get",
        "get",
        YES,
        YES,
        "`get(key)` and `get(key, as_of_timestamp)`; not queryable interactively on Spark yet",
    ),
    # -- running: KafkaStreams is the Spark runner; the TopologyTestDriver stands in for it in tests
    *_rows("KafkaStreams", "state setStateListener setUncaughtExceptionHandler", driver=NA),
    *_rows("KafkaStreams", "metrics start close", driver=NA),
    Row("KafkaStreams", "cleanUp", "cleanup", NA, YES, "deletes the application's Spark checkpoint"),
    *_rows(
        "KafkaStreams",
        "metadataForAllStreamsClients streamsMetadataForStore queryMetadataForKey store",
        driver=NA,
        note="interactive queries: docs/interactive-queries.md (global stores are not queryable on Spark)",
    ),
    *_missing("KafkaStreams", "addStreamThread removeStreamThread", _ONE_PROCESS, driver=NA, spark=NA),
    *_missing(
        "KafkaStreams", "setGlobalStateRestoreListener setStandbyUpdateListener", "not built yet", driver=NA
    ),
    *_missing("KafkaStreams", "pause resume isPaused", "KIP-834 pause/resume: not built yet", driver=NA),
    *_missing(
        "KafkaStreams",
        "clientInstanceIds",
        "KIP-714 client telemetry: kspark's clients are librdkafka's and Spark's",
        driver=NA,
    ),
    *_missing(
        "KafkaStreams",
        "metadataForLocalThreads allLocalStorePartitionLags",
        "thread and standby metadata: Spark runs the tasks; lag is in KafkaStreams.metrics",
        driver=NA,
    ),
    *_missing(
        "KafkaStreams",
        "query",
        "IQv2 query objects (KeyQuery, RangeQuery, ...): not built yet; KafkaStreams.store with "
        "StoreQueryParameters (position bounds included) serves the same reads",
        driver=NA,
    ),
]


def _short(java_class: str) -> str:
    return java_class.rsplit(".", 1)[-1].replace("$", ".")


def _kspark_class(java_class: str) -> str | None:
    target = CLASSES.get(java_class)
    return None if target is None else target.split(":")[1]


def _cell(status: str) -> str:
    return {YES: "yes", NO: "**no**", NA: "n/a"}[status]


_INTRO = f"""\
# Kafka Streams 4.1's API in kspark, name by name

<!-- Generated by `{COMMAND}` from the rows in kspark/tools/api_parity.py:
change those, not this page. tests/tools/test_api_parity.py checks the page is
current and that the rows are exactly the public methods of kafka-streams 4.1.1. -->

Every public method of the Kafka Streams 4.1 classes an application is
written against (the DSL, its configuration objects, the Processor API, the
stores and `KafkaStreams`), overloads folded into one name, with kspark's
name for it and whether it works on each runner: the **TopologyTestDriver**
(`kspark.testing`) and the **Spark** runner (`KafkaStreams`). kspark's names
are Kafka's in snake_case (`as`/`with` become `as_`/`with_`); a Java
overload becomes optional or keyword arguments. **no** marks what a Kafka
Streams application cannot use on kspark today; the note says why or what to
use instead. The operations' results are checked against Java Kafka
Streams' own driver, and on Spark against kspark's, by the scenario catalog
(tests/catalog).
"""


def _summary(rows: Iterable[Row]) -> str:
    rows = list(rows)
    both = sum(1 for r in rows if r.driver in (YES, NA) and r.spark in (YES, NA) and r.kspark)
    missing = [r for r in rows if r.kspark is None and not (r.driver == NA and r.spark == NA)]
    return f"{len(rows)} methods: {both} available wherever they apply, {len(missing)} not provided.\n"


def render(rows: Iterable[Row] = ROWS) -> str:
    rows = list(rows)
    out = [_INTRO, "\n", _summary(rows)]
    by_class: dict[str, list[Row]] = {}
    for row in rows:
        by_class.setdefault(row.java_class, []).append(row)
    for java_class, class_rows in by_class.items():
        kspark_class = _kspark_class(java_class)
        title = _short(java_class)
        where = f"`{kspark_class}`" if kspark_class else "no kspark class yet"
        out.append(f"\n## {title}\n\nkspark: {where}\n\n")
        out.append("| Kafka Streams | kspark | TopologyTestDriver | Spark | note |\n")
        out.append("| --- | --- | --- | --- | --- |\n")
        for r in class_rows:
            name = f"`{r.kspark}`" if r.kspark else "-"
            out.append(f"| `{r.method}` | {name} | {_cell(r.driver)} | {_cell(r.spark)} | {r.note} |\n")
    return "".join(out)


def main() -> None:
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
