"""The SparkSession factory: settings, the Kafka connector on the classpath, checks."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from kspark.dev import LocalKafka
from kspark.runtime.spark import session as session_mod
from kspark.runtime.spark.jars import connector_package

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def test_settings_defaults_and_connector_jars() -> None:
    s = session_mod.spark_settings()
    assert s["spark.master"] == "local[*]"
    assert s["spark.ui.enabled"] == "false"
    assert s["spark.sql.shuffle.partitions"] == "4"
    assert s["spark.sql.streaming.stateStore.providerClass"].endswith("RocksDBStateStoreProvider")
    assert s["spark.sql.streaming.statefulOperator.checkCorrectness.enabled"] == "false"
    assert s["spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"] == "true"
    assert s["spark.sql.execution.arrow.pyspark.enabled"] == "true"
    assert "spark.jars.packages" not in s
    jars = s["spark.jars"].split(",")
    assert any(j.endswith("spark-sql-kafka-0-10_2.13-4.2.0.jar") for j in jars)
    assert "log4j2.configurationFile" in s["spark.driver.extraJavaOptions"]
    assert "-XX:+UseParallelGC" in s["spark.driver.extraJavaOptions"].split()


def test_settings_keep_the_jvm_collector_on_a_cluster() -> None:
    """The parallel collector is for a local master, where the driver JVM runs the tasks."""
    s = session_mod.spark_settings({"spark.master": "spark://host:7077"})
    assert "UseParallelGC" not in s["spark.driver.extraJavaOptions"]
    assert "log4j2.configurationFile" in s["spark.driver.extraJavaOptions"]
    own = session_mod.spark_settings({"spark.driver.extraJavaOptions": "-Dx=1"})
    assert own["spark.driver.extraJavaOptions"] == "-Dx=1"


def test_settings_user_keys_override_and_jars_add() -> None:
    s = session_mod.spark_settings(
        {"spark.sql.shuffle.partitions": "8", "spark.ui.enabled": "true", "spark.jars": "/x/extra.jar"}
    )
    assert s["spark.sql.shuffle.partitions"] == "8"
    assert s["spark.ui.enabled"] == "true"
    jars = s["spark.jars"].split(",")
    assert jars[-1] == "/x/extra.jar"
    assert len(jars) == 5


def test_non_spark_keys_are_rejected_by_name() -> None:
    with pytest.raises(ValueError, match=r"application\.id"):
        session_mod.spark_settings({"application.id": "x", "spark.master": "local[1]"})


def test_connector_package_names_the_maven_coordinate() -> None:
    assert connector_package("4.2.0") == "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"


@pytest.mark.integration
@pytest.mark.slow
def test_session_reads_and_writes_kafka_with_the_connector(
    spark: SparkSession, kafka: LocalKafka, topic_factory: Callable[..., str]
) -> None:
    def worker(_: int) -> tuple[str, str]:
        import sys

        import pyspark

        return sys.executable, pyspark.__file__

    # Workers run this interpreter, with pyspark from the installed package (byte-compiled), not
    # from Spark's pyspark.zip, which every worker would compile anew (session.worker_python).
    ((executable, pyspark_file),) = set(spark.sparkContext.parallelize([0, 1], 2).map(worker).collect())
    assert executable == sys.executable
    assert ".zip" not in pyspark_file
    assert spark.conf.get("spark.sql.streaming.statefulOperator.checkCorrectness.enabled") == "false"
    assert session_mod.has_kafka_connector(spark)
    src = topic_factory("spark-in", partitions=2)
    dst = topic_factory("spark-out")
    kafka.produce(src, [(b"k%d" % i, b"v%d" % i, 1_000 + i, i % 2) for i in range(20)])
    df = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
        .option("subscribe", src)
        .load()
    )
    rows = df.selectExpr("CAST(key AS STRING) AS k", "partition", "offset").collect()
    assert sorted(r.k for r in rows) == sorted(f"k{i}" for i in range(20))
    assert {r.partition for r in rows} == {0, 1}
    # toPandas goes through Arrow, which the factory turns on.
    upper = df.selectExpr("CAST(value AS STRING) AS v").toPandas()["v"].str.upper()
    assert sorted(upper) == sorted(f"V{i}" for i in range(20))
    df.selectExpr("key", "value").write.format("kafka").option(
        "kafka.bootstrap.servers", kafka.bootstrap_servers
    ).option("topic", dst).save()
    assert len(kafka.consume_all(dst)) == 20


@pytest.mark.integration
@pytest.mark.slow
def test_user_session_without_connector_gets_a_clear_error() -> None:
    # Needs its own JVM without the connector, hence a subprocess.
    code = textwrap.dedent(
        """
        from pyspark.sql import SparkSession
        from kspark.runtime.spark.session import ConnectorMissingError, use_spark_session
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        try:
            use_spark_session(spark)
        except ConnectorMissingError as exc:
            print("ERROR:", exc)
        else:
            print("NO ERROR")
        spark.stop()
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ERROR:" in proc.stdout, proc.stdout + proc.stderr[-3000:]
    assert "spark.jars.packages=org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0" in proc.stdout


