"""Stream-stream joins ported from ``KStreamKStreamJoinTest``, ``KStreamKStreamLeftJoinTest`` and
``KStreamKStreamOuterJoinTest``.

Kafka's tests use Integer keys 0..3 (here the one-digit strings "0".."3",
which sort the same); the outer-join tests' right side carries Long values,
as here. Their joiner is ``v1 + "+" + v2`` (null printed as ``null``). Inputs
are Kafka's, shifted by 1000 ms where Kafka starts at 0 (a join has no
alignment, so only the absolute times move). What they pin down: the window
bounds (``before``/``after``, inclusive), grace, and when the left/outer
joins emit the records that found no partner: only once stream time passes
their window end + grace, whichever side's record moves it, in the order of
the outer-join store (time, then key).
"""

from __future__ import annotations

from kspark import Consumed, JoinWindows, StreamJoined, StreamsBuilder

from ..model import Build, P, Scenario, Step, Topics
from .ported_support import SL, SS, L, S, j, ported

__all__ = ["SCENARIOS"]

KEYS = ("0", "1", "2", "3")
SHIFT = 1000


def ss_join(
    kind: str,
    diff: int,
    grace: int | None,
    *,
    before: int | None = None,
    after: int | None = None,
    right_long: bool = False,
) -> Build:
    """``l.<kind>Join(r, v1 + "+" + v2, JoinWindows...)`` to ``out``; ``grace=None``: no grace."""

    def build(b: StreamsBuilder, t: Topics) -> None:
        w = (
            JoinWindows.of_time_difference_with_no_grace(diff)
            if grace is None
            else JoinWindows.of_time_difference_and_grace(diff, grace)
        )
        if before is not None:
            w = w.before(before)
        if after is not None:
            w = w.after(after)
        other = L if right_long else S
        left = b.stream(t["l"], Consumed.with_(S, S))
        right = b.stream(t["r"], Consumed.with_(S, other))
        op = {"inner": left.join, "left": left.left_join, "outer": left.outer_join}[kind]
        op(right, lambda v1, v2: j(v1) + "+" + j(v2), w, StreamJoined.with_(S, S, other)).to(t["out"])

    return build


def batch(
    topic: str,
    prefix: str | None,
    t: int,
    keys: tuple[str, ...] = KEYS,
    *,
    inc: bool = False,
    base: int | None = None,
) -> list[Step]:
    """One record per key at ``t`` (``+ i`` per key when ``inc``): value ``prefix + key``, or for a
    Long topic ``base + key``."""
    return [
        P(topic, k, prefix + k if base is None else base + int(k), t + (i if inc else 0))
        for i, k in enumerate(keys)
    ]


def _io(right_long: bool = False) -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]]:
    return {"l": SS, "r": SL if right_long else SS}, {"out": SS}


T0 = SHIFT
_INNER = [
    *batch("l", "A", T0, KEYS[:2]),
    *batch("r", "a", T0, KEYS[:2]),
    *batch("l", "B", T0),
    *batch("r", "b", T0),
    *batch("l", "C", T0),
    *batch("r", "c", T0, KEYS[:2]),
]
_INNER_WINDOWING = [
    *batch("l", "A", T0, KEYS[:2]),
    *batch("r", "a", T0, KEYS[:2]),
    *batch("l", "B", T0 + 1000, inc=True),
    *(x for d, p in enumerate("bcdef") for x in batch("r", p, T0 + 1100 + d)),
    *(x for d, p in enumerate("ghijk") for x in batch("r", p, T0 + 899 + d)),
    *batch("r", "l", T0 + 2000, inc=True),
    *(x for d, p in enumerate("CDEFG") for x in batch("l", p, T0 + 2100 + d)),
    *(x for d, p in enumerate("HIJKL") for x in batch("l", p, T0 + 1899 + d)),
]
_ASYM_AFTER = [
    *batch("l", "A", 1000, inc=True),
    *(x for d, p in enumerate("abcde") for x in batch("r", p, 999 + d)),
    *(x for d, p in enumerate("fghij") for x in batch("r", p, 1100 + d)),
]
_ASYM_BEFORE = [
    *batch("l", "A", 1000, inc=True),
    *(x for d, p in enumerate("abcde") for x in batch("r", p, 899 + d)),
    *(x for d, p in enumerate("fghij") for x in batch("r", p, 1000 + d)),
]
_LEFT_DUPLICATES = [
    P("l", "0", "A0", T0),
    P("l", "0", "A0-0", T0),
    P("r", "1", "a0", T0 + 111),
    P("r", "2", "dummy", T0 + 500),
    P("l", "2", "A2", T0 + 1000),
    P("l", "2", "A2-0", T0 + 1000),
    P("r", "2", "a2", T0 + 1001),
    P("r", "3", "a3", T0 + 315),
]


