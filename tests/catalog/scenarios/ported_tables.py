"""KTable operators and joins with tables, ported from Kafka Streams' KTable tests.

Sources: ``KTableKTable{Inner,Left,Outer}JoinTest``, ``KStreamKTableJoinTest``,
``KStreamKTableLeftJoinTest``, ``KStreamGlobalKTable{,Left}JoinTest``,
``KTableAggregateTest``, ``KTableReduceTest``, ``KTableFilterTest``,
``KTableMapValuesTest`` and ``KTableSourceTest``. Integer keys of Kafka's
tests become one-digit strings, Integer values Longs; timestamps are shifted
by 100 where Kafka's start at 0. Where Kafka's test inspects the ``Change``
(new and old value) a processor receives, the scenario makes the old values
visible the way a user sees them: through a downstream re-grouping whose
subtractor receives them.
"""

from __future__ import annotations

from typing import Any

from kspark import Consumed, Grouped, KeyValue, Materialized, Produced, StreamsBuilder

from ..model import Build, P, Scenario, Step, Topics
from .ported_support import SL, SS, L, S, j, ported

__all__ = ["SCENARIOS"]

KEYS = ("0", "1", "2", "3")


def _joiner(v1: Any, v2: Any) -> str:
    return j(v1) + "+" + j(v2)


def table_table(kind: str, *, store: str | None = None, old_values: bool = False) -> Build:
    """``t1.<kind>Join(t2, v1 + "+" + v2)`` to ``out``; ``old_values``: the joined table is also
    re-grouped under one key, its adder/subtractor trail written to ``agg``."""

    def build(b: StreamsBuilder, t: Topics) -> None:
        left = b.table(t["l"], Consumed.with_(S, S))
        right = b.table(t["r"], Consumed.with_(S, S))
        op = {"inner": left.join, "left": left.left_join, "outer": left.outer_join}[kind]
        joined = op(right, _joiner) if store is None else op(right, _joiner, Materialized.as_(store))
        joined.to_stream().to(t["out"], Produced.with_(S, S))
        if old_values:
            joined.group_by(lambda k, v: KeyValue("all", k + "=" + v), Grouped.with_(S, S)).aggregate(
                lambda: "",
                lambda k, v, agg: agg + "+" + v,
                lambda k, v, agg: agg + "-" + v,
                Materialized.with_(S, S),
            ).to_stream().to(t["agg"], Produced.with_(S, S))

    return build


def stream_table(left: bool) -> Build:
    """``stream.join(table, ...)`` / ``leftJoin`` to ``out``."""

    def build(b: StreamsBuilder, t: Topics) -> None:
        stream = b.stream(t["s"], Consumed.with_(S, S))
        table = b.table(t["t"], Consumed.with_(S, S))
        (stream.left_join if left else stream.join)(table, _joiner).to(t["out"], Produced.with_(S, S))

    return build


def _foreign_key(key: Any, value: str) -> str | None:
    tokens = value.split(",")
    return tokens[1] if len(tokens) > 1 else None


def stream_global(left: bool) -> Build:
    """``stream.join(globalTable, value's second comma token, ...)`` / ``leftJoin`` to ``out``."""

    def build(b: StreamsBuilder, t: Topics) -> None:
        stream = b.stream(t["s"], Consumed.with_(S, S))
        table = b.global_table(t["g"], Consumed.with_(S, S))
        (stream.left_join if left else stream.join)(table, _foreign_key, _joiner).to(
            t["out"], Produced.with_(S, S)
        )

    return build


def agg_basic(b: StreamsBuilder, t: Topics) -> None:
    """``KTableAggregateTest.testAggBasic``: a table re-grouped by its own key, aggregated."""
    b.table(t["in"], Consumed.with_(S, S)).group_by(
        lambda k, v: KeyValue(k, v), Grouped.with_(S, S)
    ).aggregate(
        lambda: "0",
        lambda k, v, agg: agg + "+" + v,
        lambda k, v, agg: agg + "-" + v,
        Materialized.as_("pt-agg-basic").with_value_serde(S),
    ).to_stream().to(t["out"], Produced.with_(S, S))


def _repartition_selector(key: str, value: str) -> KeyValue[Any, Any] | None:
    if key == "null":
        return KeyValue(None, value)
    if key == "NULL":
        return None
    return KeyValue(value, value)


