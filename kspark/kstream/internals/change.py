"""``Change``: how a KTable update travels between DSL processors.

Kafka Streams forwards table updates as a pair of the new and the previous
value so that downstream operators (re-grouping, aggregation with a
subtractor, table-table joins) can retract what they derived from the old
value. The old value is only filled in when a downstream operator asked for
it (``enable_send_old_values``); otherwise it is ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["Change"]

V = TypeVar("V")


@dataclass(frozen=True)
class Change(Generic[V]):
    """A table update: ``new_value`` replaces ``old_value`` (either may be ``None``)."""

    new_value: V | None
    old_value: V | None
    is_latest: bool = True

    def __repr__(self) -> str:
        # Kafka prints a Change as "(new<-old)"; tests and print() show the same.
        return f"({self.new_value}<-{self.old_value})"

    def with_values(self, new_value: Any, old_value: Any) -> Change[Any]:
        return Change(new_value, old_value, self.is_latest)