def _expired(first: str, second: str, closer: str, right_long: bool) -> list[Step]:
    """Kafka's ``...ExpiredNonJoinedRecordsAreEmittedBy...Processor`` inputs: three records of side
    ``first`` (two of key 0), one partner on ``second``, then a record far ahead on ``closer``."""
    other = "r" if closer == "l" else "l"

    def value(topic: str, s: str, n: int) -> str | int:
        return n if right_long and topic == "r" else s

    return [
        P(first, "0", value(first, "A0", 10), T0 + 1),
        P(first, "1", value(first, "A1", 11), T0 + 2),
        P(first, "0", value(first, "A0-0", 12), T0 + 3),
        P(second, "1", value(second, "a1", 11), T0 + 3),
        P(closer, "2", value(closer, "dummy", 100), T0 + 401),
        P(other, "2", value(other, "dummy", 100), T0 + 402),
    ]


_ZERO_AFTER = [
    *batch("l", "A", 1000, inc=True),
    *(x for d, p in enumerate("abcde") for x in batch("r", p, 999 + d)),
    *batch("r", "f", 1100),
]
_ORDERING = [P("l", "0", "A0", T0), P("l", "1", "A1", T0 + 100), P("r", "1", "a1", T0 + 110)]
_LEFT_GRACE = [*batch("l", "A", T0, KEYS[:2]), *batch("r", "a", T0 + 101), P("r", "0", "dummy", T0 + 1201)]
_LEFT_WINDOWING = [
    *batch("l", "A", T0, KEYS[:2]),
    *batch("r", "a", T0),
    *batch("r", "b", T0 + 1000, inc=True),
    *(x for d, p in enumerate("BCDEF") for x in batch("l", p, T0 + 1100 + d)),
    P("l", "0", "dummy", T0 + 1405),
    *(x for d, p in enumerate("GHIJK") for x in batch("l", p, T0 + 899 + d)),
    P("l", "0", "dummy", T0 + 1203),
]
_LEFT_ASYM = [
    *batch("l", "A", T0, KEYS[:2], inc=True),
    P("r", "0", "a0", T0 + 100),
    P("r", "1", "a1", T0 + 102),
]
_OUTER_DUPLICATES = [
    P("l", "0", "A0", T0),
    P("l", "0", "A0-0", T0),
    P("r", "1", 11, T0),
    P("r", "1", 12, T0),
    P("r", "1", 10, T0 + 111),
    P("r", "3", 100, T0 + 211),
    P("l", "2", "A2", T0 + 200),
    P("l", "2", "A2-0", T0 + 200),
    P("r", "2", 13, T0 + 201),
    P("r", "2", 14, T0 + 201),
    P("r", "3", 100, T0 + 1500),
]
_OUTER_ORDERING = [P("l", "0", "A0", T0), P("l", "1", "A1", T0 + 100), P("r", "1", 11, T0 + 110)]
_OUTER_GRACE = [
    P("l", "0", "A0", T0),
    P("r", "1", 11, T0),
    P("l", "1", "A1", T0 + 101),
    P("r", "0", 10, T0 + 101),
    P("r", "0", 100, T0 + 112),
]
_OUTER_ASYM_ALL = [
    P("l", "0", "A0", T0 + 29),
    P("l", "1", "A1", T0 + 30),
    P("r", "2", 12, T0 + 31),
    P("r", "3", 13, T0 + 36),
    P("r", "4", 14, T0 + 37),
    P("r", "5", 15, T0 + 50),
]
_OUTER_RUN = [
    *batch("l", "A", T0, KEYS[:2]),
    *batch("r", None, T0, KEYS[:2], base=10),
    *batch("l", "B", T0, KEYS[:3]),
    *batch("r", None, T0, base=20),
    *batch("l", "C", T0),
    P("l", "0", "dummy", T0 + 400),
]
_OUTER_WINDOWING = [
    *batch("l", "A", T0, KEYS[:2]),
    *batch("r", None, T0, base=10),
    *batch("r", None, T0 + 1000, inc=True, base=20),
    *(x for d, p in enumerate("BCDEF") for x in batch("l", p, T0 + 1100 + d)),
    P("l", "0", "dummy", T0 + 1405),
    *(x for d, p in enumerate("GHIJK") for x in batch("l", p, T0 + 899 + d)),
    P("l", "0", "dummy", T0 + 1103),
]
_OUTER_BEFORE_ZERO = [
    *batch("l", "A", T0, KEYS[:2], inc=True),
    P("r", "0", 10, T0 + 100),
    P("r", "1", 11, T0 + 102),
    P("r", "2", 12, T0 + 103),
    P("l", "2", "A2", T0 + 103),
]
_OUTER_AFTER_ZERO = [
    *batch("l", "A", T0, KEYS[:2], inc=True),
    P("r", "1", 11, T0 + 1),
    P("r", "2", 12, T0 + 101),
    P("r", "3", 13, T0 + 101),
    P("l", "2", "A2", T0 + 201),
]

