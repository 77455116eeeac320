"""Global stores on Spark: a full replica of each global topic in every Python worker.

Kafka Streams keeps a GlobalKTable by reading all partitions of its topic
into every instance, on a thread of its own, independently of stream
processing. kspark does the same per Spark Python worker: a
:class:`GlobalStateReplica` owns a :class:`GlobalStateTask` (the engine's
global state updater) and a confluent-kafka consumer assigned to every
partition of the global topics; before a task processes a micro-batch, the
replica catches up to the topics' last stable offsets (the end a read_committed
consumer reaches). Records go
from Kafka to the worker directly, never through the driver.

As in Kafka Streams, a stream record sees the global table as of when it is
processed; updates that arrive later are not applied retroactively.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kspark.config import StreamsConfig
from kspark.errors import StreamsException
from kspark.processor.api import Headers
from kspark.processor.internals.global_task import GlobalStateTask
from kspark.processor.internals.records import RawRecord
from kspark.runtime.kafka_clients import librdkafka_security
from kspark.runtime.spark.kafka_io import OffsetLister
from kspark.runtime.spark.partition_reader import consume_toward
from kspark.runtime.spark.store_restore import scratch_dir

if TYPE_CHECKING:
    from kspark.processor.topology import Topology
    from kspark.state.api import StateStore

__all__ = ["GlobalStateReplica", "global_replica"]

_log = logging.getLogger(__name__)

_CATCH_UP_TIMEOUT_S = 120.0


class GlobalStateReplica:
    """The global stores of one application run, kept current from their topics."""

    def __init__(self, topology: Topology, config: Mapping[str, Any], instance: str = "") -> None:
        from confluent_kafka import Consumer, TopicPartition

        global_topology = topology.internal_builder.build_global_state_topology()
        if global_topology is None:
            raise StreamsException("The topology has no global stores")
        streams_config = StreamsConfig(dict(config))
        # Rebuilt from the global topics whenever made: its on-disk stores need no checkpoint.
        self.directory = scratch_dir(config, f"global-{instance}")
        self.task = GlobalStateTask(
            global_topology, streams_config, lambda: int(time.time() * 1000), state_dir=self.directory
        )
        self.task.initialize()
        self.topics = sorted(global_topology.sources_by_topic)
        bootstrap = ",".join(streams_config.bootstrap_servers())
        self._lister = OffsetLister(bootstrap, settings=librdkafka_security(config, "admin"))
        self._consumer = Consumer(
            {
                **librdkafka_security(config, "consumer"),
                "bootstrap.servers": bootstrap,
                # Assigned, never subscribed: no group membership, nothing committed.
                "group.id": f"{streams_config.application_id()}-global-replica",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "enable.partition.eof": False,
            }
        )
        metadata = self._consumer.list_topics(timeout=30)
        self._partitions = []
        for topic in self.topics:
            info = metadata.topics.get(topic)
            if info is None or info.error is not None:
                raise StreamsException(f"Global topic {topic} does not exist")
            self._partitions += [TopicPartition(topic, p, 0) for p in sorted(info.partitions)]
        self._consumer.assign(self._partitions)
        self._positions = {(tp.topic, tp.partition): 0 for tp in self._partitions}

    @property
    def stores(self) -> dict[str, StateStore]:
        return self.task.stores

    def catch_up(self) -> None:
        """Apply every record of the global topics up to their current last stable offsets."""
        ends = self._lister.offsets(self._positions, latest=True)
        deadline = time.monotonic() + _CATCH_UP_TIMEOUT_S
        applied = 0
        while any(self._positions[tp] < end for tp, end in ends.items()):
            if time.monotonic() > deadline:
                raise StreamsException(
                    f"Global state could not catch up with {self.topics} in {_CATCH_UP_TIMEOUT_S} s"
                )
            wanted = sum(max(0, end - self._positions[tp]) for tp, end in ends.items())
            for msg in consume_toward(self._consumer, wanted, 10_000):
                if msg.error() is not None:
                    raise StreamsException(f"Reading global topic {msg.topic()}: {msg.error()}")
                raw = _raw_record(msg)
                self.task.update(raw)
                self._positions[(raw.topic, raw.partition)] = raw.offset + 1
                applied += 1
            # Transaction markers occupy offsets without delivering a record.
            for tp in self._partitions:
                key = (tp.topic, tp.partition)
                if self._positions[key] < ends[key]:
                    position = self._consumer.position([tp])[0].offset
                    if position >= 0:
                        self._positions[key] = max(self._positions[key], position)
        if applied:
            self.task.flush()


def _raw_record(msg: Any) -> RawRecord:
    """A consumed message as the engine's raw record."""
    headers = [(k, v.encode() if isinstance(v, str) else v) for k, v in (msg.headers() or [])]
    return RawRecord(
        str(msg.topic()),
        int(msg.partition()),
        int(msg.offset()),
        int(msg.timestamp()[1]),
        msg.key(),
        msg.value(),
        Headers(headers),
    )


_REPLICAS: dict[tuple[str, str], GlobalStateReplica] = {}
_LOCK = threading.Lock()


def global_replica(topology: Topology, config: Mapping[str, Any], instance: str) -> GlobalStateReplica:
    """This worker's replica for one application run (made on first use, then kept)."""
    key = (str(config.get("application.id")), instance)
    with _LOCK:
        replica = _REPLICAS.get(key)
        if replica is None:
            for old in [k for k in _REPLICAS if k[0] == key[0]]:
                stale = _REPLICAS.pop(old)
                stale.task.close()
                try:
                    shutil.rmtree(stale.directory)
                except OSError as e:  # its process's scratch is removed when the process is gone
                    _log.warning("removing the stores of a discarded global replica: %s", e)
            replica = GlobalStateReplica(topology, config, instance)
            _REPLICAS[key] = replica
    return replica
