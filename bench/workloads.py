"""The benchmark workloads: their input data, the result each system must reach, and its check.

Every system reads the same pre-loaded topics and must end at the same result,
computed here in plain Python from the generated input:

* W1 stateless: JSON events, keep ``amount >= 50`` (about half), map to
  ``{"id", "user", "score": 2 * amount}``.
* W2 count by key: 10,000 keys; the last output per key is its count.
* W3 tumbling 5 s windows, 30 s grace, count per key; input timestamps run
  5 ms apart per record and one record in ten is up to 20 s late (inside the
  grace, so no record may be dropped); output key ``<key>@<window start>``.
* W4 stream-table join: each event joined with its user's row of a 10,000-row
  table (pre-loaded with earlier timestamps), the joiner written in the
  system's language; output ``{"id", "amount", "tier"}``.
"""

from __future__ import annotations

import json
import struct
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "KEYS",
    "BASE_MS",
    "WORKLOADS",
    "Event",
    "events",
    "users",
    "expected",
    "Checker",
    "decode_count",
    "answer_groups",
    "output_answer",
    "answer_times",
]

KEYS = 10_000
BASE_MS = 1_700_000_000_000
"""Event time of record 0 (fixed so that every run produces identical topics)."""
STEP_MS = 5
WINDOW_MS = 5_000
GRACE_MS = 30_000
LATE_MAX_MS = 20_000
WORKLOADS = ("W1", "W2", "W3", "W4")
TIERS = ("free", "pro", "team", "enterprise")


@dataclass(frozen=True)
class Event:
    key: str
    id: int
    amount: int
    ts: int


