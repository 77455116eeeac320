"""The demo's data and functions; end to end as ``kspark demo``, its output included."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kspark.dev import demo
from tests.dev.cli_process import announced_log, noise


def test_events_are_realistic_and_some_out_of_order() -> None:
    events = demo.pageview_events(400, start_ms=1_700_000_000_000)
    assert len(events) == 400
    users = {u for u, _ in events}
    assert 10 <= len(users) <= 25
    assert all(v["user"] == u for u, v in events)
    late = 0
    high = 0
    for _, v in events:
        late += v["ts"] < high
        high = max(high, v["ts"])
    assert 20 <= late <= 100
    engaged = [v for u, v in events if demo.is_engaged(u, v)]
    # The filter must matter: neither nothing nor everything passes.
    assert 0.1 * len(events) < len(engaged) < 0.9 * len(events)
    # Deterministic for a seed.
    assert events == demo.pageview_events(400, start_ms=1_700_000_000_000)


def test_enrich_adds_category_and_seconds() -> None:
    view = {"user": "u", "page": "/tech/kafka-streams", "duration_ms": 12_345, "ts": 1}
    assert demo.enrich(view) == {**view, "category": "tech", "engaged_seconds": 12.3}
    assert demo.enrich({**view, "page": "/elsewhere"})["category"] == "other"


@pytest.mark.integration
@pytest.mark.slow
def test_demo_command_end_to_end_prints_only_its_own_lines() -> None:
    """``kspark demo`` as a user runs it, in a process with a JVM of its own, so that Spark's, the
    workers' and librdkafka's lines are seen going to the log file the demo names. Under
    exactly_once_v2: the demo's harder path (transactions, read_committed output), while nearly
    every other test on Spark runs at_least_once, the command's default."""
    done = subprocess.run(
        [sys.executable, "-m", "kspark", "demo", "--events", "120", "--timeout", "240", "--exactly-once"],
        capture_output=True,
        text=True,
        timeout=420,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "output matches the expected records exactly" in done.stdout
    assert "interactive queries at http://127.0.0.1:" in done.stdout  # the store, over HTTP
    assert noise(done.stdout) == [] and done.stderr == "", done.stdout + done.stderr
    path = announced_log(done.stdout)
    log = path.read_text()
    path.unlink()  # the demo leaves its log in the temporary directory for a user to read
    assert "TransformWithStateInPandas Python worker" in log  # PySpark's worker prints went there
    assert "WARNING: Using incubator modules" in log  # and the JVM's own


def test_demo_topology_on_the_driver_counts_views_per_category_window() -> None:
    from kspark.serde import Serdes
    from kspark.testing import TopologyTestDriver

    events = demo.pageview_events(300, start_ms=1_700_000_000_000)
    with TopologyTestDriver(demo.build_topology(), {"application.id": "demo-test"}) as driver:
        views = driver.create_input_topic(demo.INPUT_TOPIC, Serdes.String(), Serdes.JSON())
        for user, view in events:
            views.pipe_input(user, view, timestamp=view["ts"])
        enriched = driver.create_output_topic(demo.OUTPUT_TOPIC, Serdes.String(), Serdes.JSON())
        counts = driver.create_output_topic(demo.COUNTS_TOPIC, Serdes.String(), Serdes.JSON())
        assert enriched.read_key_values_to_list() == [
            (u, demo.enrich(v)) for u, v in events if demo.is_engaged(u, v)
        ]
        final = {k: v["views"] for k, v in counts.read_key_values_to_map().items()}
    assert final == demo.window_counts(events)
    assert len(final) >= 8  # several categories over several one-minute windows
