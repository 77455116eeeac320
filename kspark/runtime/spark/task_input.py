"""A task's micro-batch input on the executors: from what Spark or the reader gives to the task.

The records of one micro-batch of a task arrive as pandas frames (a stateful
stage, ``transformWithStateInPandas``; spilled to local disk past
``spark.kspark.spillRows``, :mod:`~kspark.runtime.spark.batch_input`) or as
column lists read from Kafka (:mod:`~kspark.runtime.spark.direct_source`).
Here they become chunks (:class:`FeedChunk`), per input topic in offset order, and
:func:`process_feeds` hands them to the task as Kafka Streams' task would
take them: across topics by smallest head timestamp, a chunk per topic at a
time, so that only ~10,000 records per topic are Python objects at once. A
chunk of the only topic left, whose line is fused, goes to that line as
columns (``StreamTask.process_columns``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kspark.processor.api import Headers
from kspark.processor.internals.records import RawRecord
from kspark.processor.internals.task import StreamTask
from kspark.runtime.spark.batch_input import SpilledInput

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Feed",
    "FeedChunk",
    "in_offset_order",
    "input_feeds",
    "kafka_headers",
    "next_offsets",
    "process_feeds",
    "process_input",
    "raw_records",
]

_SPILLED_CHUNK = 10_000
"""Rows of a spilled batch read back at once (Spark's ``arrow.maxRecordsPerBatch``: one frame's worth)."""


def kafka_headers(raw: Any) -> Headers:
    """Headers as Spark's Kafka source gives them (list of {key, value}) to engine Headers."""
    if raw is None or len(raw) == 0:
        return Headers()
    return Headers([(h["key"], h["value"]) for h in raw])


def raw_records(
    topic: str,
    partition: int,
    offsets: list[int],
    timestamps: list[int],
    keys: list[Any],
    values: list[Any],
    headers: list[Any],
    to_headers: Callable[[Any], Headers] = kafka_headers,
) -> list[RawRecord]:
    """The records of one topic-partition, from column lists (Arrow's or pandas' ``tolist()``;
    ``to_headers`` turns one record's headers as given, None for none, into ``Headers``)."""
    return [
        RawRecord(topic, partition, o, t, k, v, to_headers(h))
        for o, t, k, v, h in zip(offsets, timestamps, keys, values, headers, strict=True)
    ]


@dataclass(frozen=True, slots=True)
class FeedChunk:
    """Consecutive records of one topic-partition of a task's input, in offset order, as the
    column lists a reader gives (``to_headers`` turns one record's headers as given, None or
    empty for none, into ``Headers``). The task's queue takes them as :meth:`records`; a fused
    line with the task to itself takes the columns (``StreamTask.process_columns``)."""

    topic: str
    partition: int
    offsets: list[int]
    timestamps: list[int]
    keys: list[Any]
    values: list[Any]
    headers: list[Any]
    to_headers: Callable[[Any], Headers] = kafka_headers

    def __len__(self) -> int:
        return len(self.offsets)

    def records(self) -> list[RawRecord]:
        return raw_records(
            self.topic,
            self.partition,
            self.offsets,
            self.timestamps,
            self.keys,
            self.values,
            self.headers,
            self.to_headers,
        )


def next_offsets(frames: list[pd.DataFrame] | SpilledInput, partition: int) -> dict[tuple[str, int], int]:
    """The offset after the last record of each input topic in a task's micro-batch: what the task
    commits to its consumer group."""
    if isinstance(frames, SpilledInput):
        return {(t, partition): last + 1 for t, last in frames.last_offsets().items()}
    out: dict[tuple[str, int], int] = {}
    for frame in frames:
        if not len(frame):
            continue
        for topic, last in frame.groupby("topic", sort=False)["offset"].max().items():
            key = (str(topic), partition)
            out[key] = max(out.get(key, 0), int(last) + 1)
    return out