def agg_repartition(b: StreamsBuilder, t: Topics) -> None:
    """``KTableAggregateTest.testAggRepartition``: the selector returns a null key or no KeyValue."""
    b.table(t["in"], Consumed.with_(S, S)).group_by(_repartition_selector, Grouped.with_(S, S)).aggregate(
        lambda: "0",
        lambda k, v, agg: agg + "+" + v,
        lambda k, v, agg: agg + "-" + v,
        Materialized.as_("pt-agg-repartition").with_value_serde(S),
    ).to_stream().to(t["out"], Produced.with_(S, S))


def count_by_value(b: StreamsBuilder, t: Topics) -> None:
    """``KTableAggregateTest.testCount``: a table counted by value."""
    b.table(t["in"], Consumed.with_(S, S)).group_by(lambda k, v: KeyValue(v, v), Grouped.with_(S, S)).count(
        Materialized.as_("pt-count")
    ).to_stream().to(t["out"], Produced.with_(S, L))


def remove_before_add(b: StreamsBuilder, t: Topics) -> None:
    """``KTableAggregateTest.testRemoveOldBeforeAddNew``: the subtractor runs before the adder."""
    b.table(t["in"], Consumed.with_(S, S)).group_by(
        lambda k, v: KeyValue(k[0], k[1]), Grouped.with_(S, S)
    ).aggregate(
        lambda: "",
        lambda k, v, agg: agg + v,
        lambda k, v, agg: agg.replace(v, ""),
        Materialized.as_("pt-remove-before-add").with_value_serde(S),
    ).to_stream().to(t["out"], Produced.with_(S, S))


def count_same_key(b: StreamsBuilder, t: Topics) -> None:
    """``KTableAggregateTest.testShouldNotSendTransientStateIfNotUpgrading``: count by the table key."""
    b.table(t["in"], Consumed.with_(S, S)).group_by(
        lambda k, v: KeyValue(k, v), Grouped.with_(S, S)
    ).count().to_stream().to(t["out"], Produced.with_(S, L))


def reduce_add_subtract(b: StreamsBuilder, t: Topics) -> None:
    """``KTableReduceTest.shouldAddAndSubtract``: reduce with an adder and a subtractor under one key."""
    b.table(t["in"], Consumed.with_(S, S)).group_by(
        lambda k, v: KeyValue("all", v), Grouped.with_(S, S)
    ).reduce(
        lambda agg, v: agg + v,
        lambda agg, v: agg.replace(v, ""),
        Materialized.with_(S, S),
    ).to_stream().to(t["out"], Produced.with_(S, S))


def filter_both(materialized: bool) -> Build:
    """``KTableFilterTest``: ``filter(even)`` and ``filterNot(even)`` of a Long table (one optionally
    materialized), each to its own topic."""

    def build(b: StreamsBuilder, t: Topics) -> None:
        table = b.table(t["in"], Consumed.with_(S, L))
        if materialized:
            # the store takes the Materialized's serdes, not the parent table's (Kafka's doFilter)
            kept = table.filter(
                lambda k, v: v % 2 == 0, Materialized.as_("pt-filter-store").with_value_serde(L)
            )
        else:
            kept = table.filter(lambda k, v: v % 2 == 0)
        dropped = table.filter_not(lambda k, v: v % 2 == 0)
        kept.to_stream().to(t["out-filter"], Produced.with_(S, L))
        dropped.to_stream().to(t["out-filter-not"], Produced.with_(S, L))

    return build


def filter_then_group(materialized: bool) -> Build:
    """``KTableFilterTest.shouldSkipNullToRepartition*``: a filtered table re-grouped and counted; the
    filter's "not accepted" tombstones of keys never accepted do not reach the repartition topic."""

    def build(b: StreamsBuilder, t: Topics) -> None:
        table = b.table(t["in"], Consumed.with_(S, S))

        def accept(k: Any, v: Any) -> bool:
            return bool(v.lower() == "accept")

        kept = (
            table.filter(accept, Materialized.as_("pt-filter-group-store"))
            if materialized
            else table.filter(accept)
        )
        kept.group_by(lambda k, v: KeyValue(k, v), Grouped.with_(S, S)).count().to_stream().to(
            t["out"], Produced.with_(S, L)
        )

    return build


def map_values(materialized: bool) -> Build:
    """``KTableMapValuesTest``: the value as a Long (optionally materialized), to ``out``."""

    def build(b: StreamsBuilder, t: Topics) -> None:
        table = b.table(t["in"], Consumed.with_(S, S))
        if materialized:
            mapped = table.map_values(lambda v: int(v), Materialized.as_("pt-map-values").with_value_serde(L))
        else:
            mapped = table.map_values(lambda v: int(v))
        mapped.to_stream().to(t["out"], Produced.with_(S, L))

    return build


