"""The benchmark's checker: it must pass exact output and name every kind of wrong output.

The harness's verdict is what makes a benchmark number count, so the
streaming checker is compared here against the plain-Python ``expected``.
"""

from __future__ import annotations

import json
import struct

import pytest

from bench.workloads import WORKLOADS, Checker, expected

N = 3_000


def _encode(workload: str, key: object, value: object) -> tuple[bytes, bytes]:
    if workload in ("W1", "W4"):
        return b"", json.dumps(value).encode()
    return str(key).encode(), struct.pack(">q", int(value))  # type: ignore[call-overload]


def _fed(workload: str, items: list[tuple[object, object]], n: int = N) -> Checker:
    checker = Checker(workload, n)
    for key, value in items:
        checker.add(*_encode(workload, key, value))
    return checker


def _exact(workload: str) -> list[tuple[object, object]]:
    return list(expected(workload, N).items())


@pytest.mark.parametrize("workload", WORKLOADS)
def test_exact_output_passes_and_is_complete(workload: str) -> None:
    checker = _fed(workload, _exact(workload))
    assert checker.complete()
    assert checker.verdict() is None


@pytest.mark.parametrize("workload", WORKLOADS)
def test_one_missing_record_fails(workload: str) -> None:
    items = _exact(workload)
    checker = _fed(workload, items[:-1])
    assert not checker.complete()
    verdict = checker.verdict()
    assert verdict is not None and verdict.startswith("1 missing")
    assert repr(items[-1][0]) in verdict


@pytest.mark.parametrize("workload", WORKLOADS)
def test_one_wrong_record_fails(workload: str) -> None:
    items = _exact(workload)
    key, value = items[len(items) // 2]
    if isinstance(value, dict):
        bad: object = {**value, next(k for k in value if k != "id"): "x"}
    else:
        bad = int(value) + 1  # type: ignore[call-overload]
    checker = _fed(workload, [*items, (key, bad)])
    verdict = checker.verdict()
    assert verdict is not None and "1 wrong" in verdict


@pytest.mark.parametrize("workload", WORKLOADS)
def test_an_unexpected_record_fails(workload: str) -> None:
    items = _exact(workload)
    if workload == "W1":
        dropped = next(i for i in range(N) if i not in expected("W1", N))  # filtered out: must not appear
        extra: tuple[object, object] = (None, {"id": dropped, "user": "k00000", "score": 0})
    elif workload == "W4":
        extra = (None, {"id": N, "amount": 1, "tier": "free"})  # beyond the input
    else:
        extra = ("k00001@1", 1)
    checker = _fed(workload, [*items, extra])
    verdict = checker.verdict()
    assert verdict is not None and "1 unexpected" in verdict


def test_w3_checker_judges_the_last_count_per_window() -> None:
    items = _exact("W3")
    key, value = items[7]
    assert _fed("W3", [(key, int(value) + 5), *items]).verdict() is None  # type: ignore[call-overload]
    late = _fed("W3", [*items, (key, int(value) + 5)])  # type: ignore[call-overload]
    assert not late.complete()
    assert f"{key}: got {int(value) + 5}, want {value}" in (late.verdict() or "")  # type: ignore[call-overload]


def test_duplicates_are_counted_not_failed() -> None:
    items = _exact("W4")
    checker = _fed("W4", [*items, items[0]])
    assert checker.duplicates == 1 and checker.verdict() is None


def test_a_malformed_record_fails_with_the_record() -> None:
    checker = Checker("W2", N)
    checker.add(b"k00001", b"abc")
    assert "bad output record key=b'k00001' value=b'abc'" in (checker.verdict() or "")


def test_w1_checker_grows_with_the_input() -> None:
    """The latency run produces as it goes and resizes its checker before each read."""
    checker = Checker("W1", 100)
    want = expected("W1", 500)
    for rec_id, value in want.items():
        if rec_id >= checker.n:
            checker.resize(rec_id + 1)
        checker.add(b"", json.dumps(value).encode())
    checker.resize(500)
    assert checker.complete() and checker.verdict() is None
