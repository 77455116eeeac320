"""KafkaStreams.metrics() on Spark and its Prometheus endpoint (metrics.py, prometheus.py)."""

from __future__ import annotations

import math
import sys
import time
import urllib.request
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kspark import Consumed, KafkaStreams, Produced, StreamsBuilder, TimeWindows, Topology
from kspark.dev.kafka import LocalKafka, free_port
from kspark.metrics import MetricName
from kspark.runtime.prometheus import MetricsEndpoint, prometheus_name
from kspark.runtime.spark.metrics import (
    QueryMetrics,
    TaskReports,
    end_offsets,
    lag_metrics,
    task_reports,
    thread_metrics,
)
from kspark.serde import Serdes
from kspark.testing import TestRecord, TopologyTestDriver

pyspark_cloudpickle = pytest.importorskip("pyspark.cloudpickle")
pyspark_cloudpickle.register_pickle_by_value(sys.modules[__name__])

S = Serdes.String()
E2E = "stream-processor-node-metrics"


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


def test_process_latency_is_a_batchs_processing_time_per_input_record() -> None:
    # Kafka Streams' thread records a processing pass's time divided by the records it processed.
    m = QueryMetrics()
    m.add(1.0, 1_000, 900.0, 0, 60.0, process_ms=500.0)  # 0.5 ms a record
    m.add(2.0, 0, 30.0, 0, 60.0, process_ms=10.0)  # read nothing: no sample
    m.add(3.0, 4_000, 900.0, 0, 60.0, process_ms=400.0)  # 0.1 ms a record
    m.add(4.0, 10, 900.0, 0, 60.0)  # its processing time unknown: no sample

    def value(name: str, metrics: QueryMetrics) -> float:
        got = thread_metrics({"q": metrics}, window_s=60.0)
        return got[MetricName.of(name, "stream-thread-metrics", thread_id="q")]

    assert value("process-latency-avg", m) == pytest.approx(0.3)
    assert value("process-latency-max", m) == pytest.approx(0.5)
    m.add(62.0, 100, 900.0, 0, 60.0, process_ms=100.0)  # 1 ms a record; the first batch left the window
    assert value("process-latency-avg", m) == pytest.approx(0.55)
    assert value("process-latency-max", m) == pytest.approx(1.0)
    assert str(value("process-latency-avg", QueryMetrics())) == "nan"


def test_dropped_records_are_summed_per_task_from_the_batch_rows() -> None:
    cells = ["", '{"dropped": {"0_1": 2}}', '{"dropped": {"0_1": 1, "1_0": 4}}', ""]
    assert task_reports(cells).dropped == {"0_1": 3, "1_0": 4}
    m = QueryMetrics()
    m.add(1.0, 10, 5.0, 0, 60.0, TaskReports({"0_1": 3}))
    m.add(100.0, 10, 5.0, 0, 60.0, TaskReports({"0_1": 2, "1_0": 6}))  # the first batch left the window
    m.add(101.0, 10, 5.0, 0, 60.0, TaskReports())
    got = thread_metrics({"q": m}, window_s=60.0)

    def value(name: str, task: str) -> float:
        return got[MetricName.of(name, "stream-task-metrics", thread_id="q", task_id=task)]

    assert value("dropped-records-total", "0_1") == 5 and value("dropped-records-total", "1_0") == 6
    assert value("dropped-records-rate", "0_1") == 2 / 60 and value("dropped-records-rate", "1_0") == 6 / 60
    assert not [n for n in thread_metrics({"q": QueryMetrics()}, 60.0) if n.group == "stream-task-metrics"]


