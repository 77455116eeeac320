"""The Spark settings the tests' long-lived sessions add to kspark's own: the shared ``spark``
fixture, the kill -9 test's incarnations (eos_app.py) and the local-cluster runs. Tests that check
a session's own start-up (test_session, test_class_data) and the CLI and spark-submit runs keep
kspark's defaults, as users get them.

The tests' JVMs live for seconds to minutes and run tiny micro-batches: most of their CPU is
start-up, planning and the just-in-time compilers, not steady-state processing. With only the
client compiler (C1, ``-XX:TieredStopAtLevel=1``) a JVM compiles less and sooner; on this 2-core
machine an incarnation of the kill -9 test reached its first commits in 33-35 s instead of 44-57
s, and the catalog's low-latency configuration ran in 275 s instead of 309 s (one run each,
2026-12-07). Steady-state code runs slower under C1, which is why kspark's own sessions (and the
benchmarks) keep the JVM's default. Spark's ``*.defaultJavaOptions`` are prepended to the
``extraJavaOptions`` kspark sets (log4j, collector, class-data archive), so those stay.
"""

from __future__ import annotations

__all__ = ["TEST_JAVA_OPTIONS", "TEST_SPARK_CONF"]

TEST_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"

TEST_SPARK_CONF: dict[str, str] = {
    "spark.driver.defaultJavaOptions": TEST_JAVA_OPTIONS,
    "spark.executor.defaultJavaOptions": TEST_JAVA_OPTIONS,  # local-cluster's executor JVMs
}
