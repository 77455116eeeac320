"""Versioned stores and versioned tables (KIP-889, KIP-914), ported from Kafka Streams' tests.

Sources: ``KTableSourceTest`` (versioned source tables), ``KTableKTableInnerJoinTest`` and
``KTableFilterTest`` (versioned semantics), ``KStreamKTableJoinTest`` (joins against versioned
tables, with and without a grace period), ``VersionedKeyValueStoreIntegrationTest`` (a
Processor API processor writing and reading a versioned store). History retentions are small
(100 ms) so that the steps cross them: a put older than the retention is refused and counted
as a dropped record.
"""

from __future__ import annotations

from typing import Any

from kspark import Consumed, Grouped, Joined, KeyValue, Materialized, Produced, StreamsBuilder, Topology
from kspark.processor import Processor, ProcessorContext, Record
from kspark.state import Stores

from ..model import P, Scenario, Topics
from .ported_support import SL, SS, L, S, j, ported

__all__ = ["SCENARIOS"]

RETENTION = 100


def _versioned(store: str) -> Materialized:
    return Materialized.as_(Stores.persistent_versioned_key_value_store(store, RETENTION))


def _joiner(v1: Any, v2: Any) -> str:
    return j(v1) + "+" + j(v2)


def versioned_source(b: StreamsBuilder, t: Topics) -> None:
    """A versioned source table: its changelog (out-of-order versions included) and a filter."""
    table = b.table(t["t"], Consumed.with_(S, S), _versioned("pv-source-store"))
    table.to_stream().to(t["out"], Produced.with_(S, S))
    table.filter(lambda k, v: not v.startswith("x")).to_stream().to(t["filtered"], Produced.with_(S, S))


def versioned_table_join_and_group(b: StreamsBuilder, t: Topics) -> None:
    """Two versioned tables joined, and one re-grouped and counted: out-of-order versions skipped."""
    left = b.table(t["l"], Consumed.with_(S, S), _versioned("pv-left-store"))
    right = b.table(t["r"], Consumed.with_(S, S), _versioned("pv-right-store"))
    left.join(right, _joiner).to_stream().to(t["out"], Produced.with_(S, S))
    left.group_by(lambda k, v: KeyValue(v, k), Grouped.with_(S, S)).count().to_stream().to(
        t["counts"], Produced.with_(S, L)
    )


def stream_versioned_table(left: bool, grace: int | None, store: str) -> Any:
    """``stream.join(versionedTable)`` / ``leftJoin``, with ``Joined.withGracePeriod(grace)`` if given."""

    def build(b: StreamsBuilder, t: Topics) -> None:
        stream = b.stream(t["s"], Consumed.with_(S, S))
        table = b.table(t["t"], Consumed.with_(S, S), _versioned(store))
        joined = Joined.with_(S, S, S)
        if grace is not None:
            joined = joined.with_grace_period(grace)
        op = stream.left_join if left else stream.join
        op(table, _joiner, joined).to(t["out"], Produced.with_(S, S))

    return build


