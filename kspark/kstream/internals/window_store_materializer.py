"""Store factories of the windowed aggregations (Kafka's ``WindowStoreMaterializer``,
``SlidingWindowStoreMaterializer`` and ``SessionStoreMaterializer``).

Retention is the ``Materialized`` retention when given, else the least the
operator needs: ``size + grace`` (time windows), ``2 * time_difference + grace``
(sliding windows, which look back two differences to build right windows)
and ``gap + grace`` (sessions). A smaller explicit retention is an error with
Kafka's message.

With ``EmitStrategy.on_window_close()`` and no store supplier of the user's,
the store is Kafka's *time-ordered* one
(:mod:`kspark.state.internals.time_ordered_stores`), whose read bounds decide
which closed windows the emit scan still finds. The record cache follows
Kafka exactly: a ``TimeWindows`` store keeps it under emit-on-close (Kafka's
``TimeOrderedCachingWindowStore``; the store below then sees each record's
writes only when the cache flushes, so its observed time, and with it the
retention bound of the emit scan, lags one record behind), while sliding and
session stores drop it under emit-on-close.
"""

from __future__ import annotations

from typing import Any

from kspark.kstream.internals.materialize import MaterializedInternal
from kspark.kstream.windows import EmitStrategy, SessionWindows, SlidingWindows, Windows
from kspark.state.api import StoreBuilder
from kspark.state.dsl_store_suppliers import DslSessionParams, DslWindowParams

__all__ = ["WindowStoreMaterializer", "SlidingWindowStoreMaterializer", "SessionStoreMaterializer"]


def _on_close(emit_strategy: EmitStrategy) -> bool:
    return emit_strategy.type() is EmitStrategy.StrategyType.ON_WINDOW_CLOSE


def _configure(builder: Any, m: MaterializedInternal, caching: bool) -> StoreBuilder[Any, Any]:
    builder = builder.with_logging_enabled(m.log_config) if m.logging else builder.with_logging_disabled()
    builder = builder.with_caching_enabled() if caching else builder.with_caching_disabled()
    return builder  # type: ignore[no-any-return]


class WindowStoreMaterializer:
    """The timestamped window store of a ``TimeWindows`` aggregation."""

    def __init__(
        self, materialized: MaterializedInternal, windows: Windows, emit_strategy: EmitStrategy
    ) -> None:
        self.materialized = materialized
        self.windows = windows
        self.emit_strategy = emit_strategy
        self.retention_period = self.retention()
        if windows.size() + windows.grace_period_ms() > self.retention_period:
            raise ValueError(
                f"The retention period of the window store {materialized.store_name} must be no smaller than "
                f"its window size plus the grace period. Got size=[{windows.size()}], "
                f"grace=[{windows.grace_period_ms()}], retention=[{self.retention_period}]"
            )

    @property
    def name(self) -> str:
        return self.materialized.store_name

    def retention(self) -> int:
        m = self.materialized
        return (
            m.retention_ms
            if m.retention_ms is not None
            else self.windows.size() + self.windows.grace_period_ms()
        )

    def builder(self) -> StoreBuilder[Any, Any]:
        from kspark.state import Stores

        m = self.materialized
        supplier = m.store_supplier or _window_supplier(
            m, self.retention_period, self.windows.size(), self.emit_strategy, sliding=False
        )
        # Kafka keeps the cache under emit-on-close too (TimeOrderedCachingWindowStore)
        return _configure(
            Stores.timestamped_window_store_builder(supplier, m.key_serde, m.value_serde), m, m.caching
        )


class SlidingWindowStoreMaterializer:
    """The timestamped window store of a ``SlidingWindows`` aggregation (window size = time difference)."""

    def __init__(
        self, materialized: MaterializedInternal, windows: SlidingWindows, emit_strategy: EmitStrategy
    ) -> None:
        self.materialized = materialized
        self.windows = windows
        self.emit_strategy = emit_strategy
        self.retention_period = self.retention()
        diff, grace = windows.time_difference_ms(), windows.grace_period_ms()
        if diff * 2 + grace > self.retention_period:
            raise ValueError(
                f"The retention period of the window store {materialized.store_name} must be no smaller than "
                f"2 * time difference plus the grace period. Got time difference=[{diff}], "
                f"grace=[{grace}], retention=[{self.retention_period}]"
            )

    @property
    def name(self) -> str:
        return self.materialized.store_name

    def retention(self) -> int:
        m = self.materialized
        if m.retention_ms is not None:
            return m.retention_ms
        return self.windows.grace_period_ms() + 2 * self.windows.time_difference_ms()

    def builder(self) -> StoreBuilder[Any, Any]:
        from kspark.state import Stores

        m = self.materialized
        supplier = m.store_supplier or _window_supplier(
            m, self.retention_period, self.windows.time_difference_ms(), self.emit_strategy, sliding=True
        )
        # emit-on-close: no cache in front of a sliding window store (Kafka's choice)
        return _configure(
            Stores.timestamped_window_store_builder(supplier, m.key_serde, m.value_serde),
            m,
            m.caching and not _on_close(self.emit_strategy),
        )


class SessionStoreMaterializer:
    """The session store of a ``SessionWindows`` aggregation."""

    def __init__(
        self, materialized: MaterializedInternal, windows: SessionWindows, emit_strategy: EmitStrategy
    ) -> None:
        self.materialized = materialized
        self.windows = windows
        self.emit_strategy = emit_strategy
        self.retention_period = self.retention()
        gap, grace = windows.inactivity_gap(), windows.grace_period_ms()
        if gap + grace > self.retention_period:
            raise ValueError(
                f"The retention period of the session store {materialized.store_name} "
                "must be no smaller than "
                f"the session inactivity gap plus the grace period. Got gap=[{gap}], grace=[{grace}], "
                f"retention=[{self.retention_period}]"
            )

    @property
    def name(self) -> str:
        return self.materialized.store_name

    def retention(self) -> int:
        m = self.materialized
        if m.retention_ms is not None:
            return m.retention_ms
        return self.windows.inactivity_gap() + self.windows.grace_period_ms()

    def builder(self) -> StoreBuilder[Any, Any]:
        from kspark.state import Stores

        m = self.materialized
        supplier = m.store_supplier or m.store_suppliers().session_store(
            DslSessionParams(m.store_name, self.retention_period, self.emit_strategy)
        )
        # emit-on-close: no cache in front of a session store (Kafka's choice)
        return _configure(
            Stores.session_store_builder(supplier, m.key_serde, m.value_serde),
            m,
            m.caching and not _on_close(self.emit_strategy),
        )


def _window_supplier(
    m: MaterializedInternal, retention: int, size: int, emit_strategy: EmitStrategy, *, sliding: bool
) -> Any:
    """The DSL's window store from the store type's suppliers (Kafka's DslWindowParams): by default
    time-ordered under emit-on-close, else Kafka's RocksDB one; in-memory when the type says."""
    params = DslWindowParams(m.store_name, retention, size, False, emit_strategy, sliding, True)
    return m.store_suppliers().window_store(params)
