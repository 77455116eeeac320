"""examples/top_n.py on the TopologyTestDriver: the table aggregate's adder and subtractor keep it exact."""

from __future__ import annotations

from typing import Any

import top_n as example

from kspark import KeyValue
from kspark.serde import Serdes
from kspark.testing import TopologyTestDriver

S, J = Serdes.String(), Serdes.JSON()
START = 1_000_000


def _top(*products: tuple[str, int]) -> list[dict[str, Any]]:
    return [{"product": product, "units": units} for product, units in products]


def test_top_products_sorts_by_units_then_product_and_keeps_three() -> None:
    assert example.top_products({"b": 5, "a": 5, "c": 9, "d": 1}) == _top(("c", 9), ("a", 5), ("b", 5))
    assert example.top_products({}) == []


def test_the_sample_follows_updates_moves_and_deletions() -> None:
    with TopologyTestDriver(example.topology(), example.config()) as driver:
        sales = driver.create_input_topic(example.INPUT_TOPIC, S, J)
        top = driver.create_output_topic(example.OUTPUT_TOPIC, S, J)
        for product, value, ts in example.sample(START):
            sales.pipe_input(product, value, timestamp=ts)

        assert [(r.key, r.value, r.timestamp) for r in top.read_records_to_list()] == [
            ("books", _top(("dune", 40)), START),
            ("books", _top(("dune", 40), ("emma", 25)), START + 1_000),
            ("books", _top(("dune", 40), ("emma", 25), ("ulysses", 10)), START + 2_000),
            ("books", _top(("dune", 40), ("beloved", 30), ("emma", 25)), START + 3_000),
            ("games", _top(("catan", 50)), START + 4_000),
            ("games", _top(("catan", 50), ("go", 20)), START + 5_000),
            # an update within a category: the subtractor and the adder run on one record, one result
            ("books", _top(("ulysses", 60), ("dune", 40), ("beloved", 30)), START + 6_000),
            # dune moves to games: subtracted from books (emma is back in the top three), added to games
            ("books", _top(("ulysses", 60), ("beloved", 30), ("emma", 25)), START + 7_000),
            ("games", _top(("catan", 50), ("dune", 40), ("go", 20)), START + 7_000),
            # catan is deleted (a tombstone): subtracted
            ("games", _top(("dune", 40), ("go", 20)), START + 8_000),
        ]
        assert list(driver.get_key_value_store(example.CATEGORY_STORE).all()) == [
            KeyValue("books", {"emma": 25, "beloved": 30, "ulysses": 60}),
            KeyValue("games", {"go": 20, "dune": 40}),
        ]


def test_a_category_that_loses_its_last_product_is_an_empty_list_not_a_deletion() -> None:
    with TopologyTestDriver(example.topology(), example.config()) as driver:
        sales = driver.create_input_topic(example.INPUT_TOPIC, S, J)
        top = driver.create_output_topic(example.OUTPUT_TOPIC, S, J)
        sales.pipe_input("chess", {"category": "games", "units": 7}, timestamp=START)
        sales.pipe_input("chess", None, timestamp=START + 1)

        assert top.read_key_values_to_list() == [
            KeyValue("games", _top(("chess", 7))),
            KeyValue("games", []),
        ]
