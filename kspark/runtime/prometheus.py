"""Kafka Streams' metrics in Prometheus' text format, on an HTTP port of the application process.

``spark.kspark.prometheusPort`` (unset: no endpoint) starts it with the
application. Each metric becomes ``kafka_streams_<group>_<name>`` with its
tags as labels (dashes as underscores) plus ``application_id``, e.g.
``kafka_streams_stream_thread_metrics_process_total{thread_id="..."}``, the
shape Prometheus' JMX exporter gives Kafka Streams' own metrics. Values are
read when Prometheus scrapes, never cached.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kspark.metrics import MetricName

__all__ = ["MetricsEndpoint", "prometheus_name"]

_log = logging.getLogger(__name__)


def prometheus_name(metric: MetricName) -> str:
    """``kafka_streams_<group>_<name>`` with every character Prometheus does not allow as ``_``."""
    raw = f"kafka_streams_{metric.group}_{metric.name}"
    return "".join(c if c.isalnum() or c == "_" else "_" for c in raw)


class MetricsEndpoint:
    """An HTTP server answering Prometheus' scrapes with ``collect()``'s metrics."""

    def __init__(
        self, port: int, application_id: str, collect: Callable[[], Mapping[MetricName, float]]
    ) -> None:
        from prometheus_client import CollectorRegistry, start_http_server
        from prometheus_client.core import GaugeMetricFamily

        def families() -> Iterator[Any]:
            by_name: dict[str, Any] = {}
            try:
                metrics = collect()
            except Exception as e:  # a scrape must answer; the failure is logged, the scrape is empty
                _log.warning("collecting metrics for Prometheus failed: %s", e)
                return
            for metric, value in sorted(metrics.items(), key=lambda item: repr(item[0])):
                labels = {"application_id": application_id}
                labels.update({k.replace("-", "_"): v for k, v in metric.tags_items})
                name = prometheus_name(metric)
                family = by_name.get(name)
                if family is None:
                    family = by_name[name] = GaugeMetricFamily(
                        name, f"Kafka Streams {metric.group} {metric.name}", labels=sorted(labels)
                    )
                family.add_metric([labels[k] for k in sorted(labels)], value)
            yield from by_name.values()

        class Collector:
            def collect(self) -> Iterator[Any]:
                return families()

        registry = CollectorRegistry(auto_describe=False)
        registry.register(Collector())
        self.server, self._thread = start_http_server(port, registry=registry)
        self.port = int(self.server.server_port)
        _log.info("Prometheus metrics on port %d", self.port)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
