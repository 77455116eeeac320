"""Developer tooling: a local Apache Kafka and the demo.

Imported by nothing in kspark but the command line; tests, the demo and
``kspark dev-kafka`` use it. The JVM bundles it starts Kafka from are
:mod:`kspark.jvm`'s (the runner needs them too).
"""

from kspark.dev.errors import DevToolsError, KafkaStartError, PortInUseError
from kspark.dev.kafka import KafkaRecord, LocalKafka, ProduceRecord

__all__ = [
    "LocalKafka",
    "KafkaRecord",
    "ProduceRecord",
    "DevToolsError",
    "KafkaStartError",
    "PortInUseError",
]
