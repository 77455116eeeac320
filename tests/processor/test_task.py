"""StreamTask driven directly, as a second runner would: partition choice, stream time, punctuation."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from kspark.config import StreamsConfig
from kspark.errors import StreamsException
from kspark.processor import Processor, ProcessorContext, PunctuationType, Record, Topology
from kspark.processor.internals.punctuation import PunctuationQueue, PunctuationSchedule
from kspark.processor.internals.records import RawRecord
from kspark.processor.internals.task import StreamTask
from kspark.serde import Serdes

S = Serdes.String()
CONFIG = StreamsConfig({"application.id": "app", "bootstrap.servers": "x:1"})


class Collect(Processor[str, str]):
    seen: ClassVar[list[tuple[str, str, int, int]]] = []

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[str, str]) -> None:
        Collect.seen.append(
            (
                self.context.topic() or "",
                record.value,
                record.timestamp,
                self.context.current_stream_time_ms(),
            )
        )
        self.context.forward(record)


def two_source_task() -> StreamTask:
    Collect.seen = []
    t = Topology()
    t.add_source("sa", "a", key_deserializer=S, value_deserializer=S)
    t.add_source("sb", "b", key_deserializer=S, value_deserializer=S)
    t.add_processor("collect", Collect, "sa", "sb")
    t.add_sink("sink", "out", "collect", key_serializer=S, value_serializer=S)
    builder = t.internal_builder.set_application_id("app")
    task = StreamTask("0_0", builder.build_topology(), CONFIG)
    task.initialize()
    return task


def raw(topic: str, offset: int, ts: int, value: str) -> RawRecord:
    return RawRecord(topic, 0, offset, ts, b"k", value.encode())


def test_next_record_is_chosen_by_head_timestamp_and_stream_time_is_the_max() -> None:
    task = two_source_task()
    task.add_records("a", 0, [raw("a", 0, 5, "a5"), raw("a", 1, 7, "a7")])
    task.add_records("b", 0, [raw("b", 0, 6, "b6"), raw("b", 1, 3, "b3")])
    while task.process():
        pass
    # heads a5 < b6 -> a5; a7 vs b6 -> b6; a7 vs b3 -> b3 (out of order, stream time stays 6); a7
    assert Collect.seen == [("a", "a5", 5, 5), ("b", "b6", 6, 6), ("b", "b3", 3, 6), ("a", "a7", 7, 7)]
    assert task.stream_time() == 7
    out = task.drain_output()
    assert [(o.topic, o.partition, o.key, o.value, o.timestamp) for o in out] == [
        ("out", None, b"k", b"a5", 5),
        ("out", None, b"k", b"b6", 6),
        ("out", None, b"k", b"b3", 3),
        ("out", None, b"k", b"a7", 7),
    ]
    assert task.drain_output() == []


def test_equal_head_timestamps_follow_java_priority_queue_order() -> None:
    task = two_source_task()
    task.add_records("a", 0, [raw("a", 0, 1, "a1"), raw("a", 1, 1, "a1b")])
    task.add_records("b", 0, [raw("b", 0, 1, "b1")])
    while task.process():
        pass
    # after a1 the queue of "a" is re-offered behind "b" (heap order), so b1 goes before a1b
    assert [s[1] for s in Collect.seen] == ["a1", "b1", "a1b"]


def test_records_of_unknown_topic_are_rejected() -> None:
    task = two_source_task()
    with pytest.raises(StreamsException, match="does not read topic c"):
        task.add_records("c", 0, [raw("c", 0, 1, "x")])


def test_stores_can_be_plugged_in_and_missing_ones_are_named() -> None:
    from kspark.state import Stores

    t = Topology().add_source("s", "a", key_deserializer=S, value_deserializer=S)
    t.add_processor("p", Collect, "s")
    builder = Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"), S, S)
    t.add_state_store(builder, "p")
    topo = t.internal_builder.set_application_id("app").build_topology()
    with pytest.raises(StreamsException, match=r"no store instance given for \['kv'\]"):
        StreamTask("1_3", topo, CONFIG, stores={})
    mine = builder.build()
    task = StreamTask("1_3", topo, CONFIG, stores={"kv": mine}, partition=3)
    task.initialize()
    assert task.context.get_state_store is not None and task.stores["kv"] is mine


def fire_times(interval: int, times: list[int], start: int = 0) -> list[int]:
    q = PunctuationQueue()
    fired: list[int] = []
    q.schedule(PunctuationSchedule(None, start, interval, fired.append))
    for t in times:
        q.may_punctuate(t, PunctuationType.STREAM_TIME, lambda node, ts, kind, p: p(ts))
    return fired


def test_punctuation_schedule_alignment_and_missed_intervals() -> None:
    assert fire_times(10, [0, 9, 10, 19, 20]) == [0, 10, 20]
    # a jump over several intervals fires once, with the current time, and stays aligned
    assert fire_times(10, [0, 35, 39, 40]) == [0, 35, 40]
    assert fire_times(10, [3, 12, 13]) == [3, 12]  # aligned to 0: due 0, then 10, 20


def test_cancel_inside_and_outside_punctuator() -> None:
    q = PunctuationQueue()
    fired: list[int] = []
    c = q.schedule(PunctuationSchedule(None, 0, 5, fired.append))

    def run(t: int) -> bool:
        return q.may_punctuate(t, PunctuationType.STREAM_TIME, lambda n, ts, k, p: p(ts))

    assert run(0) and run(5)
    c.cancel()  # the cancellable follows the schedule to its successor
    assert not run(10)
    assert fired == [0, 5]
    assert not q.can_punctuate(100)


class SchedulesTwo(Processor[str, str]):
    log: ClassVar[list[str]] = []

    def init(self, context: ProcessorContext) -> None:
        context.schedule(10, PunctuationType.STREAM_TIME, lambda ts: SchedulesTwo.log.append(f"x{ts}"))
        context.schedule(5, PunctuationType.STREAM_TIME, lambda ts: SchedulesTwo.log.append(f"y{ts}"))

    def process(self, record: Record[str, str]) -> None:
        pass


def test_stream_time_punctuation_through_task() -> None:
    SchedulesTwo.log = []
    t = Topology().add_source("s", "a", key_deserializer=S, value_deserializer=S)
    t.add_processor("p", SchedulesTwo, "s")
    task = StreamTask("0_0", t.internal_builder.set_application_id("app").build_topology(), CONFIG)
    task.initialize()
    assert not task.maybe_punctuate_stream_time()  # stream time unknown
    for offset, ts in enumerate([0, 5, 12]):
        task.add_records("a", 0, [raw("a", offset, ts, "v")])
        task.process()
        task.maybe_punctuate_stream_time()
    assert SchedulesTwo.log == ["x0", "y0", "y5", "x12", "y12"]


def test_schedule_rejects_bad_interval() -> None:
    class Bad(Processor[Any, Any]):
        def init(self, context: ProcessorContext) -> None:
            context.schedule(0, PunctuationType.STREAM_TIME, lambda ts: None)

        def process(self, record: Record[Any, Any]) -> None:
            pass

    t = Topology().add_source("s", "a", key_deserializer=S, value_deserializer=S).add_processor("p", Bad, "s")
    task = StreamTask("0_0", t.internal_builder.set_application_id("app").build_topology(), CONFIG)
    with pytest.raises(ValueError, match="minimum supported scheduling interval is 1 millisecond"):
        task.initialize()


def test_store_not_connected_is_an_error_naming_processor_and_store() -> None:
    from kspark.state import Stores

    class Peek(Processor[Any, Any]):
        def init(self, context: ProcessorContext) -> None:
            context.get_state_store("kv")

        def process(self, record: Record[Any, Any]) -> None:
            pass

    t = Topology().add_source("s", "a", key_deserializer=S, value_deserializer=S)
    t.add_processor("owner", Collect, "s").add_processor("peek", Peek, "s")
    t.add_state_store(Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"), S, S), "owner")
    task = StreamTask("0_0", t.internal_builder.set_application_id("app").build_topology(), CONFIG)
    with pytest.raises(StreamsException, match="Processor peek has no access to StateStore kv"):
        task.initialize()


class Beats(Processor[str, str]):
    log: ClassVar[list[tuple[str, int]]] = []

    def init(self, context: ProcessorContext) -> None:
        context.schedule(1_000, PunctuationType.WALL_CLOCK_TIME, lambda ts: Beats.log.append(("a", ts)))
        context.schedule(300, PunctuationType.WALL_CLOCK_TIME, lambda ts: Beats.log.append(("b", ts)))

    def process(self, record: Record[str, str]) -> None:
        pass


def beats_task(wall_clock_ms: int) -> StreamTask:
    t = Topology().add_source("s", "a", key_deserializer=S, value_deserializer=S)
    t.add_processor("beats", Beats, "s")
    task = StreamTask(
        "0_0",
        t.internal_builder.set_application_id("app").build_topology(),
        CONFIG,
        wall_clock_ms=wall_clock_ms,
    )
    task.initialize()
    return task


def test_a_rebuilt_task_continues_wall_clock_punctuations_where_the_old_one_left_them() -> None:
    Beats.log = []
    first = beats_task(0)
    first.maybe_punctuate_system_time(1_100)  # a due 1000, b due 300: both fire
    assert Beats.log == [("b", 1_100), ("a", 1_100)]
    saved = first.wall_clock_schedules()
    assert saved == [("beats", 300, 1_200), ("beats", 1_000, 2_000)]

    Beats.log = []
    rebuilt = beats_task(1_150)  # fresh schedules would be due at 1450 and 2150
    rebuilt.restore_wall_clock_schedules(saved)
    assert rebuilt.next_wall_clock_punctuation() == 1_200
    rebuilt.maybe_punctuate_system_time(2_050)
    assert Beats.log == [("b", 2_050), ("a", 2_050)]
    assert rebuilt.wall_clock_schedules() == [("beats", 300, 2_100), ("beats", 1_000, 3_000)]
