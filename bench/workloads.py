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
    """W1/W4: {id: output dict}; W2/W3: {output key: final count}."""
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


class Checker:
    """Folds output records in (partition, offset) order and says whether they are complete and exact."""

    def __init__(self, workload: str, n: int, count_format: str = "long") -> None:
        self.workload = workload
        self.want = expected(workload, n)
        self.count_format = count_format
        self.by_id: dict[int, Any] = {}
        self.duplicates = 0
        self.last: dict[str, int] = {}
        self.records = 0
        self.errors: list[str] = []

    def add(self, key: bytes | None, value: bytes | None) -> None:
        self.records += 1
        try:
            if self.workload in ("W1", "W4"):
                out = json.loads(value or b"null")
                if out["id"] in self.by_id:
                    self.duplicates += 1
                self.by_id[out["id"]] = out
            else:
                self.last[(key or b"").decode()] = decode_count(value or b"", self.count_format)
        except Exception as e:  # a malformed record fails the check, with the record in the message
            if len(self.errors) < 5:
                self.errors.append(f"bad output record key={key!r} value={value!r}: {e}")

    def complete(self) -> bool:
        if self.workload in ("W1", "W4"):
            return len(self.by_id) >= len(self.want)
        return bool(self.last == self.want)

    def verdict(self) -> str | None:
        """None when the output equals the expected result; else what differs."""
        if self.errors:
            return self.errors[0]
        got = self.by_id if self.workload in ("W1", "W4") else self.last
        if got == self.want:
            return None
        missing = [k for k in self.want if k not in got]
        extra = [k for k in got if k not in self.want]
        wrong = [k for k in self.want if k in got and got[k] != self.want[k]]
        sample = wrong[:1]
        detail = (
            f"; e.g. {sample[0]!r}: got {got[sample[0]]!r}, want {self.want[sample[0]]!r}" if sample else ""
        )
        return (
            f"{len(missing)} missing (e.g. {missing[:3]}), {len(extra)} unexpected (e.g. {extra[:3]}), "
            f"{len(wrong)} wrong{detail}"
        )
