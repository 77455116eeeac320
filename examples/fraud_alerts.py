"""Fraud alerts: per-card spending in sliding windows, routed by severity with ``split()``.

Payments come in on ``payments`` (key: the card, value: JSON ``{"amount_cents",
"merchant"}``). Every card's payments are aggregated over sliding windows of
``WINDOW`` (Kafka Streams' ``SlidingWindows``: a window for every span of that
length that starts or ends at a payment, so any burst is caught whole, with
no hopping-window boundaries to straddle) into a count and a total. Each
window update is then routed by ``split()``:

- ``card-blocks``: ``BLOCK_PAYMENTS`` or more payments, or ``BLOCK_CENTS`` or more in
  total, within one window (checked first: a blocking window is not also
  sent for review);
- ``fraud-reviews``: ``REVIEW_PAYMENTS`` or more payments, or ``REVIEW_CENTS`` or more;
- anything else is dropped (``no_default_branch()``).

Both get key the card, value JSON ``{"card", "window_start", "window_end",
"payments", "total_cents"}``. An alert is written for every update of a
window over a threshold, so a burst raises several (one per window and
update); a consumer keys them by card and window. Shows ``windowed_by`` with
``SlidingWindows``, a windowed ``aggregate``, ``split(Named.as_(...))`` with
``branch(..., Branched.as_(...))`` and routing each branch to its own topic.

Run it (three terminals, from the repository root)::

    kspark dev-kafka --port 9092 --topic payments:1 --topic fraud-reviews:1 --topic card-blocks:1
    kspark run examples/fraud_alerts.py
    python examples/fraud_alerts.py produce     # three cards: quiet, busy, and one big spender
    python examples/fraud_alerts.py consume     # prints the alerts of both topics, stops when idle

``KSPARK_BOOTSTRAP`` overrides the broker (default ``127.0.0.1:9092``).
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from datetime import timedelta
from typing import Any

from kspark import (
    Branched,
    Consumed,
    KeyValue,
    Materialized,
    Named,
    Produced,
    SlidingWindows,
    StreamsBuilder,
    Topology,
    Windowed,
)
from kspark.serde import Serdes

__all__ = [
    "APPLICATION_ID",
    "BLOCKS_TOPIC",
    "BLOCK_CENTS",
    "BLOCK_PAYMENTS",
    "GRACE",
    "INPUT_TOPIC",
    "REVIEWS_TOPIC",
    "REVIEW_CENTS",
    "REVIEW_PAYMENTS",
    "SPENDING_STORE",
    "WINDOW",
    "config",
    "main",
    "sample",
    "topology",
]

APPLICATION_ID = "kspark-example-fraud-alerts"
INPUT_TOPIC = "payments"
REVIEWS_TOPIC = "fraud-reviews"
BLOCKS_TOPIC = "card-blocks"
SPENDING_STORE = "card-spending"
WINDOW = timedelta(minutes=1)
GRACE = timedelta(seconds=30)
"""How late (in event time) a payment may arrive and still be counted."""
REVIEW_PAYMENTS, REVIEW_CENTS = 3, 100_000
BLOCK_PAYMENTS, BLOCK_CENTS = 5, 200_000

Spending = dict[str, int]


def no_spending() -> Spending:
    return {"payments": 0, "total_cents": 0}


def add_payment(_card: str, payment: dict[str, Any], spending: Spending) -> Spending:
    # A new dict: the aggregate handed in may be the one the store (or its cache) holds.
    return {
        "payments": spending["payments"] + 1,
        "total_cents": spending["total_cents"] + payment["amount_cents"],
    }


def window_spending(window: Windowed[str], spending: Spending) -> KeyValue[str, dict[str, Any]]:
    """A window's aggregate as an alert candidate keyed by the card alone."""
    return KeyValue(
        window.key,
        {
            "card": window.key,
            "window_start": window.window.start,
            "window_end": window.window.end,
            **spending,
        },
    )


