"""The kspark command line: parsing, app loading, fetch-jars, dev-kafka, run (its output, quiet and
--verbose, and a failure's paragraph)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kspark import cli
from kspark.dev.kafka import LocalKafka
from kspark.runtime.logs import announcement
from tests.dev.cli_process import dev_kafka, noise


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for command in ("demo", "run", "describe", "dev-kafka", "fetch-jars"):
        assert command in out


def test_load_app_calls_topology_and_config_functions(tmp_path: Path) -> None:
    app = tmp_path / "my_app_mod.py"
    app.write_text(
        "class T:\n    def describe(self):\n        return 'Topologies: none'\n"
        "def topology():\n    return T()\n"
        "config = {'application.id': 'x'}\n"
    )
    topology, config = cli.load_app(app)
    assert topology.describe() == "Topologies: none"
    assert config == {"application.id": "x"}
    assert str(tmp_path) in os.environ["PYTHONPATH"].split(os.pathsep)


def test_describe_prints_topology(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = tmp_path / "describe_app_mod.py"
    app.write_text(
        "class T:\n    def describe(self):\n        return 'Sub-topology: 0'\ntopology = T()\nconfig = {}\n"
    )
    assert cli.main(["describe", str(app)]) == 0
    assert "Sub-topology: 0" in capsys.readouterr().out


def test_app_without_topology_is_a_named_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = tmp_path / "empty_app_mod.py"
    app.write_text("config = {}\n")
    assert cli.main(["describe", str(app)]) == 2
    assert "defines no `topology`" in capsys.readouterr().err


def test_missing_app_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "/no/such/app.py"]) == 2
    assert "no such application file" in capsys.readouterr().err


def test_fetch_jars_unknown_bundle(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["fetch-jars", "nope"]) == 2
    assert "known bundles" in capsys.readouterr().err


@pytest.mark.integration
def test_fetch_jars_reports_cached_bundles(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["fetch-jars"]) == 0
    cli.main(["fetch-jars"])
    out = capsys.readouterr().out
    assert "kafka-broker: 46 jars" in out
    assert "spark-kafka-connector: 4 jars" in out
    assert "cached in" in out


@pytest.mark.integration
@pytest.mark.slow
def test_dev_kafka_prints_bootstrap_servers_and_stops_on_ctrl_c() -> None:
    with dev_kafka("--topic", "hello:3") as (proc, text):
        assert "created topic hello (3 partitions)" in text, text
        servers = next(x for x in text.splitlines() if x.startswith("bootstrap.servers="))
        assert servers.strip().startswith("bootstrap.servers=127.0.0.1:")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0


_DEMO_APP = """
from tests.dev.cli_process import dev_kafka
from kspark.dev.demo import build_topology as topology
config = {"application.id": "pageviews-demo", "bootstrap.servers": "127.0.0.1:9"}
"""

_MIXED_APP = """
from kspark import Consumed, Produced, StreamsBuilder, TimeWindows
from kspark.processor import Processor
from kspark.serde import Serdes

S, L, J = Serdes.String(), Serdes.Long(), Serdes.JSON()


class Tag(Processor):
    def process(self, record):
        self.context().forward(record.with_value(record.value + "!"))


def topology():
    b = StreamsBuilder()
    views = b.stream("views", Consumed.with_(S, S))
    views.group_by_key().count().to_stream().to("counts", Produced.with_(S, L))
    views.group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(60_000)).count().to_stream().map(
        lambda k, v: (k.key, v)
    ).to("per-minute", Produced.with_(S, L))
    users = b.table("users", Consumed.with_(S, J))
    b.stream("clicks", Consumed.with_(S, J)).join(users, lambda c, u: {**c, **u}).to(
        "enriched", Produced.with_(S, J)
    )
    b.stream("raw", Consumed.with_(S, S)).process(Tag).to("tagged", Produced.with_(S, S))
    return b.build()


config = {"application.id": "mixed", "bootstrap.servers": "127.0.0.1:9"}
"""


def test_describe_spark_prints_the_plan_of_the_demo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = tmp_path / "demo_plan_app.py"
    app.write_text(_DEMO_APP)
    assert cli.main(["describe", str(app), "--spark"]) == 0
    out = capsys.readouterr().out
    assert out.index("Topologies:") < out.index("Spark plan of pageviews-demo:")
    assert "Query pageviews-demo-subtopology-0 [direct read], level 0: sub-topologies 0" in out
    assert "fused chain: no (KSTREAM-MAPVALUES-0000000001 forwards to 2 nodes)" in out
    # the per-category count reads JSON values: the windowed count runs in the engine, and says why
    assert "Query pageviews-demo-subtopology-1 [engine tasks], level 1" in out
    assert "native lowering: no (value deserializer JsonDeserializer is not String or ByteArray)" in out


def test_describe_spark_names_each_stage_and_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = tmp_path / "mixed_plan_app.py"
    app.write_text(_MIXED_APP)
    assert cli.main(["describe", str(app), "--spark"]) == 0
    out = capsys.readouterr().out
    plan = out[out.index("Spark plan of mixed:") :]
    assert "[engine tasks]" in plan and "[direct read]" in plan
    assert "native lowering: no (2 processors use stores (only a lone count or reduce is lowered))" in plan
    assert "fused chain: no (KSTREAM-PROCESSOR-" in plan
    assert "micro-batch cap: none: sub-topology" in plan  # the join reads two topics


def test_describe_spark_with_a_mistyped_setting_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = tmp_path / "typo_plan_app.py"
    app.write_text(_DEMO_APP.replace('"127.0.0.1:9"}', '"127.0.0.1:9", "spark.kspark.directread": "true"}'))
    assert cli.main(["describe", str(app), "--spark"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kspark: error: Unknown kspark setting 'spark.kspark.directread'; did you mean")
    assert "spark.kspark.directRead?" in err and "\n" not in err


def test_status_line_sums_rates_and_takes_the_worst_lag_and_batch() -> None:
    from kspark.metrics import MetricName

    thread, fetch = "stream-thread-metrics", "consumer-fetch-manager-metrics"
    metrics = {
        MetricName.of("process-rate", thread, thread_id="a"): 1_000.0,
        MetricName.of("process-rate", thread, thread_id="b"): 250.4,
        MetricName.of("record-send-rate", "producer-metrics", client_id="a"): 900.0,
        MetricName.of("commit-latency-max", thread, thread_id="a"): 812.2,
        MetricName.of("commit-latency-max", thread, thread_id="b"): float("nan"),
        MetricName.of("records-lag-max", fetch, client_id="a"): 12_345.0,
        MetricName.of("records-lag-max", fetch, client_id="b"): 7.0,
        MetricName.of("alive-stream-threads", "stream-metrics", client_id="app"): 2.0,
    }
    assert cli.status_line("RUNNING", metrics) == (
        "RUNNING | processed 1,250/s | written 900/s | lag 12,345 | slowest batch 812 ms | queries 2"
    )
    assert cli.status_line("REBALANCING", {}) == (
        "REBALANCING | processed 0/s | written 0/s | lag 0 | slowest batch - | queries 0"
    )


_RUN_APP = """
from kspark import Consumed, Produced, StreamsBuilder
from kspark.serde import Serdes

