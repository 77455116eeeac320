"""examples/fraud_alerts.py on the TopologyTestDriver: sliding-window spending routed by split()."""

from __future__ import annotations

from typing import Any

import fraud_alerts as example

from kspark.serde import Serdes
from kspark.testing import TopologyTestDriver

S, J = Serdes.String(), Serdes.JSON()
START = 1_000_000

Alerts = list[tuple[str, int, int, int, int, int]]
"""(card, window start, window end, payments, total cents, record timestamp), times from START."""


def _run(payments: list[tuple[str, int, int]]) -> dict[str, Alerts]:
    """Pipes (card, amount in cents, timestamp) and returns the alerts of each output topic."""
    with TopologyTestDriver(example.topology(), example.config()) as driver:
        pipe = driver.create_input_topic(example.INPUT_TOPIC, S, J)
        outs = {
            name: driver.create_output_topic(name, S, J)
            for name in (example.REVIEWS_TOPIC, example.BLOCKS_TOPIC)
        }
        for card, cents, ts in payments:
            pipe.pipe_input(card, {"amount_cents": cents, "merchant": "m"}, timestamp=ts)
        return {
            name: [_alert(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]
            for name, out in outs.items()
        }


def _alert(card: str, value: dict[str, Any], timestamp: int | None) -> tuple[str, int, int, int, int, int]:
    assert value["card"] == card and timestamp is not None
    return (
        card,
        value["window_start"] - START,
        value["window_end"] - START,
        value["payments"],
        value["total_cents"],
        timestamp - START,
    )


def test_the_sample_reviews_a_busy_card_and_a_big_spender_and_blocks_the_big_spender() -> None:
    with TopologyTestDriver(example.topology(), example.config()) as driver:
        pipe = driver.create_input_topic(example.INPUT_TOPIC, S, J)
        reviews = driver.create_output_topic(example.REVIEWS_TOPIC, S, J)
        blocks = driver.create_output_topic(example.BLOCKS_TOPIC, S, J)
        for card, payment, ts in example.sample(START):
            pipe.pipe_input(card, payment, timestamp=ts)

        assert [_alert(r.key, r.value, r.timestamp) for r in reviews.read_records_to_list()] == [
            # one payment of 1,500.00: over the review total
            ("card-3", -20_000, 40_000, 1, 150_000, 40_000),
            # three payments within the minute ending at 50 s
            ("card-2", -10_000, 50_000, 3, 2_700, 50_000),
        ]
        # 2,100.00 within the minute ending at 70 s: over the block total, so not reviewed too
        assert [_alert(r.key, r.value, r.timestamp) for r in blocks.read_records_to_list()] == [
            ("card-3", 10_000, 70_000, 2, 210_000, 70_000),
        ]


def test_a_burst_raises_an_alert_per_window_update_and_a_payment_past_the_grace_is_dropped() -> None:
    s = 1000
    times = [0, 10 * s, 20 * s, 30 * s, 40 * s, 45 * s, 200 * s, 15 * s]
    alerts = _run([("c", 100, START + t) for t in times])

    # A sliding window ends at each payment ([t - 60 s, t]) and one starts just after each ([t + 1,
    # t + 60 s + 1]); every window a payment falls in is updated, and each update over a threshold is
    # an alert. Count thresholds: 3 for review, 5 for block.
    assert alerts == {
        example.REVIEWS_TOPIC: [
            ("c", -40 * s, 20 * s, 3, 300, 20 * s),
            ("c", 1, 60 * s + 1, 3, 300, 30 * s),
            ("c", -30 * s, 30 * s, 4, 400, 30 * s),
            ("c", 10 * s + 1, 70 * s + 1, 3, 300, 40 * s),
            ("c", 1, 60 * s + 1, 4, 400, 40 * s),
            ("c", 20 * s + 1, 80 * s + 1, 3, 300, 45 * s),
            ("c", 10 * s + 1, 70 * s + 1, 4, 400, 45 * s),
        ],
        example.BLOCKS_TOPIC: [
            ("c", -20 * s, 40 * s, 5, 500, 40 * s),
            ("c", 1, 60 * s + 1, 5, 500, 45 * s),
            ("c", -15 * s, 45 * s, 6, 600, 45 * s),
        ],
        # the payment at 200 s alone raises nothing; the one at 15 s arrives with stream time at
        # 200 s, past its windows' end plus the 30 s grace, and is dropped
    }