def source_table(materialized: bool) -> Build:
    """``KTableSourceTest``: a source table's updates as a stream (optionally materialized)."""

    def build(b: StreamsBuilder, t: Topics) -> None:
        table = (
            b.table(t["in"], Consumed.with_(S, L), Materialized.as_("pt-source-store"))
            if materialized
            else b.table(t["in"], Consumed.with_(S, L))
        )
        table.to_stream().to(t["out"], Produced.with_(S, L))

    return build


# ----------------------------------------------------------------------------- steps


def batch(topic: str, prefix: str | None, ts: int | list[int], keys: tuple[str, ...] = KEYS) -> list[Step]:
    times = ts if isinstance(ts, list) else [ts] * len(keys)
    return [P(topic, k, None if prefix is None else prefix + k, t) for k, t in zip(keys, times, strict=True)]


_TT = [
    *batch("l", "X", [105, 106], KEYS[:2]),
    P("l", None, "SomeVal", 142),
    *batch("r", "Y", [100, 110], KEYS[:2]),
    P("r", None, "AnotherVal", 173),
    *batch("l", "XX", 107),
    *batch("r", "YY", [100, 105, 110, 115]),
    *batch("l", "XXX", 106),
    *batch("r", None, [105, 107], KEYS[:2]),
    *batch("l", "XXXX", 113),
    *batch("l", None, [100, 142, 105, 120]),
]
_ST = [
    *batch("s", "X", [100, 101], KEYS[:2]),
    *batch("t", "Y", [150, 120], KEYS[:2]),
    *batch("s", "X", [100, 101, 102, 103]),
    *batch("t", "YY", [170, 131, 112, 144]),
    *batch("s", "X", [100, 101, 102, 103]),
    *batch("t", None, [104, 105], KEYS[:2]),
    *batch("s", "XX", [100, 101, 102, 103]),
    P("s", None, "A", 104),
    P("s", "3", None, 105),
]


def _global_stream(prefix: str, start: int, foreign_key: bool = True, null_key: bool = False) -> list[Step]:
    return [
        P(
            "s",
            None if null_key and i == 0 else k,
            prefix + k + (",FKey" + k if foreign_key else ""),
            start + i,
        )
        for i, k in enumerate(KEYS)
    ]


_GLOBAL = [
    *_global_stream("X", 1)[:2],
    *(P("g", "FKey" + k, "Y" + k, 3 + i) for i, k in enumerate(KEYS[:2])),
    *_global_stream("X", 5),
    *(P("g", "FKey" + k, "YY" + k, 9 + i) for i, k in enumerate(KEYS)),
    *(P("g", "FKey" + k, None, 13 + i) for i, k in enumerate(KEYS[:2])),
    *_global_stream("XX", 15),
    *_global_stream("XXX", 19, foreign_key=False),
    *_global_stream("X", 23, null_key=True),
]
_AGG_BASIC = [
    P("in", k, v, ts)
    for k, v, ts in [
        ("A", "1", 10),
        ("B", "2", 15),
        ("A", "3", 20),
        ("B", "4", 18),
        ("C", "5", 5),
        ("D", "6", 25),
        ("B", "7", 15),
        ("C", "8", 10),
    ]
]
_AGG_REPARTITION = [
    P("in", k, v, ts)
    for k, v, ts in [
        ("A", "1", 10),
        ("A", None, 15),
        ("A", "1", 12),
        ("B", "2", 20),
        ("null", "3", 25),
        ("B", "4", 23),
        ("NULL", "5", 24),
        ("B", "7", 22),
    ]
]
_COUNT = [
    P("in", k, v, ts)
    for k, v, ts in [
        ("A", "green", 10),
        ("B", "green", 9),
        ("A", "blue", 12),
        ("C", "yellow", 15),
        ("D", "green", 11),
    ]
]
_REMOVE_BEFORE_ADD = [
    P("in", k, v, ts) for k, v, ts in [("11", "A", 10), ("12", "B", 8), ("11", None, 12), ("12", "C", 6)]
]
_SAME_KEY = [P("in", "1", "", 8), P("in", "1", "", 9), P("in", "1", "x", 10), P("in", "1", None, 11)]
_REDUCE = [
    P("in", k, v, ts)
    for k, v, ts in [("A", "a", 10), ("A", "b", 15), ("B", "c", 11), ("A", None, 12), ("B", "d", 13)]
]
_FILTER = [
    P("in", k, v, ts)
    for k, v, ts in [
        ("A", 1, 5),
        ("B", 1, 10),
        ("C", 1, 15),
        ("A", 2, 10),
        ("B", 2, 5),
        ("A", 3, 15),
        ("A", None, 10),
        ("B", None, 20),
    ]
]
_FILTER_GROUP = [
    P("in", k, v, ts)
    for k, v, ts in [
        ("A", "reject", 5),
        ("B", "reject", 10),
        ("C", "reject", 20),
        ("A", "accept", 25),
        ("A", "reject", 30),
    ]
]
_MAP_VALUES = [
    P("in", k, v, ts)
    for k, v, ts in [
        ("A", "01", 50),
        ("B", "01", 10),
        ("C", "01", 30),
        ("A", "02", 25),
        ("B", "02", 20),
        ("A", "03", 35),
        ("A", None, 1),
    ]
]
_SOURCE = [
    P("in", k, v, ts)
    for k, v, ts in [("A", 1, 10), ("B", 2, 11), ("C", 3, 12), ("D", 4, 13), ("A", None, 14), ("B", None, 15)]
]
_SOURCE_ON_CHANGE = [
    P("in", k, v, ts) for k, v, ts in [("A", 1, 10), ("B", 2, 11), ("A", 1, 12), ("B", 3, 13), ("A", 1, 9)]
]

