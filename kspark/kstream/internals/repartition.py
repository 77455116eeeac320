"""Making repartition nodes with Kafka Streams' names (``KStreamImpl.createRepartitionedSource``).

A repartition writes through ``<prefix>-repartition``. Three names are always
drawn from the shared counter (sink, filter, source) so that numbering stays
identical to Kafka's; they are used only when the prefix is itself a
generated name, otherwise the nodes are called ``<topic>-sink``,
``<topic>-filter`` and ``<topic>-source``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark.kstream.internals.graph import ProcessorParameters, RepartitionNode
from kspark.kstream.internals.kstream_processors import KStreamFilter

if TYPE_CHECKING:
    from kspark.kstream.internals.internal_builder import InternalStreamsBuilder

__all__ = ["REPARTITION_TOPIC_SUFFIX", "create_repartitioned_source"]

REPARTITION_TOPIC_SUFFIX = "-repartition"
_GENERATED = re.compile(r"KSTREAM.*-[0-9]{10}")


def _pass_all(key: Any, value: Any) -> bool:
    return True


def create_repartitioned_source(
    builder: InternalStreamsBuilder,
    key_serde: Any,
    value_serde: Any,
    topic_prefix: str,
    node_class: type[RepartitionNode],
    partitioner: Callable[..., Any] | None = None,
    partitions: int | None = None,
) -> RepartitionNode:
    """A repartition node (not yet added to the graph); its ``node_name`` is the new source's name."""
    topic = (
        topic_prefix
        if topic_prefix.endswith(REPARTITION_TOPIC_SUFFIX)
        else topic_prefix + REPARTITION_TOPIC_SUFFIX
    )
    gen_sink = builder.new_processor_name("KSTREAM-SINK-")
    gen_filter = builder.new_processor_name("KSTREAM-FILTER-")
    gen_source = builder.new_processor_name("KSTREAM-SOURCE-")
    if _GENERATED.fullmatch(topic_prefix):
        sink, filter_name, source = gen_sink, gen_filter, gen_source
    else:
        sink, filter_name, source = topic + "-sink", topic + "-filter", topic + "-source"
    return node_class(
        source,
        sink,
        topic,
        key_serde,
        value_serde,
        ProcessorParameters(KStreamFilter(_pass_all, False), filter_name),
        partitioner=partitioner,
        partitions=partitions,
    )
