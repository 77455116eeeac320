"""De-duplication with the Processor API: a state store of seen ids and a punctuator that expires them.

Events come in on ``events`` (key: the event id, value: JSON), possibly more
than once (a producer retrying, an upstream job replayed). The first event
with a given id goes on to ``events-deduplicated`` unchanged (key, value,
timestamp and headers); a repeat within ``DEDUP_WINDOW`` of the first (in
event time) is dropped. Ids are remembered in a key-value store (id -> the
timestamp it was first seen); a punctuator, scheduled on stream time every
``EXPIRE_EVERY``, deletes ids older than the window, so the store holds only
the last window's ids however long the application runs. An id seen again
after its window is new again. Events without an id (null key) cannot be
compared and pass through.

Written with the Processor API rather than the DSL: ``Topology.add_source``,
``add_processor`` with a ``Processor`` subclass, ``add_state_store`` with
``Stores.key_value_store_builder``, ``ProcessorContext.schedule`` with
``PunctuationType.STREAM_TIME``, ``forward`` and ``add_sink``.

Run it (three terminals, from the repository root)::

    kspark dev-kafka --port 9092 --topic events:1 --topic events-deduplicated:1
    kspark run examples/dedupe.py
    python examples/dedupe.py produce    # eight events, two of them repeats
    python examples/dedupe.py consume    # prints the events that got through, stops when idle

``KSPARK_BOOTSTRAP`` overrides the broker (default ``127.0.0.1:9092``). The
input must be keyed by the id, so that all copies of an event are in one
partition and reach the task (and store) that has seen it.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from datetime import timedelta
from typing import Any, cast

from kspark import Topology
from kspark.processor import Processor, ProcessorContext, PunctuationType, Record
from kspark.serde import Serdes
from kspark.state import KeyValueStore, Stores

__all__ = [
    "APPLICATION_ID",
    "DEDUP_WINDOW",
    "EXPIRE_EVERY",
    "INPUT_TOPIC",
    "OUTPUT_TOPIC",
    "SEEN_STORE",
    "DeduplicateById",
    "config",
    "main",
    "sample",
    "topology",
]

APPLICATION_ID = "kspark-example-dedupe"
INPUT_TOPIC = "events"
OUTPUT_TOPIC = "events-deduplicated"
SEEN_STORE = "seen-event-ids"
DEDUP_WINDOW = timedelta(minutes=10)
"""A repeat this long (event time) after an id's first event is still a duplicate."""
EXPIRE_EVERY = timedelta(minutes=1)
"""How often (stream time) the punctuator deletes ids older than ``DEDUP_WINDOW``."""

_WINDOW_MS = int(DEDUP_WINDOW.total_seconds() * 1000)


class DeduplicateById(Processor[str | None, Any]):
    """Forwards the first event of each id within ``DEDUP_WINDOW``; drops the repeats."""

    def init(self, context: ProcessorContext) -> None:
        self._context = context
        self._seen = cast(KeyValueStore[str, int], context.get_state_store(SEEN_STORE))
        # Stream time, not the wall clock: expiry follows the events' own time, so a replay of
        # last week's events de-duplicates exactly as the live run did.
        context.schedule(EXPIRE_EVERY, PunctuationType.STREAM_TIME, self._expire)

    def process(self, record: Record[str | None, Any]) -> None:
        if record.key is None:
            self._context.forward(record)
            return
        first_seen = self._seen.get(record.key)
        # The age check makes the result independent of when the punctuator last ran: an id
        # older than the window is new again even if it has not been deleted yet.
        if first_seen is not None and record.timestamp - first_seen <= _WINDOW_MS:
            return
        self._seen.put(record.key, record.timestamp)
        self._context.forward(record)

    def _expire(self, timestamp: int) -> None:
        """The punctuator; ``timestamp`` is the stream time it was scheduled for."""
        with self._seen.all() as entries:
            expired = [entry.key for entry in entries if entry.value < timestamp - _WINDOW_MS]
        # Deleted after the iterator is closed: a store need not support changes under an open one.
        for key in expired:
            self._seen.delete(key)