_TT_IO = ({"l": SS, "r": SS}, {"out": SS})
_TT_OLD_IO = ({"l": SS, "r": SS}, {"out": SS, "agg": SS})


def _tt(kind: str, method: str) -> list[Scenario]:
    cls = f"KTableKTable{kind.capitalize()}JoinTest"
    return [
        ported(
            f"pt_tt_{kind}",
            table_table(kind),
            *_TT_IO,
            _TT,
            f"{cls}.testJoin: updates of either side join the other's current value, stamped with the "
            "larger timestamp; null keys are dropped, deletes retract (or re-join with null).",
            java=f"pt_tt_{kind}",
        ),
        ported(
            f"pt_tt_{kind}_old",
            table_table(kind, old_values=True),
            *_TT_OLD_IO,
            _TT,
            f"{cls}.{method}: the join sends old values when a downstream re-grouping asks for them; the "
            "subtractor sees each previous join result.",
            java=f"pt_tt_{kind}_old",
            partitions=(1,),
        ),
    ]


SCENARIOS: list[Scenario] = [
    *_tt("inner", "testSendingOldValues"),
    *_tt("left", "testSendingOldValue"),
    *_tt("outer", "testSendingOldValue"),
    ported(
        "pt_tt_inner_materialized",
        table_table("inner", store="pt-inner-joined"),
        *_TT_IO,
        _TT,
        "KTableKTableInnerJoinTest.testQueryableJoin: the join materialized in a named (cached) store.",
        java="pt_tt_inner_materialized",
    ),
    ported(
        "pt_st_join",
        stream_table(False),
        {"s": SS, "t": SS},
        {"out": SS},
        _ST,
        "KStreamKTableJoinTest.shouldNotJoinOnTableUpdates / shouldClearTableEntryOnNullValueUpdates / "
        "shouldLogAndMeterWhenSkippingNullLeftKey: only stream records join, with the table's current "
        "value; table deletes stop matches; null-key and null-value stream records are dropped.",
        java="pt_st_join",
    ),
    ported(
        "pt_st_left_join",
        stream_table(True),
        {"s": SS, "t": SS},
        {"out": SS},
        _ST,
        "KStreamKTableLeftJoinTest.shouldJoinRegardlessIfMatchFoundOnStreamUpdates / "
        "shouldClearTableEntryOnNullValueUpdates: every stream record is emitted, with null when the table "
        "has no value.",
        java="pt_st_left_join",
    ),
    ported(
        "pt_global_join",
        stream_global(False),
        {"g": SS, "s": SS},
        {"out": SS},
        _GLOBAL,
        "KStreamGlobalKTableJoinTest: the key mapper's result looks the global table up; no match, a null "
        "mapper result or a deleted entry emits nothing; a null stream key still joins.",
        java="pt_global_join",
        global_topics=frozenset({"g"}),
    ),
    ported(
        "pt_global_left_join",
        stream_global(True),
        {"g": SS, "s": SS},
        {"out": SS},
        _GLOBAL,
        "KStreamGlobalKTableLeftJoinTest: the same as a left join (null table values where nothing matches).",
        java="pt_global_left_join",
        global_topics=frozenset({"g"}),
    ),
    ported(
        "pt_agg_basic",
        agg_basic,
        {"in": SS},
        {"out": SS},
        _AGG_BASIC,
        "KTableAggregateTest.testAggBasic: an update subtracts the old value before adding the new one; "
        "out-of-order timestamps keep the larger.",
        java="pt_agg_basic",
    ),
    ported(
        "pt_agg_repartition",
        agg_repartition,
        {"in": SS},
        {"out": SS},
        _AGG_REPARTITION,
        "KTableAggregateTest.testAggRepartition: re-keying by value through a repartition topic; a null "
        "new key or no KeyValue from the selector drops the record (after subtracting the old value).",
        java="pt_agg_repartition",
        partitions=(1,),
    ),
    ported(
        "pt_count",
        count_by_value,
        {"in": SS},
        {"out": SL},
        _COUNT,
        "KTableAggregateTest.testCount: counts per value move as keys change values.",
        java="pt_count",
        partitions=(1,),
    ),
    ported(
        "pt_remove_before_add",
        remove_before_add,
        {"in": SS},
        {"out": SS},
        _REMOVE_BEFORE_ADD,
        "KTableAggregateTest.testRemoveOldBeforeAddNew: two keys re-grouped to one; each update removes "
        "the old value before adding the new one.",
        java="pt_remove_before_add",
        partitions=(1,),
    ),
    ported(
        "pt_count_same_key",
        count_same_key,
        {"in": SS},
        {"out": SL},
        _SAME_KEY,
        "KTableAggregateTest.testShouldNotSendTransientStateIfNotUpgrading: an update that keeps the "
        "grouping key is one combined change, with no transient subtracted count.",
        java="pt_count_same_key",
    ),
    ported(
        "pt_reduce",
        reduce_add_subtract,
        {"in": SS},
        {"out": SS},
        _REDUCE,
        "KTableReduceTest.shouldAddAndSubtract: a table reduce's adder and subtractor; a delete subtracts.",
        java="pt_reduce",
        partitions=(1,),
    ),
    ported(
        "pt_filter",
        filter_both(False),
        {"in": SL},
        {"out-filter": SL, "out-filter-not": SL},
        _FILTER,
        "KTableFilterTest.shouldPassThroughWithoutMaterialization: filter and filterNot forward a tombstone "
        "for each record they reject (and every delete).",
        java="pt_filter",
    ),
    ported(
        "pt_filter_materialized",
        filter_both(True),
        {"in": SL},
        {"out-filter": SL, "out-filter-not": SL},
        _FILTER,
        "KTableFilterTest.shouldPassThroughOnMaterialization / shouldGetValuesOnMaterialization: a "
        "materialized filter (cached) forwards only real changes of its store.",
        java="pt_filter_materialized",
    ),
    ported(
        "pt_filter_group",
        filter_then_group(False),
        {"in": SS},
        {"out": SL},
        _FILTER_GROUP,
        "KTableFilterTest.shouldSkipNullToRepartitionWithoutMaterialization: rejected records of keys "
        "never accepted do not reach the re-grouping.",
        java="pt_filter_group",
    ),
    ported(
        "pt_filter_group_materialized",
        filter_then_group(True),
        {"in": SS},
        {"out": SL},
        _FILTER_GROUP,
        "KTableFilterTest.shouldSkipNullToRepartitionOnMaterialization: the same with a materialized filter.",
        java="pt_filter_group_materialized",
    ),
    ported(
        "pt_map_values",
        map_values(False),
        {"in": SS},
        {"out": SL},
        _MAP_VALUES,
        "KTableMapValuesTest.testKTable / testNotSendingOldValue: mapValues keeps each record's timestamp; "
        "a delete stays a delete.",
        java="pt_map_values",
    ),
    ported(
        "pt_map_values_materialized",
        map_values(True),
        {"in": SS},
        {"out": SL},
        _MAP_VALUES,
        "KTableMapValuesTest.testQueryableKTable: the mapped table materialized (cached).",
        java="pt_map_values_materialized",
    ),
    ported(
        "pt_source",
        source_table(False),
        {"in": SL},
        {"out": SL},
        _SOURCE,
        "KTableSourceTest.testKTable: a source table forwards every update and delete.",
        java="pt_source",
    ),
    ported(
        "pt_source_on_change",
        source_table(True),
        {"in": SL},
        {"out": SL},
        _SOURCE_ON_CHANGE,
        "KTableSourceTest.testKTableSourceEmitOnChange: a materialized source drops an update that repeats "
        "the value with a newer timestamp, keeps one with an older timestamp.",
        java="pt_source_on_change",
    ),
]
