"""DSL store types (KIP-954): ``Materialized.with_store_type`` / ``Materialized.as_(StoreType)``,
``StreamJoined.with_dsl_store_suppliers``, and the suppliers each picks (Kafka's
BuiltInDslStoreSuppliers; the behaviour difference is checked against Java by the catalog's
pst_store_type_* scenarios)."""

from __future__ import annotations

from typing import Any

import pytest

from kspark import (
    Consumed,
    JoinWindows,
    Materialized,
    SessionWindows,
    StreamJoined,
    StreamsBuilder,
    TimeWindows,
)
from kspark.kstream.windows import EmitStrategy
from kspark.serde import Serdes
from kspark.state import BuiltInDslStoreSuppliers, DslKeyValueParams, DslStoreSuppliers, Stores

S = Serdes.String()


def _suppliers(builder: StreamsBuilder) -> dict[str, Any]:
    internal = builder.build().internal_builder
    return {name: internal.store_builder(name).supplier for name in internal.state_store_names()}


def test_store_type_forms() -> None:
    in_memory = BuiltInDslStoreSuppliers.IN_MEMORY
    assert Materialized.as_("s").with_store_type("in_memory").dsl_store_suppliers is in_memory
    assert Materialized.as_("s").with_store_type("IN_MEMORY").dsl_store_suppliers is in_memory
    assert (
        Materialized.as_(Materialized.StoreType.ROCKS_DB).dsl_store_suppliers
        is BuiltInDslStoreSuppliers.ROCKS_DB
    )
    assert Materialized.as_(in_memory).name is None
    assert StreamJoined.with_(Materialized.StoreType.IN_MEMORY).dsl_store_suppliers is in_memory
    assert StreamJoined.with_(S, S, S).with_dsl_store_suppliers(in_memory).dsl_store_suppliers is in_memory


def test_bad_store_types_are_refused_with_kafkas_messages() -> None:
    with pytest.raises(ValueError, match="Cannot set store type when store supplier is pre-configured"):
        Materialized.as_(Stores.in_memory_key_value_store("s")).with_store_type("in_memory")
    with pytest.raises(ValueError, match="store type can't be null"):
        Materialized.as_("s").with_store_type(None)
    with pytest.raises(ValueError, match="'rocks_db' / 'in_memory'; got 'disk'"):
        Materialized.as_("s").with_store_type("disk")
    with pytest.raises(ValueError, match="store type can't be null"):
        StreamJoined.with_(S, S, S).with_dsl_store_suppliers(None)


def test_each_store_type_picks_kafkas_suppliers() -> None:
    for store_type, persistent in (("rocks_db", True), ("in_memory", False)):
        b = StreamsBuilder()
        s = b.stream("in", Consumed.with_(S, S)).group_by_key()
        s.count(Materialized.as_("kv").with_store_type(store_type))
        s.windowed_by(TimeWindows.of_size_with_no_grace(10)).count(
            Materialized.as_("w").with_store_type(store_type)
        )
        s.windowed_by(TimeWindows.of_size_with_no_grace(10)).emit_strategy(
            EmitStrategy.on_window_close()
        ).count(Materialized.as_("wc").with_store_type(store_type))
        s.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(10)).count(
            Materialized.as_("ss").with_store_type(store_type)
        )
        suppliers = _suppliers(b)
        assert {n: sup.persistent for n, sup in suppliers.items()} == dict.fromkeys(suppliers, persistent)
        # RocksDB: timestamped stores, time-ordered under emit-on-close; in memory: neither
        assert getattr(suppliers["wc"], "time_ordered", False) is persistent
        assert getattr(suppliers["w"], "time_ordered", False) is False


def test_default_is_rocks_db_and_a_stream_join_takes_its_suppliers() -> None:
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, S)).group_by_key().count(Materialized.as_("kv"))
    a = b.stream("a", Consumed.with_(S, S))
    c = b.stream("c", Consumed.with_(S, S))
    joined = StreamJoined.with_(S, S, S).with_dsl_store_suppliers("in_memory").with_store_name("j")
    a.outer_join(c, lambda x, y: x, JoinWindows.of_time_difference_with_no_grace(10), joined)
    suppliers = _suppliers(b)
    assert suppliers["kv"].persistent
    join_stores = {n: s for n, s in suppliers.items() if n.startswith("j-")}
    assert sorted(join_stores) == [
        "j-outer-other-join-store",
        "j-outer-shared-join-store",
        "j-outer-this-join-store",
    ]
    assert not any(s.persistent for s in join_stores.values())


class _Custom(DslStoreSuppliers):
    def key_value_store(self, params: DslKeyValueParams) -> Any:
        return Stores.lru_map(params.name, 5)


def test_a_custom_dsl_store_suppliers_class_or_instance() -> None:
    for custom in (_Custom, _Custom()):
        b = StreamsBuilder()
        b.stream("in", Consumed.with_(S, S)).group_by_key().count(
            Materialized.as_("kv").with_store_type(custom)
        )
        assert _suppliers(b)["kv"].metrics_scope() == "in-memory-lru"