def test_e2e_latencies_are_merged_per_task_and_node_over_the_sample_window() -> None:
    reports = task_reports(
        [
            '{"e2e": {"0_1": {"src": [2, 300, 100, 200], "sink": [1, 150, 150, 150]}}}',
            '{"dropped": {"0_0": 1}, "e2e": {"0_1": {"src": [2, 100, 20, 80]}}}',
        ]
    )
    assert reports.dropped == {"0_0": 1}
    assert reports.e2e[("0_1", "src")].to_list() == [4, 400, 20, 200]
    m = QueryMetrics()
    m.add(1.0, 4, 5.0, 0, 60.0, reports)
    m.add(30.0, 1, 5.0, 0, 60.0, task_reports(['{"e2e": {"0_1": {"src": [1, 1000, 1000, 1000]}}}']))

    def value(got: dict[MetricName, float], name: str, node: str) -> float:
        tags = {"thread_id": "q", "task_id": "0_1", "processor_node_id": node}
        return got[MetricName.of(f"record-e2e-latency-{name}", "stream-processor-node-metrics", **tags)]

    got = thread_metrics({"q": m}, window_s=60.0)
    assert (value(got, "avg", "src"), value(got, "min", "src"), value(got, "max", "src")) == (280, 20, 1000)
    assert value(got, "avg", "sink") == 150
    m.add(70.0, 1, 5.0, 0, 60.0, TaskReports())  # the first batch left the window
    got = thread_metrics({"q": m}, window_s=60.0)
    assert value(got, "avg", "src") == 1000 and math.isnan(value(got, "avg", "sink"))


def test_store_operations_are_rates_and_latencies_per_store_with_kafka_streams_tags() -> None:
    cell = '{"stores": {"0_1": {"counts": {"scope": "rocksdb", "ops": {"put": [3, 3000, 500, 1500]}}}}}'
    m = QueryMetrics()
    m.add(1.0, 3, 5.0, 0, 60.0, task_reports([cell, cell]))
    got = thread_metrics({"q": m}, window_s=60.0)
    tags = (("thread-id", "q"), ("task-id", "0_1"), ("rocksdb-state-id", "counts"))
    assert got[MetricName("put-rate", "stream-state-metrics", tags)] == 6 / 60
    assert got[MetricName("put-latency-avg", "stream-state-metrics", tags)] == 1_000
    assert got[MetricName("put-latency-max", "stream-state-metrics", tags)] == 1_500


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
        # Spark's addBatch time per input record: under the whole batch's time, over nothing.
        for q in queries:
            per_record = value("process-latency-max", thread_id=q) or 0
            assert 0 < per_record < (value("commit-latency-max", thread_id=q) or 0)
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


def _dropping(counted: str, windowed: str, joined: str, table: str, out: str) -> Topology:
    """Three sub-topologies that drop records where Kafka Streams does: a count and a windowed
    count (lowered to Spark's aggregation on Spark) skip null keys, the windowed count records
    past its grace, the stream-table join null keys."""
    b = StreamsBuilder()
    b.stream(counted, Consumed.with_(S, S)).group_by_key().count().to_stream().to(
        out, Produced.with_(S, Serdes.Long())
    )
    (
        b.stream(windowed, Consumed.with_(S, S))
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(100, 0))
        .count()
        .to_stream()
        .map(lambda wk, n: (wk.key, n))
        .to(out, Produced.with_(S, Serdes.Long()))
    )
    users = b.table(table, Consumed.with_(S, S))
    b.stream(joined, Consumed.with_(S, S)).join(users, lambda v, u: f"{v}/{u}").map_values(len).to(
        out, Produced.with_(S, Serdes.Long())
    )
    return b.build()


