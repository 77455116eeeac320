"""``KTable.transform_values`` (ported from Kafka Streams' ``KTableTransformValuesTest``) and
``KStream.process_values`` with a state store.

The Java twins are in ``jvm/reference-harness/.../PortedTransformValues.java``.
Kafka's test counts in a transformer's field; here the stateful cases keep
their count in a state store, as a production transformer must (a field
does not survive a restart), which also checks the store's changelog on
Spark.
"""

from __future__ import annotations

from typing import Any

from kspark import (
    Consumed,
    Grouped,
    KeyValue,
    Materialized,
    Produced,
    StreamsBuilder,
    ValueTransformerWithKey,
)
from kspark.errors import StreamsException
from kspark.processor.api import FixedKeyProcessor, ProcessorContext, Record
from kspark.state import Stores

from ..model import Build, P, Scenario, Topics
from .ported_support import SS, L, S, j, ported

__all__ = ["SCENARIOS"]


class Exclamation(ValueTransformerWithKey[str, str, str]):
    """``key->value!``; fails at init unless every named store is reachable (as Kafka's test)."""

    def __init__(self, *stores: str) -> None:
        self._stores = stores

    def init(self, context: ProcessorContext) -> None:
        missing = [s for s in self._stores if context.get_state_store(s) is None]
        if missing:
            raise StreamsException(f"State stores are not accessible: {missing}")

    def transform(self, read_only_key: str, value: str | None) -> str:
        return f"{read_only_key}->{j(value)}!"


class CountingTransformer(ValueTransformerWithKey[str, str, str]):
    """``value#n``: the n-th update of the key, counted in the store ``ptv-counts``."""

    def init(self, context: ProcessorContext) -> None:
        self._store: Any = context.get_state_store("ptv-counts")

    def transform(self, read_only_key: str, value: str | None) -> str:
        count = (self._store.get(read_only_key) or 0) + 1
        self._store.put(read_only_key, count)
        return f"{j(value)}#{count}"


class Length(ValueTransformerWithKey[str, str, int]):
    """The value's length; a tombstone stays one."""

    def transform(self, read_only_key: str, value: str | None) -> int | None:
        return None if value is None else len(value)


