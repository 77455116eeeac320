"""JVM parts of the benchmark: the Java Kafka Streams app and Kafka's perf tools.

The Kafka Streams app (``bench/jvm/kstreams-bench``) is compiled with ``javac``
against the ``kafka-streams`` 4.1.1 jar bundle, as ``tests/catalog/java.py``
compiles the reference harness, into ``<kspark cache>/bench/kstreams-bench/<hash>/``.
Kafka's perf tools (``kafka-tools`` 4.1.1, not part of the broker bundle) are
resolved once with Maven from ``bench/jvm/kafka-tools/pom.xml`` into
``<kspark cache>/bench/kafka-tools-4.1.1/``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from kspark.jvm.jars import compile_java, find_java, find_maven, kspark_home, staged_dir

__all__ = ["kstreams_classpath", "kafka_tools_classpath", "java"]

_JVM = Path(__file__).resolve().parent / "jvm"
_STAMP = ".built"


def java() -> str:
    return str(find_java())


def kstreams_classpath() -> str:
    """Compile the Kafka Streams benchmark app once per source change; return its classpath."""
    return compile_java(
        "kstreams-bench", sorted((_JVM / "kstreams-bench" / "src").rglob("*.java")), "kafka-streams"
    )


def kafka_tools_classpath() -> str:
    """Kafka 4.1.1's tools jar and its dependencies (ProducerPerformance, ConsumerPerformance)."""
    out = kspark_home() / "bench" / "kafka-tools-4.1.1"
    if not (out / _STAMP).exists():
        with staged_dir(out) as tmp:
            proc = subprocess.run(
                [
                    str(find_maven()),
                    "-q",
                    "-B",
                    "-f",
                    str(_JVM / "kafka-tools" / "pom.xml"),
                    f"-Dmaven.repo.local={kspark_home() / 'm2'}",
                    "dependency:copy-dependencies",
                    "-DincludeScope=runtime",
                    f"-DoutputDirectory={tmp}",
                ],
                capture_output=True,
                text=True,
                check=False,
                stdin=subprocess.DEVNULL,
            )
            if proc.returncode != 0:
                raise RuntimeError(f"Maven could not resolve kafka-tools 4.1.1:\n{proc.stdout[-4000:]}")
            (tmp / _STAMP).write_text("ok\n")
    return os.pathsep.join(str(p) for p in sorted(out.glob("*.jar")))
