"""kspark: Apache Kafka Streams' programming model for Python, run on Spark Structured Streaming.

The names here are the public API of shared/API.md. They are resolved on
first use (PEP 562) so that ``import kspark`` stays cheap: the Spark runner
and pyspark load only when ``KafkaStreams`` is touched, and a unit test of
a topology never pays for them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "StreamsBuilder": "kspark.kstream.builder",
    "Topology": "kspark.processor.topology",
    "KafkaStreams": "kspark.kafka_streams",
    "KeyValue": "kspark.key_value",
    "Consumed": "kspark.kstream.config_objects",
    "Produced": "kspark.kstream.config_objects",
    "Grouped": "kspark.kstream.config_objects",
    "Materialized": "kspark.kstream.config_objects",
    "Joined": "kspark.kstream.config_objects",
    "StreamJoined": "kspark.kstream.config_objects",
    "Repartitioned": "kspark.kstream.config_objects",
    "Branched": "kspark.kstream.config_objects",
    "Named": "kspark.kstream.config_objects",
    "Printed": "kspark.kstream.config_objects",
    "TimeWindows": "kspark.kstream.windows",
    "SlidingWindows": "kspark.kstream.windows",
    "SessionWindows": "kspark.kstream.windows",
    "JoinWindows": "kspark.kstream.windows",
    "Suppressed": "kspark.kstream.suppressed",
    "Windowed": "kspark.kstream.windowed",
    "Window": "kspark.kstream.windowed",
}

__all__ = sorted(_EXPORTS) + ["__version__"]

if TYPE_CHECKING:
    from kspark.kafka_streams import KafkaStreams
    from kspark.key_value import KeyValue
    from kspark.kstream.builder import StreamsBuilder
    from kspark.kstream.config_objects import (
        Branched,
        Consumed,
        Grouped,
        Joined,
        Materialized,
        Named,
        Printed,
        Produced,
        Repartitioned,
        StreamJoined,
    )
    from kspark.kstream.suppressed import Suppressed
    from kspark.kstream.windowed import Window, Windowed
    from kspark.kstream.windows import JoinWindows, SessionWindows, SlidingWindows, TimeWindows
    from kspark.processor.topology import Topology


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kspark' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
