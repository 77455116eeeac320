"""``Topology``: the public Processor API topology (Kafka Streams' ``Topology``).

A thin wrapper over ``InternalTopologyBuilder`` with the signatures of
shared/API.md; ``StreamsBuilder.build()`` returns one filled by the DSL.
Every ``add_*`` returns the topology so calls can be chained.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark.processor.api import Processor
from kspark.processor.internals.builder import InternalTopologyBuilder
from kspark.processor.internals.describe import TopologyDescription

__all__ = ["Topology"]


def _deserializer(x: Any) -> Any:
    # a Serde is accepted where a (de)serializer is expected
    return (
        x.deserializer() if x is not None and hasattr(x, "deserializer") and callable(x.deserializer) else x
    )


def _serializer(x: Any) -> Any:
    return x.serializer() if x is not None and hasattr(x, "serializer") and callable(x.serializer) else x


class Topology:
    """A graph of sources, processors, sinks and state stores."""

    def __init__(self, internal_builder: InternalTopologyBuilder | None = None) -> None:
        self._internal_builder = internal_builder or InternalTopologyBuilder()

    @property
    def internal_builder(self) -> InternalTopologyBuilder:
        return self._internal_builder

    def add_source(
        self,
        name: str,
        *topics: str,
        key_deserializer: Any = None,
        value_deserializer: Any = None,
        timestamp_extractor: Any = None,
        offset_reset: str | None = None,
    ) -> Topology:
        """A source reading ``topics``; ``None`` deserializers use the config's default serdes."""
        self._internal_builder.add_source(
            name,
            list(topics),
            key_deserializer=_deserializer(key_deserializer),
            value_deserializer=_deserializer(value_deserializer),
            timestamp_extractor=timestamp_extractor,
            offset_reset=offset_reset,
        )
        return self

    def add_processor(
        self, name: str, supplier: Callable[[], Processor[Any, Any]], *parent_names: str
    ) -> Topology:
        """A processor made by ``supplier`` (zero-arg callable or Processor class), child of the parents."""
        self._internal_builder.add_processor(name, supplier, *parent_names, user_code=True)
        return self

    def add_sink(
        self,
        name: str,
        topic: str | Callable[..., str],
        *parent_names: str,
        key_serializer: Any = None,
        value_serializer: Any = None,
        partitioner: Any = None,
    ) -> Topology:
        """A sink writing to ``topic`` (or to ``topic(key, value, record_context)``)."""
        self._internal_builder.add_sink(
            name,
            topic,
            *parent_names,
            key_serializer=_serializer(key_serializer),
            value_serializer=_serializer(value_serializer),
            partitioner=partitioner,
        )
        return self

    def add_state_store(self, store_builder: Any, *processor_names: str) -> Topology:
        self._internal_builder.add_state_store(store_builder, *processor_names)
        return self

    def connect_processor_and_state_stores(self, processor_name: str, *store_names: str) -> Topology:
        self._internal_builder.connect_processor_and_state_stores(processor_name, *store_names)
        return self

    def add_global_store(
        self,
        store_builder: Any,
        source_name: str,
        topic: str,
        processor_name: str,
        state_update_supplier: Callable[[], Processor[Any, Any]],
        *,
        key_deserializer: Any = None,
        value_deserializer: Any = None,
        timestamp_extractor: Any = None,
    ) -> Topology:
        """A global store filled from ``topic`` by ``state_update_supplier``'s processor."""
        self._internal_builder.add_global_store(
            store_builder,
            source_name,
            topic,
            processor_name,
            state_update_supplier,
            key_deserializer=_deserializer(key_deserializer),
            value_deserializer=_deserializer(value_deserializer),
            timestamp_extractor=timestamp_extractor,
        )
        return self

    def add_read_only_state_store(
        self,
        store_builder: Any,
        source_name: str,
        timestamp_extractor: Any,
        key_deserializer: Any,
        value_deserializer: Any,
        topic: str,
        processor_name: str,
        state_update_supplier: Callable[[], Processor[Any, Any]],
    ) -> Topology:
        """A read-only store (KIP-813): ``topic`` (read from the earliest offset by the source
        ``source_name``) feeds ``state_update_supplier``'s processor, the store's only writer, and
        is the store's changelog, so the store's own logging is turned off. Other processors may
        connect to the store (``connect_processor_and_state_stores``) and read it.
        ``timestamp_extractor`` may be None (the configured default), as may the deserializers."""
        self._internal_builder.add_read_only_state_store(
            store_builder,
            source_name,
            timestamp_extractor,
            _deserializer(key_deserializer),
            _deserializer(value_deserializer),
            topic,
            processor_name,
            state_update_supplier,
        )
        return self

    def describe(self) -> TopologyDescription:
        """Sub-topologies, global stores and their nodes; ``str()`` prints Kafka's layout."""
        return self._internal_builder.describe()

    def __repr__(self) -> str:
        return str(self.describe())
