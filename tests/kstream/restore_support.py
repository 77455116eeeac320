"""Run a topology on a ``StreamTask``, stop it half way, rebuild it from its changelogs, and finish.

This is what the Spark runner does to a cold task: a brand-new task is
built, every store is restored through the callback it registered
(``task.context.restore_callbacks[store](records)``) from the changelog
records the first task produced, the task's stream time is restored, and
processing continues. ``run_split`` returns the sink outputs of that
interrupted run next to those of one uninterrupted run, so a test can
require them to be equal.

Like the test driver, records a task sends to a topic it reads itself
(repartition topics) are fed back in, and the task commits after each
record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kspark.config import StreamsConfig
from kspark.processor.internals.records import OutputRecord, RawRecord
from kspark.processor.internals.task import StreamTask

__all__ = ["Input", "Run", "run_split", "run_once", "run_sliced"]

APP = "restore-test"


@dataclass(frozen=True)
class Input:
    topic: str
    key: bytes | None
    value: bytes | None
    timestamp: int


@dataclass
class Run:
    """One task's life: its sink outputs and the changelog records it produced, in order."""

    task: StreamTask
    changelog_topics: dict[str, str]  # topic -> store
    outputs: list[OutputRecord] = field(default_factory=list)
    changelog: list[OutputRecord] = field(default_factory=list)
    offsets: dict[str, int] = field(default_factory=dict)

    def _enqueue(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int) -> None:
        offset = self.offsets.get(topic, 0)
        self.offsets[topic] = offset + 1
        self.task.add_records(topic, 0, [RawRecord(topic, 0, offset, timestamp, key, value)])

    def _capture(self) -> None:
        for record in self.task.drain_output():
            if record.topic in self.changelog_topics:
                self.changelog.append(record)
            elif self.task.topology.source(record.topic) is not None:
                self._enqueue(record.topic, record.key, record.value, record.timestamp)
            else:
                self.outputs.append(record)

    def pipe(self, record: Input) -> None:
        self._enqueue(record.topic, record.key, record.value, record.timestamp)
        while self.task.has_records_queued():
            self.task.process()
            self.task.maybe_punctuate_stream_time()
            self.task.commit()
            self._capture()


def _new_run(
    topology_factory: Callable[[], Any],
    config: Mapping[str, Any],
    processor_metadata: Mapping[str, int] | None = None,
) -> Run:
    builder = topology_factory().internal_builder
    builder.set_application_id(APP)
    topology = builder.build_topology()
    task = StreamTask(
        "0_0",
        topology,
        StreamsConfig({"application.id": APP, "bootstrap.servers": "dummy:1234", **config}),
        partitions_for=lambda topic: 1,
        processor_metadata=processor_metadata,
    )
    task.initialize()
    changelogs = {topic: store for store, topic in topology.store_to_changelog_topic.items()}
    return Run(task, changelogs)


def run_once(topology_factory: Callable[[], Any], config: Mapping[str, Any], inputs: list[Input]) -> Run:
    run = _new_run(topology_factory, config)
    for record in inputs:
        run.pipe(record)
    return run


def _compacted(records: list[OutputRecord], reverse: bool) -> list[OutputRecord]:
    """The latest record per key, tombstones dropped, in key order or reversed (a Spark MapState
    keeps no order, so restoring should not depend on it)."""
    latest: dict[bytes | None, OutputRecord] = {}
    for record in records:
        latest[record.key] = record
    kept = [r for r in latest.values() if r.value is not None]
    return sorted(kept, key=lambda r: r.key or b"", reverse=reverse)


def run_split(
    topology_factory: Callable[[], Any],
    config: Mapping[str, Any],
    inputs: list[Input],
    split: int,
    *,
    compact: str,
) -> tuple[list[OutputRecord], list[OutputRecord], Run]:
    """(uninterrupted outputs, outputs of the run restarted after ``split`` inputs, first half run).

    ``compact``: ``"no"`` restores every changelog record in production order; ``"sorted"`` /
    ``"reversed"`` only the latest per key, in key order / reverse key order.
    """
    if compact not in ("no", "sorted", "reversed"):
        raise ValueError(f"compact must be 'no', 'sorted' or 'reversed', got {compact!r}")
    whole = run_once(topology_factory, config, inputs)
    first = run_once(topology_factory, config, inputs[:split])
    first.task.close()

    second = _new_run(topology_factory, config)
    by_store: dict[str, list[OutputRecord]] = {}
    for record in first.changelog:
        by_store.setdefault(first.changelog_topics[record.topic], []).append(record)
    callbacks = second.task.context.restore_callbacks
    for store, records in by_store.items():
        restore = callbacks.get(store)
        assert restore is not None, f"store {store} logs changes but registered no restore callback"
        chosen = records if compact == "no" else _compacted(records, compact == "reversed")
        restore([(r.key, r.value, r.timestamp) for r in chosen])
    second.task.partition_group.stream_time = first.task.stream_time()
    second.offsets = dict(first.offsets)
    for remaining in inputs[split:]:
        second.pipe(remaining)
    return whole.outputs, first.outputs + second.outputs, first


def run_sliced(
    topology_factory: Callable[[], Any],
    config: Mapping[str, Any],
    inputs: list[Input],
    cuts: list[int],
    shuffle: Callable[[list[OutputRecord]], None],
) -> list[OutputRecord]:
    """Outputs of a run that ends after each cut and goes on in a task rebuilt from scratch.

    As the Spark runner does for a task that lands on another Python worker: after each slice
    the task commits, and a new task gets the old one's processor metadata, every store restored
    from the latest changelog record per key of the whole history so far (tombstones dropped,
    in the order ``shuffle`` leaves them: a MapState keeps none) and the old stream time.
    """
    if sorted(set(cuts)) != cuts or any(c <= 0 or c >= len(inputs) for c in cuts):
        raise ValueError(f"cuts must be increasing record indexes inside the input, got {cuts}")
    outputs: list[OutputRecord] = []
    history: dict[str, dict[bytes | None, OutputRecord]] = {}
    run = _new_run(topology_factory, config)
    for start, end in zip([0, *cuts], [*cuts, len(inputs)], strict=True):
        if start > 0:
            previous = run
            previous.task.close()
            run = _new_run(topology_factory, config, previous.task.processor_metadata)
            callbacks = run.task.context.restore_callbacks
            for store, latest in history.items():
                restore = callbacks.get(store)
                assert restore is not None, f"store {store} logs changes but registered no restore callback"
                chosen = [r for r in latest.values() if r.value is not None]
                shuffle(chosen)
                restore([(r.key, r.value, r.timestamp) for r in chosen])
            run.task.partition_group.stream_time = previous.task.stream_time()
            run.offsets = dict(previous.offsets)
        for record in inputs[start:end]:
            run.pipe(record)
        run.task.commit()
        run._capture()
        outputs.extend(run.outputs)
        for change in run.changelog:
            history.setdefault(run.changelog_topics[change.topic], {})[change.key] = change
    return outputs


def decoded(
    records: list[OutputRecord], key: Callable[[bytes], Any], value: Callable[[bytes], Any]
) -> list[tuple[Any, Any, int]]:
    return [
        (
            None if r.key is None else key(r.key),
            None if r.value is None else value(r.value),
            r.timestamp,
        )
        for r in records
    ]
