"""Word count: the "hello world" of Kafka Streams, as in Kafka's own WordCountDemo.

Lines of text come in on ``text-lines``; every word's running count goes out on
``word-counts`` (key: the word, value: the count as a Long). Shows
``flat_map_values``, ``group_by`` (a repartition topic, so that one task owns
each word), ``count`` into a named, queryable store and ``to_stream().to()``.

Run it (three terminals, from the repository root)::

    kspark dev-kafka --port 9092 --topic text-lines:1 --topic word-counts:1
    kspark run examples/word_count.py
    python examples/word_count.py produce     # a few lines of text
    python examples/word_count.py consume     # prints word: count, stops when idle

``KSPARK_BOOTSTRAP`` overrides the broker (default ``127.0.0.1:9092``), for
``kspark dev-kafka`` on a port of its choosing. The record cache is on, as in
Kafka Streams, so each commit (every second here) writes each changed word's
latest count once.
"""

from __future__ import annotations

import os
import re
import sys
import uuid
from typing import Any

from kspark import Consumed, Grouped, Materialized, Produced, StreamsBuilder, Topology
from kspark.serde import Serdes

__all__ = [
    "APPLICATION_ID",
    "COUNTS_STORE",
    "INPUT_TOPIC",
    "OUTPUT_TOPIC",
    "SAMPLE_LINES",
    "config",
    "main",
    "split_words",
    "topology",
]

APPLICATION_ID = "kspark-example-word-count"
INPUT_TOPIC = "text-lines"
OUTPUT_TOPIC = "word-counts"
COUNTS_STORE = "word-counts-store"
SAMPLE_LINES = [
    "all streams lead to kafka",
    "hello kafka streams",
    "join kafka summit",
]

# Kafka's WordCountDemo splits on \W+: punctuation separates words, case does not matter.
_NON_WORD = re.compile(r"\W+")


def split_words(line: str | None) -> list[str]:
    """The lower-cased words of a line; a null line has none."""
    if line is None:
        return []
    return [word for word in _NON_WORD.split(line.lower()) if word]


def word_of(_key: str | None, word: str) -> str:
    """The grouping key: the word itself (the input key, usually null, is not used)."""
    return word


def topology(input_topic: str = INPUT_TOPIC, output_topic: str = OUTPUT_TOPIC) -> Topology:
    """The word-count topology; tests pass their own topic names."""
    string = Serdes.String()
    builder = StreamsBuilder()
    (
        builder.stream(input_topic, Consumed.with_(string, string))
        .flat_map_values(split_words)
        # Re-keying by word makes Kafka Streams (and kspark) repartition, so every occurrence of
        # a word reaches the one task that counts it, whichever partition the line was on.
        .group_by(word_of, Grouped.with_(string, string))
        .count(Materialized.as_(COUNTS_STORE))
        .to_stream()
        .to(output_topic, Produced.with_(string, Serdes.Long()))
    )
    return builder.build()


def config() -> dict[str, Any]:
    """Kafka Streams settings; ``KSPARK_BOOTSTRAP`` names the broker."""
    return {
        "application.id": APPLICATION_ID,
        "bootstrap.servers": os.environ.get("KSPARK_BOOTSTRAP", "127.0.0.1:9092"),
        # Kafka Streams commits every 30 s by default; a demo should answer within a second.
        "commit.interval.ms": 1000,
    }


def main(argv: list[str]) -> int:
    """``produce``: write the sample lines; ``consume``: print the counts written so far."""
    # confluent-kafka is a kspark dependency; imported here because the application does not need it.
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    bootstrap = config()["bootstrap.servers"]
    if argv == ["produce"]:
        producer = Producer({"bootstrap.servers": bootstrap})
        for line in SAMPLE_LINES:
            producer.produce(INPUT_TOPIC, value=line.encode())
        producer.flush(10)
        print(f"wrote {len(SAMPLE_LINES)} lines to {INPUT_TOPIC}")
        return 0
    if argv == ["consume"]:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4()}"})
        partitions = consumer.list_topics(OUTPUT_TOPIC, timeout=10).topics[OUTPUT_TOPIC].partitions
        consumer.assign([TopicPartition(OUTPUT_TOPIC, p, OFFSET_BEGINNING) for p in partitions])
        words, counts = Serdes.String().deserializer(), Serdes.Long().deserializer()
        # Stops after 5 s without a record: the output topic has no end of its own.
        while (msg := consumer.poll(5.0)) is not None:
            if msg.error() is None:
                word = words.deserialize(OUTPUT_TOPIC, msg.key())
                print(f"{word}: {counts.deserialize(OUTPUT_TOPIC, msg.value())}")
        consumer.close()
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
