"""Pageviews per page per minute, final results only: tumbling windows and ``suppress``.

Pageviews come in on ``pageviews`` (key: the user, value: JSON ``{"page": ...}``).
Each page's views are counted in one-minute tumbling event-time windows, and
``suppress(Suppressed.until_window_closes(...))`` holds every window's count
back until the window closes (stream time passes its end plus the grace
period), so ``pageviews-per-minute`` gets exactly one record per page and
window: key the page, value JSON ``{"page", "window_start", "window_end",
"views"}`` (epoch milliseconds). A view up to ``GRACE`` late still counts; a
later one is dropped, as in Kafka Streams. Shows ``group_by``, ``windowed_by``
with ``TimeWindows``, a windowed ``count``, ``suppress`` and ``map``.

Run it (three terminals, from the repository root)::

    kspark dev-kafka --port 9092 --topic pageviews:1 --topic pageviews-per-minute:1
    kspark run examples/pageview_windows.py
    python examples/pageview_windows.py produce    # views ten minutes ago, one of them late
    python examples/pageview_windows.py consume    # prints each closed window, stops when idle

``KSPARK_BOOTSTRAP`` overrides the broker (default ``127.0.0.1:9092``). Only
event time closes a window: the sample ends with a view two minutes after
the others, which closes the first two windows; the last one stays open until
a later view arrives.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from datetime import timedelta
from typing import Any

from kspark import (
    Consumed,
    Grouped,
    KeyValue,
    Materialized,
    Produced,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
    Topology,
    Windowed,
)
from kspark.serde import Serdes

__all__ = [
    "APPLICATION_ID",
    "COUNTS_STORE",
    "GRACE",
    "INPUT_TOPIC",
    "OUTPUT_TOPIC",
    "WINDOW",
    "config",
    "main",
    "sample",
    "topology",
]

APPLICATION_ID = "kspark-example-pageview-windows"
INPUT_TOPIC = "pageviews"
OUTPUT_TOPIC = "pageviews-per-minute"
COUNTS_STORE = "pageviews-per-minute-store"
WINDOW = timedelta(minutes=1)
GRACE = timedelta(seconds=10)
"""How late (in event time) a view may arrive and still be counted in its window."""


def page_of(_user: str, view: dict[str, Any]) -> str:
    return str(view["page"])


def window_result(window: Windowed[str], views: int) -> KeyValue[str, dict[str, Any]]:
    """A closed window's count as a plain record, readable without a windowed-key deserializer."""
    return KeyValue(
        window.key,
        {
            "page": window.key,
            "window_start": window.window.start,
            "window_end": window.window.end,
            "views": views,
        },
    )


def topology(input_topic: str = INPUT_TOPIC, output_topic: str = OUTPUT_TOPIC) -> Topology:
    """The windowed-count topology; tests pass their own topic names."""
    string, json = Serdes.String(), Serdes.JSON()
    builder = StreamsBuilder()
    (
        builder.stream(input_topic, Consumed.with_(string, json))
        .group_by(page_of, Grouped.with_(string, json))
        .windowed_by(TimeWindows(size=WINDOW, grace=GRACE))
        .count(Materialized.as_(COUNTS_STORE))
        # Without suppress every view would update its window's count downstream (per commit,
        # with the record cache); with it, a window's count leaves once, when it is final.
        .suppress(Suppressed.until_window_closes(Suppressed.BufferConfig.unbounded()))
        .to_stream()
        .map(window_result)
        .to(output_topic, Produced.with_(string, json))
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


def sample(start_ms: int) -> list[tuple[str, dict[str, Any], int]]:
    """A few views as (user, view, timestamp), in the order they arrive; ``start_ms`` is the start
    of a window. The fifth arrives 7 s late (within the grace) and is counted; the seventh arrives
    after its window closed and is dropped."""
    s = 1000
    return [
        ("user-1", {"page": "/home"}, start_ms + 5 * s),
        ("user-2", {"page": "/home"}, start_ms + 12 * s),
        ("user-1", {"page": "/pricing"}, start_ms + 30 * s),
        ("user-2", {"page": "/home"}, start_ms + 65 * s),
        ("user-4", {"page": "/pricing"}, start_ms + 58 * s),
        ("user-1", {"page": "/docs"}, start_ms + 70 * s),
        ("user-5", {"page": "/home"}, start_ms + 50 * s),
        ("user-3", {"page": "/docs"}, start_ms + 135 * s),
    ]


def main(argv: list[str]) -> int:
    """``produce``: write the sample views; ``consume``: print the closed windows written so far."""
    # confluent-kafka is a kspark dependency; imported here because the application does not need it.
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    bootstrap = config()["bootstrap.servers"]
    json = Serdes.JSON()
    if argv == ["produce"]:
        producer = Producer({"bootstrap.servers": bootstrap})
        # Ten minutes ago, on a minute boundary, so the windows are whole minutes of the clock.
        start_ms = (int(time.time() * 1000) // 60_000 - 10) * 60_000
        views = sample(start_ms)
        for user, view, ts in views:
            producer.produce(
                INPUT_TOPIC,
                key=user.encode(),
                value=json.serializer().serialize(INPUT_TOPIC, view),
                timestamp=ts,
            )
        producer.flush(10)
        print(f"wrote {len(views)} pageviews to {INPUT_TOPIC}")
        return 0
    if argv == ["consume"]:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4()}"})
        partitions = consumer.list_topics(OUTPUT_TOPIC, timeout=10).topics[OUTPUT_TOPIC].partitions
        consumer.assign([TopicPartition(OUTPUT_TOPIC, p, OFFSET_BEGINNING) for p in partitions])
        # Stops after 5 s without a record: the output topic has no end of its own.
        while (msg := consumer.poll(5.0)) is not None:
            if msg.error() is None:
                print(json.deserializer().deserialize(OUTPUT_TOPIC, msg.value()))
        consumer.close()
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
