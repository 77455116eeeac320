"""KafkaStreams.metrics() on Spark and its Prometheus endpoint (metrics.py, prometheus.py)."""

from __future__ import annotations

import sys
import time
import urllib.request
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kspark import Consumed, KafkaStreams, Produced, StreamsBuilder, Topology
from kspark.dev.kafka import LocalKafka, free_port
from kspark.metrics import MetricName
from kspark.runtime.prometheus import MetricsEndpoint, prometheus_name
from kspark.runtime.spark.metrics import QueryMetrics, end_offsets, lag_metrics, thread_metrics
from kspark.serde import Serdes

pyspark_cloudpickle = pytest.importorskip("pyspark.cloudpickle")
pyspark_cloudpickle.register_pickle_by_value(sys.modules[__name__])

S = Serdes.String()


def test_thread_metrics_are_totals_and_rates_over_the_sample_window() -> None:
    m = QueryMetrics(
        records=1_000, commits=4, window=deque([(1.0, 300, 20.0, 5), (2.0, 300, 40.0, 7)]), written=90
    )
    got = thread_metrics({"app-subtopology-0": m}, window_s=60.0)

    def value(name: str) -> float:
        return got[MetricName.of(name, "stream-thread-metrics", thread_id="app-subtopology-0")]

    assert value("process-total") == 1_000 and value("commit-total") == 4
    assert value("process-rate") == 10.0 and value("commit-rate") == 2 / 60
    assert value("commit-latency-avg") == 30.0 and value("commit-latency-max") == 40.0
    producer = "producer-metrics"
    assert got[MetricName.of("record-send-total", producer, client_id="app-subtopology-0")] == 90
    assert got[MetricName.of("record-send-rate", producer, client_id="app-subtopology-0")] == 12 / 60
    idle = thread_metrics({"q": QueryMetrics()}, window_s=60.0)
    assert str(idle[MetricName.of("commit-latency-avg", "stream-thread-metrics", thread_id="q")]) == "nan"


def test_lag_is_the_last_stable_offset_minus_where_the_last_batch_ended() -> None:
    progress = {"sources": [{"endOffset": '{"in":{"0":10,"1":4}}'}, {"endOffset": {"t": {"0": 7}}}]}
    ends = end_offsets(progress)
    assert ends == {("in", 0): 10, ("in", 1): 4, ("t", 0): 7}
    got = lag_metrics({"q": ends}, lambda tps: {("in", 0): 15, ("in", 1): 4, ("t", 0): 7})
    fetch = "consumer-fetch-manager-metrics"
    assert got[MetricName.of("records-lag", fetch, client_id="q", topic="in", partition="0")] == 5
    assert got[MetricName.of("records-lag", fetch, client_id="q", topic="in", partition="1")] == 0
    assert got[MetricName.of("records-lag-max", fetch, client_id="q")] == 5


def test_the_prometheus_endpoint_answers_with_kafka_streams_names_and_tags_as_labels() -> None:
    metric = MetricName.of("process-total", "stream-thread-metrics", thread_id="app-subtopology-0")
    assert prometheus_name(metric) == "kafka_streams_stream_thread_metrics_process_total"
    calls = []

    def collect() -> dict[MetricName, float]:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("broker away")  # a failing collection answers an empty scrape
        return {metric: 42.0}

    endpoint = MetricsEndpoint(free_port(), "app", collect)
    try:
        url = f"http://127.0.0.1:{endpoint.port}/metrics"
        text = urllib.request.urlopen(url, timeout=10).read().decode()
        assert (
            'kafka_streams_stream_thread_metrics_process_total{application_id="app",'
            'thread_id="app-subtopology-0"} 42.0'
        ) in text
        assert "process_total" not in urllib.request.urlopen(url, timeout=10).read().decode()
    finally:
        endpoint.close()


def _topology(src: str, mid: str, out: str) -> Topology:
    b = StreamsBuilder()
    b.stream(src, Consumed.with_(S, S)).filter(lambda k, v: v != "drop").to(mid, Produced.with_(S, S))
    b.stream(mid, Consumed.with_(S, S)).group_by_key().count().to_stream().to(
        out, Produced.with_(S, Serdes.Long())
    )
    return b.build()


@pytest.mark.integration
@pytest.mark.slow
def test_metrics_count_records_commits_and_lag_and_prometheus_serves_them(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    src, mid, out = (topic_factory(n, partitions=2) for n in ("m-in", "m-mid", "m-out"))
    kafka.produce(
        src, [(f"k{i % 5}".encode(), b"drop" if i % 4 == 0 else b"v", 1_000 + i, i % 2) for i in range(200)]
    )
    port = free_port()
    config = {
        "application.id": f"metrics-{src}",
        "bootstrap.servers": kafka.bootstrap_servers,
        "state.dir": str(tmp_path / "state"),
        "spark.kspark.prometheusPort": port,
    }
    app = KafkaStreams(_topology(src, mid, out), config, spark=spark)
    assert app.metrics() == {}
    try:
        assert app.process_available() == 200 + 150
        queries = [q.name for q in app.physical_plan().queries]
        assert len(queries) == 2

        def value(name: str, group: str = "stream-thread-metrics", **tags: str) -> float | None:
            return app.metrics().get(MetricName.of(name, group, **tags))

        deadline = time.monotonic() + 30  # progress events reach the listener asynchronously
        while time.monotonic() < deadline and [value("process-total", thread_id=q) for q in queries] != [
            200,
            150,
        ]:
            time.sleep(0.5)
        assert [value("process-total", thread_id=q) for q in queries] == [200, 150]
        assert all((value("commit-total", thread_id=q) or 0) >= 1 for q in queries)
        assert all((value("commit-latency-max", thread_id=q) or 0) > 0 for q in queries)
        # 150 records into mid; the count's output: one update per key and batch (cache on)
        assert value("record-send-total", "producer-metrics", client_id=queries[0]) == 150
        assert 5 <= (value("record-send-total", "producer-metrics", client_id=queries[1]) or 0) <= 150
        fetch = "consumer-fetch-manager-metrics"
        assert value("records-lag-max", fetch, client_id=queries[0]) == 0
        kafka.produce(src, [(b"k1", b"late", 5_000, 1)] * 3)  # not processed: lag
        assert value("records-lag", fetch, client_id=queries[0], topic=src, partition="1") == 3
        assert value("records-lag", fetch, client_id=queries[0], topic=src, partition="0") == 0
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
        assert (
            f'kafka_streams_stream_thread_metrics_process_total{{application_id="{config["application.id"]}",'
            f'thread_id="{queries[1]}"}} 150.0'
        ) in text
    finally:
        app.close()
    with pytest.raises(OSError):  # closed with the application
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5)
