"""What a Spark run of a scenario is compared on: outputs per topic and key, and how much of them.

Outputs are :data:`PerKey`: output topic (logical name) -> ``repr`` of the key
(windowed keys rendered as the drivers render them) -> the (value, timestamp)
sequence in the order the topic holds it. :func:`project` keeps the part of
it a comparison mode defines (tests/catalog/__init__.py states the rules).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .driver import render
from .model import COMPARE_MODES

__all__ = [
    "PerKey",
    "MODES",
    "add",
    "project",
    "difference",
    "shifted_outputs",
]

PerKey = dict[str, dict[str, list[tuple[Any, int]]]]
"""output topic -> repr(key) -> [(value, timestamp), ...] in the topic's order."""

MODES = COMPARE_MODES

_NULL_KEY = repr(None)


def add(out: PerKey, topic: str, key: Any, value: Any, timestamp: int) -> None:
    out.setdefault(topic, {}).setdefault(repr(render(key)), []).append((render(value), timestamp))


def _sorted(pairs: Iterable[tuple[Any, int]]) -> list[tuple[Any, int]]:
    return sorted(pairs, key=repr)


def project(outputs: PerKey, mode: str, partitions: int) -> PerKey:
    """The part of ``outputs`` that ``mode`` compares. With several partitions, records with a null key
    are placed at random (by Kafka's producer as by the runner's), so their order is not defined:
    they compare as a multiset in every mode but ``final``, where they are left out."""
    if mode not in MODES:
        raise ValueError(f"unknown comparison mode {mode!r} (one of {MODES})")
    out: PerKey = {}
    for topic, per_key in outputs.items():
        kept: dict[str, list[tuple[Any, int]]] = {}
        for key, seq in per_key.items():
            unordered = partitions > 1 and key == _NULL_KEY
            if mode == "final":
                if not unordered and seq[-1][0] is not None:
                    kept[key] = [seq[-1]]
            elif mode == "multiset" or unordered:
                kept[key] = _sorted(seq)
            else:
                kept[key] = list(seq)
        out[topic] = kept
    return out


def difference(got: PerKey, expected: PerKey) -> str:
    """A readable account of where ``got`` and ``expected`` differ, per topic and key."""
    lines = []
    for topic in sorted(set(got) | set(expected)):
        g, e = got.get(topic, {}), expected.get(topic, {})
        for key in sorted(set(g) | set(e)):
            if g.get(key) != e.get(key):
                lines.append(f"{topic} {key}:\n  got      {g.get(key)}\n  expected {e.get(key)}")
    return "\n".join(lines) or "no difference"


def shifted_outputs(outputs: PerKey, shift: int) -> PerKey:
    """``outputs`` with every timestamp moved back by ``shift`` (for reading a shifted run)."""
    return {
        topic: {key: [(v, ts - shift) for v, ts in seq] for key, seq in per_key.items()}
        for topic, per_key in outputs.items()
    }