class CountingValues(FixedKeyProcessor[str, str]):
    """``value#n`` for the n-th record of the key, counted in the store ``ppv-counts``."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store: Any = context.get_state_store("ppv-counts")

    def process(self, record: Record[str, str]) -> None:
        count = (self.store.get(record.key) or 0) + 1
        self.store.put(record.key, count)
        self.context.forward(record.with_value(f"{j(record.value)}#{count}"))


def _store(name: str) -> Any:
    return Stores.key_value_store_builder(Stores.persistent_key_value_store(name), S, L)


def exclamation(materialized: bool) -> Build:
    """``shouldTransformValuesWithKey`` / ``...AndMaterialize``: two stores connected (one when
    materialized, the result's own store being the other), the result to ``out``."""

    def build(b: StreamsBuilder, t: Topics) -> None:
        b.add_state_store(_store("ptv-a"))
        table = b.table(t["in"], Consumed.with_(S, S))
        if materialized:
            result = table.transform_values(
                lambda: Exclamation("ptv-a", "ptv-mat"),
                "ptv-a",
                materialized=Materialized.as_("ptv-mat").with_key_serde(S).with_value_serde(S),
            )
        else:
            b.add_state_store(_store("ptv-b"))
            result = table.transform_values(lambda: Exclamation("ptv-a", "ptv-b"), "ptv-a", "ptv-b")
        result.to_stream().to(t["out"], Produced.with_(S, S))

    return build


def counting(b: StreamsBuilder, t: Topics) -> None:
    """A transformer keeping per-key counts in a store, to ``out``."""
    b.add_state_store(_store("ptv-counts"))
    table = b.table(t["in"], Consumed.with_(S, S))
    table.transform_values(CountingTransformer, "ptv-counts").to_stream().to(t["out"], Produced.with_(S, S))


def old_values(materialized: bool) -> Build:
    """``shouldCalculateCorrectOldValuesIf...``: the lengths re-grouped by key and reduced with an
    adder and a subtractor, so the subtractor sees the old values transform_values forwards."""

    def build(b: StreamsBuilder, t: Topics) -> None:
        table = b.table(t["in"], Consumed.with_(S, S))
        lengths = (
            table.transform_values(Length, materialized=Materialized.as_("ptv-len").with_value_serde(L))
            if materialized
            else table.transform_values(Length)
        )
        (
            lengths.group_by(lambda k, v: KeyValue(k, v), Grouped.with_(S, L))
            .reduce(lambda a, v: a + v, lambda a, v: a - v)
            .map_values(str)
            .to_stream()
            .to(t["out"], Produced.with_(S, S))
        )

    return build


def join_getter(b: StreamsBuilder, t: Topics) -> None:
    """A stream joined with an unmaterialized transform_values: the join reads through its value
    getter (a transformer of its own over the source table's store)."""
    table = b.table(t["t"], Consumed.with_(S, S)).transform_values(Length)
    stream = b.stream(t["s"], Consumed.with_(S, S))
    stream.join(table, lambda v1, v2: f"{v1}+{j(v2)}").to(t["out"], Produced.with_(S, S))


def process_values_store(b: StreamsBuilder, t: Topics) -> None:
    """``KStream.process_values`` with a connected store, to ``out``."""
    b.add_state_store(_store("ppv-counts"))
    b.stream(t["in"], Consumed.with_(S, S)).process_values(CountingValues, "ppv-counts").to(
        t["out"], Produced.with_(S, S)
    )


_EXCLAMATION = [
    P("in", k, v, ts) for k, v, ts in [("A", "a", 5), ("B", "b", 10), ("D", None, 15), ("A", "aa", 20)]
]
_COUNTING = [
    P("in", k, v, ts)
    for k, v, ts in [
        ("A", "a", 5),
        ("B", "b", 10),
        ("A", "aa", 15),
        ("A", None, 20),
        ("B", "bb", 12),
        ("A", "x", 30),
    ]
]
_OLD_VALUES = [P("in", "A", v, ts) for v, ts in [("a", 5), ("aa", 15), ("aaa", 10)]] + [
    P("in", "B", "bbbb", 20),
    P("in", "A", None, 25),
]
_JOIN = [
    P("t", "A", "aaa", 5),
    P("s", "A", "x", 10),
    P("s", "B", "y", 11),
    P("t", "B", "bb", 12),
    P("s", "B", "z", 13),
    P("t", "A", None, 14),
    P("s", "A", "w", 15),
]

SCENARIOS: list[Scenario] = [
    ported(
        "ppv_process_values_store",
        process_values_store,
        {"in": SS},
        {"out": SS},
        _COUNTING,
        "KStream.processValues with a connected store: a FixedKeyProcessor counting each key's "
        "records in it (null values included).",
        java="ppv_process_values_store",
    ),
    ported(
        "ptv_exclamation",
        exclamation(False),
        {"in": SS},
        {"out": SS},
        _EXCLAMATION,
        "KTableTransformValuesTest.shouldTransformValuesWithKey: the transformer sees the key and the "
        "value (null for a tombstone) and reaches both connected stores.",
        java="ptv_exclamation",
    ),
    ported(
        "ptv_exclamation_materialized",
        exclamation(True),
        {"in": SS},
        {"out": SS},
        _EXCLAMATION,
        "KTableTransformValuesTest.shouldTransformValuesWithKeyAndMaterialize: the result in its own "
        "(cached) store.",
        java="ptv_exclamation_materialized",
    ),
    ported(
        "ptv_counting_store",
        counting,
        {"in": SS},
        {"out": SS},
        _COUNTING,
        "A transformer that counts each key's updates in a connected store (Kafka's StatefulTransformer "
        "with its count in a store).",
        java="ptv_counting_store",
    ),
    ported(
        "ptv_old_values",
        old_values(False),
        {"in": SS},
        {"out": SS},
        _OLD_VALUES,
        "KTableTransformValuesTest.shouldCalculateCorrectOldValuesIfNotStatefulEvenIfNotMaterialized: "
        "unmaterialized, the old value is the transformer applied to the parent's old value.",
        java="ptv_old_values",
    ),
    ported(
        "ptv_old_values_materialized",
        old_values(True),
        {"in": SS},
        {"out": SS},
        _OLD_VALUES,
        "KTableTransformValuesTest.shouldCalculateCorrectOldValuesIfMaterializedEvenIfStateful: "
        "materialized, the old value comes from the result's store.",
        java="ptv_old_values_materialized",
    ),
    ported(
        "ptv_join_getter",
        join_getter,
        {"s": SS, "t": SS},
        {"out": SS},
        _JOIN,
        "KTableTransformValuesTest.shouldTransformOnGetIfNotMaterialized: a join looks the table up "
        "through the transformer applied to the source table's value.",
        java="ptv_join_getter",
    ),
]
