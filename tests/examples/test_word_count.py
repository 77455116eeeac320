"""examples/word_count.py on the TopologyTestDriver: exact counts, keys and timestamps."""

from __future__ import annotations

import word_count

from kspark import KeyValue
from kspark.serde import Serdes
from kspark.testing import TopologyTestDriver

S = Serdes.String()


def test_split_words_lowercases_and_splits_on_non_word_characters() -> None:
    assert word_count.split_words("Hello, Kafka-Streams!  hello") == ["hello", "kafka", "streams", "hello"]
    assert word_count.split_words("") == []
    assert word_count.split_words(None) == []


def test_counts_every_word_and_keeps_the_latest_lines_timestamp() -> None:
    with TopologyTestDriver(word_count.topology(), word_count.config()) as driver:
        lines = driver.create_input_topic(word_count.INPUT_TOPIC, S, S)
        counts = driver.create_output_topic(word_count.OUTPUT_TOPIC, S, Serdes.Long())
        for n, line in enumerate(word_count.SAMPLE_LINES):
            lines.pipe_input(None, line, timestamp=1_000 + n)

        # Each word reaches the count as its own record of the repartition topic, and the driver
        # commits after every record it processes: every occurrence forwards its count, stamped
        # with the timestamp of the line it came from.
        assert [(r.key, r.value, r.timestamp) for r in counts.read_records_to_list()] == [
            ("all", 1, 1_000),
            ("streams", 1, 1_000),
            ("lead", 1, 1_000),
            ("to", 1, 1_000),
            ("kafka", 1, 1_000),
            ("hello", 1, 1_001),
            ("kafka", 2, 1_001),
            ("streams", 2, 1_001),
            ("join", 1, 1_002),
            ("kafka", 3, 1_002),
            ("summit", 1, 1_002),
        ]
        assert list(driver.get_key_value_store(word_count.COUNTS_STORE).all()) == [
            KeyValue("all", 1),
            KeyValue("hello", 1),
            KeyValue("join", 1),
            KeyValue("kafka", 3),
            KeyValue("lead", 1),
            KeyValue("streams", 2),
            KeyValue("summit", 1),
            KeyValue("to", 1),
        ]


def test_each_occurrence_updates_the_count_and_a_null_line_has_no_words() -> None:
    with TopologyTestDriver(word_count.topology(), word_count.config()) as driver:
        lines = driver.create_input_topic(word_count.INPUT_TOPIC, S, S)
        counts = driver.create_output_topic(word_count.OUTPUT_TOPIC, S, Serdes.Long())
        lines.pipe_input(None, "To be, or not to be", timestamp=5_000)
        lines.pipe_input(None, None, timestamp=6_000)

        assert counts.read_key_values_to_list() == [
            KeyValue("to", 1),
            KeyValue("be", 1),
            KeyValue("or", 1),
            KeyValue("not", 1),
            KeyValue("to", 2),
            KeyValue("be", 2),
        ]
