"""Developer tooling: a local Apache Kafka, JVM bundles and the demo.

Not imported by the model or the runners' hot path; tests, the demo and
``kspark dev-kafka`` use it.
"""

from kspark.dev.errors import (
    ArtifactResolutionError,
    DevToolsError,
    JavaNotFoundError,
    KafkaStartError,
    PortInUseError,
)
from kspark.dev.kafka import KafkaRecord, LocalKafka, ProduceRecord

__all__ = [
    "LocalKafka",
    "KafkaRecord",
    "ProduceRecord",
    "DevToolsError",
    "JavaNotFoundError",
    "ArtifactResolutionError",
    "KafkaStartError",
    "PortInUseError",
]
