"""examples/order_enrichment.py on the TopologyTestDriver: the stream-table and the GlobalKTable join."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import order_enrichment as example
import pytest

from kspark.serde import Serdes
from kspark.testing import TopologyTestDriver

S, J = Serdes.String(), Serdes.JSON()


class Topics:
    """The example's topics on one driver."""

    def __init__(self, driver: TopologyTestDriver) -> None:
        self.orders = driver.create_input_topic(example.ORDERS_TOPIC, S, J)
        self.customers = driver.create_input_topic(example.CUSTOMERS_TOPIC, S, J)
        self.products = driver.create_input_topic(example.PRODUCTS_TOPIC, S, J)
        self.enriched = driver.create_output_topic(example.OUTPUT_TOPIC, S, J)

    def output(self) -> list[tuple[Any, Any, int | None]]:
        return [(r.key, r.value, r.timestamp) for r in self.enriched.read_records_to_list()]


@pytest.fixture
def topics() -> Iterator[Topics]:
    with TopologyTestDriver(example.topology(), example.config()) as driver:
        yield Topics(driver)


def test_the_sample_enriches_the_known_orders_with_the_customer_as_of_each_order(topics: Topics) -> None:
    by_topic = {
        example.ORDERS_TOPIC: topics.orders,
        example.CUSTOMERS_TOPIC: topics.customers,
        example.PRODUCTS_TOPIC: topics.products,
    }
    records = sorted(
        (ts, topic, key, value)
        for topic, rows in example.sample(1_000_000).items()
        for key, value, ts in rows
    )
    for ts, topic, key, value in records:
        by_topic[topic].pipe_input(key, value, timestamp=ts)

    # o-2 (unknown customer c-3) and o-3 (unknown product p-9) are dropped by the inner joins;
    # Ada is silver for o-1 and gold for o-4, which comes after her upgrade.
    assert topics.output() == [
        (
            "c-1",
            {
                "order_id": "o-1",
                "quantity": 2,
                "customer": "Ada",
                "tier": "silver",
                "product": "kettle",
                "total_cents": 5_000,
            },
            1_010_000,
        ),
        (
            "c-1",
            {
                "order_id": "o-4",
                "quantity": 3,
                "customer": "Ada",
                "tier": "gold",
                "product": "teapot",
                "total_cents": 12_000,
            },
            1_030_000,
        ),
    ]


def test_an_order_that_comes_before_its_customer_is_dropped_not_held_back(topics: Topics) -> None:
    topics.products.pipe_input("p-1", {"name": "kettle", "price_cents": 2_500}, timestamp=100)
    topics.orders.pipe_input("c-1", {"order_id": "o-1", "product_id": "p-1", "quantity": 1}, timestamp=200)
    topics.customers.pipe_input("c-1", {"name": "Ada", "tier": "gold"}, timestamp=300)
    topics.orders.pipe_input("c-1", {"order_id": "o-2", "product_id": "p-1", "quantity": 1}, timestamp=400)

    assert [value["order_id"] for _, value, _ in topics.output()] == ["o-2"]


def test_product_updates_and_a_deleted_customer_apply_to_later_orders_only(topics: Topics) -> None:
    topics.products.pipe_input("p-1", {"name": "kettle", "price_cents": 2_500}, timestamp=100)
    topics.customers.pipe_input("c-1", {"name": "Ada", "tier": "gold"}, timestamp=100)
    topics.orders.pipe_input("c-1", {"order_id": "o-1", "product_id": "p-1", "quantity": 1}, timestamp=200)
    topics.products.pipe_input("p-1", {"name": "kettle", "price_cents": 3_000}, timestamp=300)
    topics.orders.pipe_input("c-1", {"order_id": "o-2", "product_id": "p-1", "quantity": 1}, timestamp=400)
    topics.customers.pipe_input("c-1", None, timestamp=500)  # a tombstone deletes the customer
    topics.orders.pipe_input("c-1", {"order_id": "o-3", "product_id": "p-1", "quantity": 1}, timestamp=600)

    assert [(value["order_id"], value["total_cents"], ts) for _, value, ts in topics.output()] == [
        ("o-1", 2_500, 200),
        ("o-2", 3_000, 400),
    ]
