"""Kafka's own perf tools against the benchmark broker: its raw produce and consume rates (`--perf`)."""

from __future__ import annotations

import subprocess
import uuid

from bench import jvm
from kspark.dev.kafka import LocalKafka

__all__ = ["broker_limits"]


def broker_limits(kafka: LocalKafka, n: int, partitions: int, input_topic: str) -> dict[str, float]:
    """Kafka's own perf tools: raw produce rate, raw consume rate, and both at once (a pipe's limit)."""
    cp = jvm.kafka_tools_classpath()
    base = [jvm.java(), "-Xmx512m", "-cp", cp]
    bs = kafka.bootstrap_servers

    def producer(topic: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [
                *base,
                "org.apache.kafka.tools.ProducerPerformance",
                "--topic",
                topic,
                "--num-records",
                str(n),
                "--record-size",
                "100",
                "--throughput",
                "-1",
                "--producer-props",
                f"bootstrap.servers={bs}",
                "acks=1",
                "linger.ms=5",
                "batch.size=262144",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    def consumer(topic: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [
                *base,
                "org.apache.kafka.tools.ConsumerPerformance",
                "--bootstrap-server",
                bs,
                "--topic",
                topic,
                "--messages",
                str(n),
                "--timeout",
                "60000",
                "--group",
                f"perf-{uuid.uuid4().hex[:6]}",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    def producer_rate(out: str) -> float:
        last = [ln for ln in out.splitlines() if "records sent" in ln][-1]
        return float(last.split("records sent,")[1].split("records/sec")[0])

    def consumer_rate(out: str) -> float:
        lines = [ln for ln in out.splitlines() if ln.strip() and not ln.startswith("WARNING")]
        header = [h.strip() for h in lines[0].split(",")]
        values = [v.strip() for v in lines[1].split(",")]
        return float(values[header.index("nMsg.sec")])

    kafka.create_topic("perf-produce", partitions)
    p = producer("perf-produce")
    produce = producer_rate(p.communicate()[0])
    c = consumer(input_topic)
    consume = consumer_rate(c.communicate()[0])
    kafka.create_topic("perf-pipe", partitions)
    c, p = consumer(input_topic), producer("perf-pipe")
    pipe_consume, pipe_produce = consumer_rate(c.communicate()[0]), producer_rate(p.communicate()[0])
    return {
        "produce": produce,
        "consume": consume,
        "pipe_consume": pipe_consume,
        "pipe_produce": pipe_produce,
    }
