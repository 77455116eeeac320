"""bench.w5's choices and its report: the latency runs' offered rate, the table and the targets."""

from __future__ import annotations

from typing import Any

from bench.run import SYSTEMS, skip_reason
from bench.w5 import latency_rate, report, targets


def _tp(workload: str, system: str, guarantee: str, commit_ms: int, rate: float | None) -> dict[str, Any]:
    return {
        "workload": workload,
        "system": system,
        "guarantee": guarantee,
        "commit_ms": commit_ms,
        "ok": rate is not None,
        "rate": rate,
        "verdict": "ok" if rate is not None else "idle for 45 s with the output incomplete",
    }


def _lat(workload: str, system: str, guarantee: str, commit_ms: int, p50: int, p99: int) -> dict[str, Any]:
    return {
        "workload": workload,
        "system": system,
        "guarantee": guarantee,
        "commit_ms": commit_ms,
        "offered_rate": 20_000,
        "p50_ms": p50,
        "p99_ms": p99,
        "check": "ok",
        "unanswered": 0,
    }


ROWS = [
    _tp("W2", "kspark", "at_least_once", 1000, 80_000.0),
    _tp("W2", "kstreams", "at_least_once", 1000, 60_000.0),
    _tp("W2", "kspark", "exactly_once_v2", 1000, 76_000.0),
    _tp("W2", "kstreams", "exactly_once_v2", 1000, 50_000.0),
    _tp("W1", "kspark", "at_least_once", 1000, 200_000.0),
    _tp("W1", "kstreams", "at_least_once", 1000, 300_000.0),
    _tp("W1", "kspark", "exactly_once_v2", 1000, None),
]


def test_the_rate_is_half_the_slower_systems_at_least_once_1s_throughput() -> None:
    assert latency_rate(ROWS, "W2", ["kspark", "kstreams"], cap=50_000)[0] == 30_000


def test_the_rate_is_capped_fixed_or_the_cap_without_a_measurement() -> None:
    assert latency_rate(ROWS, "W1", ["kspark", "kstreams"], cap=50_000)[0] == 50_000
    assert latency_rate(ROWS, "W1", ["kspark", "kstreams"], cap=50_000, fixed=12_345)[0] == 12_345
    rows = [r for r in ROWS if r["system"] != "kstreams"]
    rate, why = latency_rate(rows, "W2", ["kspark", "kstreams"], cap=50_000)
    assert rate == 50_000
    assert "no at-least-once" in why


def test_targets_compare_exactly_once_with_at_least_once_and_with_kafka_streams() -> None:
    lines = targets(ROWS, 200_000)
    assert "W2 kspark: exactly-once at 1 s is 0.95 of at-least-once (target >= 0.90): met" in lines
    assert "W2 kstreams: exactly-once at 1 s is 0.83 of at-least-once (target >= 0.90): missed" in lines
    assert any(line.startswith("W1 kspark: exactly-once share at 1 s not measured") for line in lines)
    assert any(
        "kspark exactly-once is 1.52x Kafka Streams'" in line and line.endswith("met") for line in lines
    )


def test_the_report_puts_both_guarantees_side_by_side_and_lists_failures() -> None:
    latency = [
        _lat("W2", "kspark", "at_least_once", 1000, 800, 1400),
        _lat("W2", "kspark", "exactly_once_v2", 1000, 900, 1500),
    ]
    text = report(ROWS, latency)
    assert "| W2 | 1,000 | kspark | 80,000 | 76,000 | 0.95 | 800 / 1,400 | 900 / 1,500 | 20,000 |" in text
    assert "| W1 | 1,000 | kspark | 200,000 | FAILED | - | - | - | - |" in text
    assert "- W1 kspark exactly_once_v2 1000 ms throughput: idle for 45 s" in text


def test_systems_without_exactly_once_in_the_harness_are_skipped_with_the_reason() -> None:
    assert skip_reason(SYSTEMS["kspark"], "W2", "exactly_once_v2") is None
    assert skip_reason(SYSTEMS["kstreams"], "W2", "exactly_once_v2") is None
    for name in ("pyspark", "quix", "faust"):
        assert skip_reason(SYSTEMS[name], "W1", "at_least_once") is None
        why = skip_reason(SYSTEMS[name], "W1", "exactly_once_v2")
        assert why is not None and why.startswith("no exactly_once_v2 in this harness: ")
    assert skip_reason(SYSTEMS["faust"], "W4", "at_least_once") == "not implemented for this system"
