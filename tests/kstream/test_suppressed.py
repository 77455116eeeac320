"""Tests of ``Suppressed`` and ``BufferConfig``: factories, strictness and naming."""

from __future__ import annotations

from datetime import timedelta

import pytest

from kspark.kstream.suppressed import BufferConfig, BufferFullStrategy, Suppressed, TimeDefinition


def test_until_window_closes_defaults_to_an_unbounded_strict_buffer() -> None:
    s = Suppressed.until_window_closes()
    assert s.final_results and s.name is None
    assert s.buffer_config == BufferConfig.unbounded()
    assert s.buffer_config.buffer_full_strategy is BufferFullStrategy.SHUT_DOWN
    assert s.time_definition() is TimeDefinition.WINDOW_END_TIME
    assert s.safe_to_drop_tombstones()


def test_until_window_closes_rejects_an_eager_buffer() -> None:
    with pytest.raises(ValueError, match="strict buffer config"):
        Suppressed.until_window_closes(BufferConfig.max_records(3))
    ok = Suppressed.until_window_closes(BufferConfig.max_records(3).shut_down_when_full())
    assert ok.buffer_config.max_records_value == 3


def test_until_time_limit() -> None:
    s = Suppressed.until_time_limit(timedelta(seconds=2), BufferConfig.max_bytes(100).emit_early_when_full())
    assert s.time_to_wait_ms == 2000 and not s.final_results
    assert s.buffer_config.max_bytes_value == 100
    assert s.buffer_config.buffer_full_strategy is BufferFullStrategy.EMIT
    assert s.time_definition() is TimeDefinition.RECORD_TIME
    assert not s.safe_to_drop_tombstones()
    assert Suppressed.until_time_limit(5).buffer_config == BufferConfig.unbounded()


def test_buffer_config_builders() -> None:
    b = BufferConfig.max_records(5).with_max_bytes(10)
    assert (b.max_records_value, b.max_bytes_value, b.buffer_full_strategy) == (
        5,
        10,
        BufferFullStrategy.EMIT,
    )
    assert b.with_no_bound() == BufferConfig.unbounded()
    assert not b.with_logging_disabled().is_logging_enabled()
    assert b.with_logging_enabled({"a": "b"}).log_config == {"a": "b"}


def test_with_name() -> None:
    assert Suppressed.until_window_closes().with_name("final").name == "final"


def test_kafkas_nested_buffer_config_name_is_the_same_class() -> None:
    from kspark import Suppressed as PublicSuppressed

    assert PublicSuppressed.BufferConfig is BufferConfig
    assert Suppressed.BufferConfig.unbounded() == BufferConfig.unbounded()
    assert Suppressed.BufferConfig.max_records(3) == BufferConfig.max_records(3)
    assert Suppressed.BufferConfig.max_bytes(7).max_bytes_value == 7
    s = Suppressed.until_window_closes(Suppressed.BufferConfig.max_records(2).shut_down_when_full())
    assert s.buffer_config.max_records_value == 2
    # a class attribute, not a dataclass field: equality and the constructor are unchanged
    assert Suppressed.until_time_limit(5) == Suppressed(None, BufferConfig.unbounded(), False, 5)
