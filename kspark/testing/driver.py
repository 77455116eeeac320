"""``TopologyTestDriver``: the reference interpreter, with Kafka Streams' test-driver semantics.

One task (``0_0``) runs every sub-topology; every input topic has one
partition (0). Piping a record enqueues it and then processes until nothing
is queued: after each record the driver fires due stream-time punctuations,
commits (flushes every store) and captures what the task produced. Records
written to a topic the topology also reads (repartition topics, or a sink
topic that is a source topic) are fed back in the order they were produced
and processed before ``pipe_input`` returns; records written to a global
store's topic update that store. ``advance_wall_clock_time`` fires due
wall-clock punctuations, commits, and processes what they produced.

``metrics()`` returns ``{MetricName: float}`` with, per task,
``MetricName("dropped-records-total", "stream-task-metrics", {"thread-id":
"main", "task-id": "0_0"})`` (and the same for ``"global"`` when the
topology has global stores); ``dropped_records_total()`` sums them. And,
per source and terminal node, ``record-e2e-latency-avg``, ``-min`` and
``-max`` (``stream-processor-node-metrics``, tags ``thread-id``, ``task-id``,
``processor-node-id``): the driver's wall clock when the node took the record
minus the record's timestamp, over every record since the driver started
(Kafka's driver keeps them over its sample window of mock time); NaN before
the first record.
"""

from __future__ import annotations

import logging
import random
from collections import deque
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from kspark.config import StreamsConfig
from kspark.errors import StreamsException
from kspark.kstream.internals.stream_stream_join import EMIT_INTERVAL_MS_OUTER_JOIN
from kspark.kstream.internals.window_aggregate import EMIT_INTERVAL_MS_WINDOWED_AGGREGATION
from kspark.metrics import MetricName
from kspark.processor.api import Headers, to_millis
from kspark.processor.internals.builder import InternalTopologyBuilder
from kspark.processor.internals.global_task import GlobalStateTask
from kspark.processor.internals.latency import E2E_GROUP
from kspark.processor.internals.records import OutputRecord, RawRecord
from kspark.processor.internals.task import StreamTask
from kspark.state.api import KeyValueStore, SessionStore, StateStore, WindowStore
from kspark.testing.store_facades import KeyValueStoreFacade, WindowStoreFacade, is_timestamped
from kspark.testing.test_topics import NoSuchElementException, TestInputTopic, TestOutputTopic

__all__ = ["TopologyTestDriver", "MetricName"]

_log = logging.getLogger(__name__)

TASK_ID = "0_0"
PARTITION = 0


def _random_int() -> int:
    """A random Java ``int``, as Kafka's driver appends to its default application id."""
    return random.randint(-(2**31), 2**31 - 1)


def _builder_of(topology: Any) -> InternalTopologyBuilder:
    if isinstance(topology, InternalTopologyBuilder):
        return topology
    builder = getattr(topology, "internal_builder", None) or getattr(topology, "_internal_builder", None)
    if isinstance(builder, InternalTopologyBuilder):
        return builder
    raise TypeError(f"TopologyTestDriver needs a Topology (e.g. StreamsBuilder().build()), got {topology!r}")


