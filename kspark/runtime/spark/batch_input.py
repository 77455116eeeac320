"""A stateful task's micro-batch input: held in memory up to a bound, spilled to local disk beyond.

Spark hands a ``transformWithStateInPandas`` task its whole micro-batch, and
the engine's stage must have all of it before it processes any: a topic's
rows may arrive out of offset order (Spark's sort before the stage
interleaves its spill runs), and with several topics (joins) the task picks
among them by head timestamp. Held as pandas frames that is ~150 bytes a
record, and a join cannot be capped per micro-batch (the query's cap in
plan.py): a join over a 50M-record backlog read as one batch took 16.4 GB
(docs/benchmarks.md, "Memory").

:func:`held_input` keeps a task's frames in memory up to ``spark.kspark.spillRows``
rows. Beyond that it writes them, and every later frame, to Arrow IPC files
in Spark's local directory, one file per topic, keeping only their offsets
in memory (8 bytes a record). Read back, a topic whose offsets increase is
read in file order, any other in the order of its offsets (the
``in_offset_order`` of the in-memory path), one slice at a time: the
records the engine takes are the same either way. A topic Spark handed
over out of order (its sort before the stage spilled: each of the sort's
runs is in offset order, the merge interleaves them) is first split, in
one pass over its file, into files of consecutive offset ranges of
:data:`BUCKET_ROWS` rows each, then read one range at a time, sorted in
memory. Either way a topic read back holds a frame's rows (in order) or
about a bucket's (out of order) at a time, never its whole batch.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from kspark.runtime.spark.settings import DEFAULT_SPILL_ROWS

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = ["BUCKET_ROWS", "SpilledInput", "held_input"]

BUCKET_ROWS = 500_000
"""Rows of a topic read back out of offset order that are sorted in memory at once: ~50 MB as
Arrow, ~100 MB while a bucket's batches are joined, under the ~150 MB of the default
``spark.kspark.spillRows`` as pandas. Raised when a topic would need more than
:data:`_MAX_BUCKETS` files; each bucket costs a write per file batch whose rows fall in it, so
much smaller buckets make the pass slower."""

_MAX_BUCKETS = 256
"""Bucket files one topic's pass may hold open at once (one descriptor each)."""

_COLUMNS = ("offset", "timestamp", "key", "value", "headers")


def _local_dir() -> str:
    # Spark sets SPARK_LOCAL_DIRS for its Python workers (comma-separated); its first is where
    # Spark itself spills.
    return (os.environ.get("SPARK_LOCAL_DIRS") or tempfile.gettempdir()).split(",")[0]


class SpilledInput:
    """A task's batch in Arrow IPC files, one per topic; :meth:`topics` reads them back in order."""

    def __init__(self, directory: str | None = None, bucket_rows: int = BUCKET_ROWS) -> None:
        self.directory = tempfile.mkdtemp(prefix="kspark-batch-", dir=directory or _local_dir())
        self.bucket_rows = bucket_rows
        self.rows = 0
        self._files: dict[str, tuple[str, Any, Any]] = {}  # topic -> (path, file, IPC writer)
        self._offsets: dict[str, list[Any]] = {}

    def add(self, frame: pd.DataFrame) -> None:
        """Append a frame's rows (any topics) to their topics' files."""
        topics = frame["topic"]
        first = topics.iat[0]
        parts = [(first, frame)] if (topics == first).all() else list(frame.groupby("topic", sort=False))
        for topic, part in parts:
            self._writer(str(topic)).write_batch(_to_arrow(part))
            self._offsets[str(topic)].append(part["offset"].to_numpy(dtype="int64", copy=True))
        self.rows += len(frame)

    def last_offsets(self) -> dict[str, int]:
        """The largest offset of each topic held."""
        return {
            t: int(max(int(a.max()) for a in arrays if len(a)))
            for t, arrays in self._offsets.items()
            if any(len(a) for a in arrays)
        }

    def _writer(self, topic: str) -> Any:
        import pyarrow as pa

        entry = self._files.get(topic)
        if entry is None:
            path = os.path.join(self.directory, f"{len(self._files)}.arrow")
            sink = pa.OSFile(path, "wb")
            entry = self._files[topic] = (path, sink, pa.ipc.new_file(sink, _schema()))
            self._offsets[topic] = []
        return entry[2]

    def topics(self, step: int) -> list[tuple[str, Iterator[dict[str, list[Any]]]]]:
        """Per topic, in name order: its rows in offset order as column lists: a chunk per frame
        added when they were added in offset order, else ``step`` rows a chunk (the last of each
        bucket of :attr:`bucket_rows` rows may be shorter, never when no offset repeats)."""
        import numpy as np

        self._finish()
        out = []
        for topic in sorted(self._files):
            offsets = np.concatenate(self._offsets[topic])
            in_order = bool((offsets[1:] > offsets[:-1]).all())
            path = self._files[topic][0]
            chunks = _in_file_order(path) if in_order else _sorted(path, offsets, step, self.bucket_rows)
            out.append((topic, chunks))
        return out

    def _finish(self) -> None:
        for _path, sink, writer in self._files.values():
            if not sink.closed:
                writer.close()
                sink.close()

    def close(self) -> None:
        """Close and remove the files."""
        try:
            self._finish()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


