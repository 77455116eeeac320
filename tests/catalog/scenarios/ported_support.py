"""What the ``ported_*`` scenario modules share: the scenario constructor, serde kinds, Java's null.

Not a scenario module itself (it is not in ``MODULES``). The ported scenarios
restate cases of Kafka Streams' own test classes in the catalog's terms: each
``doc`` names the Kafka test (``Class.method``) and the edge it checks; each
Java twin lives in ``jvm/reference-harness/.../Ported*.java`` under the name
given as ``java``.
"""

from __future__ import annotations

from typing import Any

from kspark.serde import Serdes

from ..model import Build, Scenario, Step

__all__ = [
    "S",
    "L",
    "SS",
    "SL",
    "j",
    "ported",
    "EMIT_NOW",
    "THROTTLED",
    "WALL_CLOCK",
    "win",
    "WINS",
    "SESS_S",
    "SESS_L",
]

S = Serdes.String()
L = Serdes.Long()

SS = ("string", "string")
SL = ("string", "long")
SESS_S = ("session:string", "string")
SESS_L = ("session:string", "long")


def win(size: int, value: str = "string") -> tuple[str, str]:
    """The serde kinds of a time-windowed output (window size ``size``, String keys)."""
    return (f"window:{size}:string", value)


WINS = win(10)

EMIT_NOW: dict[str, str | int] = {"__emit.interval.ms.kstreams.windowed.aggregation__": "0"}
"""Emit-on-window-close without the wall-clock throttle (Kafka's driver default, set explicitly so that
the scenario means the same on a runner whose wall clock is the machine's)."""

THROTTLED = "its emits are throttled by the wall clock (emit interval > 0), the machine's on Spark"
WALL_CLOCK = "wall-clock punctuation: on Spark the wall clock is the machine's, not the driver's"


def j(x: Any) -> str:
    """Java's ``String.valueOf``: what a Java joiner's ``a + "/" + b`` prints for null."""
    return "null" if x is None else str(x)


def ported(
    name: str,
    build: Build,
    inputs: dict[str, tuple[str, str]],
    outputs: dict[str, tuple[str, str]],
    steps: list[Step],
    doc: str,
    *,
    java: str | None = None,
    config: dict[str, str | int] | None = None,
    **spark: Any,
) -> Scenario:
    """A ported scenario whose Java twin is named after its build function unless ``java`` says."""
    twin = java if java is not None else build.__name__
    return Scenario(name, build, inputs, outputs, steps, java=twin, config=config or {}, doc=doc, **spark)