S = Serdes.String()


def topology():
    b = StreamsBuilder()
    b.stream({src!r}, Consumed.with_(S, S)).map_values(str.upper).to({dst!r}, Produced.with_(S, S))
    return b.build()


config = {{"application.id": {app!r}, "bootstrap.servers": {servers!r}, "state.dir": {state!r}}}
"""


@pytest.mark.integration
@pytest.mark.slow
def test_run_prints_status_lines_and_closes_cleanly_on_sigterm(
    kafka: LocalKafka, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    """With --verbose, as every run did before it had a log file: Spark's lines on the terminal."""
    import threading
    import time

    src, dst = topic_factory("run-in"), topic_factory("run-out")
    app = tmp_path / "run_app_mod.py"
    state = str(tmp_path / "state")
    app.write_text(
        _RUN_APP.format(src=src, dst=dst, app=f"run-{src}", servers=kafka.bootstrap_servers, state=state)
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "kspark", "run", str(app), "--status-interval", "1", "--verbose"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or []), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(x.startswith("RUNNING |") for x in lines):
            time.sleep(0.5)
        assert any(x.startswith("RUNNING | processed") for x in lines), "".join(lines)
        kafka.produce(src, [(b"k", b"v%d" % i, 1_000 + i) for i in range(50)])
        out = kafka.consume_all(dst, min_records=50, timeout=90)
        assert [r.value for r in out] == [b"V%d" % i for i in range(50)]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0, "".join(lines)
        reader.join(10)
        text = "".join(lines)
        assert "closing" in text
        assert "WARNING: Using incubator modules" in text  # the JVM's own line
        assert "INFO kspark.runtime.spark.session: Spark session started in" in text  # kspark's logging
        assert "logs go to" not in text  # no log file
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


_FAILING_APP = """
from kspark import Consumed, Produced, StreamsBuilder
from kspark.serde import Serdes

S = Serdes.String()


def shout(value):
    if value == "bad":
        raise ValueError(f"cannot shout {{value!r}}")
    return value.upper()


def topology():
    b = StreamsBuilder()
    b.stream({src!r}, Consumed.with_(S, S)).map_values(shout).to({dst!r}, Produced.with_(S, S))
    return b.build()


config = {{"application.id": {app!r}, "bootstrap.servers": {servers!r}, "state.dir": {state!r}}}
"""


@pytest.mark.integration
@pytest.mark.slow
def test_run_of_a_failing_app_prints_one_paragraph_and_logs_the_rest(
    kafka: LocalKafka, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("fail-in", partitions=2), topic_factory("fail-out", partitions=2)
    kafka.produce(src, [(b"k", b"fine", 1_000, 0), (b"k", b"ok", 1_001, 1), (b"k", b"bad", 1_002, 1)])
    app_id = f"run-{src}"
    app = tmp_path / "failing_app_mod.py"
    state = tmp_path / "state"
    app.write_text(
        _FAILING_APP.format(src=src, dst=dst, app=app_id, servers=kafka.bootstrap_servers, state=str(state))
    )
    done = subprocess.run(
        [sys.executable, "-m", "kspark", "run", str(app), "--status-interval", "600"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert noise(done.stdout + done.stderr) == [], done.stdout + done.stderr
    log = state / app_id / "logs" / "kspark.log"
    assert done.stdout.splitlines() == [announcement(log), f"{app_id} running; Ctrl-C to stop"]
    paragraph = " ".join(done.stderr.split())
    assert paragraph.startswith(
        f"{app_id} failed in sub-topology 0 (task 0_1, processor KSTREAM-MAPVALUES-0000000001) at the "
        f"record of topic {src}, partition 1, offset 1: ValueError: cannot shout 'bad'. "
    ), done.stderr
    assert "set processing.exception.handler to log_and_continue" in paragraph
    assert paragraph.endswith(f"The full trace is in {log}; --debug prints it here.")
    text = log.read_text()
    assert "WARNING: Using incubator modules" in text  # the JVM's own
    assert " ERROR Executor: Exception in task" in text  # Spark's log4j
    assert " ERROR kspark.kafka_streams: kspark application" in text  # kspark's Python logging
    assert "Traceback (most recent call last)" in text and "ValueError: cannot shout 'bad'" in text
