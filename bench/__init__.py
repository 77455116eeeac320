"""Benchmark harness: kspark against its peers on one local Kafka (issue 5); see docs/benchmarks.md."""

__all__: list[str] = []
