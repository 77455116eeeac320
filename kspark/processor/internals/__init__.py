"""The Processor API runtime: topology builder, nodes, task engine, contexts, punctuation.

``InternalTopologyBuilder`` builds topologies; ``StreamTask`` runs one (see
``kspark.processor.internals.task`` for the runner-facing interface).
"""

from kspark.processor.internals.builder import InternalTopicProperties, InternalTopologyBuilder
from kspark.processor.internals.records import ConsumerRecord, OutputRecord, ProcessorRecordContext, RawRecord

__all__ = [
    "InternalTopologyBuilder",
    "InternalTopicProperties",
    "RawRecord",
    "ConsumerRecord",
    "OutputRecord",
    "ProcessorRecordContext",
]
