"""``CogroupedKStream``: several grouped streams aggregated into one table (KIP-150, Kafka's ``cogroup``).

``grouped.cogroup(aggregator)`` starts one; ``.cogroup(other_grouped,
other_aggregator)`` adds a stream with its own aggregator (value types may
differ, the aggregate is shared); ``aggregate(initializer)`` returns the
KTable of the aggregate per key. A record of any stream updates the same
aggregate, in one store, and each update is forwarded once: unlike
aggregating each stream and joining the tables, there is no join state and
no intermediate table per stream.

``windowed_by(TimeWindows | SlidingWindows)`` gives a
``TimeWindowedCogroupedKStream`` and ``windowed_by(SessionWindows)`` a
``SessionWindowedCogroupedKStream``, whose ``aggregate`` returns a table
keyed by ``Windowed(key, window)`` (sessions also take a ``session_merger``).
They emit on every window update (Kafka has no other emit strategy for
cogroup).

As in Kafka, ``cogroup`` returns the same object: adding a stream after an
``aggregate`` changes later aggregations only; cogrouping a grouped stream
that is already there replaces its aggregator (it keeps its place). The
result's store has no serdes unless ``Materialized`` gives them, so the
config's default serdes apply. Names follow Kafka
(:mod:`kspark.kstream.internals.cogrouped_stream_aggregate_builder`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, overload

from kspark.kstream.config_objects import Materialized, Named
from kspark.kstream.internals.cogrouped_stream_aggregate_builder import (
    AGGREGATE_NAME,
    Aggregator,
    CogroupedStreamAggregateBuilder,
)
from kspark.kstream.internals.functions import require_callable
from kspark.kstream.internals.ktable_processors import KStreamAggregate
from kspark.kstream.internals.materialize import (
    KeyValueStoreMaterializer,
    MaterializedInternal,
    materialized_internal,
    split_named_materialized,
)
from kspark.kstream.internals.session_window_aggregate import KStreamSessionWindowAggregate
from kspark.kstream.internals.sliding_window_aggregate import KStreamSlidingWindowAggregate
from kspark.kstream.internals.value_getters import KTableProcessorSupplier
from kspark.kstream.internals.window_aggregate import KStreamWindowAggregate
from kspark.kstream.internals.window_store_materializer import (
    SessionStoreMaterializer,
    SlidingWindowStoreMaterializer,
    WindowStoreMaterializer,
)
from kspark.kstream.kgrouped_stream import KGroupedStream
from kspark.kstream.windows import EmitStrategy, SessionWindows, SlidingWindows, TimeWindows

if TYPE_CHECKING:
    from kspark.kstream.internals.graph import GraphNode
    from kspark.kstream.internals.internal_builder import InternalStreamsBuilder
    from kspark.kstream.ktable import KTable

__all__ = ["CogroupedKStream", "TimeWindowedCogroupedKStream", "SessionWindowedCogroupedKStream"]

Initializer = Callable[[], Any]
Merger = Callable[[Any, Any, Any], Any]


def _materialized(
    builder: InternalStreamsBuilder,
    named: Named | str | Materialized | None,
    materialized: Materialized | None,
) -> tuple[str | None, MaterializedInternal]:
    """The processor-name base and the store settings of a cogrouped ``aggregate``."""
    name, materialized = split_named_materialized(named, materialized)
    return name, materialized_internal(materialized, builder, AGGREGATE_NAME)


class CogroupedKStream:
    """Grouped streams with one aggregator each, aggregated together (see module docstring)."""

    def __init__(
        self,
        name: str,
        sub_topology_source_nodes: set[str],
        graph_node: GraphNode,
        builder: InternalStreamsBuilder,
    ) -> None:
        self._name = name
        self._sub_topology_source_nodes = set(sub_topology_source_nodes)
        self._graph_node = graph_node
        self._builder = builder
        # insertion-ordered, as Kafka's LinkedHashMap: the order numbers the aggregate processors
        self._group_patterns: dict[KGroupedStream, Aggregator] = {}
        self._aggregate_builder = CogroupedStreamAggregateBuilder(builder)

    def __repr__(self) -> str:
        return f"CogroupedKStream({', '.join(g._name for g in self._group_patterns)})"

    def cogroup(self, grouped_stream: KGroupedStream, aggregator: Aggregator) -> CogroupedKStream:
        """Add ``grouped_stream``, folded in by ``aggregator(key, value, aggregate)``; returns ``self``."""
        op = "CogroupedKStream.cogroup"
        if grouped_stream is None:
            raise ValueError(f"grouped_stream can't be None ({op})")
        if not isinstance(grouped_stream, KGroupedStream):
            raise TypeError(
                f"grouped_stream must be a KGroupedStream (from group_by_key or group_by) ({op}), "
                f"got {grouped_stream!r}"
            )
        require_callable(aggregator, "aggregator", op)
        if grouped_stream._builder is not self._builder:
            raise ValueError(
                f"{grouped_stream!r} belongs to another StreamsBuilder: "
                f"cogrouped streams must come from one StreamsBuilder ({op})"
            )
        self._group_patterns[grouped_stream] = aggregator
        return self

    def aggregate(
        self,
        initializer: Initializer,
        named: Named | str | Materialized | None = None,
        materialized: Materialized | None = None,
    ) -> KTable:
        """The aggregate per key of all cogrouped streams, starting from ``initializer()``.

        ``named`` names the processors (``<named>-cogroup-agg-<i>``,
        ``<named>-cogroup-merge``); a ``Materialized`` may stand in its place.
        """
        require_callable(initializer, "initializer", "CogroupedKStream.aggregate")
        name, m = _materialized(self._builder, named, materialized)

        def supplier(aggregator: Aggregator) -> KTableProcessorSupplier:
            return KStreamAggregate(m.store_name, initializer, aggregator)

        return self._aggregate_builder.build(
            self._group_patterns,
            name,
            KeyValueStoreMaterializer(m),
            m.key_serde,
            m.value_serde,
            m.queryable_store_name,
            supplier,
        )

    @overload
    def windowed_by(self, windows: SessionWindows) -> SessionWindowedCogroupedKStream: ...

    @overload
    def windowed_by(self, windows: TimeWindows | SlidingWindows) -> TimeWindowedCogroupedKStream: ...

    def windowed_by(
        self, windows: TimeWindows | SlidingWindows | SessionWindows
    ) -> TimeWindowedCogroupedKStream | SessionWindowedCogroupedKStream:
        """Window the cogrouped aggregation: ``TimeWindows``, ``SlidingWindows`` or ``SessionWindows``."""
        if windows is None:
            raise ValueError("windows can't be None (CogroupedKStream.windowed_by)")
        if isinstance(windows, SessionWindows):
            return SessionWindowedCogroupedKStream(self, windows)
        if isinstance(windows, TimeWindows | SlidingWindows):
            return TimeWindowedCogroupedKStream(self, windows)
        raise TypeError(
            "windows must be TimeWindows, SlidingWindows or SessionWindows "
            f"(CogroupedKStream.windowed_by), got {windows!r}"
        )


class TimeWindowedCogroupedKStream:
    """A cogrouped stream windowed by ``TimeWindows`` or ``SlidingWindows``.

    Kafka's ``TimeWindowedCogroupedKStreamImpl`` and
    ``SlidingWindowedCogroupedKStreamImpl``: ``aggregate`` returns a KTable
    keyed by ``Windowed(key, window)``, each stream's records folded into
    the windows they fall in.
    """

    def __init__(self, cogrouped: CogroupedKStream, windows: TimeWindows | SlidingWindows) -> None:
        self._cogrouped = cogrouped
        self._windows = windows

    def aggregate(
        self,
        initializer: Initializer,
        named: Named | str | Materialized | None = None,
        materialized: Materialized | None = None,
    ) -> KTable:
        """The aggregate per key and window, starting from ``initializer()`` in each window."""
        from kspark.serde import Serdes

        require_callable(initializer, "initializer", "TimeWindowedCogroupedKStream.aggregate")
        c = self._cogrouped
        name, m = _materialized(c._builder, named, materialized)
        w = self._windows
        emit = EmitStrategy.on_window_update()
        factory: WindowStoreMaterializer | SlidingWindowStoreMaterializer
        if isinstance(w, SlidingWindows):
            factory = SlidingWindowStoreMaterializer(m, w, emit)
            size = w.time_difference_ms()

            def supplier(aggregator: Aggregator) -> KTableProcessorSupplier:
                return KStreamSlidingWindowAggregate(w, m.store_name, emit, initializer, aggregator)

        else:
            factory = WindowStoreMaterializer(m, w, emit)
            size = w.size()

            def supplier(aggregator: Aggregator) -> KTableProcessorSupplier:
                return KStreamWindowAggregate(w, m.store_name, emit, initializer, aggregator)

        key_serde = Serdes.time_windowed(m.key_serde, size) if m.key_serde is not None else None
        return c._aggregate_builder.build(
            c._group_patterns, name, factory, key_serde, m.value_serde, m.queryable_store_name, supplier
        )


class SessionWindowedCogroupedKStream:
    """A cogrouped stream windowed by ``SessionWindows`` (Kafka's ``SessionWindowedCogroupedKStreamImpl``).

    ``aggregate(initializer, session_merger)`` returns a KTable keyed by
    ``Windowed(key, SessionWindow(start, end))``; when a record bridges
    sessions, ``session_merger(key, agg_one, agg_two)`` combines them and the
    merged sessions are retracted first.
    """

    def __init__(self, cogrouped: CogroupedKStream, windows: SessionWindows) -> None:
        self._cogrouped = cogrouped
        self._windows = windows

    def aggregate(
        self,
        initializer: Initializer,
        session_merger: Merger,
        named: Named | str | Materialized | None = None,
        materialized: Materialized | None = None,
    ) -> KTable:
        """The aggregate per key and session, starting from ``initializer()`` in each new session."""
        from kspark.serde import Serdes

        op = "SessionWindowedCogroupedKStream.aggregate"
        require_callable(initializer, "initializer", op)
        require_callable(session_merger, "session_merger", op)
        c = self._cogrouped
        name, m = _materialized(c._builder, named, materialized)
        w = self._windows
        emit = EmitStrategy.on_window_update()

        def supplier(aggregator: Aggregator) -> KTableProcessorSupplier:
            return KStreamSessionWindowAggregate(
                w, m.store_name, emit, initializer, aggregator, session_merger
            )

        key_serde = Serdes.session_windowed(m.key_serde) if m.key_serde is not None else None
        return c._aggregate_builder.build(
            c._group_patterns,
            name,
            SessionStoreMaterializer(m, w, emit),
            key_serde,
            m.value_serde,
            m.queryable_store_name,
            supplier,
        )
