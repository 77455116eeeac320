"""examples/dedupe.py on the TopologyTestDriver: repeats dropped, ids expired by the punctuator."""

from __future__ import annotations

from collections.abc import Iterator

import dedupe as example
import pytest

from kspark import KeyValue
from kspark.serde import Serdes
from kspark.testing import TopologyTestDriver

S, J = Serdes.String(), Serdes.JSON()
M = 60_000
START = 1_000_000


@pytest.fixture
def driver() -> Iterator[TopologyTestDriver]:
    with TopologyTestDriver(example.topology(), example.config()) as d:
        yield d


def test_the_sample_drops_the_repeats_and_the_punctuator_forgets_old_ids(driver: TopologyTestDriver) -> None:
    events = driver.create_input_topic(example.INPUT_TOPIC, S, J)
    out = driver.create_output_topic(example.OUTPUT_TOPIC, S, J)
    seen = driver.get_key_value_store(example.SEEN_STORE)
    after: list[tuple[list[tuple[str | None, int | None]], list[KeyValue[str, int]]]] = []
    for key, value, ts in example.sample(START):
        events.pipe_input(key, value, timestamp=ts)
        after.append(([(r.key, r.timestamp) for r in out.read_records_to_list()], list(seen.all())))

    e1, e2 = KeyValue("e-1", START), KeyValue("e-2", START + 5_000)
    e3, e4 = KeyValue("e-3", START + 2 * M), KeyValue("e-4", START + 11 * M)
    assert after == [
        ([("e-1", START)], [e1]),
        ([("e-2", START + 5_000)], [e1, e2]),
        ([], [e1, e2]),  # e-1 again after 30 s
        ([("e-3", START + 2 * M)], [e1, e2, e3]),
        ([], [e1, e2, e3]),  # e-2 again after 4 minutes
        ([(None, START + 5 * M)], [e1, e2, e3]),  # no id: through, not remembered
        # stream time passes 11 minutes: the punctuator deletes e-1 and e-2 (older than 10 minutes)
        ([("e-4", START + 11 * M)], [e3, e4]),
        # e-1 twelve minutes after its first event: new again, remembered from now
        ([("e-1", START + 12 * M)], [KeyValue("e-1", START + 12 * M), e3, e4]),
    ]


def test_a_forwarded_event_is_the_input_record_unchanged(driver: TopologyTestDriver) -> None:
    events = driver.create_input_topic(example.INPUT_TOPIC, S, J)
    out = driver.create_output_topic(example.OUTPUT_TOPIC, S, J)
    events.pipe_input("e-1", {"n": 1}, timestamp=START, headers=[("source", b"web")])
    events.pipe_input("e-1", {"n": 2}, timestamp=START + 1)

    record = out.read_record()
    assert (record.key, record.value, record.timestamp) == ("e-1", {"n": 1}, START)
    assert [(h.key, h.value) for h in record.headers] == [("source", b"web")]
    assert out.is_empty()


def test_the_window_is_inclusive_and_does_not_wait_for_the_punctuator(driver: TopologyTestDriver) -> None:
    events = driver.create_input_topic(example.INPUT_TOPIC, S, J)
    out = driver.create_output_topic(example.OUTPUT_TOPIC, S, J)
    window = 10 * M
    events.pipe_input("a", {}, timestamp=START)
    events.pipe_input("b", {}, timestamp=START + 1)
    events.pipe_input("a", {}, timestamp=START + window)  # exactly the window: a duplicate
    # The punctuator runs once a minute of stream time: its last run (for START + 10 minutes) kept
    # "b", which was not older than the window then. "b" one millisecond past its window gets
    # through on the age check alone.
    assert [kv.key for kv in driver.get_key_value_store(example.SEEN_STORE).all()] == ["a", "b"]
    events.pipe_input("b", {}, timestamp=START + 1 + window + 1)

    assert [(r.key, r.timestamp) for r in out.read_records_to_list()] == [
        ("a", START),
        ("b", START + 1),
        ("b", START + window + 2),
    ]
