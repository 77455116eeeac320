"""Every example application on Spark against a real Kafka, checked against the TopologyTestDriver.

Each test creates the example's topics under unique names, produces the
example's sample input, runs the example with ``KafkaStreams(topology, config,
spark=spark).process_available()`` and asserts that every output topic holds
exactly the records (keys, values, timestamps, in order) that the driver
writes for the same input. The record cache is off in both: on Spark a
micro-batch is one commit, in the driver every record is, so with the cache
on they would forward different (equally correct) numbers of updates. The
word count is the exception: it runs as configured (cache on, which makes it
Spark's native count), and each word's one record must be the driver's last.

Inputs are the examples' small samples and every topic has one partition:
this file's budget is about a minute of the suite's 30, and with one
partition the order of the records in a repartition topic, which Kafka
Streams leaves open between tasks, is fixed. The last test runs each
example's ``produce`` command (no Spark) and reads back what it wrote.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import dedupe
import fraud_alerts
import order_enrichment
import pageview_windows
import pytest
import sessionization
import top_n
import word_count

from kspark import KafkaStreams, Topology
from kspark.dev.kafka import LocalKafka
from kspark.serde import Serde, Serdes
from kspark.testing import TopologyTestDriver

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# `kspark run` puts an application's directory on the path of Spark's Python workers; the test
# session's workers may have started before examples/ was on it, so the examples travel by value.
pyspark_cloudpickle = pytest.importorskip("pyspark.cloudpickle")
for _module in (word_count, pageview_windows, order_enrichment, sessionization, dedupe, top_n, fraud_alerts):
    pyspark_cloudpickle.register_pickle_by_value(_module)

S, J, L = Serdes.String(), Serdes.JSON(), Serdes.Long()
START = 960_000  # a minute boundary, so whole windows; not 0: librdkafka writes a timestamp of 0 as "now"

Records = list[tuple[Any, Any, int]]
"""(key, value, timestamp) in offset order."""


@dataclass(frozen=True)
class Input:
    """An input topic: its name, serdes and records as (key, value, timestamp)."""

    topic: str
    key: Serde[Any]
    value: Serde[Any]
    records: Sequence[tuple[Any, Any, int]]


@dataclass(frozen=True)
class Output:
    """An output topic: its name and serdes."""

    topic: str
    key: Serde[Any]
    value: Serde[Any]


def _task_order(inputs: Sequence[Input]) -> list[tuple[str, Any, Any, int]]:
    """The input records as one task takes them: each topic's in offset order, and of the topics'
    next records the one with the smallest timestamp first (Kafka Streams' choice, on Spark too)."""
    queues = [[(i.topic, key, value, ts) for key, value, ts in i.records] for i in inputs]
    ordered: list[tuple[str, Any, Any, int]] = []
    while any(queues):
        # min() keeps the first of equal timestamps: the topic listed first
        head = min((q for q in queues if q), key=lambda q: q[0][3])
        ordered.append(head.pop(0))
    return ordered


def _on_driver(
    topology: Topology, config: dict[str, Any], inputs: Sequence[Input], outputs: Sequence[Output]
) -> dict[str, Records]:
    """The driver's output topics for the inputs piped in task order."""
    with TopologyTestDriver(topology, config) as driver:
        pipes = {i.topic: driver.create_input_topic(i.topic, i.key, i.value) for i in inputs}
        outs = {o.topic: driver.create_output_topic(o.topic, o.key, o.value) for o in outputs}
        for topic, key, value, ts in _task_order(inputs):
            pipes[topic].pipe_input(key, value, timestamp=ts)
        got: dict[str, Records] = {}
        for topic, out in outs.items():
            got[topic] = []
            for r in out.read_records_to_list():
                assert r.timestamp is not None
                got[topic].append((r.key, r.value, r.timestamp))
        return got


def _on_spark(
    topology: Topology,
    config: dict[str, Any],
    inputs: Sequence[Input],
    outputs: Sequence[Output],
    kafka: LocalKafka,
    spark: Any,
    expected_counts: dict[str, int],
) -> dict[str, Records]:
    """Produces the inputs, runs the application until it has processed them, and returns its
    output topics."""
    for i in inputs:
        kafka.produce(
            i.topic,
            [
                (
                    i.key.serializer().serialize(i.topic, key),
                    i.value.serializer().serialize(i.topic, value),
                    ts,
                )
                for key, value, ts in i.records
            ],
        )
    app = KafkaStreams(topology, config, spark=spark)
    try:
        app.process_available()
    finally:
        app.close()
    got: dict[str, Records] = {}
    for o in outputs:
        # read on until the expected number arrived, so that a shortfall fails with a timeout
        # naming it (and a surplus shows in the comparison)
        records = kafka.consume_all(o.topic, min_records=expected_counts[o.topic])
        keys, values = o.key.deserializer(), o.value.deserializer()
        got[o.topic] = [
            (keys.deserialize(o.topic, r.key), values.deserialize(o.topic, r.value), r.timestamp)
            for r in records
        ]
    return got


def _config(example_config: dict[str, Any], kafka: LocalKafka, tmp_path: Path) -> dict[str, Any]:
    return {
        **example_config,
        # a fresh application: no checkpoint and no internal topics from another test
        "application.id": f"example-{uuid.uuid4().hex[:12]}",
        "bootstrap.servers": kafka.bootstrap_servers,
        "state.dir": str(tmp_path / "state"),
    }


def _check(
    build: Callable[[], Topology],
    example_config: dict[str, Any],
    inputs: Sequence[Input],
    outputs: Sequence[Output],
    kafka: LocalKafka,
    spark: Any,
    tmp_path: Path,
) -> dict[str, Records]:
    """Runs the example on the driver and on Spark with the record cache off; asserts equal outputs
    and returns them."""
    config = {**_config(example_config, kafka, tmp_path), "statestore.cache.max.bytes": 0}
    expected = _on_driver(build(), config, inputs, outputs)
    assert all(expected.values()), f"an output topic gets nothing from the driver: {expected}"
    got = _on_spark(
        build(),
        config,
        inputs,
        outputs,
        kafka,
        spark,
        {topic: len(records) for topic, records in expected.items()},
    )
    assert got == expected
    return got


def test_word_count_as_configured(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    # The example's own config, record cache on: on Spark the count is then Spark's own aggregation
    # (the native count plan), and one micro-batch, one commit, forwards each word's final count
    # once. Which is the driver's last update of each word, with its timestamp.
    src, dst = topic_factory("lines"), topic_factory("counts")
    lines = Input(src, S, S, [(None, line, START + n) for n, line in enumerate(word_count.SAMPLE_LINES)])
    counts = Output(dst, S, L)
    config = _config(word_count.config(), kafka, tmp_path)
    reference = _on_driver(
        word_count.topology(src, dst), {**config, "statestore.cache.max.bytes": 0}, [lines], [counts]
    )
    final = {word: (count, ts) for word, count, ts in reference[dst]}
    assert final["kafka"] == (3, START + 2) and len(final) == 8

    got = _on_spark(word_count.topology(src, dst), config, [lines], [counts], kafka, spark, {dst: len(final)})

    assert len(got[dst]) == 8
    assert {word: (count, ts) for word, count, ts in got[dst]} == final


def test_pageview_windows(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("pageviews"), topic_factory("per-minute")

    got = _check(
        lambda: pageview_windows.topology(src, dst),
        pageview_windows.config(),
        [Input(src, S, J, pageview_windows.sample(START))],
        [Output(dst, S, J)],
        kafka,
        spark,
        tmp_path,
    )

    # final results only: one record per page and closed window
    assert [(key, value["window_start"], value["views"]) for key, value, _ in got[dst]] == [
        ("/home", START, 2),
        ("/pricing", START, 2),
        ("/docs", START + 60_000, 1),
        ("/home", START + 60_000, 1),
    ]


def test_order_enrichment(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    names = {
        order_enrichment.ORDERS_TOPIC: topic_factory("orders"),
        order_enrichment.CUSTOMERS_TOPIC: topic_factory("customers"),
        order_enrichment.PRODUCTS_TOPIC: topic_factory("products"),
    }
    dst = topic_factory("enriched")
    sample = order_enrichment.sample(START)

    got = _check(
        lambda: order_enrichment.topology(
            names[order_enrichment.ORDERS_TOPIC],
            names[order_enrichment.CUSTOMERS_TOPIC],
            names[order_enrichment.PRODUCTS_TOPIC],
            dst,
        ),
        order_enrichment.config(),
        [Input(names[topic], S, J, records) for topic, records in sample.items()],
        [Output(dst, S, J)],
        kafka,
        spark,
        tmp_path,
    )

    assert [(value["order_id"], value["tier"], value["total_cents"]) for _, value, _ in got[dst]] == [
        ("o-1", "silver", 5_000),
        ("o-4", "gold", 12_000),
    ]


def test_sessionization(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, dst = topic_factory("clicks"), topic_factory("sessions")

    got = _check(
        lambda: sessionization.topology(src, dst),
        sessionization.config(),
        [Input(src, S, S, sessionization.sample(START))],
        [Output(dst, Serdes.session_windowed(S), J)],
        kafka,
        spark,
        tmp_path,
    )

    # the merged session of user-2, after the tombstones of the two it replaced
    merged = got[dst][-2]
    assert (merged[0].key, merged[0].window.start, merged[0].window.end) == (
        "user-2",
        START + 180_000,
        START + 540_000,
    )
    assert [value for _, value, _ in got[dst]].count(None) == 4


def test_dedupe(kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path) -> None:
    src, dst = topic_factory("events"), topic_factory("deduplicated")

    got = _check(
        lambda: dedupe.topology(src, dst),
        dedupe.config(),
        [Input(src, S, J, dedupe.sample(START))],
        [Output(dst, S, J)],
        kafka,
        spark,
        tmp_path,
    )

    # e-1 is forwarded again only after the window (and the punctuator's expiry)
    assert [key for key, _, _ in got[dst]] == ["e-1", "e-2", "e-3", None, "e-4", "e-1"]


def test_top_n(kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path) -> None:
    src, dst = topic_factory("sales"), topic_factory("top")

    got = _check(
        lambda: top_n.topology(src, dst),
        top_n.config(),
        [Input(src, S, J, top_n.sample(START))],
        [Output(dst, S, J)],
        kafka,
        spark,
        tmp_path,
    )

    # after catan's deletion the subtractor has removed it from games
    assert got[dst][-1] == (
        "games",
        [{"product": "dune", "units": 40}, {"product": "go", "units": 20}],
        START + 8_000,
    )


def test_fraud_alerts(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, reviews, blocks = topic_factory("payments"), topic_factory("reviews"), topic_factory("blocks")

    got = _check(
        lambda: fraud_alerts.topology(src, reviews, blocks),
        fraud_alerts.config(),
        [Input(src, S, J, fraud_alerts.sample(START))],
        [Output(reviews, S, J), Output(blocks, S, J)],
        kafka,
        spark,
        tmp_path,
    )

    assert [key for key, _, _ in got[reviews]] == ["card-3", "card-2"]
    assert [(key, value["total_cents"]) for key, value, _ in got[blocks]] == [("card-3", 210_000)]


def _samples(module: ModuleType) -> dict[str, list[tuple[Any, Any, int]]]:
    """An example's sample input by topic, timestamps from 0 (word count's lines have none)."""
    if module is word_count:
        return {word_count.INPUT_TOPIC: [(None, line, 0) for line in word_count.SAMPLE_LINES]}
    samples: Any = module.sample(0)
    return dict(samples) if isinstance(samples, dict) else {module.INPUT_TOPIC: samples}


@pytest.mark.parametrize(
    ("module", "topics", "value_serde"),
    [
        pytest.param(word_count, ["INPUT_TOPIC"], S, id="word_count"),
        pytest.param(pageview_windows, ["INPUT_TOPIC"], J, id="pageview_windows"),
        pytest.param(
            order_enrichment,
            ["ORDERS_TOPIC", "CUSTOMERS_TOPIC", "PRODUCTS_TOPIC"],
            J,
            id="order_enrichment",
        ),
        pytest.param(sessionization, ["INPUT_TOPIC"], S, id="sessionization"),
        pytest.param(dedupe, ["INPUT_TOPIC"], J, id="dedupe"),
        pytest.param(top_n, ["INPUT_TOPIC"], J, id="top_n"),
        pytest.param(fraud_alerts, ["INPUT_TOPIC"], J, id="fraud_alerts"),
    ],
)
def test_the_produce_command_writes_the_sample(
    module: ModuleType,
    topics: list[str],
    value_serde: Serde[Any],
    kafka: LocalKafka,
    topic_factory: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `python examples/NAME.py produce` against the test broker, into topics of this test
    for attr in topics:
        monkeypatch.setattr(module, attr, topic_factory(attr.lower().replace("_", "-")))
    monkeypatch.setenv("KSPARK_BOOTSTRAP", kafka.bootstrap_servers)

    assert module.main(["produce"]) == 0

    for topic, rows in _samples(module).items():
        got = kafka.consume_all(topic, min_records=len(rows))
        keys, values = S.deserializer(), value_serde.deserializer()
        assert [(keys.deserialize(topic, r.key), values.deserialize(topic, r.value)) for r in got] == [
            (key, value) for key, value, _ in rows
        ]
        if module is not word_count:  # the sample's spacing in time, shifted to the recent past
            assert [r.timestamp - got[0].timestamp for r in got] == [ts - rows[0][2] for _, _, ts in rows]