def must_block(_card: str, alert: dict[str, Any]) -> bool:
    return bool(alert["payments"] >= BLOCK_PAYMENTS or alert["total_cents"] >= BLOCK_CENTS)


def needs_review(_card: str, alert: dict[str, Any]) -> bool:
    return bool(alert["payments"] >= REVIEW_PAYMENTS or alert["total_cents"] >= REVIEW_CENTS)


def topology(
    input_topic: str = INPUT_TOPIC, reviews_topic: str = REVIEWS_TOPIC, blocks_topic: str = BLOCKS_TOPIC
) -> Topology:
    """The fraud-alert topology; tests pass their own topic names."""
    string, json = Serdes.String(), Serdes.JSON()
    builder = StreamsBuilder()
    candidates = (
        builder.stream(input_topic, Consumed.with_(string, json))
        .group_by_key()
        .windowed_by(SlidingWindows(time_difference=WINDOW, grace=GRACE))
        .aggregate(no_spending, add_payment, Materialized.as_(SPENDING_STORE).with_value_serde(json))
        .to_stream()
        .map(window_spending)
    )
    # Branches are tried in order and a record goes to the first that matches; the names of the
    # returned streams are the split's name followed by each branch's.
    branches = (
        candidates.split(Named.as_("alert-"))
        .branch(must_block, Branched.as_("block"))
        .branch(needs_review, Branched.as_("review"))
        .no_default_branch()
    )
    branches["alert-block"].to(blocks_topic, Produced.with_(string, json))
    branches["alert-review"].to(reviews_topic, Produced.with_(string, json))
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
    """Payments as (card, payment, timestamp), in the order they arrive: card-1 pays twice in an
    hour (no alert); card-2 pays three times within 40 s (review); card-3 pays 1,500.00 then
    another 600.00 within a minute (review, then block)."""
    s = 1000
    return [
        ("card-1", {"amount_cents": 1_250, "merchant": "bakery"}, start_ms),
        ("card-2", {"amount_cents": 900, "merchant": "kiosk"}, start_ms + 10 * s),
        ("card-2", {"amount_cents": 1_100, "merchant": "kiosk"}, start_ms + 30 * s),
        ("card-3", {"amount_cents": 150_000, "merchant": "jeweller"}, start_ms + 40 * s),
        ("card-2", {"amount_cents": 700, "merchant": "vending"}, start_ms + 50 * s),
        ("card-3", {"amount_cents": 60_000, "merchant": "jeweller"}, start_ms + 70 * s),
        ("card-1", {"amount_cents": 3_000, "merchant": "grocer"}, start_ms + 3600 * s),
    ]


def main(argv: list[str]) -> int:
    """``produce``: write the sample payments; ``consume``: print the alerts so far."""
    # confluent-kafka is a kspark dependency; imported here because the application does not need it.
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    bootstrap = config()["bootstrap.servers"]
    json = Serdes.JSON()
    if argv == ["produce"]:
        producer = Producer({"bootstrap.servers": bootstrap})
        payments = sample(int(time.time() * 1000) - 2 * 3_600_000)
        for card, payment, ts in payments:
            producer.produce(
                INPUT_TOPIC,
                key=card.encode(),
                value=json.serializer().serialize(INPUT_TOPIC, payment),
                timestamp=ts,
            )
        producer.flush(10)
        print(f"wrote {len(payments)} payments to {INPUT_TOPIC}")
        return 0
    if argv == ["consume"]:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4()}"})
        metadata = consumer.list_topics(timeout=10).topics
        consumer.assign(
            [
                TopicPartition(topic, p, OFFSET_BEGINNING)
                for topic in (REVIEWS_TOPIC, BLOCKS_TOPIC)
                for p in metadata[topic].partitions
            ]
        )
        # Stops after 5 s without a record: the output topics have no end of their own.
        while (msg := consumer.poll(5.0)) is not None:
            if msg.error() is None:
                print(f"{msg.topic()}: {json.deserializer().deserialize(msg.topic(), msg.value())}")
        consumer.close()
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
