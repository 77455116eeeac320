"""Top-N products per category: a KTable re-grouped and aggregated with an adder and a subtractor.

``product-sales`` is a table, not a stream of events: key the product id,
value JSON ``{"category": ..., "units": ...}``, the product's units sold so far
(a later record for a product replaces the earlier one; a null value deletes
the product). The table is re-grouped by category, and each category's
aggregate is every product in it with its units. When a product's record
changes, Kafka Streams sends the old value to the *subtractor* of its old
category and the new value to the *adder* of its new one, so an update, a
product moving to another category and a deletion all leave the aggregate
exact: a plain stream aggregation could only ever add. ``top-products`` gets
key the category, value JSON: the ``TOP_N`` best-selling products
(``[{"product", "units"}, ...]``, most units first, ties by product id).

The aggregate keeps all of a category's products, not only the top N: after
a subtraction the next best product must be at hand. Shows
``KTable.group_by`` (a repartition topic), ``KGroupedTable.aggregate(initializer,
adder, subtractor)`` and ``KTable.map_values``.

Run it (three terminals, from the repository root)::

    kspark dev-kafka --port 9092 --topic product-sales:1 --topic top-products:1
    kspark run examples/top_n.py
    python examples/top_n.py produce     # sales figures, an update, a move and a deletion
    python examples/top_n.py consume     # prints each category's top products, stops when idle

``KSPARK_BOOTSTRAP`` overrides the broker (default ``127.0.0.1:9092``).
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from typing import Any

from kspark import Consumed, Grouped, KeyValue, Materialized, Produced, StreamsBuilder, Topology
from kspark.serde import Serdes

__all__ = [
    "APPLICATION_ID",
    "CATEGORY_STORE",
    "INPUT_TOPIC",
    "OUTPUT_TOPIC",
    "TOP_N",
    "config",
    "main",
    "sample",
    "top_products",
    "topology",
]

APPLICATION_ID = "kspark-example-top-n"
INPUT_TOPIC = "product-sales"
OUTPUT_TOPIC = "top-products"
CATEGORY_STORE = "products-by-category"
TOP_N = 3

Category = dict[str, int]
"""A category's aggregate: product id -> units sold (a JSON object, so the keys are strings)."""


def by_category(product: str, sales: dict[str, Any]) -> KeyValue[str, dict[str, Any]]:
    """The re-grouping: the new key is the category; the product id moves into the value, which is
    all the adder and the subtractor see."""
    return KeyValue(sales["category"], {"product": product, "units": sales["units"]})


def no_products() -> Category:
    return {}


def add_product(_category: str, sales: dict[str, Any], products: Category) -> Category:
    # New dicts throughout: the aggregate handed in may be the one the store (or its cache) holds.
    return {**products, sales["product"]: sales["units"]}


def remove_product(_category: str, sales: dict[str, Any], products: Category) -> Category:
    return {product: units for product, units in products.items() if product != sales["product"]}


def top_products(products: Category) -> list[dict[str, Any]]:
    """The ``TOP_N`` products with the most units, most first; ties by product id."""
    best = sorted(products.items(), key=lambda item: (-item[1], item[0]))[:TOP_N]
    return [{"product": product, "units": units} for product, units in best]


def topology(input_topic: str = INPUT_TOPIC, output_topic: str = OUTPUT_TOPIC) -> Topology:
    """The top-N topology; tests pass their own topic names."""
    string, json = Serdes.String(), Serdes.JSON()
    builder = StreamsBuilder()
    (
        builder.table(input_topic, Consumed.with_(string, json))
        .group_by(by_category, Grouped.with_(string, json))
        .aggregate(
            no_products, add_product, remove_product, Materialized.as_(CATEGORY_STORE).with_value_serde(json)
        )
        .map_values(top_products)
        .to_stream()
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


def sample(start_ms: int) -> list[tuple[str, dict[str, Any] | None, int]]:
    """Table updates as (product, sales or None, timestamp), in the order they arrive: five books
    and two games; then a book outsells the others, a product moves from books to games, and the
    best-selling game is deleted."""
    s = 1000
    return [
        ("dune", {"category": "books", "units": 40}, start_ms),
        ("emma", {"category": "books", "units": 25}, start_ms + 1 * s),
        ("ulysses", {"category": "books", "units": 10}, start_ms + 2 * s),
        ("beloved", {"category": "books", "units": 30}, start_ms + 3 * s),
        ("catan", {"category": "games", "units": 50}, start_ms + 4 * s),
        ("go", {"category": "games", "units": 20}, start_ms + 5 * s),
        ("ulysses", {"category": "books", "units": 60}, start_ms + 6 * s),
        ("dune", {"category": "games", "units": 40}, start_ms + 7 * s),
        ("catan", None, start_ms + 8 * s),
    ]


def main(argv: list[str]) -> int:
    """``produce``: write the sample updates; ``consume``: print the top products so far."""
    # confluent-kafka is a kspark dependency; imported here because the application does not need it.
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    bootstrap = config()["bootstrap.servers"]
    json = Serdes.JSON()
    if argv == ["produce"]:
        producer = Producer({"bootstrap.servers": bootstrap})
        updates = sample(int(time.time() * 1000) - 60_000)
        for product, sales, ts in updates:
            producer.produce(
                INPUT_TOPIC,
                key=product.encode(),
                value=json.serializer().serialize(INPUT_TOPIC, sales),
                timestamp=ts,
            )
        producer.flush(10)
        print(f"wrote {len(updates)} updates to {INPUT_TOPIC}")
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