_J = "KStreamKStreamJoinTest"
_LJ = "KStreamKStreamLeftJoinTest"
_OJ = "KStreamKStreamOuterJoinTest"


def _j(name: str, build: Build, steps: list[Step], doc: str, right_long: bool = False) -> Scenario:
    return ported(name, build, *_io(right_long), steps, doc, java=name)


SCENARIOS: list[Scenario] = [
    _j(
        "pj_inner",
        ss_join("inner", 100, None),
        _INNER,
        f"{_J}.testJoin: every pair of records of a key within 100 ms joins, in store order.",
    ),
    _j(
        "pj_outer_full",
        ss_join("outer", 100, 24 * 3600 * 1000),
        _INNER,
        f"{_J}.testOuterJoin: with a 24 h grace no unmatched record is emitted yet; it matches as the "
        "inner join does.",
    ),
    _j(
        "pj_inner_windowing",
        ss_join("inner", 100, None),
        _INNER_WINDOWING,
        f"{_J}.testWindowing: a record joins partners exactly 100 ms before or after it, not 101.",
    ),
    _j(
        "pj_inner_asym_after",
        ss_join("inner", 0, None, after=100),
        _ASYM_AFTER,
        f"{_J}.testAsymmetricWindowingAfter: JoinWindows.of(0).after(100): right records in [t, t + 100].",
    ),
    _j(
        "pj_inner_asym_before",
        ss_join("inner", 0, None, before=100),
        _ASYM_BEFORE,
        f"{_J}.testAsymmetricWindowingBefore: JoinWindows.of(0).before(100): right records in [t - 100, t].",
    ),
    _j(
        "pj_left_duplicates",
        ss_join("left", 100, 10),
        _LEFT_DUPLICATES,
        f"{_LJ}.testLeftJoinDuplicates: two unmatched left records with the same key and time are both "
        "emitted with null once the window + grace closes; a late right record joins nothing.",
    ),
    _j(
        "pj_left_expired_by_left",
        ss_join("left", 100, 0),
        _expired("l", "r", "l", False),
        f"{_LJ}.testLeftExpiredNonJoinedRecordsAreEmittedByTheLeftProcessor: a left record far ahead emits "
        "the unmatched left records.",
    ),
    _j(
        "pj_left_expired_by_right",
        ss_join("left", 100, 0),
        _expired("l", "r", "r", False),
        f"{_LJ}.testLeftExpiredNonJoinedRecordsAreEmittedByTheRightProcessor: so does a right record.",
    ),
    _j(
        "pj_left_right_never_by_left",
        ss_join("left", 100, 0),
        _expired("r", "l", "l", False),
        f"{_LJ}.testRightNonJoinedRecordsAreNeverEmittedByTheLeftProcessor: unmatched right records "
        "never are.",
    ),
    _j(
        "pj_left_right_never_by_right",
        ss_join("left", 100, None),
        _expired("r", "l", "r", False),
        f"{_LJ}.testRightNonJoinedRecordsAreNeverEmittedByTheRightProcessor: nor by the right side.",
    ),
    _j(
        "pj_left_zero_after",
        ss_join("left", 100, None, after=0),
        _ZERO_AFTER,
        f"{_LJ}.testLeftJoinedRecordsWithZeroAfterAreEmitted: after(0): a left record at t matches right "
        "records in [t - 100, t]; records whose window closed are emitted with null as stream time moves.",
    ),
    _j(
        "pj_left_ordering",
        ss_join("left", 100, None),
        _ORDERING,
        f"{_LJ}.testOrdering: the expired unmatched record is emitted before the join result of the record "
        "that expired it.",
    ),
    _j(
        "pj_left_grace",
        ss_join("left", 100, 10),
        _LEFT_GRACE,
        f"{_LJ}.testGracePeriod: right records 101 ms later are outside the window; the unmatched left "
        "records are emitted only after window + grace.",
    ),
    _j(
        "pj_left_windowing",
        ss_join("left", 100, None),
        _LEFT_WINDOWING,
        f"{_LJ}.testWindowing: window bounds of the left join, late left records emitted with null at once.",
    ),
    _j(
        "pj_left_asym_before_zero",
        ss_join("left", 100, None, before=0),
        _LEFT_ASYM,
        f"{_LJ}.shouldNotEmitLeftJoinResultForAsymmetricWindow: before(0): a right record 100 ms after a "
        "left one joins; the unmatched left record waits for its window to close.",
    ),
    _j(
        "pj_outer_duplicates",
        ss_join("outer", 100, 10, right_long=True),
        _OUTER_DUPLICATES,
        f"{_OJ}.testOuterJoinDuplicates: duplicate unmatched records on both sides are each emitted once, in "
        "time order, when their windows close.",
        True,
    ),
    _j(
        "pj_outer_left_expired_by_left",
        ss_join("outer", 100, None, right_long=True),
        _expired("l", "r", "l", True),
        f"{_OJ}.testLeftExpiredNonJoinedRecordsAreEmittedByTheLeftProcessor.",
        True,
    ),
    _j(
        "pj_outer_left_expired_by_right",
        ss_join("outer", 100, 0, right_long=True),
        _expired("l", "r", "r", True),
        f"{_OJ}.testLeftExpiredNonJoinedRecordsAreEmittedByTheRightProcessor.",
        True,
    ),
    _j(
        "pj_outer_right_expired_by_left",
        ss_join("outer", 100, None, right_long=True),
        _expired("r", "l", "l", True),
        f"{_OJ}.testRightExpiredNonJoinedRecordsAreEmittedByTheLeftProcessor: unmatched right records are "
        "emitted as null+value.",
        True,
    ),
    _j(
        "pj_outer_right_expired_by_right",
        ss_join("outer", 100, 0, right_long=True),
        _expired("r", "l", "r", True),
        f"{_OJ}.testRightExpiredNonJoinedRecordsAreEmittedByTheRightProcessor.",
        True,
    ),
    _j(
        "pj_outer_ordering",
        ss_join("outer", 100, None, right_long=True),
        _OUTER_ORDERING,
        f"{_OJ}.testOrdering.",
        True,
    ),
    _j(
        "pj_outer_grace",
        ss_join("outer", 100, 10, right_long=True),
        _OUTER_GRACE,
        f"{_OJ}.testGracePeriod: unmatched records of both sides wait for window + grace (10).",
        True,
    ),
    _j(
        "pj_outer_asym_emit_all",
        ss_join("outer", 5, None, after=20, right_long=True),
        _OUTER_ASYM_ALL,
        f"{_OJ}.testEmitAllNonJoinedResultsForAsymmetricWindow: before 5, after 20: each side's unmatched "
        "records close at their own side's bound.",
        True,
    ),
    _j(
        "pj_outer_run",
        ss_join("outer", 100, None, right_long=True),
        _OUTER_RUN,
        f"{_OJ}.testOuterJoinWithDefaultSuppliers (runOuterJoin): the default stores; the last record "
        "closes the windows, and every record had found a partner.",
        True,
    ),
    _j(
        "pj_outer_windowing",
        ss_join("outer", 100, None, right_long=True),
        _OUTER_WINDOWING,
        f"{_OJ}.testWindowing: window bounds of the outer join and the unmatched records of both sides.",
        True,
    ),
    _j(
        "pj_outer_before_zero",
        ss_join("outer", 100, None, before=0, right_long=True),
        _OUTER_BEFORE_ZERO,
        f"{_OJ}.testShouldNotEmitLeftJoinResultForAsymmetricBeforeWindow.",
        True,
    ),
    _j(
        "pj_outer_after_zero",
        ss_join("outer", 100, None, after=0, right_long=True),
        _OUTER_AFTER_ZERO,
        f"{_OJ}.testShouldNotEmitLeftJoinResultForAsymmetricAfterWindow.",
        True,
    ),
]