class AsOfProcessor(Processor[str, str]):
    """Puts each record into the versioned store at its timestamp and forwards the put's return
    code with the version valid 5 ms before the record (``get(key, ts - 5)``); a value ``del``
    deletes instead and forwards what was deleted."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store: Any = context.get_state_store("pv-papi-store")

    def process(self, record: Record[str, str]) -> None:
        if record.value == "del":
            deleted = self.store.delete(record.key, record.timestamp)
            out = "deleted:" + ("null" if deleted is None else f"{deleted.value}@{deleted.timestamp}")
        else:
            code = self.store.put(record.key, record.value, record.timestamp)
            before = self.store.get(record.key, record.timestamp - 5)
            latest = self.store.get(record.key)
            out = (
                f"{code}|"
                + ("null" if before is None else f"{before.value}@{before.timestamp}")
                + "|"
                + ("null" if latest is None else f"{latest.value}@{latest.timestamp}")
            )
        self.context.forward(record.with_value(out))


def papi_versioned_store(topo: Topology, t: Topics) -> None:
    topo.add_source("pv-src", t["in"], key_deserializer=S.deserializer(), value_deserializer=S.deserializer())
    topo.add_processor("pv-asof", AsOfProcessor, "pv-src")
    topo.add_state_store(
        Stores.versioned_key_value_store_builder(
            Stores.persistent_versioned_key_value_store("pv-papi-store", RETENTION), S, S
        ),
        "pv-asof",
    )
    topo.add_sink(
        "pv-sink", t["out"], "pv-asof", key_serializer=S.serializer(), value_serializer=S.serializer()
    )


# table updates: in order, out of order within the retention, out of order beyond it, tombstones
_SOURCE_STEPS = [
    P("t", "A", "a1", 1000),
    P("t", "B", "b1", 1000),
    P("t", "A", "a2", 1010),
    P("t", "A", "a0", 1005),  # out of order, within the retention: stored, forwarded as not latest
    P("t", "A", "xa", 1020),  # filtered out
    P("t", "B", "b0", 950),  # out of order, still within the retention (1020 - 100)
    P("t", "B", "b-late", 900),  # older than the retention: not put, not forwarded, dropped
    P("t", "A", None, 1030),
    P("t", "A", "a-old", 1025),  # out of order before a tombstone
    P("t", "B", "xb", 1040),
    P("t", "C", "c1", 1100),
]

_TT_STEPS = [
    P("l", "A", "a1", 1000),
    P("r", "A", "r1", 1001),
    P("l", "A", "a2", 1010),
    P("l", "A", "a0", 1005),  # out of order: neither joined nor counted
    P("r", "A", "r0", 998),  # out of order on the other side
    P("l", "B", "a2", 1011),
    P("r", "B", "rb", 1012),
    P("l", "B", None, 1020),
    P("l", "B", "a1", 1015),  # out of order after a tombstone
    P("l", "A", "a9", 900),  # beyond the retention: dropped
    P("l", "C", "a9", 1030),
]

# stream records and table updates interleaved: tables updated after a stream record of the same
# time, late stream records (older than stream time minus grace), records with null values
_ST_STEPS = [
    P("t", "A", "t1", 1000),
    P("s", "A", "s1", 1001),
    P("t", "A", "t2", 1005),
    P("s", "A", "s2", 1003),  # as of 1003 the table says t1
    P("s", "B", "s3", 1006),
    P("t", "B", "tb", 1004),  # the table update arrives after the stream record it precedes
    P("s", "A", "s4", 1010),
    P("t", "A", "t3", 1008),
    P("s", "B", "s5", 1012),
    P("s", "A", "s6", 1020),
    P("s", "A", "s-late", 1002),  # older than stream time minus grace
    P("s", "C", "s7", 1021),
    P("s", "A", None, 1022),  # null value: dropped
    P("t", "A", None, 1023),
    P("s", "A", "s8", 1024),
    P("s", "B", "s9", 1040),
    P("s", "A", "s10", 1041),
]

_PAPI_STEPS = [
    P("in", "A", "v1", 1000),
    P("in", "A", "v2", 1010),
    P("in", "A", "v0", 1004),
    P("in", "B", "w1", 1020),
    P("in", "A", "del", 1012),
    P("in", "A", "v3", 1015),
    P("in", "A", "old", 900),  # beyond the retention: not put (code Long.MIN_VALUE), dropped
    P("in", "B", "w2", 1200),
    P("in", "A", "v4", 1008),  # beyond the retention now
    P("in", "A", "v5", 1205),
]

SCENARIOS: list[Scenario] = [
    ported(
        "pv_source",
        versioned_source,
        {"t": SS},
        {"out": SS, "filtered": SS},
        _SOURCE_STEPS,
        "KTableSourceTest.shouldNotForwardOlderRecordsOutOfGracePeriodWhenVersioned / "
        "KTableFilterTest.shouldNotSkipNullsWhenUsingVersionedSemantics (testFilterVersioned): a "
        "versioned source table stores out-of-order updates and forwards them (not latest); an "
        "update older than the history retention is neither stored nor forwarded and counts as "
        "dropped; a filter of a versioned table forwards every tombstone.",
    ),
    ported(
        "pv_table_join_group",
        versioned_table_join_and_group,
        {"l": SS, "r": SS},
        {"out": SS, "counts": SL},
        _TT_STEPS,
        "KTableKTableInnerJoinTest.shouldNotJoinOnOutOfOrderVersionedRecords (versioned semantics, "
        "KIP-914) and KTableAggregateTest versioned re-grouping: a table-table join and a group_by of "
        "versioned tables skip out-of-order versions.",
        spark_compare="multiset",
    ),
    ported(
        "pv_st_join",
        stream_versioned_table(False, None, "pv-st-join-store"),
        {"s": SS, "t": SS},
        {"out": SS},
        _ST_STEPS,
        "KStreamKTableJoinTest.shouldJoinWithVersionedTableAsOfRecordTimestamp (KIP-914): without a "
        "grace period each stream record joins the versioned table as of its own timestamp.",
        java="pv_st_join",
    ),
    ported(
        "pv_st_join_grace",
        stream_versioned_table(False, 10, "pv-st-grace-store"),
        {"s": SS, "t": SS},
        {"out": SS},
        _ST_STEPS,
        "KStreamKTableJoinTest.shouldDelayJoinByGracePeriod / shouldHandleLateJoinsWithGracePeriod: "
        "stream records wait in the <name>-Buffer store until stream time passes their timestamp plus "
        "the grace period, so later table updates are seen; late records join at once.",
        java="pv_st_join_grace",
    ),
    ported(
        "pv_st_left_join_grace",
        stream_versioned_table(True, 10, "pv-st-left-grace-store"),
        {"s": SS, "t": SS},
        {"out": SS},
        _ST_STEPS,
        "KStreamKTableLeftJoinTest.shouldJoinWithGracePeriod: the left join with a grace period joins "
        "missing table values (before the first version, after a tombstone) with null.",
        java="pv_st_left_join_grace",
    ),
    Scenario(
        "pv_papi_store",
        papi_versioned_store,
        {"in": SS},
        {"out": SS},
        _PAPI_STEPS,
        java="pv_papi_store",
        papi=True,
        doc="VersionedKeyValueStoreIntegrationTest.shouldPutGetAndDelete: a processor writes a "
        "versioned store and reads it as of a timestamp; put return codes (valid-to, -1, not put), "
        "delete, and reads beyond the history retention.",
    ),
]
