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
    "TableJoined": "kspark.kstream.table_joined",
    "Repartitioned": "kspark.kstream.config_objects",
    "Branched": "kspark.kstream.config_objects",
    "Named": "kspark.kstream.config_objects",
    "Printed": "kspark.kstream.config_objects",
    "TimeWindows": "kspark.kstream.windows",
    "SlidingWindows": "kspark.kstream.windows",
    "SessionWindows": "kspark.kstream.windows",
    "JoinWindows": "kspark.kstream.windows",
    "EmitStrategy": "kspark.kstream.windows",
    "Suppressed": "kspark.kstream.suppressed",
    "ValueTransformerWithKey": "kspark.kstream.value_transformer",
    "Windowed": "kspark.kstream.windowed",
    "Window": "kspark.kstream.windowed",
}

__all__ = [*sorted(_EXPORTS), "__version__"]

if TYPE_CHECKING:
    # "import X as X": an explicit re-export, so strict mypy lets callers import these from kspark
    from kspark.kafka_streams import KafkaStreams as KafkaStreams
    from kspark.key_value import KeyValue as KeyValue
    from kspark.kstream.builder import StreamsBuilder as StreamsBuilder
    from kspark.kstream.config_objects import Branched as Branched
    from kspark.kstream.config_objects import Consumed as Consumed
    from kspark.kstream.config_objects import Grouped as Grouped
    from kspark.kstream.config_objects import Joined as Joined
    from kspark.kstream.config_objects import Materialized as Materialized
    from kspark.kstream.config_objects import Named as Named
    from kspark.kstream.config_objects import Printed as Printed
    from kspark.kstream.config_objects import Produced as Produced
    from kspark.kstream.config_objects import Repartitioned as Repartitioned
    from kspark.kstream.config_objects import StreamJoined as StreamJoined
    from kspark.kstream.suppressed import Suppressed as Suppressed
    from kspark.kstream.table_joined import TableJoined as TableJoined
    from kspark.kstream.value_transformer import ValueTransformerWithKey as ValueTransformerWithKey
    from kspark.kstream.windowed import Window as Window
    from kspark.kstream.windowed import Windowed as Windowed
    from kspark.kstream.windows import EmitStrategy as EmitStrategy
    from kspark.kstream.windows import JoinWindows as JoinWindows
    from kspark.kstream.windows import SessionWindows as SessionWindows
    from kspark.kstream.windows import SlidingWindows as SlidingWindows
    from kspark.kstream.windows import TimeWindows as TimeWindows
    from kspark.processor.topology import Topology as Topology


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kspark' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