def _schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("offset", pa.int64()),
            ("timestamp", pa.int64()),
            ("key", pa.binary()),
            ("value", pa.binary()),
            ("headers", pa.binary()),  # Spark's header list, pickled; null for none
        ]
    )


def _to_arrow(part: pd.DataFrame) -> pa.RecordBatch:
    import pyarrow as pa

    raw_headers = part["headers"]
    if raw_headers.isna().all():
        headers = pa.nulls(len(part), pa.binary())
    else:
        headers = pa.array(
            [None if h is None or len(h) == 0 else pickle.dumps(h) for h in raw_headers], pa.binary()
        )
    return pa.RecordBatch.from_arrays(
        [
            pa.array(part["offset"].to_numpy(dtype="int64")),
            pa.array(part["timestamp"].to_numpy(dtype="int64")),
            pa.array(part["key"].to_numpy(), pa.binary(), from_pandas=True),
            pa.array(part["value"].to_numpy(), pa.binary(), from_pandas=True),
            headers,
        ],
        schema=_schema(),
    )


def _columns(batch: pa.RecordBatch | pa.Table) -> dict[str, list[Any]]:
    cols = {name: batch.column(name).to_pylist() for name in _COLUMNS if name != "headers"}
    headers = batch.column("headers")
    cols["headers"] = (
        [None] * len(headers)
        if headers.null_count == len(headers)
        else [None if h is None else pickle.loads(h) for h in headers.to_pylist()]
    )
    return cols


def _in_file_order(path: str) -> Iterator[dict[str, list[Any]]]:
    """A file's batches one by one, read from the file (not mapped: pages read stay reclaimable
    and do not add up in the process's memory)."""
    import pyarrow as pa

    with pa.OSFile(path, "rb") as source:
        reader = pa.ipc.open_file(source)
        for i in range(reader.num_record_batches):
            yield _columns(reader.get_batch(i))


