"""Processor metadata: what Kafka commits with the input offsets, kept by the task for its runner."""

from __future__ import annotations

from kspark.config import StreamsConfig
from kspark.processor import Processor, ProcessorContext, Record
from kspark.processor.internals.records import RawRecord
from kspark.processor.internals.task import StreamTask
from kspark.processor.topology import Topology
from kspark.serde import Serdes

S = Serdes.String()


class _Remember(Processor[str, str]):
    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.seen_at_init = context.processor_metadata_for_key("last")  # type: ignore[attr-defined]

    def process(self, record: Record[str, str]) -> None:
        self.context.add_processor_metadata_key_value("last", record.timestamp)  # type: ignore[attr-defined]
        self.context.forward(record.with_value(f"{self.seen_at_init}"))


def _task(metadata: dict[str, int] | None = None) -> StreamTask:
    topo = Topology()
    topo.add_source("src", "in", key_deserializer=S.deserializer(), value_deserializer=S.deserializer())
    topo.add_processor("p", _Remember, "src")
    topo.add_sink("sink", "out", "p", key_serializer=S.serializer(), value_serializer=S.serializer())
    task = StreamTask(
        "0_0",
        topo.internal_builder.build_topology(),
        StreamsConfig({"application.id": "md", "bootstrap.servers": "x:1"}),
        processor_metadata=metadata,
    )
    task.initialize()
    return task


def test_metadata_written_by_processors_is_kept_and_handed_back_before_init() -> None:
    first = _task()
    first.add_records("in", 0, [RawRecord("in", 0, 0, 42, b"k", b"v")])
    while first.process():
        pass
    assert first.processor_metadata == {"last": 42}
    assert [r.value for r in first.drain_output()] == [b"None"]

    restored = _task(first.processor_metadata)
    restored.add_records("in", 0, [RawRecord("in", 0, 1, 50, b"k", b"v")])
    while restored.process():
        pass
    assert [r.value for r in restored.drain_output()] == [b"42"]
    assert restored.processor_metadata == {"last": 50}
