"""examples/sessionization.py on the TopologyTestDriver: sessions, merges, tombstones, late clicks."""

from __future__ import annotations

from typing import Any

import sessionization as example

from kspark import Window, Windowed
from kspark.serde import Serdes
from kspark.testing import TopologyTestDriver

S, J = Serdes.String(), Serdes.JSON()
M = 60_000
START = 1_000_000


def _session(user: str, start: int, end: int) -> Windowed[str]:
    return Windowed(user, Window(START + start, START + end))


def _run(clicks: list[tuple[str, str, int]]) -> list[tuple[Windowed[str], Any, int | None]]:
    with TopologyTestDriver(example.topology(), example.config()) as driver:
        pipe = driver.create_input_topic(example.INPUT_TOPIC, S, S)
        out = driver.create_output_topic(example.OUTPUT_TOPIC, Serdes.session_windowed(S), J)
        for user, page, ts in clicks:
            pipe.pipe_input(user, page, timestamp=ts)
        return [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]


def test_the_sample_grows_sessions_merges_two_and_drops_a_click_that_is_too_late() -> None:
    assert _run(example.sample(START)) == [
        (_session("user-1", 0, 0), {"clicks": 1, "pages": ["/home"]}, START),
        # each click replaces the session it extends: a tombstone for the old window, then the new
        (_session("user-1", 0, 0), None, START),
        (_session("user-1", 0, 1 * M), {"clicks": 2, "pages": ["/home", "/pricing"]}, START + 1 * M),
        (_session("user-1", 0, 1 * M), None, START + 1 * M),
        (
            _session("user-1", 0, 2 * M),
            {"clicks": 3, "pages": ["/home", "/pricing", "/signup"]},
            START + 2 * M,
        ),
        (_session("user-2", 3 * M, 3 * M), {"clicks": 1, "pages": ["/home"]}, START + 3 * M),
        # six minutes later: more than the five-minute gap, a second session
        (_session("user-2", 9 * M, 9 * M), {"clicks": 1, "pages": ["/docs"]}, START + 9 * M),
        # the late click at 6 minutes is within the gap of both: they merge into one session
        (_session("user-2", 3 * M, 3 * M), None, START + 3 * M),
        (_session("user-2", 9 * M, 9 * M), None, START + 9 * M),
        (
            _session("user-2", 3 * M, 9 * M),
            {"clicks": 3, "pages": ["/docs", "/home", "/pricing"]},
            START + 9 * M,
        ),
        (_session("user-1", 10 * M, 10 * M), {"clicks": 1, "pages": ["/home"]}, START + 10 * M),
        # user-3's click at 1 minute, with stream time at 10: its session closed at 1 + 2 (grace)
    ]


def test_the_gap_is_inclusive_and_a_click_one_millisecond_further_starts_a_new_session() -> None:
    gap = 5 * M
    assert _run(
        [
            ("u", "/a", START),
            ("u", "/b", START + gap),
            ("u", "/c", START + 2 * gap + 1),
        ]
    ) == [
        (_session("u", 0, 0), {"clicks": 1, "pages": ["/a"]}, START),
        (_session("u", 0, 0), None, START),
        (_session("u", 0, gap), {"clicks": 2, "pages": ["/a", "/b"]}, START + gap),
        (_session("u", 2 * gap + 1, 2 * gap + 1), {"clicks": 1, "pages": ["/c"]}, START + 2 * gap + 1),
    ]