def _sorted(path: str, offsets: Any, step: int, bucket_rows: int) -> Iterator[dict[str, list[Any]]]:
    """A file's rows in the order of their ``offsets`` (the file's, in file order), ``step`` at a
    time, holding about ``bucket_rows`` of them at once.

    A file of more rows than that is split first, in one pass over it in file order, into
    bucket files beside it: bucket ``k`` takes the rows of ranks ``k * bucket_rows`` up to the
    next in offset order (rows of one offset go to one bucket; they keep their file order, as
    a stable sort would). Then each bucket in turn is read and sorted (:func:`_sorted_file`)
    and its file removed. ``bucket_rows`` is a multiple of ``step``, so without repeated
    offsets the chunks are the ``step``-row slices of the whole sorted file.
    """
    import numpy as np

    rows = len(offsets)
    bucket_rows = max(bucket_rows, -(-rows // _MAX_BUCKETS))
    bucket_rows = -(-bucket_rows // step) * step
    if rows <= bucket_rows:
        del offsets  # the file's own are read with its rows
        yield from _sorted_file(path, step)
        return
    # A bucket's first offset (after the first bucket's): rows from one up to the next go to it.
    bounds = np.sort(offsets)[bucket_rows::bucket_rows].copy()
    del offsets  # 8 bytes a row, as the sorted copy was
    stem = os.path.splitext(path)[0]
    buckets = [f"{stem}.{k}.arrow" for k in range(len(bounds) + 1)]
    _split(path, bounds, buckets)
    for bucket in buckets:
        yield from _sorted_file(bucket, step)
        os.remove(bucket)


def _split(path: str, bounds: Any, buckets: list[str]) -> None:
    """The rows of the file at ``path``, read batch by batch (not mapped, as
    :func:`_in_file_order`), appended in file order to the ``buckets`` their offsets fall in
    among ``bounds``."""
    import numpy as np
    import pyarrow as pa

    with contextlib.ExitStack() as stack:
        writers = []
        for bucket in buckets:
            sink = stack.enter_context(pa.OSFile(bucket, "wb"))
            writers.append(stack.enter_context(pa.ipc.new_file(sink, _schema())))
        source = stack.enter_context(pa.OSFile(path, "rb"))
        reader = pa.ipc.open_file(source)
        for i in range(reader.num_record_batches):
            batch = reader.get_batch(i)
            if not batch.num_rows:
                continue
            which = np.searchsorted(bounds, batch.column("offset").to_numpy(), side="right")
            counts = np.bincount(which, minlength=len(buckets))
            if counts.max() == batch.num_rows:  # all in one bucket: no gather
                writers[int(which[0])].write_batch(batch)
                continue
            # One gather puts the batch's rows bucket by bucket (in file order within one); each
            # bucket's rows are then a slice of it.
            grouped = batch.take(np.argsort(which, kind="stable"))
            start = 0
            for k in np.flatnonzero(counts):
                writers[k].write_batch(grouped.slice(start, int(counts[k])))
                start += int(counts[k])


def _sorted_file(path: str, step: int) -> Iterator[dict[str, list[Any]]]:
    """A file's rows in the order of their offsets, ``step`` at a time.

    The rows are gathered from one contiguous copy of the file (Arrow's ``take`` over the
    file's hundreds of record batches concatenated them at every call: 20% of a W4 run's
    Python samples); the file is one of :func:`_sorted`'s buckets, or a topic no larger, so the
    copy is of about ``bucket_rows`` rows at most (~100 bytes a W4 record as Arrow against
    pandas' ~150).
    """
    import numpy as np
    import pyarrow as pa

    with pa.OSFile(path, "rb") as source:
        table = pa.ipc.open_file(source).read_all().combine_chunks()
    order = np.argsort(table.column("offset").to_numpy(), kind="stable")
    for start in range(0, table.num_rows, step):
        yield _columns(table.take(order[start : start + step]))


@contextlib.contextmanager
def held_input(
    frames: Iterable[pd.DataFrame], spill_rows: int = DEFAULT_SPILL_ROWS
) -> Iterator[list[pd.DataFrame] | SpilledInput]:
    """A task's non-empty frames as a list, or, past ``spill_rows`` rows, as a :class:`SpilledInput`
    whose files are removed when the block ends."""
    held: list[pd.DataFrame] = []
    rows = 0
    spilled: SpilledInput | None = None
    try:
        for frame in frames:
            if not len(frame):
                continue
            if spilled is not None:
                spilled.add(frame)
                continue
            held.append(frame)
            rows += len(frame)
            if rows > spill_rows:
                spilled = SpilledInput()
                for f in held:
                    spilled.add(f)
                held = []
        yield held if spilled is None else spilled
    finally:
        if spilled is not None:
            spilled.close()