def input_feeds(partition: int, frames: list[pd.DataFrame] | SpilledInput) -> list[Feed]:
    """A task's micro-batch input: per topic (in name order), its records in offset order, in
    chunks of about one Arrow batch (~10,000 records), made Python objects only when taken.

    One input topic whose rows arrive in offset order (the usual case: one
    Kafka partition read by one Spark task): a chunk per frame as Spark gave
    it. Otherwise the rows are sorted by offset per topic first. A batch
    spilled to disk (:mod:`~kspark.runtime.spark.batch_input`) is read back
    the same way, a chunk at a time.
    """
    import pandas as pd

    def records(topic: str, df: pd.DataFrame) -> FeedChunk:
        return FeedChunk(
            topic,
            partition,
            df["offset"].tolist(),
            df["timestamp"].tolist(),
            df["key"].tolist(),
            df["value"].tolist(),
            df["headers"].tolist(),
        )

    def spilled(topic: str, chunks: Iterator[dict[str, list[Any]]]) -> Iterator[FeedChunk]:
        # A function binds ``topic`` now: a generator in the comprehension below would read the
        # comprehension's last topic when it runs, labelling every spilled record with it.
        return (
            FeedChunk(topic, partition, c["offset"], c["timestamp"], c["key"], c["value"], c["headers"])
            for c in chunks
        )

    if isinstance(frames, SpilledInput):
        return [(topic, spilled(topic, chunks)) for topic, chunks in frames.topics(_SPILLED_CHUNK)]
    if not frames:
        return []
    topics = {str(t) for f in frames for t in f["topic"].unique()}
    if len(topics) == 1:
        (topic,) = topics
        return [(topic, (records(topic, f) for f in in_offset_order(frames)))]
    step = max(len(f) for f in frames)

    def chunks(topic: str, rows: pd.DataFrame) -> Iterator[FeedChunk]:
        return (records(topic, f) for f in in_offset_order([rows], step))

    data = pd.concat(frames, ignore_index=True)
    return [(str(topic), chunks(str(topic), group)) for topic, group in data.groupby("topic", sort=True)]


def in_offset_order(frames: list[pd.DataFrame], step: int | None = None) -> Iterator[pd.DataFrame]:
    """One topic-partition's rows in offset order, in slices of at most ``step`` rows (default:
    the largest frame's): the frames as Spark gave them (one Arrow batch each) when they come
    in order, as is usual, else sorted. Offsets are unique within a topic-partition."""
    import pandas as pd

    offsets = [f["offset"].to_numpy() for f in frames]
    step = step or max(len(f) for f in frames)
    if all(bool((o[1:] > o[:-1]).all()) for o in offsets) and all(
        prev[-1] < nxt[0] for prev, nxt in itertools.pairwise(offsets)
    ):
        # (a topic's rows of a batch of several topics come as one frame: sliced, so that only
        # a step's worth are Python objects at once)
        for frame in frames:
            if len(frame) <= step:
                yield frame
            else:
                yield from (frame.iloc[i : i + step] for i in range(0, len(frame), step))
        return
    data = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    data = data.sort_values("offset", kind="stable", ignore_index=True)
    for i in range(0, len(data), step):
        yield data.iloc[i : i + step]


def process_input(
    task: StreamTask, partition: int, frames: list[pd.DataFrame] | SpilledInput, emit: Callable[[], None]
) -> None:
    """Add a task's micro-batch to its queues and process it a chunk at a time, calling ``emit``
    after each chunk: only ~10,000 records per input topic are Python objects at once.

    A queue that runs dry gets its topic's next chunk before the task takes
    another record, so the task always chooses by head timestamp among the
    same queues as with the whole batch buffered (Kafka Streams' choice).
    """
    process_feeds(task, partition, input_feeds(partition, frames), emit)


Feed = tuple[str, Iterator[FeedChunk]]
"""One input topic of a task's micro-batch: the topic, and its records in offset order, in chunks."""


def process_feeds(task: StreamTask, partition: int, feeds: list[Feed], emit: Callable[[], None]) -> None:
    """:func:`process_input` for feeds (see there): a chunk per topic at a time, taken across
    topics by head timestamp."""
    queues = [task.input_queue(topic, partition) for topic, _ in feeds]
    active = list(zip(queues, [chunks for _, chunks in feeds], strict=True))
    while active:
        for queue, chunks in list(active):
            while queue.is_empty():
                chunk = next(chunks, None)
                if chunk is None:
                    active.remove((queue, chunks))
                    break
                # The last topic with input, its line fused: the chunk goes through the line as
                # columns, never RawRecords (process_columns says whether it took it).
                if len(active) == 1 and task.process_columns(
                    chunk.topic,
                    partition,
                    chunk.offsets,
                    chunk.timestamps,
                    chunk.keys,
                    chunk.values,
                    chunk.headers,
                    chunk.to_headers,
                ):
                    emit()
                    continue
                task.add_records(queue.topic, partition, chunk.records())
        if len(active) == 1:
            ((queue, _),) = active
            task.process_until_empty(queue)
        else:
            fed = [queue for queue, _ in active]
            while all(not q.is_empty() for q in fed) and task.process():
                task.maybe_punctuate_stream_time()
        emit()
    task.process_buffered()  # what is left of the topics whose input has all been added
    emit()
