"""Serializers and deserializers: ``Serdes`` and Kafka's byte formats.

``from kspark.serde import Serdes`` is the entry point; the interfaces
(``Serde``, ``Serializer``, ``Deserializer``) are in :mod:`kspark.serde.api`,
the built-in classes in :mod:`kspark.serde.primitives`, the windowed ones
in :mod:`kspark.serde.windowed`, and Confluent's Schema Registry serdes (Avro,
JSON Schema, Protobuf in the Confluent wire format) in
:mod:`kspark.serde.schema_registry`, whose codecs are imported on first use.
"""

from __future__ import annotations

from kspark.serde.api import Deserializer, Serde, Serializer
from kspark.serde.schema_registry import (
    GenericAvroSerde,
    KafkaJsonSchemaSerde,
    KafkaProtobufSerde,
    SpecificAvroSerde,
)
from kspark.serde.serdes import Serdes
from kspark.serde.windowed import (
    SessionWindowedDeserializer,
    SessionWindowedSerde,
    SessionWindowedSerializer,
    TimeWindowedDeserializer,
    TimeWindowedSerde,
    TimeWindowedSerializer,
    WindowedSerdes,
)

__all__ = [
    "Serdes",
    "Serde",
    "Serializer",
    "Deserializer",
    "WindowedSerdes",
    "TimeWindowedSerde",
    "SessionWindowedSerde",
    "TimeWindowedSerializer",
    "TimeWindowedDeserializer",
    "SessionWindowedSerializer",
    "SessionWindowedDeserializer",
    "GenericAvroSerde",
    "SpecificAvroSerde",
    "KafkaJsonSchemaSerde",
    "KafkaProtobufSerde",
]
