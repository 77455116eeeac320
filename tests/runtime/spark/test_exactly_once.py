"""exactly_once_v2 on Spark: every stage writes once, also when Spark runs a committed batch again.

A micro-batch whose Kafka transactions committed but whose Spark commit never
happened (a crash in between) runs again at restart: here that crash is made
exactly, by deleting the queries' last commit-log entry, and every output must
still hold each input once (every key's last value exact, no value written
twice). The same replay under at_least_once writes the batch twice (which
shows that the check can fail), its state still exact. The kill -9 runs are in
test_exactly_once_kills.py.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kspark import (
    Consumed,
    Grouped,
    KafkaStreams,
    KeyValue,
    Materialized,
    Produced,
    StreamsBuilder,
    TimeWindows,
    Topology,
)
from kspark.dev.kafka import LocalKafka
from kspark.errors import StreamsException
from kspark.serde import Serdes

pytestmark = [pytest.mark.integration, pytest.mark.slow]

pyspark_cloudpickle = pytest.importorskip("pyspark.cloudpickle")
pyspark_cloudpickle.register_pickle_by_value(sys.modules[__name__])

S, L, J = Serdes.String(), Serdes.Long(), Serdes.JSON()
STAGES = ("copy", "json", "count", "windowed", "regroup")


def _topology(t: dict[str, str]) -> Topology:
    """One sub-topology per stage kind: direct read, engine, native count, native windowed count,
    and a repartition topic between two sub-topologies."""
    b = StreamsBuilder()
    b.stream(t["copy"], Consumed.with_(S, S)).map_values(str.upper).to(t["copy-out"], Produced.with_(S, S))
    b.stream(t["json"], Consumed.with_(S, J)).group_by_key().aggregate(
        lambda: 0, lambda k, v, agg: agg + v["n"], Materialized.with_(S, L)
    ).to_stream().to(t["json-out"], Produced.with_(S, L))
    b.stream(t["count"], Consumed.with_(S, S)).group_by_key().count().to_stream().to(
        t["count-out"], Produced.with_(S, L)
    )
    b.stream(t["windowed"], Consumed.with_(S, S)).group_by_key().windowed_by(
        TimeWindows.of_size_with_no_grace(1000)
    ).count().to_stream().map(lambda k, v: KeyValue(f"{k.key}@{k.window.start}", v)).to(
        t["windowed-out"], Produced.with_(S, L)
    )
    b.stream(t["regroup"], Consumed.with_(S, S)).group_by(
        lambda k, v: v[:2], Grouped.with_(S, S)
    ).count().to_stream().to(t["regroup-out"], Produced.with_(S, L))
    return b.build()


def _produce(kafka: LocalKafka, t: dict[str, str], start: int, n: int) -> None:
    for stage in STAGES:
        rows = []
        for i in range(start, start + n):
            value = f'{{"n": {i}}}' if stage == "json" else f"v{i % 7}x{i}"
            rows.append((f"k{i % 6}".encode(), value.encode(), 1_000 + 150 * i))
        kafka.produce(t[stage], rows)


def _outputs(kafka: LocalKafka, t: dict[str, str]) -> dict[str, dict[str, list[tuple[Any, int]]]]:
    out: dict[str, dict[str, list[tuple[Any, int]]]] = {}
    for stage in STAGES:
        deser = (S if stage == "copy" else L).deserializer()
        topic = t[f"{stage}-out"]
        for r in sorted(kafka.consume_all(topic, read_committed=True), key=lambda r: (r.partition, r.offset)):
            key = S.deserializer().deserialize(topic, r.key)
            out.setdefault(stage, {}).setdefault(key, []).append(
                (deser.deserialize(topic, r.value), r.timestamp)
            )
    return out


def _forget_last_spark_commit(state: Path) -> int:
    """Delete each query's newest commit-log entry: at restart Spark runs that batch again, as after
    a crash between the tasks' Kafka commits and Spark's own. Returns how many were deleted."""
    deleted = 0
    for commits in state.glob("*/spark/*/commits"):
        entries = sorted((p for p in commits.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
        if entries:
            entries[-1].unlink()
            crc = commits / f".{entries[-1].name}.crc"
            if crc.exists():
                crc.unlink()
            deleted += 1
    return deleted


def _run(
    kafka: LocalKafka,
    spark: Any,
    topic_factory: Callable[..., str],
    tmp_path: Path,
    guarantee: str,
    replay: bool,
) -> Any:
    t = {s: topic_factory(s, partitions=2) for s in STAGES}
    t.update({f"{s}-out": topic_factory(f"{s}-out", partitions=2) for s in STAGES})
    state = tmp_path / guarantee / str(replay)
    config = {
        "application.id": f"eos-{guarantee}-{replay}-{os.getpid()}",
        "bootstrap.servers": kafka.bootstrap_servers,
        "state.dir": str(state),
        "processing.guarantee": guarantee,
    }
    for start in (0, 60):
        _produce(kafka, t, start, 60)
        app = KafkaStreams(_topology(t), config, spark=spark)
        try:
            app.process_available()
        finally:
            app.close()
        if replay and start == 0:
            # every query: direct read (copy and the regroup's first half), engine, two native, regroup count
            assert _forget_last_spark_commit(state) == 5
    return _outputs(kafka, t)


def _expected() -> dict[str, dict[str, Any]]:
    """What every output key's last record must be, and the copy's every value, for inputs 0..119."""
    copies: dict[str, list[Any]] = {}
    sums: dict[str, int] = {}
    counts: dict[str, int] = {}
    windows: dict[str, int] = {}
    regrouped: dict[str, int] = {}
    for i in range(120):
        key, ts, value = f"k{i % 6}", 1_000 + 150 * i, f"v{i % 7}x{i}"
        copies.setdefault(key, []).append(value.upper())
        sums[key] = sums.get(key, 0) + i
        counts[key] = counts.get(key, 0) + 1
        window = f"{key}@{ts - ts % 1000}"
        windows[window] = windows.get(window, 0) + 1
        regrouped[value[:2]] = regrouped.get(value[:2], 0) + 1
    return {"copy": copies, "json": sums, "count": counts, "windowed": windows, "regroup": regrouped}


def test_exactly_once_writes_each_output_once_when_spark_runs_a_committed_batch_again(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    expected = _expected()
    once = _run(kafka, spark, topic_factory, tmp_path, "exactly_once_v2", replay=True)
    assert {k: sorted(v for v, _ in seq) for k, seq in once["copy"].items()} == {
        k: sorted(v) for k, v in expected["copy"].items()
    }
    for stage in ("json", "count", "windowed", "regroup"):
        assert {k: seq[-1][0] for k, seq in once[stage].items()} == expected[stage], stage
        # written once: every key's aggregate only grows from one record to the next
        assert all(all(a[0] < b[0] for a, b in itertools.pairwise(seq)) for seq in once[stage].values()), (
            stage
        )
    # At-least-once writes the replayed batch's output a second time.
    twice = _run(kafka, spark, topic_factory, tmp_path, "at_least_once", replay=True)
    assert sum(map(len, twice["copy"].values())) == 120 + 60
    assert {k: seq[-1][0] for k, seq in twice["count"].items()} == expected["count"]  # state is exact


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        (
            "spark.speculation",
            "true",
            r"spark\.speculation=true would break processing\.guarantee=exactly_once_v2",
        ),
        (
            "consumer.isolation.level",
            "read_uncommitted",
            r"consumer\.isolation\.level=read_uncommitted would break",
        ),
        ("producer.acks", "1", r"producer\.acks=1 would break processing\.guarantee=exactly_once_v2"),
        ("producer.enable.idempotence", "false", r"producer\.enable\.idempotence=false would break"),
        ("producer.transactional.id", "mine", r"producer\.transactional\.id must not be set"),
    ],
)
def test_settings_that_break_the_guarantee_are_refused_before_anything_starts(
    setting: str, value: str, message: str, tmp_path: Path
) -> None:
    config = {
        "application.id": "eos-refused",
        "bootstrap.servers": "127.0.0.1:9",
        "state.dir": str(tmp_path),
        "processing.guarantee": "exactly_once_v2",
        setting: value,
    }
    with pytest.raises(StreamsException, match=message):
        KafkaStreams(_topology({s: s for s in [*STAGES, *(f"{s}-out" for s in STAGES)]}), config)
