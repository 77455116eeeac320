"""In-memory stand-ins for the parts of PySpark's transformWithState state a kspark stage uses.

They let the stages' per-batch logic run in fast unit tests; the integration
tests run the same stages on Spark's real state store.
"""

from __future__ import annotations

from typing import Any


class ListStateLike:
    """The part of PySpark's ListState a stage uses, kept in memory."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.calls = 0

    def appendValue(self, row: tuple[Any, ...]) -> None:
        self.calls += 1
        self.rows.append(row)

    def put(self, rows: list[tuple[Any, ...]]) -> None:
        self.calls += 1
        self.rows = list(rows)

    def clear(self) -> None:
        self.calls += 1
        self.rows = []

    def get(self) -> list[tuple[Any, ...]]:
        return list(self.rows)


class ValueStateLike:
    """The part of PySpark's ValueState a stage uses, kept in memory."""

    def __init__(self) -> None:
        self.value: tuple[Any, ...] | None = None

    def exists(self) -> bool:
        return self.value is not None

    def get(self) -> tuple[Any, ...] | None:
        return self.value

    def update(self, value: tuple[Any, ...]) -> None:
        self.value = tuple(value)


class HandleLike:
    """A StatefulProcessorHandle whose states are the in-memory ones above (one per name)."""

    def __init__(self) -> None:
        self.values: dict[str, ValueStateLike] = {}
        self.lists: dict[str, ListStateLike] = {}

    def getValueState(self, name: str, schema: Any) -> ValueStateLike:
        return self.values.setdefault(name, ValueStateLike())

    def getListState(self, name: str, schema: Any) -> ListStateLike:
        return self.lists.setdefault(name, ListStateLike())
