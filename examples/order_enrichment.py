"""Order enrichment: a stream-table join with customers and a GlobalKTable join with products.

Orders come in on ``orders`` (key: the customer id, value: JSON ``{"order_id",
"product_id", "quantity"}``). Each is joined with the customer's current record
from the ``customers`` table (same key, co-partitioned: a KTable) and with its
product from ``products``, a GlobalKTable (every task holds all of it, so the
join looks it up by a field of the order: no co-partitioning, no
repartitioning). ``orders-enriched`` gets key the customer id, value JSON
``{"order_id", "customer", "tier", "product", "quantity", "total_cents"}``.

Both joins are inner joins: an order whose customer or product is not known
(yet) is dropped. A stream-table join is not windowed: an order sees the table
as it is when the order is processed, so a customer's later update affects
later orders only. Shows ``table``, ``global_table``, ``KStream.join`` with a
KTable and with a GlobalKTable plus a key selector.

Run it (three terminals, from the repository root)::

    kspark dev-kafka --port 9092 --topic orders:1 --topic customers:1 --topic products:1 \\
        --topic orders-enriched:1
    kspark run examples/order_enrichment.py
    python examples/order_enrichment.py produce   # customers, products, then orders
    python examples/order_enrichment.py consume   # prints the enriched orders, stops when idle

``orders`` and ``customers`` must have the same number of partitions (the
stream-table join is per partition); ``products`` may have any.
``KSPARK_BOOTSTRAP`` overrides the broker (default ``127.0.0.1:9092``).
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from typing import Any

from kspark import Consumed, Materialized, Produced, StreamsBuilder, Topology
from kspark.serde import Serdes

__all__ = [
    "APPLICATION_ID",
    "CUSTOMERS_STORE",
    "CUSTOMERS_TOPIC",
    "ORDERS_TOPIC",
    "OUTPUT_TOPIC",
    "PRODUCTS_STORE",
    "PRODUCTS_TOPIC",
    "config",
    "main",
    "sample",
    "topology",
]

APPLICATION_ID = "kspark-example-order-enrichment"
ORDERS_TOPIC = "orders"
CUSTOMERS_TOPIC = "customers"
PRODUCTS_TOPIC = "products"
OUTPUT_TOPIC = "orders-enriched"
CUSTOMERS_STORE = "customers-store"
PRODUCTS_STORE = "products-store"


def with_customer(order: dict[str, Any], customer: dict[str, Any]) -> dict[str, Any]:
    """The stream-table joiner: the order and the customer it was placed by."""
    return {**order, "customer": customer["name"], "tier": customer["tier"]}


def product_id_of(_customer_id: str, order: dict[str, Any]) -> str:
    """The GlobalKTable key selector: which product an order is for."""
    return str(order["product_id"])


def with_product(order: dict[str, Any], product: dict[str, Any]) -> dict[str, Any]:
    """The GlobalKTable joiner: the product's name replaces its id, and the order gets a total."""
    enriched = {key: value for key, value in order.items() if key != "product_id"}
    return {**enriched, "product": product["name"], "total_cents": product["price_cents"] * order["quantity"]}


def topology(
    orders_topic: str = ORDERS_TOPIC,
    customers_topic: str = CUSTOMERS_TOPIC,
    products_topic: str = PRODUCTS_TOPIC,
    output_topic: str = OUTPUT_TOPIC,
) -> Topology:
    """The enrichment topology; tests pass their own topic names."""
    string, json = Serdes.String(), Serdes.JSON()
    builder = StreamsBuilder()
    customers = builder.table(
        customers_topic, Consumed.with_(string, json), Materialized.as_(CUSTOMERS_STORE)
    )
    products = builder.global_table(
        products_topic, Consumed.with_(string, json), Materialized.as_(PRODUCTS_STORE)
    )
    (
        builder.stream(orders_topic, Consumed.with_(string, json))
        .join(customers, with_customer)
        .join(products, product_id_of, with_product)
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


def sample(start_ms: int) -> dict[str, list[tuple[str, dict[str, Any], int]]]:
    """Records per topic as (key, value, timestamp): two customers (one upgraded between her
    orders), two products, and four orders (one by an unknown customer, one for an unknown
    product: both dropped)."""
    s = 1000
    return {
        PRODUCTS_TOPIC: [
            ("p-1", {"name": "kettle", "price_cents": 2_500}, start_ms),
            ("p-2", {"name": "teapot", "price_cents": 4_000}, start_ms),
        ],
        CUSTOMERS_TOPIC: [
            ("c-1", {"name": "Ada", "tier": "silver"}, start_ms + 1 * s),
            ("c-2", {"name": "Grace", "tier": "gold"}, start_ms + 2 * s),
            ("c-1", {"name": "Ada", "tier": "gold"}, start_ms + 20 * s),
        ],
        ORDERS_TOPIC: [
            ("c-1", {"order_id": "o-1", "product_id": "p-1", "quantity": 2}, start_ms + 10 * s),
            ("c-3", {"order_id": "o-2", "product_id": "p-1", "quantity": 1}, start_ms + 11 * s),
            ("c-2", {"order_id": "o-3", "product_id": "p-9", "quantity": 1}, start_ms + 12 * s),
            ("c-1", {"order_id": "o-4", "product_id": "p-2", "quantity": 3}, start_ms + 30 * s),
        ],
    }


def main(argv: list[str]) -> int:
    """``produce``: write the sample records; ``consume``: print the enriched orders so far."""
    # confluent-kafka is a kspark dependency; imported here because the application does not need it.
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    bootstrap = config()["bootstrap.servers"]
    json = Serdes.JSON()
    if argv == ["produce"]:
        producer = Producer({"bootstrap.servers": bootstrap})
        # In timestamp order across the topics, as a task takes them: tables first, then orders.
        records = sorted(
            (
                (ts, topic, key, value)
                for topic, rows in sample(int(time.time() * 1000) - 60_000).items()
                for key, value, ts in rows
            ),
            key=lambda r: r[0],
        )
        for ts, topic, key, value in records:
            producer.produce(
                topic, key=key.encode(), value=json.serializer().serialize(topic, value), timestamp=ts
            )
        producer.flush(10)
        print(f"wrote {len(records)} records to {PRODUCTS_TOPIC}, {CUSTOMERS_TOPIC} and {ORDERS_TOPIC}")
        return 0
    if argv == ["consume"]:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4()}"})
        partitions = consumer.list_topics(OUTPUT_TOPIC, timeout=10).topics[OUTPUT_TOPIC].partitions
        consumer.assign([TopicPartition(OUTPUT_TOPIC, p, OFFSET_BEGINNING) for p in partitions])
        # Stops after 5 s without a record: the output topic has no end of its own.
        while (msg := consumer.poll(5.0)) is not None:
            if msg.error() is None:
                customer = Serdes.String().deserializer().deserialize(OUTPUT_TOPIC, msg.key())
                print(f"{customer}: {json.deserializer().deserialize(OUTPUT_TOPIC, msg.value())}")
        consumer.close()
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
