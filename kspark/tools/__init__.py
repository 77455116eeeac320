"""Developer tools over a topology that need neither Spark nor Kafka: its picture
(:mod:`kspark.tools.picture`) and the layered graph layout it is drawn with
(:mod:`kspark.tools.layout`)."""

from __future__ import annotations

__all__: list[str] = []
