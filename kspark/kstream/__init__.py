"""The Kafka Streams DSL: ``StreamsBuilder``, ``KStream``, ``KTable``, config objects and windows.

Names resolve lazily (PEP 562) so importing one part does not import all.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "StreamsBuilder": "kspark.kstream.builder",
    "KStream": "kspark.kstream.kstream",
    "BranchedKStream": "kspark.kstream.kstream",
    "KTable": "kspark.kstream.ktable",
    "GlobalKTable": "kspark.kstream.global_ktable",
    "KGroupedStream": "kspark.kstream.kgrouped_stream",
    "KGroupedTable": "kspark.kstream.kgrouped_table",
    "CogroupedKStream": "kspark.kstream.cogrouped_kstream",
    "TimeWindowedCogroupedKStream": "kspark.kstream.cogrouped_kstream",
    "SessionWindowedCogroupedKStream": "kspark.kstream.cogrouped_kstream",
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
    "Suppressed": "kspark.kstream.suppressed",
    "ValueTransformerWithKey": "kspark.kstream.value_transformer",
    "TimeWindowedKStream": "kspark.kstream.time_windowed_kstream",
    "SessionWindowedKStream": "kspark.kstream.session_windowed_kstream",
    "Windowed": "kspark.kstream.windowed",
    "Window": "kspark.kstream.windowed",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kspark.kstream' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
