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

from kspark import Materialized, SessionWindows, SlidingWindows, StreamsBuilder, TimeWindows
from kspark.kstream.windows import EmitStrategy
from kspark.state import Stores
from kspark.state.internals.segmented_stores import SegmentedSessionStore, SegmentedWindowStore
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
        (TimeWindows.of_size_and_grace(10, 5), False, SegmentedWindowStore, True),
        (TimeWindows.of_size_and_grace(10, 5), True, TimeOrderedWindowStore, True),
        (SlidingWindows.of_time_difference_and_grace(10, 5), False, SegmentedWindowStore, True),
        (SlidingWindows.of_time_difference_and_grace(10, 5), True, TimeOrderedWindowStore, False),
        (SessionWindows.of_inactivity_gap_and_grace(10, 5), False, SegmentedSessionStore, True),
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
