"""Sessionization: clicks grouped into per-user sessions with session windows.

Clicks come in on ``clicks`` (key: the user, value: the page, a string). A
user's session is a run of clicks with no gap longer than ``INACTIVITY_GAP``
(event time); a late click that falls between two sessions merges them into
one. ``user-sessions`` gets each session's current state whenever it changes:
key the user and the session's window (Kafka Streams' session-windowed key
bytes: the user, then the 8-byte end and start), value JSON ``{"clicks": n,
"pages": [...]}``, and a tombstone (null value) for a session that a merge
replaced, so that a compacted topic (or a table read from it) keeps only live
sessions. Shows ``group_by_key``, ``windowed_by`` with ``SessionWindows``, a
session ``aggregate`` with its ``merger``, and writing windowed keys.

Run it (three terminals, from the repository root)::

    kspark dev-kafka --port 9092 --topic clicks:1 --topic user-sessions:1
    kspark run examples/sessionization.py
    python examples/sessionization.py produce    # two users' clicks, one late click merging two sessions
    python examples/sessionization.py consume    # prints the session updates, stops when idle

``KSPARK_BOOTSTRAP`` overrides the broker (default ``127.0.0.1:9092``). With
the record cache on (the default) a session is written once per commit, not
once per click, and a session replaced within the same commit needs no
tombstone.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from datetime import timedelta
from typing import Any

from kspark import Consumed, Materialized, Produced, SessionWindows, StreamsBuilder, Topology
from kspark.serde import Serdes

__all__ = [
    "APPLICATION_ID",
    "GRACE",
    "INACTIVITY_GAP",
    "INPUT_TOPIC",
    "OUTPUT_TOPIC",
    "SESSIONS_STORE",
    "config",
    "main",
    "sample",
    "topology",
]

APPLICATION_ID = "kspark-example-sessionization"
INPUT_TOPIC = "clicks"
OUTPUT_TOPIC = "user-sessions"
SESSIONS_STORE = "user-sessions-store"
INACTIVITY_GAP = timedelta(minutes=5)
GRACE = timedelta(minutes=2)
"""How long after a session's last click (in stream time) a late click may still extend or merge it."""

Session = dict[str, Any]


def new_session() -> Session:
    return {"clicks": 0, "pages": []}


def add_click(_user: str, page: str, session: Session) -> Session:
    # A new dict: the aggregate handed in may be the one the store (or its cache) holds.
    return {"clicks": session["clicks"] + 1, "pages": sorted({*session["pages"], page})}


def merge_sessions(_user: str, one: Session, other: Session) -> Session:
    """Two sessions that a late click joined: their clicks and pages together."""
    return {"clicks": one["clicks"] + other["clicks"], "pages": sorted({*one["pages"], *other["pages"]})}


def topology(input_topic: str = INPUT_TOPIC, output_topic: str = OUTPUT_TOPIC) -> Topology:
    """The sessionization topology; tests pass their own topic names."""
    string, json = Serdes.String(), Serdes.JSON()
    builder = StreamsBuilder()
    (
        builder.stream(input_topic, Consumed.with_(string, string))
        .group_by_key()
        .windowed_by(SessionWindows(gap=INACTIVITY_GAP, grace=GRACE))
        .aggregate(
            new_session, add_click, merge_sessions, Materialized.as_(SESSIONS_STORE).with_value_serde(json)
        )
        .to_stream()
        .to(output_topic, Produced.with_(Serdes.session_windowed(string), json))
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


def sample(start_ms: int) -> list[tuple[str, str, int]]:
    """Clicks as (user, page, timestamp), in the order they arrive: user-1 has a session of three
    clicks and, eight minutes later, another; user-2's two clicks six minutes apart are two
    sessions until a late click between them merges them; user-3's click comes too late (its
    session closed before it arrived) and is dropped."""
    m = 60_000
    return [
        ("user-1", "/home", start_ms),
        ("user-1", "/pricing", start_ms + 1 * m),
        ("user-1", "/signup", start_ms + 2 * m),
        ("user-2", "/home", start_ms + 3 * m),
        ("user-2", "/docs", start_ms + 9 * m),
        ("user-2", "/pricing", start_ms + 6 * m),
        ("user-1", "/home", start_ms + 10 * m),
        ("user-3", "/home", start_ms + 1 * m),
    ]


def main(argv: list[str]) -> int:
    """``produce``: write the sample clicks; ``consume``: print the session updates so far."""
    # confluent-kafka is a kspark dependency; imported here because the application does not need it.
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    bootstrap = config()["bootstrap.servers"]
    string = Serdes.String()
    if argv == ["produce"]:
        producer = Producer({"bootstrap.servers": bootstrap})
        clicks = sample(int(time.time() * 1000) - 15 * 60_000)
        for user, page, ts in clicks:
            producer.produce(INPUT_TOPIC, key=user.encode(), value=page.encode(), timestamp=ts)
        producer.flush(10)
        print(f"wrote {len(clicks)} clicks to {INPUT_TOPIC}")
        return 0
    if argv == ["consume"]:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4()}"})
        partitions = consumer.list_topics(OUTPUT_TOPIC, timeout=10).topics[OUTPUT_TOPIC].partitions
        consumer.assign([TopicPartition(OUTPUT_TOPIC, p, OFFSET_BEGINNING) for p in partitions])
        keys, values = Serdes.session_windowed(string).deserializer(), Serdes.JSON().deserializer()
        # Stops after 5 s without a record: the output topic has no end of its own.
        while (msg := consumer.poll(5.0)) is not None:
            if msg.error() is None:
                session = keys.deserialize(OUTPUT_TOPIC, msg.key())
                value = values.deserialize(OUTPUT_TOPIC, msg.value())
                if session is not None:  # every key is a session; the check is for the type checker
                    window = f"[{session.window.start}, {session.window.end}]"
                    print(f"{session.key} {window}: {value or 'replaced by a merged session'}")
        consumer.close()
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