class TopologyTestDriver:
    """Runs a topology one record at a time; see the module docstring."""

    def __init__(
        self,
        topology: Any,
        config: Mapping[str, Any] | StreamsConfig | None = None,
        initial_wall_clock_time: int | Any = 0,
    ) -> None:
        given = dict(config.originals() if isinstance(config, StreamsConfig) else (config or {}))
        # the defaults Kafka's driver puts in when absent: a dummy broker, a random application id,
        # and no wall-clock throttle on outer-join and windowed-aggregation emits, so that what a
        # record closes is emitted while that record is processed
        given.setdefault("bootstrap.servers", "dummy-bootstrap-host:0")
        given.setdefault("application.id", f"dummy-topology-test-driver-app-id-{_random_int()}")
        given.setdefault(EMIT_INTERVAL_MS_OUTER_JOIN, 0)
        given.setdefault(EMIT_INTERVAL_MS_WINDOWED_AGGREGATION, 0)
        self.config = StreamsConfig(given)
        self._wall_clock_ms = (
            int(initial_wall_clock_time.timestamp() * 1000)
            if hasattr(initial_wall_clock_time, "timestamp")
            else int(initial_wall_clock_time)
        )
        self._builder = _builder_of(topology)
        self._builder.set_application_id(self.config.application_id())
        self._outputs: dict[str, deque[OutputRecord]] = {}
        self._offsets: dict[str, int] = {}
        self._closed = False

        global_topology = self._builder.build_global_state_topology()
        self._global_task: GlobalStateTask | None = None
        if global_topology is not None:
            self._global_task = GlobalStateTask(global_topology, self.config, lambda: self._wall_clock_ms)
            self._global_task.initialize()

        topology_ = self._builder.build_topology()
        self._task: StreamTask | None = None
        if topology_.sources_by_topic:
            self._task = StreamTask(
                TASK_ID,
                topology_,
                self.config,
                global_stores=self._global_task.stores if self._global_task else None,
                partitions_for=lambda topic: 1,
                wall_clock_ms=self._wall_clock_ms,
                partition=PARTITION,
            )
            self._task.initialize()
        self._input_topics = set(topology_.sources_by_topic)
        self._global_topics = set(global_topology.sources_by_topic) if global_topology else set()
        self._sink_topics = topology_.sink_topics()
        self._complete_all_processable_work()

    # ------------------------------------------------------------------ context manager
    def __enter__(self) -> TopologyTestDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ topics
    def create_input_topic(
        self,
        name: str,
        key_serde_or_serializer: Any,
        value_serde_or_serializer: Any,
        start_timestamp: Any = None,
        auto_advance: int | timedelta | None = None,
    ) -> TestInputTopic:
        return TestInputTopic(
            self, name, key_serde_or_serializer, value_serde_or_serializer, start_timestamp, auto_advance
        )

    def create_output_topic(
        self, name: str, key_deserializer: Any, value_deserializer: Any
    ) -> TestOutputTopic:
        return TestOutputTopic(self, name, key_deserializer, value_deserializer)

    def produced_topic_names(self) -> set[str]:
        return set(self._outputs)

    def pipe_raw(
        self,
        topic: str,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers | None = None,
    ) -> None:
        """Pipe one serialized record into ``topic`` and process until nothing is queued."""
        self._check_open()
        headers = headers if headers is not None else Headers()
        if topic not in self._input_topics and topic not in self._global_topics:
            known = sorted(self._input_topics | self._global_topics)
            raise ValueError(f"Unknown topic: {topic} (the topology reads {known})")
        if topic in self._input_topics:
            self._enqueue(topic, timestamp, key, value, headers)
            self._complete_all_processable_work()
        if topic in self._global_topics:
            self._process_global(topic, timestamp, key, value, headers)

    def read_raw(self, topic: str) -> OutputRecord:
        queue = self._outputs.get(topic)
        if queue is None:
            self._warn_unknown(topic)
            raise NoSuchElementException(f"Uninitialized topic: {topic}")
        if not queue:
            raise NoSuchElementException(f"Empty topic: {topic}")
        return queue.popleft()

    def queue_size(self, topic: str) -> int:
        queue = self._outputs.get(topic)
        if queue is None:
            self._warn_unknown(topic)
            return 0
        return len(queue)

    def _warn_unknown(self, topic: str) -> None:
        if topic not in self._sink_topics:
            _log.warning(
                "Unrecognized topic: %s, this can occur if dynamic routing is used and no output has been "
                "sent to this topic yet. If not using a TopicNameExtractor, check that the output topic "
                "is correct.",
                topic,
            )

    # ------------------------------------------------------------------ time
    def advance_wall_clock_time(self, advance: int | timedelta) -> None:
        ms = to_millis(advance, "advance")
        if ms < 0:
            raise ValueError("advance must not be negative")
        self._check_open()
        self._wall_clock_ms += ms
        if self._task is not None:
            self._task.maybe_punctuate_system_time(self._wall_clock_ms)
            self._task.commit()
        self._complete_all_processable_work()

    def wall_clock_time_ms(self) -> int:
        return self._wall_clock_ms

    # ------------------------------------------------------------------ engine loop
    def _enqueue(
        self, topic: str, timestamp: int, key: bytes | None, value: bytes | None, headers: Headers
    ) -> None:
        assert self._task is not None
        offset = self._offsets.get(topic, 0)
        self._offsets[topic] = offset + 1
        self._task.add_records(
            topic, PARTITION, [RawRecord(topic, PARTITION, offset, timestamp, key, value, headers)]
        )

    def _process_global(
        self, topic: str, timestamp: int, key: bytes | None, value: bytes | None, headers: Headers
    ) -> None:
        assert self._global_task is not None
        offset = self._offsets.get(topic, 0)
        self._offsets[topic] = offset + 1
        self._global_task.update(RawRecord(topic, PARTITION, offset, timestamp, key, value, headers))
        self._global_task.flush()

    def _complete_all_processable_work(self) -> None:
        self._capture_outputs()
        task = self._task
        if task is None:
            return
        while task.has_records_queued():
            task.process(self._wall_clock_ms)
            task.maybe_punctuate_stream_time()
            task.commit()
            self._capture_outputs()

    def _capture_outputs(self) -> None:
        produced: list[OutputRecord] = []
        if self._global_task is not None:
            produced.extend(self._global_task.collector.drain())
        if self._task is not None:
            produced.extend(self._task.drain_output())
        for record in produced:
            self._outputs.setdefault(record.topic, deque()).append(record)
            if record.topic in self._input_topics:
                self._enqueue(record.topic, record.timestamp, record.key, record.value, record.headers)
            if record.topic in self._global_topics:
                self._process_global(record.topic, record.timestamp, record.key, record.value, record.headers)

    # ------------------------------------------------------------------ stores
    def get_state_store(self, name: str) -> StateStore | None:
        """The store called ``name`` (task stores first, then global stores), or None."""
        if self._task is not None and name in self._task.stores:
            return self._task.stores[name]
        if self._global_task is not None and name in self._global_task.stores:
            return self._global_task.stores[name]
        return None

    def get_all_state_stores(self) -> dict[str, StateStore | None]:
        names = self._builder.state_store_names() + self._builder.global_store_names()
        return {n: self.get_state_store(n) for n in names}

    def get_key_value_store(self, name: str) -> Any:
        """A key-value store; a timestamped one is unwrapped to plain values (as Kafka's facade)."""
        store = self.get_state_store(name)
        if isinstance(store, KeyValueStore):
            return KeyValueStoreFacade(store) if is_timestamped(store) else store
        return None

    def get_timestamped_key_value_store(self, name: str) -> Any:
        store = self.get_state_store(name)
        return store if isinstance(store, KeyValueStore) and is_timestamped(store) else None

    def get_window_store(self, name: str) -> Any:
        store = self.get_state_store(name)
        if isinstance(store, WindowStore):
            return WindowStoreFacade(store) if is_timestamped(store) else store
        return None

    def get_timestamped_window_store(self, name: str) -> Any:
        store = self.get_state_store(name)
        return store if isinstance(store, WindowStore) and is_timestamped(store) else None

    def get_session_store(self, name: str) -> Any:
        store = self.get_state_store(name)
        return store if isinstance(store, SessionStore) else None

    # ------------------------------------------------------------------ metrics, close
    def metrics(self) -> dict[MetricName, float]:
        out: dict[MetricName, float] = {}
        if self._task is not None:
            out[self._metric(TASK_ID)] = float(self._task.dropped_records_total)
            for node, stats in self._task.e2e.items():
                tags = (("thread-id", "main"), ("task-id", TASK_ID), ("processor-node-id", node))
                for suffix, value in (
                    ("avg", stats.avg()),
                    ("min", stats.minimum()),
                    ("max", stats.maximum()),
                ):
                    out[MetricName(f"record-e2e-latency-{suffix}", E2E_GROUP, tags)] = value
        if self._global_task is not None:
            out[self._metric("global")] = float(self._global_task.dropped_records_total)
        return out

    @staticmethod
    def _metric(task_id: str) -> MetricName:
        return MetricName(
            "dropped-records-total", "stream-task-metrics", (("thread-id", "main"), ("task-id", task_id))
        )

    def dropped_records_total(self) -> float:
        """Sum of ``dropped-records-total`` over the task and the global task."""
        return sum(v for name, v in self.metrics().items() if name.name == "dropped-records-total")

    def _check_open(self) -> None:
        if self._closed:
            raise StreamsException("The TopologyTestDriver is closed")

    def close(self) -> None:
        if self._closed:
            return
        if self._task is not None:
            self._task.commit()
            self._task.close()
        if self._global_task is not None:
            self._global_task.close()
        self._capture_outputs_after_close()
        self._closed = True

    def _capture_outputs_after_close(self) -> None:
        # a closed task is not fed again; outputs produced while closing stay readable
        produced: list[OutputRecord] = []
        if self._task is not None:
            produced.extend(self._task.drain_output())
        for record in produced:
            self._outputs.setdefault(record.topic, deque()).append(record)