def _event(i: int) -> Event:
    key = f"k{(i * 7919) % KEYS:05d}"
    late = ((i * 2654435761) >> 7) % LATE_MAX_MS if i % 10 == 3 else 0
    ts = BASE_MS + i * STEP_MS - late
    return Event(key, i, (i * 31 + i // 100) % 100, ts)


def events(n: int) -> Iterator[Event]:
    for i in range(n):
        yield _event(i)


def event_value(e: Event) -> bytes:
    return json.dumps(
        {"id": e.id, "user": e.key, "amount": e.amount, "ts": e.ts}, separators=(",", ":")
    ).encode()


def users() -> Iterator[tuple[str, bytes, int]]:
    """The W4 table: (key, JSON value, timestamp before every event)."""
    for k in range(KEYS):
        key = f"k{k:05d}"
        yield key, json.dumps({"user": key, "tier": TIERS[k % len(TIERS)]}).encode(), BASE_MS - 60_000


def expected(workload: str, n: int) -> Any:
    """W1/W4: {id: output dict}; W2/W3: {output key: final count}.

    The obviously right definition, kept small-n only: :class:`Checker` streams
    the same result (tests/bench compares the two).
    """
    if workload == "W1":
        return {e.id: {"id": e.id, "user": e.key, "score": 2 * e.amount} for e in events(n) if e.amount >= 50}
    if workload == "W2":
        return dict(Counter(e.key for e in events(n)))
    if workload == "W3":
        return dict(Counter(f"{e.key}@{e.ts - e.ts % WINDOW_MS}" for e in events(n)))
    if workload == "W4":
        tier = {k: json.loads(v)["tier"] for k, v, _ts in users()}
        return {e.id: {"id": e.id, "amount": e.amount, "tier": tier[e.key]} for e in events(n)}
    raise ValueError(f"unknown workload {workload!r}; expected one of {WORKLOADS}")


def decode_count(value: bytes, fmt: str) -> int:
    """A count as a system writes it.

    ``long``: 8-byte big-endian (Kafka's LongSerializer); ``json``: a JSON number;
    ``jsonc``: field ``c`` of a JSON object; ``str``: decimal text.
    """
    if fmt == "long":
        if len(value) != 8:
            raise ValueError(f"a Long count must be 8 bytes, got {len(value)}: {value!r}")
        return int(struct.unpack(">q", value)[0])
    if fmt == "json":
        return int(json.loads(value))
    if fmt == "jsonc":
        return int(json.loads(value)["c"])
    if fmt == "str":
        return int(value.decode())
    raise ValueError(f"unknown count format {fmt!r}")


def _indices(n: int, start: int = 0, chunk: int = 5_000_000) -> Iterator[np.ndarray]:
    """Record indices start..n-1 as int64 arrays of at most ``chunk`` (bounded memory at 50M records)."""
    for lo in range(start, n, chunk):
        yield np.arange(lo, min(n, lo + chunk), dtype=np.int64)


def _key_indices(i: np.ndarray) -> Any:
    """``_event(i).key`` as its number (``k00042`` -> 42), for an array of indices."""
    return (i * 7919) % KEYS


def _amounts(i: np.ndarray) -> Any:
    return (i * 31 + i // 100) % 100


def _window_starts(i: np.ndarray) -> Any:
    """The W3 window start of each ``_event(i).ts`` (int64 holds ``i * 2654435761`` up to i = 3.4e9)."""
    late = np.where(i % 10 == 3, ((i * 2654435761) >> 7) % LATE_MAX_MS, 0)
    ts = BASE_MS + i * STEP_MS - late
    return ts - ts % WINDOW_MS


_W3_FIRST_WINDOW = BASE_MS - LATE_MAX_MS - WINDOW_MS
"""At or before every W3 window start (the earliest event is at most LATE_MAX_MS late)."""


def _w3_code(key_index: int, window_start: int) -> int:
    return ((window_start - _W3_FIRST_WINDOW) // WINDOW_MS) * KEYS + key_index


def _w3_name(code: int) -> str:
    return f"k{code % KEYS:05d}@{_W3_FIRST_WINDOW + (code // KEYS) * WINDOW_MS}"


def _w3_parse(name: str) -> int | None:
    """The code of an output key ``k<5 digits>@<window start>``, or None when it is not one."""
    key, at, start = name.partition("@")
    if not (at and len(key) == 6 and key[0] == "k" and key[1:].isdigit() and start.isdigit()):
        return None
    window_start = int(start)
    if window_start < _W3_FIRST_WINDOW or window_start % WINDOW_MS:
        return None
    return _w3_code(int(key[1:]), window_start)


class Checker:
    """Folds output records in (partition, offset) order and says whether they are complete and exact.

    Streams: each W1/W4 output record is checked when it arrives against the
    event its id names, and only a bit per id is kept; W3's expected counts are
    two sorted numpy arrays. The whole expected output as Python dicts took
    7.9 GB for W4 at 10M records, too much for 50M on this machine.
    A W1/W4 record is wrong when it differs from its expected value, even if a
    later duplicate is right; W2/W3 are judged on the last count per key.
    """

    def __init__(self, workload: str, n: int, count_format: str = "long") -> None:
        if workload not in WORKLOADS:
            raise ValueError(f"unknown workload {workload!r}; expected one of {WORKLOADS}")
        self.workload = workload
        self.count_format = count_format
        self.records = 0
        self.duplicates = 0
        self.errors: list[str] = []
        self.n = 0
        # W1/W4: which ids were seen, and how the output differed from the expected.
        self._seen = bytearray()
        self.distinct = 0
        self._want_distinct = 0
        self._wrong = 0
        self._wrong_example = ""
        self._unexpected = 0
        self._unexpected_examples: list[str] = []
        # W2: final count per key; W3: the same as sorted codes (see _w3_code) and counts.
        self.last: dict[str, int] = {}
        self.want: dict[str, int] = {}
        self._codes = np.empty(0, dtype=np.int64)
        self._want_counts = np.empty(0, dtype=np.int64)
        self._got_counts = np.empty(0, dtype=np.int64)
        self._matched = 0
        self.resize(n)

    def resize(self, n: int) -> None:
        """Expect the output of the first ``n`` events (the latency run's input grows as it goes)."""
        if n < self.n:
            raise ValueError(f"a checker only grows: {n} < {self.n}")
        if self.records and self.workload in ("W2", "W3"):
            raise ValueError("a W2/W3 checker cannot grow after output was added")
        before, self.n = self.n, n
        if self.workload in ("W1", "W4"):
            self._seen.extend(bytes(n - before))
            self._want_distinct += (
                sum(int((_amounts(i) >= 50).sum()) for i in _indices(n, before))
                if self.workload == "W1"
                else n - before
            )
        elif self.workload == "W2":
            counts = sum(
                (np.bincount(_key_indices(i), minlength=KEYS) for i in _indices(n)), np.zeros(KEYS, np.int64)
            )
            self.want = {f"k{k:05d}": int(c) for k, c in enumerate(counts) if c}
        else:
            chunks = [
                (_window_starts(i) - _W3_FIRST_WINDOW) // WINDOW_MS * KEYS + _key_indices(i)
                for i in _indices(n)
            ]
            self._codes, self._want_counts = np.unique(
                np.concatenate(chunks) if chunks else np.empty(0, dtype=np.int64), return_counts=True
            )
            self._got_counts = np.full(len(self._codes), -1, dtype=np.int64)

    def add(self, key: bytes | None, value: bytes | None) -> None:
        self.records += 1
        try:
            if self.workload in ("W1", "W4"):
                self._add_record(json.loads(value or b"null"))
            elif self.workload == "W2":
                self.last[(key or b"").decode()] = decode_count(value or b"", self.count_format)
            else:
                self._add_w3((key or b"").decode(), decode_count(value or b"", self.count_format))
        except Exception as e:  # a malformed record fails the check, with the record in the message
            if len(self.errors) < 5:
                self.errors.append(f"bad output record key={key!r} value={value!r}: {e}")

    def _add_record(self, out: Any) -> None:
        rec_id = out["id"]
        want = self._expected_record(rec_id) if isinstance(rec_id, int) and 0 <= rec_id < self.n else None
        if want is None:
            self._unexpected += 1
            if len(self._unexpected_examples) < 3:
                self._unexpected_examples.append(repr(out))
            return
        if self._seen[rec_id]:
            self.duplicates += 1
        else:
            self._seen[rec_id] = 1
            self.distinct += 1
        if out != want:
            self._wrong += 1
            if not self._wrong_example:
                self._wrong_example = f"id {rec_id}: got {out!r}, want {want!r}"

    def _expected_record(self, i: int) -> dict[str, Any] | None:
        e = _event(i)
        if self.workload == "W1":
            return {"id": e.id, "user": e.key, "score": 2 * e.amount} if e.amount >= 50 else None
        return {"id": e.id, "amount": e.amount, "tier": TIERS[int(e.key[1:]) % len(TIERS)]}

    def _add_w3(self, name: str, count: int) -> None:
        code = _w3_parse(name)
        pos = int(np.searchsorted(self._codes, code)) if code is not None else len(self._codes)
        if pos >= len(self._codes) or self._codes[pos] != code:
            self._unexpected += 1
            if len(self._unexpected_examples) < 3:
                self._unexpected_examples.append(f"{name}={count}")
            return
        want = int(self._want_counts[pos])
        self._matched += (count == want) - (int(self._got_counts[pos]) == want)
        self._got_counts[pos] = count

    def complete(self) -> bool:
        if self.workload in ("W1", "W4"):
            return self.distinct >= self._want_distinct
        if self.workload == "W2":
            return bool(self.last == self.want)
        return self._matched == len(self._codes) and not self._unexpected

    def verdict(self) -> str | None:
        """None when the output equals the expected result; else what differs."""
        if self.errors:
            return self.errors[0]
        if self.workload == "W2":
            return self._dict_verdict()
        missing_examples: list[Any]
        if self.workload in ("W1", "W4"):
            missing = self._want_distinct - self.distinct
            wrong, wrong_example = self._wrong, self._wrong_example
            missing_examples = self._missing_ids(3) if missing else []
        else:
            got, want = self._got_counts, self._want_counts
            absent = np.flatnonzero(got < 0)
            differs = np.flatnonzero((got >= 0) & (got != want))
            missing, wrong = len(absent), len(differs)
            missing_examples = [_w3_name(int(self._codes[p])) for p in absent[:3]]
            wrong_example = ""
            if wrong:
                p = int(differs[0])
                wrong_example = f"{_w3_name(int(self._codes[p]))}: got {int(got[p])}, want {int(want[p])}"
        if not (missing or wrong or self._unexpected):
            return None
        return (
            f"{missing} missing (e.g. {missing_examples}), {self._unexpected} unexpected "
            f"(e.g. {self._unexpected_examples}), {wrong} wrong"
            + (f"; e.g. {wrong_example}" if wrong_example else "")
        )

    def _missing_ids(self, limit: int) -> list[int]:
        ids: list[int] = []
        for i in np.flatnonzero(np.frombuffer(self._seen, dtype=np.uint8) == 0):
            if self._expected_record(int(i)) is not None:
                ids.append(int(i))
                if len(ids) == limit:
                    break
        return ids

    def _dict_verdict(self) -> str | None:
        got, want = self.last, self.want
        if got == want:
            return None
        missing = [k for k in want if k not in got]
        extra = [k for k in got if k not in want]
        wrong = [k for k in want if k in got and got[k] != want[k]]
        detail = f"; e.g. {wrong[0]!r}: got {got[wrong[0]]!r}, want {want[wrong[0]]!r}" if wrong else ""
        return (
            f"{len(missing)} missing (e.g. {missing[:3]}), {len(extra)} unexpected (e.g. {extra[:3]}), "
            f"{len(wrong)} wrong{detail}"
        )


# ---------------------------------------------------------------- latency: which output answers which input

_COUNT_LIMIT = 1 << 32
"""Counts stay below this in every run (it packs (group, count) into one int64 in answer_times)."""


def answer_groups(workload: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """For inputs 0..n-1: the group an output must name to answer each, and whether one is expected.

    W1/W4: the input's id (one output per input; W1 expects one only for ``amount >= 50``);
    W2: its key; W3: its key and window (:func:`_w3_code`). In W2/W3 an output with count
    ``c`` answers the first ``c`` inputs of its group, in input order.
    """
    i = np.arange(n, dtype=np.int64)
    if workload in ("W1", "W4"):
        return i, (_amounts(i) >= 50) if workload == "W1" else np.ones(n, dtype=bool)
    if workload == "W2":
        return _key_indices(i), np.ones(n, dtype=bool)
    if workload == "W3":
        return (_window_starts(i) - _W3_FIRST_WINDOW) // WINDOW_MS * KEYS + _key_indices(i), np.ones(
            n, dtype=bool
        )
    raise ValueError(f"unknown workload {workload!r}; expected one of {WORKLOADS}")


def output_answer(workload: str, key: bytes | None, value: bytes | None, fmt: str) -> tuple[int, int] | None:
    """(group, count) of an output record (see :func:`answer_groups`); None if it names no group.

    A record that names no group answers nothing; :class:`Checker` reports it as unexpected.
    """
    try:
        if workload in ("W1", "W4"):
            rec_id = json.loads(value or b"null")["id"]
            return (rec_id, 1) if isinstance(rec_id, int) and rec_id >= 0 else None
        name = (key or b"").decode()
        if workload == "W2":
            group = int(name[1:]) if len(name) == 6 and name[0] == "k" and name[1:].isdigit() else None
        else:
            group = _w3_parse(name)
        count = decode_count(value or b"", fmt)
    except (ValueError, TypeError, KeyError, UnicodeDecodeError):
        return None
    return (group, count) if group is not None and 0 <= count < _COUNT_LIMIT else None


def answer_times(
    groups: np.ndarray, out_groups: np.ndarray, out_counts: np.ndarray, out_times: np.ndarray
) -> np.ndarray:
    """Per input, the time of the first output that answers it (NaN: none did).

    ``groups`` from :func:`answer_groups`; the outputs as parallel arrays in the order
    they were read (a group lives in one partition, so that is its append order).
    Input ``i`` is the ``k``-th of its group; the first output of that group whose count
    reaches ``k`` answers it.
    """
    n = len(groups)
    order = np.argsort(groups, kind="stable")
    sorted_groups = groups[order]
    firsts = (
        np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]]) if n else np.empty(0, np.int64)
    )
    run_starts = np.repeat(firsts, np.diff(np.r_[firsts, n]))
    ordinal = np.empty(n, dtype=np.int64)
    ordinal[order] = np.arange(n) - run_starts + 1
    by_group = np.argsort(out_groups, kind="stable")  # stable: each group's outputs stay in append order
    # (group, count) packed so that a running maximum is each group's highest count so far and
    # the whole array stays sorted: every value of a group is above every value of the one before.
    packed = np.maximum.accumulate(
        out_groups[by_group].astype(np.int64) * _COUNT_LIMIT + out_counts[by_group]
    )
    wanted = groups.astype(np.int64) * _COUNT_LIMIT + ordinal
    pos = np.searchsorted(packed, wanted)
    found = pos < len(packed)
    found[found] &= packed[pos[found]] // _COUNT_LIMIT == groups[found]
    times = np.full(n, np.nan)
    times[found] = out_times[by_group][pos[found]]
    return times
