"""examples/pageview_windows.py on the TopologyTestDriver: one final count per page and window."""

from __future__ import annotations

from typing import Any

import pageview_windows as example

from kspark.serde import Serdes
from kspark.testing import TopologyTestDriver

S, J = Serdes.String(), Serdes.JSON()
START = 600_000  # a window boundary: windows are [600_000, 660_000), [660_000, 720_000), ...


def _window(page: str, start: int, views: int) -> dict[str, Any]:
    return {"page": page, "window_start": start, "window_end": start + 60_000, "views": views}


def test_the_sample_gives_each_closed_window_once_with_its_final_count() -> None:
    with TopologyTestDriver(example.topology(), example.config()) as driver:
        views = driver.create_input_topic(example.INPUT_TOPIC, S, J)
        out = driver.create_output_topic(example.OUTPUT_TOPIC, S, J)
        emitted: list[tuple[int, list[tuple[str, dict[str, Any], int | None]]]] = []
        for user, view, ts in example.sample(START):
            views.pipe_input(user, view, timestamp=ts)
            emitted.append((ts, [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]))

        assert emitted == [
            (605_000, []),
            (612_000, []),
            (630_000, []),
            (665_000, []),
            # 7 s late, within the 10 s grace: still counted in the first window
            (658_000, []),
            # stream time reaches the first window's end plus grace: its counts leave, final, each
            # stamped with the latest view it counted
            (
                670_000,
                [
                    ("/home", _window("/home", 600_000, 2), 612_000),
                    ("/pricing", _window("/pricing", 600_000, 2), 658_000),
                ],
            ),
            # for a window that has closed: dropped, and nothing is emitted again
            (650_000, []),
            (
                735_000,
                [
                    ("/docs", _window("/docs", 660_000, 1), 670_000),
                    ("/home", _window("/home", 660_000, 1), 665_000),
                ],
            ),
        ]
        assert out.is_empty()


def test_a_window_closes_exactly_when_stream_time_reaches_its_end_plus_the_grace() -> None:
    with TopologyTestDriver(example.topology(), example.config()) as driver:
        views = driver.create_input_topic(example.INPUT_TOPIC, S, J)
        out = driver.create_output_topic(example.OUTPUT_TOPIC, S, J)
        views.pipe_input("u1", {"page": "/a"}, timestamp=START)
        views.pipe_input("u2", {"page": "/a"}, timestamp=START + 59_999)
        # Stream time advances on any page's view (all pass through one repartition partition).
        views.pipe_input("u3", {"page": "/b"}, timestamp=START + 60_000 + 9_999)
        assert out.is_empty()

        views.pipe_input("u3", {"page": "/b"}, timestamp=START + 60_000 + 10_000)
        assert [(r.key, r.value) for r in out.read_records_to_list()] == [("/a", _window("/a", START, 2))]
