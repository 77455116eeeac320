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


# ---------------------------------------------------------------- latency matching


def _reference_answer_times(
    workload: str, n: int, outputs: list[tuple[bytes, bytes, float]]
) -> list[float | None]:
    """The obvious definition: input i is answered by the first output of its group counting past it."""
    from bench.workloads import _event

    def group(i: int) -> object:
        e = _event(i)
        if workload in ("W1", "W4"):
            return i
        return e.key if workload == "W2" else f"{e.key}@{e.ts - e.ts % 5_000}"

    seen: dict[object, int] = {}
    times: list[float | None] = []
    for i in range(n):
        g = group(i)
        seen[g] = seen.get(g, 0) + 1
        hit = None
        for key, value, t in outputs:
            if key == b"nonsense":
                continue
            if workload in ("W1", "W4"):
                if json.loads(value)["id"] == i:
                    hit = t
                    break
            elif key.decode() == g and struct.unpack(">q", value)[0] >= seen[g]:
                hit = t
                break
        times.append(hit)
    return times


def _answer_times(workload: str, n: int, outputs: list[tuple[bytes, bytes, float]]) -> list[float | None]:
    import numpy as np

    from bench.workloads import answer_groups, answer_times, output_answer

    groups, _expected = answer_groups(workload, n)
    answers = [(output_answer(workload, k, v, "long"), t) for k, v, t in outputs]
    kept = [(a, t) for a, t in answers if a is not None]
    times = answer_times(
        groups,
        np.array([a[0] for a, _ in kept], dtype=np.int64),
        np.array([a[1] for a, _ in kept], dtype=np.int64),
        np.array([t for _, t in kept], dtype=np.float64),
    )
    return [None if np.isnan(t) else float(t) for t in times]


@pytest.mark.parametrize("workload", WORKLOADS)
def test_each_input_is_answered_by_the_first_output_that_counts_it(workload: str) -> None:
    n = 400
    # Outputs as a system with a record cache writes them: per flush, the latest count per
    # group (or each record, for W1/W4), flushed every 60 inputs, with one group's flush lost.
    outputs: list[tuple[bytes, bytes, float]] = []
    pending: dict[object, tuple[bytes, bytes]] = {}
    counts: dict[str, int] = {}
    from bench.workloads import _event

    for i in range(n):
        e = _event(i)
        if workload in ("W1", "W4"):
            if workload == "W4" or e.amount >= 50:
                pending[i] = _encode(workload, None, {"id": i})
        else:
            name = e.key if workload == "W2" else f"{e.key}@{e.ts - e.ts % 5_000}"
            counts[name] = counts.get(name, 0) + 1
            pending[name] = _encode(workload, name, counts[name])
        if i % 60 == 59 or i == n - 1:
            for j, (k, v) in enumerate(pending.values()):
                if not (i == 119 and j == 0):  # lost: its inputs wait for the group's next flush
                    outputs.append((k, v, float(i)))
            pending.clear()
    outputs.append((b"nonsense", b"\x00", 999.0))  # names no group: answers nothing
    got = _answer_times(workload, n, outputs)
    assert got == _reference_answer_times(workload, n, outputs)
    answered = [t for t in got if t is not None]
    assert answered and all(t < 999.0 for t in answered)
    # A flush answers only inputs that came before it.
    assert all(t is None or t >= i for i, t in enumerate(got))


def test_an_output_below_an_inputs_ordinal_does_not_answer_it() -> None:
    from bench.workloads import _event

    key = _event(0).key
    same = [i for i in range(30_000) if _event(i).key == key][:3]  # three inputs of one key
    n = same[-1] + 1
    outputs = [(key.encode(), struct.pack(">q", 2), 5.0), (key.encode(), struct.pack(">q", 3), 7.0)]
    got = _answer_times("W2", n, outputs)
    assert [got[i] for i in same] == [5.0, 5.0, 7.0]
    assert got[1] is None  # another key: no output named it