def test_local_checkpoints_are_written_through_the_file_system_api(spark: SparkSession) -> None:
    key = session_mod.CHECKPOINT_FILE_MANAGER
    before = spark.conf.get(key, None)
    try:
        spark.conf.unset(key)
        session_mod.use_local_checkpoint_files(spark, "hdfs://namenode/kspark")
        assert spark.conf.get(key, None) is None  # a remote checkpoint keeps Spark's default
        session_mod.use_local_checkpoint_files(spark, "/tmp/kspark-state")
        assert spark.conf.get(key, None) == session_mod.FILE_SYSTEM_CHECKPOINTS
        spark.conf.set(key, "com.example.Manager")
        session_mod.use_local_checkpoint_files(spark, "file:///tmp/kspark-state")
        assert spark.conf.get(key, None) == "com.example.Manager"  # the user's choice stays
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a nice value per thread is Linux's")
def test_processing_nice_starts_the_jvm_and_its_workers_below_the_application() -> None:
    # Needs a JVM of its own, hence a subprocess. Every thread of the JVM and of the Python
    # workers it starts runs at the nice value; the application process keeps its own. The JVM
    # runs in a session of its own, whose scheduling group (autogroup, where the kernel has it)
    # has the nice value too, and it ends when the application process dies.
    code = textwrap.dedent(
        """
        import os
        from kspark.runtime.spark.session import create_spark_session
        spark = create_spark_session({"spark.master": "local[1]", "spark.kspark.processingNice": "7"})
        jvm = spark.sparkContext._gateway.proc.pid
        def nices(pid):
            found = set()
            for t in os.listdir(f"/proc/{pid}/task"):
                try:
                    found.add(os.getpriority(os.PRIO_PROCESS, int(t)))
                except ProcessLookupError:  # the thread ended meanwhile
                    pass
            return found
        rdd = spark.sparkContext.parallelize(range(2), 2)
        workers = rdd.map(lambda _: __import__("os").getpid()).collect()
        print("JVM", sorted(nices(jvm)))
        print("WORKERS", sorted(set().union(*(nices(p) for p in set(workers)))))
        print("APP", os.getpriority(os.PRIO_PROCESS, 0))
        print("OWN SESSION", os.getsid(jvm) == jvm != os.getsid(0))
        group = f"/proc/{jvm}/autogroup"
        print("GROUP", open(group).read().split()[-1] if os.path.exists(group) else "none")
        print("PID", jvm, flush=True)
        os.kill(os.getpid(), 9)  # dies without stopping Spark: the JVM must end by itself
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == -9, proc.stderr[-3000:]
    assert "JVM [7]" in proc.stdout and "WORKERS [7]" in proc.stdout, proc.stdout
    assert "APP 0" in proc.stdout and "OWN SESSION True" in proc.stdout, proc.stdout
    group = proc.stdout.split("GROUP ")[1].split()[0]
    assert group in ("7", "none"), proc.stdout  # "none": a kernel without autogroup
    jvm = int(proc.stdout.split("PID ")[1].split()[0])
    deadline = time.monotonic() + 60
    while _alive(jvm) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(jvm), "Spark's JVM outlived the application process"


def _alive(pid: int) -> bool:
    """``pid`` runs (not ended, nor a zombie left for its parent to collect)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