@pytest.mark.integration
@pytest.mark.slow
def test_dropped_records_reach_the_driver_per_task_as_the_test_driver_counts_them(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    counted, windowed, joined, table, out = (
        topic_factory(n, partitions=2) for n in ("d-count", "d-win", "d-join", "d-users", "d-out")
    )
    # (topic, key, value, timestamp, partition): the dropped ones all go to partition 1
    # (the table's timestamps are 1: librdkafka's producer takes 0 as "now")
    records = [(table, "u1", "gold", 1, 0), (table, "u2", "free", 1, 1)]
    records += [(counted, "a", "x", 10 + i, 0) for i in range(3)] + [(counted, None, "x", 20, 1)] * 2
    records += [(windowed, "w", "x", 1_000, 1), (windowed, "w", "x", 50, 1), (windowed, "w", "x", 60, 1)]
    records += [(windowed, None, "x", 1_000, 1), (windowed, "v", "x", 1_100, 0)]
    records += [(joined, "u1", "e", 30, 0), (joined, None, "e", 30, 1), (joined, "u2", "e", 40, 1)]
    for topic in (table, counted, windowed, joined):
        kafka.produce(
            topic,
            [(k.encode() if k else None, v.encode(), ts, p) for t, k, v, ts, p in records if t == topic],
        )
    topology = _dropping(counted, windowed, joined, table, out)
    with TopologyTestDriver(topology) as driver:
        inputs = {t: driver.create_input_topic(t, S, S) for t in (table, counted, windowed, joined)}
        for t, k, v, ts, _ in records:
            inputs[t].pipe_input(TestRecord(k, v, timestamp=ts))
        expected = driver.dropped_records_total()
        e2e_nodes = {m.tags["processor-node-id"] for m in driver.metrics() if m.group == E2E}
    assert expected == 2 + 3 + 1  # null keys of the count and the join, 2 late + 1 null windowed

    config = {
        "application.id": f"drops-{counted}",
        "bootstrap.servers": kafka.bootstrap_servers,
        "state.dir": str(tmp_path / "state"),
        "metrics.recording.level": "DEBUG",  # the stores' metrics too
    }
    app = KafkaStreams(topology, config, spark=spark)
    try:
        began = time.time() * 1000
        app.process_available()
        ended = time.time() * 1000

        def drops() -> dict[str, float]:
            return {
                f"{m.tags['thread-id']}/{m.tags['task-id']}": v
                for m, v in app.metrics().items()
                if m.name == "dropped-records-total"
            }

        deadline = time.monotonic() + 30  # progress events reach the listener asynchronously
        while time.monotonic() < deadline and sum(drops().values()) < expected:
            time.sleep(0.5)
        got = drops()
        assert sum(got.values()) == expected, got
        assert all(name.endswith("_1") for name in got), got  # every dropped record was in partition 1
        assert sorted(got.values()) == [1.0, 2.0, 3.0], got  # one task of each sub-topology
        # record-e2e-latency of source and terminal nodes: a task's wall clock during its batch
        # minus the record's timestamp (1 ms to 1,100 ms after the epoch).
        e2e = {(m.tags["processor-node-id"], m.name): v for m, v in app.metrics().items() if m.group == E2E}
        nodes = {node for node, _ in e2e}
        sinks = {n for n in e2e_nodes if "SINK" in n}
        # Every sink reports; so do the sources the engine or the windowed count read (the
        # natively counted stream's records are counted by Spark, not a task).
        assert sinks and sinks <= nodes <= e2e_nodes, (nodes, e2e_nodes)
        assert len(nodes & {n for n in e2e_nodes if "SOURCE" in n}) >= 2, nodes
        for (node, name), v in e2e.items():
            assert began - 1_100 <= v <= ended, (node, name, v)
        # The join's table store (the engine's, on disk: Kafka's "rocksdb" scope): two rows put,
        # looked up by the joined records; the natively counted stores are Spark's, not timed.
        stores = {
            (m.tags["task-id"], m.name): v
            for m, v in app.metrics().items()
            if m.group == "stream-state-metrics"
        }
        assert stores[("2_0", "put-rate")] > 0 and stores[("2_1", "put-rate")] > 0, stores
        assert stores[("2_0", "get-latency-avg")] > 0, stores
        tag_keys = {k for m in app.metrics() if m.group == "stream-state-metrics" for k in m.tags}
        assert tag_keys == {"thread-id", "task-id", "rocksdb-state-id"}, tag_keys
    finally:
        app.close()
