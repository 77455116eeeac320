"""The Processor API: processors, records, contexts, punctuation, ``Topology`` and timestamp extractors."""

from kspark.processor.api import (
    Cancellable,
    FixedKeyProcessor,
    Header,
    Headers,
    Processor,
    ProcessorContext,
    ProcessorSupplier,
    PunctuationType,
    Punctuator,
    Record,
    RecordMetadata,
    to_millis,
)
from kspark.processor.internals.exception_handlers import ErrorHandlerContext, HandlerResponse
from kspark.processor.internals.records import ProcessorRecordContext, RecordContext
from kspark.processor.internals.timestamp_extractors import (
    FailOnInvalidTimestamp,
    LogAndSkipOnInvalidTimestamp,
    TimestampExtractor,
    UsePartitionTimeOnInvalidTimestamp,
    WallclockTimestampExtractor,
)
from kspark.processor.topology import Topology

__all__ = [
    "Cancellable",
    "ErrorHandlerContext",
    "FailOnInvalidTimestamp",
    "FixedKeyProcessor",
    "HandlerResponse",
    "Header",
    "Headers",
    "LogAndSkipOnInvalidTimestamp",
    "Processor",
    "ProcessorContext",
    "ProcessorRecordContext",
    "ProcessorSupplier",
    "PunctuationType",
    "Punctuator",
    "Record",
    "RecordContext",
    "RecordMetadata",
    "TimestampExtractor",
    "Topology",
    "UsePartitionTimeOnInvalidTimestamp",
    "WallclockTimestampExtractor",
    "to_millis",
]
