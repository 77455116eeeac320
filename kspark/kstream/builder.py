"""``StreamsBuilder``: the entry point of the DSL; ``build()`` returns the ``Topology``.

``stream``, ``table`` and ``global_table`` create the sources; the returned
``KStream`` / ``KTable`` / ``GlobalKTable`` chain further operations. All of
it is recorded in a logical graph (``InternalStreamsBuilder``) and written
into a fresh ``Topology`` by ``build(props)``, with Kafka Streams' node and
topic names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kspark.kstream.config_objects import Consumed, Materialized
from kspark.kstream.internals.internal_builder import InternalStreamsBuilder
from kspark.kstream.internals.materialize import materialized_internal
from kspark.processor.topology import Topology

if TYPE_CHECKING:
    from kspark.kstream.global_ktable import GlobalKTable
    from kspark.kstream.kstream import KStream
    from kspark.kstream.ktable import KTable
    from kspark.processor.api import Processor
    from kspark.state.api import StoreBuilder

__all__ = ["StreamsBuilder"]


def _check_consumed(consumed: Consumed | None, operation: str) -> Consumed:
    if consumed is None:
        return Consumed()
    if not isinstance(consumed, Consumed):
        raise TypeError(f"{operation}: consumed must be a Consumed, got {consumed!r}")
    return consumed


def _check_topic(topic: Any, operation: str) -> str:
    if not isinstance(topic, str) or not topic:
        raise TypeError(f"{operation}: topic must be a non-empty str, got {topic!r}")
    return topic


class StreamsBuilder:
    """Builds a topology with the DSL (Kafka Streams' ``StreamsBuilder``)."""

    def __init__(self) -> None:
        self._internal = InternalStreamsBuilder()
        self._topology: Topology | None = None

    @property
    def internal_streams_builder(self) -> InternalStreamsBuilder:
        """The logical graph (what the Spark compiler reads)."""
        return self._internal

    def stream(self, topics: str | Sequence[str], consumed: Consumed | None = None) -> KStream:
        """A stream of the records of one or more topics."""
        if isinstance(topics, str):
            topic_list = [_check_topic(topics, "StreamsBuilder.stream")]
        else:
            topic_list = [_check_topic(t, "StreamsBuilder.stream") for t in topics]
            if not topic_list:
                raise ValueError("StreamsBuilder.stream: topics can't be empty")
        return self._internal.stream(topic_list, _check_consumed(consumed, "StreamsBuilder.stream"))

    def table(
        self, topic: str, consumed: Consumed | None = None, materialized: Materialized | None = None
    ) -> KTable:
        """A table of the latest value per key of a topic."""
        _check_topic(topic, "StreamsBuilder.table")
        c = _check_consumed(consumed, "StreamsBuilder.table")
        m = materialized_internal(materialized, self._internal, topic + "-")
        if m.key_serde is None:
            m.key_serde = c.key_serde
        if m.value_serde is None:
            m.value_serde = c.value_serde
        return self._internal.table(topic, c, m)

    def global_table(
        self, topic: str, consumed: Consumed | None = None, materialized: Materialized | None = None
    ) -> GlobalKTable:
        """A table replicated in full to every task (joins look it up by a selected key)."""
        _check_topic(topic, "StreamsBuilder.global_table")
        c = _check_consumed(consumed, "StreamsBuilder.global_table")
        m = materialized_internal(materialized, self._internal, topic + "-")
        if m.key_serde is None:
            m.key_serde = c.key_serde
        if m.value_serde is None:
            m.value_serde = c.value_serde
        return self._internal.global_table(topic, c, m)

    def add_state_store(self, store_builder: StoreBuilder[Any, Any]) -> StreamsBuilder:
        """A store that ``process(..., store_name)`` can connect to."""
        if store_builder is None:
            raise ValueError("StreamsBuilder.add_state_store: store_builder can't be None")
        self._internal.add_state_store(store_builder)
        return self

    def add_global_store(
        self,
        store_builder: StoreBuilder[Any, Any],
        topic: str,
        consumed: Consumed | None,
        state_update_supplier: Callable[[], Processor[Any, Any]],
    ) -> StreamsBuilder:
        """A global store kept up to date from ``topic`` by ``state_update_supplier``'s processor."""
        _check_topic(topic, "StreamsBuilder.add_global_store")
        if store_builder is None:
            raise ValueError("StreamsBuilder.add_global_store: store_builder can't be None")
        if not callable(state_update_supplier):
            raise TypeError("StreamsBuilder.add_global_store: state_update_supplier must be callable")
        c = _check_consumed(consumed, "StreamsBuilder.add_global_store")
        self._internal.add_global_store(store_builder, topic, c, state_update_supplier)
        return self

    def build(self, props: dict[str, Any] | None = None) -> Topology:
        """Write the DSL program into a ``Topology`` (once; later calls return the same topology)."""
        if self._topology is None:
            topology = Topology()
            self._internal.build_and_optimize_topology(topology.internal_builder, props)
            self._topology = topology
        return self._topology
