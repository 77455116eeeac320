"""Stateful processors for ``tws_task_grouping.py`` (Spark's Python workers must import them).

Both count records per key into a ``MapState`` once per key per batch, the
shape of kspark's task-grouped stage: one group per task, all its rows in
one call. They differ only in the API: Row objects vs pandas frames.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
from pyspark.sql import Row
from pyspark.sql.streaming.stateful_processor import StatefulProcessor
from pyspark.sql.types import BinaryType, LongType, StructField, StructType

__all__ = ["RowTaskCounter", "PandasTaskCounter", "PandasRowDrain"]

_KEY = StructType([StructField("k", BinaryType())])
_VALUE = StructType([StructField("v", LongType())])


def _flush(state: Any, counts: dict[bytes, int]) -> None:
    for k, c in counts.items():
        old = state.getValue((k,))
        state.updateValue((k,), ((old[0] if old else 0) + c,))


class RowTaskCounter(StatefulProcessor):
    def init(self, handle: Any) -> None:
        self.state = handle.getMapState("store", _KEY, _VALUE)

    def handleInputRows(self, key: Any, rows: Iterator[Row], timerValues: Any) -> Iterator[Row]:
        counts: dict[bytes, int] = {}
        n = 0
        for r in rows:
            counts[r.k] = counts.get(r.k, 0) + 1
            n += 1
        _flush(self.state, counts)
        yield Row(task=key[0], n=n, keys=len(counts))

    def close(self) -> None:
        pass


class PandasTaskCounter(StatefulProcessor):
    def init(self, handle: Any) -> None:
        self.state = handle.getMapState("store", _KEY, _VALUE)

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any
    ) -> Iterator[pd.DataFrame]:
        counts: dict[bytes, int] = {}
        n = 0
        for frame in rows:
            for k in frame["k"]:
                counts[k] = counts.get(k, 0) + 1
            n += len(frame)
        _flush(self.state, counts)
        yield pd.DataFrame({"task": [key[0]], "n": [n], "keys": [len(counts)]})

    def close(self) -> None:
        pass


class PandasRowDrain(StatefulProcessor):
    """Takes every frame of its group and keeps nothing: what Spark alone costs to hand a
    ``transformWithStateInPandas`` task its rows (``bench/tws_floor.py``)."""

    def init(self, handle: Any) -> None:
        pass

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any
    ) -> Iterator[pd.DataFrame]:
        n = sum(len(f) for f in rows)
        yield pd.DataFrame({"written": [n]}, dtype="int64")

    def close(self) -> None:
        pass
