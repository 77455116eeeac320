"""Tests of the suppression processor (Kafka's ``KTableSuppressProcessor``)."""

from __future__ import annotations

from typing import Any

import pytest
from test_window_support import FakeContext

from kspark.errors import StreamsException
from kspark.kstream.internals.change import Change
from kspark.kstream.internals.suppress import KTableSuppressProcessorSupplier
from kspark.kstream.internals.time_ordered_key_value_buffer import InMemoryTimeOrderedKeyValueChangeBuffer
from kspark.kstream.suppressed import BufferConfig, Suppressed
from kspark.kstream.windowed import TimeWindow, Windowed
from kspark.processor.api import Record
from kspark.serde import Serdes


def _proc(suppressed: Suppressed, wait_ms: int, key_serde: Any = None, value_serde: Any = None) -> Any:
    buffer = InMemoryTimeOrderedKeyValueChangeBuffer(
        "buf", key_serde or Serdes.String(), value_serde or Serdes.Long(), logging_enabled=False
    )
    ctx = FakeContext({"buf": buffer})
    buffer.init(ctx, buffer)
    proc = KTableSuppressProcessorSupplier(suppressed, "buf", wait_ms)()
    proc.init(ctx)
    return proc, ctx


def W(key: str, start: int, end: int) -> Windowed[str]:
    return Windowed(key, TimeWindow(start, end))


def test_final_results_emit_once_when_stream_time_reaches_end_plus_grace() -> None:
    # KTableSuppressProcessorTest.windowedZeroTimeLimitShouldImmediatelyEmit / finalResults shape
    proc, ctx = _proc(Suppressed.until_window_closes(), 1, Serdes.time_windowed(Serdes.String(), 100))
    proc.process(Record(W("k", 0, 100), Change(1, None), 0))
    proc.process(Record(W("k", 0, 100), Change(2, 1), 99))
    proc.process(Record(W("k", 100, 200), Change(1, None), 100))  # stream time 100 < 100 + 1
    assert ctx.take() == []
    proc.process(Record(W("k", 100, 200), Change(2, 1), 101))  # 101 - 1 >= 100: [0,100) final
    assert ctx.take() == [(W("k", 0, 100), (2, 1), 99)]


def test_final_results_drop_tombstones() -> None:
    proc, ctx = _proc(Suppressed.until_window_closes(), 0, Serdes.time_windowed(Serdes.String(), 10))
    proc.process(Record(W("k", 0, 10), Change(None, 3), 5))
    proc.process(Record(W("k", 10, 20), Change(1, None), 10))
    assert ctx.take() == []


def test_time_limit_keeps_the_first_buffer_time_of_a_key() -> None:
    proc, ctx = _proc(Suppressed.until_time_limit(10), 10, value_serde=Serdes.String())
    proc.process(Record("a", Change("a1", None), 0))
    proc.process(Record("a", Change("a2", "a1"), 8))  # still due at 0 + 10
    proc.process(Record("b", Change("b1", None), 9))
    assert ctx.take() == []
    proc.process(Record("c", Change("c1", None), 10))
    # the latest value and timestamp of a, with the old value of its latest update
    assert ctx.take() == [("a", ("a2", "a1"), 8)]
    proc.process(Record("c", Change(None, "c1"), 19))  # tombstones are forwarded by time limits
    assert ctx.take() == [("b", ("b1", None), 9)]
    proc.process(Record("d", Change("d1", None), 40))
    assert ctx.take() == [("c", (None, "c1"), 19)]


def test_eager_buffer_emits_oldest_when_full() -> None:
    proc, ctx = _proc(Suppressed.until_time_limit(1000, BufferConfig.max_records(2)), wait_ms=1000)
    proc.process(Record("a", Change(1, None), 3))
    proc.process(Record("b", Change(1, None), 1))
    proc.process(Record("c", Change(1, None), 2))
    assert ctx.take() == [("b", (1, None), 1)]


def test_strict_buffer_shuts_down_when_full() -> None:
    proc, _ = _proc(
        Suppressed.until_time_limit(1000, BufferConfig.max_records(1).shut_down_when_full()), wait_ms=1000
    )
    proc.process(Record("a", Change(1, None), 1))
    with pytest.raises(
        StreamsException, match=r"buffer exceeded its max capacity. Currently \[2/1\] records"
    ):
        proc.process(Record("b", Change(1, None), 2))
