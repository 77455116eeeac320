"""Which store (and whether a record cache) the DSL gives a windowed aggregation, per emit strategy.

Kafka 4.1 (``WindowStoreMaterializer``, ``SlidingWindowStoreMaterializer``,
``SessionStoreMaterializer`` over ``BuiltInDslStoreSuppliers``): under
``onWindowClose`` the default store is the time-ordered one; a ``TimeWindows``
store keeps its cache (``TimeOrderedCachingWindowStore``), sliding and session
stores drop it.
"""

from __future__ import annotations

from typing import Any

import pytest

from kspark import Materialized, Produced, SessionWindows, SlidingWindows, StreamsBuilder, TimeWindows
from kspark.kstream.windows import EmitStrategy
from kspark.state import Stores
from kspark.state.internals.rocksdb_session_store import RocksDBSessionStore
from kspark.state.internals.rocksdb_window_store import RocksDBWindowStore
from kspark.state.internals.time_ordered_stores import TimeOrderedSessionStore, TimeOrderedWindowStore


def _store_builder(windows: Any, final: bool, materialized: Materialized | None = None) -> Any:
    b = StreamsBuilder()
    strategy = EmitStrategy.on_window_close() if final else EmitStrategy.on_window_update()
    m = materialized if materialized is not None else Materialized.as_("agg")
    b.stream("in").group_by_key().windowed_by(windows).emit_strategy(strategy).count(m)
    store_builder = b.build().internal_builder.store_builder("agg")
    return store_builder


@pytest.mark.parametrize(
    ("windows", "final", "store_type", "caching"),
    [
        (TimeWindows.of_size_and_grace(10, 5), False, RocksDBWindowStore, True),
        (TimeWindows.of_size_and_grace(10, 5), True, TimeOrderedWindowStore, True),
        (SlidingWindows.of_time_difference_and_grace(10, 5), False, RocksDBWindowStore, True),
        (SlidingWindows.of_time_difference_and_grace(10, 5), True, TimeOrderedWindowStore, False),
        (SessionWindows.of_inactivity_gap_and_grace(10, 5), False, RocksDBSessionStore, True),
        (SessionWindows.of_inactivity_gap_and_grace(10, 5), True, TimeOrderedSessionStore, False),
    ],
)
def test_default_store_and_cache_per_emit_strategy(
    windows: Any, final: bool, store_type: type, caching: bool
) -> None:
    builder = _store_builder(windows, final)
    assert type(builder.supplier.get()) is store_type
    assert builder.caching_enabled() is caching


def test_time_windows_on_close_without_cache_when_materialized_says_so() -> None:
    m = Materialized.as_("agg").with_caching_disabled()
    assert not _store_builder(TimeWindows.of_size_and_grace(10, 5), True, m).caching_enabled()


def test_a_store_supplier_of_the_users_is_kept_under_emit_on_close() -> None:
    supplier = Stores.in_memory_window_store("agg", 100, 10, False)
    builder = _store_builder(TimeWindows.of_size_and_grace(10, 5), True, Materialized.as_(supplier))
    assert builder.supplier is supplier and builder.caching_enabled()


def test_emit_final_sessions_over_a_users_key_ordered_store_fail_as_in_kafka() -> None:
    # Kafka's RocksDBSessionStore cannot scan by end time, so the first emit of a session aggregation
    # on a persistent session store of the user's throws; the in-memory one can
    from kspark.errors import StreamsException
    from kspark.serde import Serdes
    from kspark.testing import TopologyTestDriver

    def run(supplier: Any) -> list[Any]:
        b = StreamsBuilder()
        b.stream("in").group_by_key().windowed_by(
            SessionWindows.of_inactivity_gap_with_no_grace(5)
        ).emit_strategy(EmitStrategy.on_window_close()).count(Materialized.as_(supplier)).to_stream().map(
            lambda k, v: (k.key, v)
        ).to("out", Produced.with_(Serdes.String(), Serdes.Long()))
        config = {"application.id": "a", "bootstrap.servers": "x:1", "default.key.serde": "string"}
        with TopologyTestDriver(b.build(), {**config, "default.value.serde": "string"}) as d:
            i = d.create_input_topic("in", Serdes.String(), Serdes.String())
            i.pipe_input("k", "v", timestamp=10)
            i.pipe_input("k", "v", timestamp=20)
            return d.create_output_topic("out", Serdes.String(), Serdes.Long()).read_key_values_to_list()

    assert run(Stores.in_memory_session_store("agg", 100)) == [("k", 1)]
    with pytest.raises(StreamsException, match="not supported by this implementation of SessionStore"):
        run(Stores.persistent_session_store("agg", 100))