def topology(input_topic: str = INPUT_TOPIC, output_topic: str = OUTPUT_TOPIC) -> Topology:
    """The de-duplication topology; tests pass their own topic names."""
    string, json = Serdes.String(), Serdes.JSON()
    topo = Topology()
    topo.add_source(
        "events", input_topic, key_deserializer=string.deserializer(), value_deserializer=json.deserializer()
    )
    topo.add_processor("dedupe", DeduplicateById, "events")
    topo.add_state_store(
        Stores.key_value_store_builder(Stores.persistent_key_value_store(SEEN_STORE), string, Serdes.Long()),
        "dedupe",
    )
    topo.add_sink(
        "deduplicated",
        output_topic,
        "dedupe",
        key_serializer=string.serializer(),
        value_serializer=json.serializer(),
    )
    return topo


def config() -> dict[str, Any]:
    """Kafka Streams settings; ``KSPARK_BOOTSTRAP`` names the broker."""
    return {
        "application.id": APPLICATION_ID,
        "bootstrap.servers": os.environ.get("KSPARK_BOOTSTRAP", "127.0.0.1:9092"),
        # Kafka Streams commits every 30 s by default; a demo should answer within a second.
        "commit.interval.ms": 1000,
    }


def sample(start_ms: int) -> list[tuple[str | None, dict[str, Any], int]]:
    """Events as (id, value, timestamp), in the order they arrive: e-1 and e-2 are each sent twice
    within the window (the repeats are dropped); e-1 comes back after 12 minutes (through again);
    one event has no id."""
    m = 60_000
    return [
        ("e-1", {"action": "signup", "user": "ada"}, start_ms),
        ("e-2", {"action": "login", "user": "grace"}, start_ms + 5_000),
        ("e-1", {"action": "signup", "user": "ada"}, start_ms + 30_000),
        ("e-3", {"action": "login", "user": "ada"}, start_ms + 2 * m),
        ("e-2", {"action": "login", "user": "grace"}, start_ms + 4 * m),
        (None, {"action": "heartbeat"}, start_ms + 5 * m),
        ("e-4", {"action": "logout", "user": "grace"}, start_ms + 11 * m),
        ("e-1", {"action": "signup", "user": "ada"}, start_ms + 12 * m),
    ]


def main(argv: list[str]) -> int:
    """``produce``: write the sample events; ``consume``: print the events that got through so far."""
    # confluent-kafka is a kspark dependency; imported here because the application does not need it.
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    bootstrap = config()["bootstrap.servers"]
    json = Serdes.JSON()
    if argv == ["produce"]:
        producer = Producer({"bootstrap.servers": bootstrap})
        events = sample(int(time.time() * 1000) - 15 * 60_000)
        for key, value, ts in events:
            producer.produce(
                INPUT_TOPIC,
                key=None if key is None else key.encode(),
                value=json.serializer().serialize(INPUT_TOPIC, value),
                timestamp=ts,
            )
        producer.flush(10)
        print(f"wrote {len(events)} events to {INPUT_TOPIC}")
        return 0
    if argv == ["consume"]:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4()}"})
        partitions = consumer.list_topics(OUTPUT_TOPIC, timeout=10).topics[OUTPUT_TOPIC].partitions
        consumer.assign([TopicPartition(OUTPUT_TOPIC, p, OFFSET_BEGINNING) for p in partitions])
        # Stops after 5 s without a record: the output topic has no end of its own.
        while (msg := consumer.poll(5.0)) is not None:
            if msg.error() is None:
                key = Serdes.String().deserializer().deserialize(OUTPUT_TOPIC, msg.key())
                print(f"{key}: {json.deserializer().deserialize(OUTPUT_TOPIC, msg.value())}")
        consumer.close()
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
