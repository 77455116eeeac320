"""``kspark reset``: input offsets, internal topics and checkpoints, then a start over (reset.py)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kspark import KafkaStreams, cli
from kspark.dev.kafka import LocalKafka
from kspark.errors import ConfigException
from kspark.runtime.reset import parse_datetime, parse_duration

pyspark_cloudpickle = pytest.importorskip("pyspark.cloudpickle")

_APP = """
from kspark import Consumed, Grouped, Produced, StreamsBuilder
from kspark.serde import Serdes

S = Serdes.String()


def topology():
    b = StreamsBuilder()
    stream = b.stream({src!r}, Consumed.with_(S, S))
    stream.map_values(str.upper).to({copy!r}, Produced.with_(S, S))
    # A key change: a repartition topic, which the reset deletes.
    counts = stream.select_key(lambda k, v: v[:1]).group_by_key(Grouped.with_(S, S)).count()
    counts.to_stream().to({counts!r}, Produced.with_(S, Serdes.Long()))
    return b.build()


config = {{"application.id": {app!r}, "bootstrap.servers": {servers!r}, "state.dir": {state!r}}}
"""


def test_durations_and_times_read_as_kafkas_tool_reads_them() -> None:
    assert parse_duration("P1DT2H30M").total_seconds() == 86_400 + 2 * 3_600 + 30 * 60
    assert parse_duration("PT15.5S").total_seconds() == 15.5
    assert (
        parse_datetime("2026-11-26T10:00:00Z") == parse_datetime("2026-11-26T10:00:00") == 1_795_687_200_000
    )
    assert parse_datetime("2026-11-26T11:00:00+01:00") == 1_795_687_200_000
    with pytest.raises(ConfigException, match="not a duration"):
        parse_duration("15 minutes")
    with pytest.raises(ConfigException, match="not a time"):
        parse_datetime("yesterday")


@pytest.mark.integration
@pytest.mark.slow
def test_reset_to_a_time_reprocesses_from_there_and_to_earliest_from_the_start(
    kafka: LocalKafka,
    spark: Any,
    topic_factory: Callable[..., str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    src, copy, counts = (topic_factory(n, partitions=2) for n in ("reset-in", "reset-copy", "reset-counts"))
    app_id = f"reset-{src}"
    module = tmp_path / "reset_app_mod.py"
    state = tmp_path / "state"
    module.write_text(
        _APP.format(
            src=src, copy=copy, counts=counts, app=app_id, servers=kafka.bootstrap_servers, state=str(state)
        )
    )
    kafka.produce(
        src, [(b"k%d" % i, b"a%d" % i if i < 6 else b"b%d" % i, 1_000 * (i + 1), i % 2) for i in range(10)]
    )

    def run() -> int:
        topology, config = cli.load_app(module)
        # Spark's workers cannot import a module of the test's temporary directory: by value.
        pyspark_cloudpickle.register_pickle_by_value(sys.modules[module.stem])
        app = KafkaStreams(topology, config, spark=spark)
        try:
            return app.process_available()
        finally:
            app.close()

    def copies() -> list[bytes]:
        return sorted(r.value or b"" for r in kafka.consume_all(copy))

    def final_counts() -> dict[bytes, int]:
        out = {}
        for r in kafka.consume_all(counts):
            out[r.key or b""] = int.from_bytes(r.value or b"", "big")
        return out

    assert run() > 0
    assert len(copies()) == 10 and final_counts() == {b"a": 6, b"b": 4}
    repartition = [t for t in kafka.list_topics() if t.startswith(app_id) and t.endswith("-repartition")]
    assert len(repartition) == 1 and state.joinpath(app_id).is_dir()

    # A dry run prints the plan and changes nothing.
    assert cli.main(["reset", str(module), "--to-datetime", "1970-01-01T00:00:08Z", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"commit {src}[0] offset 4" in out and f"commit {src}[1] offset 3" in out  # ts 8000: record 7
    assert f"delete topic {repartition[0]}" in out and "dry run: nothing changed" in out
    assert repartition[0] in kafka.list_topics() and state.joinpath(app_id).is_dir()

    # From 8 s on: records 7, 8, 9 (timestamps 8000-10000) again.
    assert cli.main(["reset", str(module), "--to-datetime", "1970-01-01T00:00:08Z"]) == 0
    assert repartition[0] not in kafka.list_topics() and not state.joinpath(app_id).exists()
    assert run() > 0
    assert len(copies()) == 13 and copies().count(b"B7") == 2 and copies().count(b"B6") == 1
    assert final_counts()[b"b"] == 3  # the count starts over: only the records read again

    # To earliest (the default): everything again.
    assert cli.main(["reset", str(module)]) == 0
    assert run() > 0
    assert len(copies()) == 23 and final_counts() == {b"a": 6, b"b": 4}
