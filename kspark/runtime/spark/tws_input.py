"""transformWithStateInPandas input cut into per-key frames by slicing, not row by row.

PySpark 4.2's ``TransformWithStateInPandasSerializer.load_stream`` turns
each Arrow batch into pandas, then walks it with ``itertuples`` and rebuilds
a ``pandas.DataFrame`` from the row tuples of each grouping key: two Python
steps per input row. kspark's stateful stages group by task, so a batch is
a few long runs of one key; py-spy put that walk at ~14% of all Python
samples of the W3/W4 benchmarks (bench/results/history.md, "kspark alone after the
windowed count and the Arrow fix").

:func:`install` replaces ``load_stream`` with one that finds the runs of
equal keys with numpy and hands out slices of the batch's frame. What the
worker receives is the same: per grouping key, in order, an iterator of
frames holding that key's rows in their order, with the batch's columns.
Frames are cut at Arrow batch boundaries instead of being refilled to
``maxRecordsPerBatch`` rows, and keep the dtypes pandas gave the Arrow
columns instead of those re-inferred from the row tuples. Only integer
grouping keys (what kspark's stages use) take the fast path; any other
batch goes through PySpark's own code, unchanged. The replacement is made
only for the PySpark version it was written against (:data:`PYSPARK_VERSION`);
with any other version PySpark's code runs as it is.

kspark's worker daemon installs it in the daemon process, before it forks
the workers (:mod:`kspark.runtime.spark.worker_daemon`).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import groupby
from typing import Any

__all__ = ["PYSPARK_VERSION", "install", "installed"]

PYSPARK_VERSION = "4.2.0"
"""The PySpark release whose ``load_stream`` :func:`install` replaces (the one kspark pins)."""

_original: Any = None


def installed() -> bool:
    """Whether this process's transformWithStateInPandas input goes through :func:`_load_stream`."""
    return _original is not None


def install() -> bool:
    """Replace PySpark's ``load_stream`` (see module doc); False when this PySpark is not the one."""
    global _original
    import pyspark
    from pyspark.sql.pandas.serializers import TransformWithStateInPandasSerializer as Serializer

    if _original is not None:
        return True
    if pyspark.__version__ != PYSPARK_VERSION or not hasattr(Serializer, "_update_batch_size_stats"):
        return False
    _original = Serializer.load_stream
    Serializer.load_stream = _load_stream  # type: ignore[method-assign]
    return True


def key_runs(columns: list[Any]) -> list[tuple[int, int]]:
    """``(start, end)`` of each run of rows whose grouping key (``columns``, numpy arrays) is equal."""
    import numpy as np

    n = len(columns[0])
    if n == 0:
        return []
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for values in columns:
        change[1:] |= values[1:] != values[:-1]
    starts = np.flatnonzero(change).tolist()
    return list(zip(starts, [*starts[1:], n], strict=True))


def _load_stream(self: Any, stream: Any) -> Iterator[Any]:
    import pandas as pd
    from pyspark.sql.conversion import ArrowBatchTransformer
    from pyspark.sql.pandas.serializers import ArrowStreamPandasSerializer
    from pyspark.sql.streaming.stateful_processor_util import TransformWithStateInPandasFuncMode

    def frames(batches: Iterator[Any]) -> Iterator[tuple[tuple[Any, ...], pd.DataFrame]]:
        for batch in batches:
            self._update_batch_size_stats(batch)
            data = pd.concat(
                ArrowBatchTransformer.to_pandas(
                    batch,
                    timezone=self._timezone,
                    schema=self._input_type,
                    struct_in_pandas=self._struct_in_pandas,
                    ndarray_as_list=self._ndarray_as_list,
                    prefer_int_ext_dtype=self._prefer_int_ext_dtype,
                    df_for_struct=self._df_for_struct,
                ),
                axis=1,
            )
            keys = [data.iloc[:, k] for k in self.key_offsets]
            if not all(pd.api.types.is_integer_dtype(k.dtype) and not k.hasnans for k in keys):
                yield from _rows_grouped(self, data)
                continue
            step = self.arrow_max_records_per_batch
            values = [k.to_numpy() for k in keys]
            for start, end in key_runs(values):
                key = tuple(v[start].item() for v in values)  # Python ints, as itertuples gives
                for at in range(start, end, step):
                    yield key, data.iloc[at : min(end, at + step)].reset_index(drop=True)

    batches = super(ArrowStreamPandasSerializer, self).load_stream(stream)
    for key, group in groupby(frames(batches), key=lambda item: item[0]):
        yield TransformWithStateInPandasFuncMode.PROCESS_DATA, key, group
    yield TransformWithStateInPandasFuncMode.PROCESS_TIMER, None, None
    yield TransformWithStateInPandasFuncMode.COMPLETE, None, None


def _rows_grouped(self: Any, data: Any) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """PySpark's own per-row grouping of one batch's frame, for keys the fast path does not take."""
    import pandas as pd

    rows = ((tuple(row[k] for k in self.key_offsets), row) for row in data.itertuples(index=False))
    for key, group in groupby(rows, key=lambda item: item[0]):
        chunk: list[Any] = []
        for _, row in group:
            chunk.append(row)
            if (
                len(chunk) >= self.arrow_max_records_per_batch
                or len(chunk) * self.average_arrow_row_size >= self.arrow_max_bytes_per_batch
            ):
                yield key, pd.DataFrame(chunk)
                chunk = []
        if chunk:
            yield key, pd.DataFrame(chunk)
