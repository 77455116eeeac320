"""Restore from changelog topics up to committed positions, and task directories (store_restore.py)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kspark import Consumed, KafkaStreams, Materialized, Produced, StreamsBuilder, Topology
from kspark.dev.kafka import LocalKafka
from kspark.errors import StreamsException
from kspark.processor import Processor, ProcessorContext, Record
from kspark.runtime.spark.store_restore import (
    CHECKPOINT,
    ChangelogReader,
    TaskDirectory,
    changelog_ends,
    store_root,
)
from kspark.serde import Serdes
from kspark.state import Stores

S = Serdes.String()
L = Serdes.Long()


def test_a_task_directory_is_held_by_one_holder_at_a_time(tmp_path: Path) -> None:
    first = TaskDirectory.claim(str(tmp_path), "0_1")
    second = TaskDirectory.claim(str(tmp_path), "0_1")
    assert first.path == str(tmp_path / "0_1")
    assert second.path == str(tmp_path / "0_1.1")
    first.release()
    again = TaskDirectory.claim(str(tmp_path), "0_1")
    assert again.path == str(tmp_path / "0_1")
    again.release()
    second.release()


def test_a_checkpoint_vouches_for_the_stores_until_they_change(tmp_path: Path) -> None:
    directory = TaskDirectory.claim(str(tmp_path), "1_0")
    assert directory.checkpoint() is None
    directory.write_checkpoint({"app-s-changelog": 42})
    assert directory.checkpoint() == {"app-s-changelog": 42}
    directory.mark_dirty()
    assert directory.checkpoint() is None
    os.makedirs(os.path.join(directory.path, "rocksdb", "s"))
    directory.write_checkpoint({"app-s-changelog": 7})
    directory.wipe()
    assert directory.checkpoint() is None
    assert not os.path.exists(os.path.join(directory.path, "rocksdb"))
    directory.release()


def test_an_unusable_state_dir_fails_naming_the_task_and_path(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StreamsException, match=r"Task 0_0: cannot create its state directory .*file/0_0"):
        TaskDirectory.claim(str(blocker), "0_0")


def test_the_store_root_is_under_a_local_state_dir_and_executor_local_for_a_remote_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = {"application.id": "app", "bootstrap.servers": "x:1", "state.dir": str(tmp_path)}
    assert store_root(config) == str(tmp_path / "app" / "tasks")
    monkeypatch.setenv("SPARK_LOCAL_DIRS", f"{tmp_path}/a,{tmp_path}/b")
    remote = {**config, "state.dir": "hdfs:///apps/kspark"}
    assert store_root(remote) == f"{tmp_path}/a/kspark-state/app/tasks"


@pytest.mark.integration
def test_a_restore_reads_exactly_the_range_up_to_the_committed_position(
    kafka: LocalKafka, topic_factory: Callable[..., str]
) -> None:
    topic = topic_factory("changelog", partitions=2)
    kafka.produce(topic, [(f"k{i}".encode(), f"v{i}".encode(), 100 + i, 1) for i in range(10)])
    kafka.produce(topic, [(b"k", None, 5, 1)])
    config = {"application.id": "restore-range", "bootstrap.servers": kafka.bootstrap_servers}
    assert changelog_ends(config, [topic], 1) == {topic: 11}
    assert changelog_ends(config, [topic], 0) == {topic: 0}
    reader = ChangelogReader(
        kafka.bootstrap_servers, "restore-range", {}, lambda t, p: changelog_ends(config, [t], p)[t]
    )
    try:
        chunks: list[list[tuple[bytes, bytes | None, int]]] = []
        assert reader.restore(topic, 1, 0, 11, chunks.append, chunk=4) == 11
        records = [r for chunk in chunks for r in chunk]
        assert records[:2] == [(b"k0", b"v0", 100), (b"k1", b"v1", 101)]
        assert records[-1] == (b"k", None, 5)  # a tombstone restores as a delete
        middle: list[tuple[bytes, bytes | None, int]] = []
        assert reader.restore(topic, 1, 3, 7, middle.extend) == 4
        assert [k for k, _, _ in middle] == [b"k3", b"k4", b"k5", b"k6"]
        assert reader.restore(topic, 1, 5, 5, middle.extend) == 0
        with pytest.raises(
            StreamsException, match=rf"Changelog {topic}\[1\] ends at offset 11, before .* 20"
        ):
            reader.restore(topic, 1, 0, 20, lambda records: None)
    finally:
        reader.close()


# --------------------------------------------------------------------------- on Spark

pyspark_cloudpickle = pytest.importorskip("pyspark.cloudpickle")
pyspark_cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _lengths(src: str, dst: str) -> Topology:
    """A per-key sum of value lengths in a persistent (RocksDB) store, not lowered to Spark."""
    b = StreamsBuilder()
    (
        b.stream(src, Consumed.with_(S, S))
        .group_by_key()
        .aggregate(
            lambda: 0,
            lambda k, v, total: total + len(v),
            Materialized.as_(Stores.persistent_key_value_store("lengths"))
            .with_key_serde(S)
            .with_value_serde(L)
            .with_caching_disabled(),
        )
        .to_stream()
        .to(dst, Produced.with_(S, L))
    )
    return b.build()


def _run(topology: Topology, config: dict[str, Any], spark: Any) -> int:
    app = KafkaStreams(topology, config, spark=spark)
    try:
        return app.process_available()
    finally:
        app.close()


@pytest.mark.integration
@pytest.mark.slow
def test_a_restart_restores_from_local_state_or_from_the_changelog_when_it_is_gone(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("in", partitions=1), topic_factory("out", partitions=1)
    app = f"local-state-{os.getpid()}-{src}"
    config = {
        "application.id": app,
        "bootstrap.servers": kafka.bootstrap_servers,
        "state.dir": str(tmp_path / "state"),
    }
    task_dir = tmp_path / "state" / app / "tasks" / "0_0"

    kafka.produce(src, [(b"a", b"xx", 1), (b"b", b"yyy", 2), (b"a", b"z", 3)])
    assert _run(_lengths(src, dst), config, spark) == 3
    # The store is on this machine's disk, with a checkpoint at the changelog's end.
    assert (task_dir / "rocksdb" / "lengths").is_dir()
    changelog = f"{app}-lengths-changelog"
    checkpoint = json.loads((task_dir / CHECKPOINT).read_text())
    assert checkpoint == changelog_ends(config, [changelog], 0) == {changelog: 3}

    # A restart with the local state intact goes on from it.
    kafka.produce(src, [(b"a", b"1234", 4)])
    assert _run(_lengths(src, dst), config, spark) == 1
    # A restart without it (another machine, a lost disk) restores from the changelog topic.
    shutil.rmtree(tmp_path / "state" / app / "tasks")
    kafka.produce(src, [(b"b", b"1", 5), (b"a", b"1", 6)])
    assert _run(_lengths(src, dst), config, spark) == 2

    got = [
        (r.key, L.deserializer().deserialize(dst, r.value), r.timestamp)
        for r in kafka.consume_all(dst, min_records=6)
    ]
    assert got == [(b"a", 2, 1), (b"b", 3, 2), (b"a", 3, 3), (b"a", 7, 4), (b"b", 4, 5), (b"a", 8, 6)]
    # The last run's task directory (another slot if a Python worker still held the first one)
    # is at the changelog's end.
    tasks = tmp_path / "state" / app / "tasks"
    assert {changelog: 6} in [json.loads(p.read_text()) for p in tasks.glob(f"0_0*/{CHECKPOINT}")]


class _TableUpdater(Processor[str, str]):
    def init(self, context: ProcessorContext) -> None:
        self.store: Any = context.get_state_store("table")

    def process(self, record: Record[str, str]) -> None:
        self.store.put(record.key, record.value)


def _read_only_table() -> Topology:
    """A persistent read-only store (KIP-813) fed by its topic: restored from the task's Spark
    state (its topic is its changelog), not from a changelog topic."""
    topo = Topology()
    store = Stores.key_value_store_builder(Stores.persistent_key_value_store("table"), S, S)
    topo.add_read_only_state_store(store, "table-src", None, S, S, "table-topic", "update", _TableUpdater)
    return topo


def test_a_store_restored_from_spark_state_never_keeps_a_local_row_spark_did_not_commit(
    tmp_path: Path,
) -> None:
    from rocksdict import Options, Rdict

    from kspark.runtime.spark.task_state import TaskMeta, fold_changelog, persist_changelog
    from kspark.runtime.spark.tasks import TaskGroup, TaskStage, TopologySpec
    from kspark.state.internals.metered import innermost
    from tests.runtime.spark.state_fakes import ListStateLike

    spec = TopologySpec(
        _read_only_table(),
        {"application.id": "replayed", "bootstrap.servers": "unused:9092"},
        0,
        {"replayed-table-changelog": "table"},
        "instance",
        {},
        input_partitions={"table-topic": 1},
        read_only_stores=frozenset({"table"}),
    )
    assert spec.replayed_stores() == {"table"}
    stage = TaskStage(TaskGroup((spec,), (0,), (1,)), spill_rows=1_000)
    # Spark's committed state: the table holds u1 only.
    stage._changelog = ListStateLike()
    entries = [("table", b"u1", b"gold", 1)]
    latest: dict[Any, Any] = {}
    fold_changelog(latest, entries)
    meta = TaskMeta(epoch=1, changelog_rows=persist_changelog(stage._changelog, 0, latest, entries))
    # On this machine's disk: the row of a batch that ended in this worker (its checkpoint, of no
    # topic positions, written) but that Spark did not commit.
    directory = TaskDirectory.claim(str(tmp_path), "0_0")
    db = Rdict(str(tmp_path / "0_0" / "rocksdb" / "table"), Options(raw_mode=True))
    db[b"u2"] = b"ghost"
    db.close()
    directory.write_checkpoint({})

    task, _ = stage._rebuilt(spec, 0, meta, directory)
    try:
        store = innermost(task.stores["table"])
        assert store.get(b"u2") is None
        assert store.get(b"u1") == b"gold"
    finally:
        task.close()
        directory.release()
