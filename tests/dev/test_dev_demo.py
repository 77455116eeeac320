"""The demo's data and functions (its end-to-end run as `kspark demo`: tests/dev/test_wheel.py)."""

from __future__ import annotations

import pytest

from kspark.dev import demo


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
