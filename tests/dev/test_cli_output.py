"""What ``kspark run`` and ``kspark demo`` print (kspark/runtime/logs.py): the routing of every other
writer to a log file, the failure paragraph, ``kspark --version``. No JVM here: the commands
themselves run in tests/dev/test_dev_cli.py and test_dev_demo.py."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kspark import __version__, cli
from kspark.errors import StreamsException
from kspark.runtime.logs import announcement, failure_report

# A process that writes the way a command's parts do: kspark's lines through sys.stdout and
# sys.stderr; a child (the JVM, and the Python workers it starts) to the descriptors it inherits;
# C code (librdkafka) straight to descriptor 2; Python logging and warnings.
_WRITERS = r"""
import logging, os, subprocess, sys, warnings
from pathlib import Path
from kspark.runtime.logs import route_output

routing = route_output(None if sys.argv[1] == "-" else Path(sys.argv[1]), title="kspark test")
print("kspark line", flush=True)
print("kspark error line", file=sys.stderr, flush=True)
subprocess.run(["sh", "-c", "echo child stdout; echo child stderr >&2"], check=True)
os.write(2, b"%3|1795701491.955|FAIL|rdkafka#producer-1| C-level noise\n")
logging.getLogger("kspark.runtime.somewhere").info("a kspark info line")
logging.getLogger("py4j.clientserver").info("py4j chatter")
warnings.warn("a library's warning")
routing.restore()
os.write(2, b"after restore\n")
"""


def _run_writers(target: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _WRITERS, target], capture_output=True, text=True, timeout=60, check=True
    )


def test_route_output_leaves_kspark_lines_on_the_terminal_and_the_rest_in_the_log(tmp_path: Path) -> None:
    log = tmp_path / "app" / "logs" / "kspark.log"
    done = _run_writers(str(log))
    assert done.stdout == "kspark line\n"
    assert done.stderr == "kspark error line\nafter restore\n"
    text = log.read_text()
    assert f"INFO kspark.runtime.logs: kspark {__version__}: kspark test (pid " in text.splitlines()[0]
    for line in ("child stdout", "child stderr", "C-level noise", "a library's warning"):
        assert line in text
    assert "INFO kspark.runtime.somewhere: a kspark info line" in text
    assert "py4j chatter" not in text  # other libraries' INFO stays below the root's WARNING
    assert stat.S_IMODE(log.stat().st_mode) == 0o600  # a trace quotes the record that failed


def test_route_output_keeps_the_previous_log(tmp_path: Path) -> None:
    log = tmp_path / "kspark.log"
    log.write_text("the run before\n")
    _run_writers(str(log))
    assert (tmp_path / "kspark.log.1").read_text() == "the run before\n"
    assert "the run before" not in log.read_text()


def test_route_output_without_a_log_file_leaves_everything_on_the_terminal() -> None:
    done = _run_writers("-")
    assert done.stdout == "kspark line\nchild stdout\n"
    for line in ("kspark error line", "child stderr", "C-level noise", "a kspark info line"):
        assert line in done.stderr
    assert "a library's warning" in done.stderr
    assert announcement(None) is None


# Spark's text of a query that failed on a record (kspark/processor/internals/task.py wrote the
# kspark line in a Python worker), shortened.
_SPARK_FAILURE = """An exception was raised by the Python Proxy. Return Message: Traceback (most recent \
call last):
  File "/venv/lib/python3.11/site-packages/py4j/clientserver.py", line 644, in _call_proxy
    return_value = getattr(self.pool[obj_id], method)(*params)
pyspark.errors.exceptions.captured.PythonException: An exception was thrown from the Python worker:
Traceback (most recent call last):
  File "/kspark/processor/internals/fused.py", line 313, in process
    task.take_time(queue, partition_time)
kspark.errors.StreamsException: Exception caught in process. taskId=0_1, \
processor=KSTREAM-MAPVALUES-0000000001, topic=orders, partition=1, offset=2: ValueError: cannot shout 'bad'

=== Streaming Query ===
Identifier: shop-subtopology-0 [id = 73db16c6-915c-4792-a962-65bb0f25f80f, runId = ace257d6]
Current Committed Offsets: {}
"""
_LOG = Path("/state/shop/logs/kspark.log")
_QUERIES = {"shop-subtopology-0": [0], "shop-subtopologies-1-2": [1, 2]}


def _report(error: BaseException, **kwargs: object) -> str:
    text = failure_report(error, application="shop", queries=_QUERIES, log_path=_LOG, **kwargs)  # type: ignore[arg-type]
    assert "\n\n" not in text and all(len(line) <= 100 for line in text.splitlines())  # one paragraph
    return " ".join(text.split())


def test_a_failed_record_is_one_paragraph_naming_where_what_and_the_setting() -> None:
    assert _report(Exception(_SPARK_FAILURE)) == (
        "shop failed in sub-topology 0 (task 0_1, processor KSTREAM-MAPVALUES-0000000001) at the record "
        "of topic orders, partition 1, offset 2: ValueError: cannot shout 'bad'. To log and skip records "
        "whose processing raises instead of failing, set processing.exception.handler to "
        "log_and_continue (or to a function that decides per record). The full trace is in "
        "/state/shop/logs/kspark.log; --debug prints it here."
    )
    assert _report(Exception(_SPARK_FAILURE), trace_shown=True).endswith(
        "The full trace is above and in /state/shop/logs/kspark.log."
    )
    verbose = failure_report(Exception(_SPARK_FAILURE), application="shop", queries=_QUERIES, log_path=None)
    assert " ".join(verbose.split()).endswith("The full trace is above.")


@pytest.mark.parametrize(
    ("engine_line", "where", "setting"),
    [
        (
            "kspark.errors.StreamsException: Deserialization exception handler is set to fail upon a "
            "deserialization error (topic=orders, partition=3, offset=17, source=KSTREAM-SOURCE-0000000000: "
            "Expecting value: line 1 column 1 (char 0)). If you would rather have the streaming pipeline "
            "continue after a deserialization error, please set the "
            "default.deserialization.exception.handler appropriately.",
            "(query shop-subtopology-0, processor KSTREAM-SOURCE-0000000000) at the record of topic orders, "
            "partition 3, offset 17: "
            "Expecting value: line 1 column 1 (char 0).",
            "default.deserialization.exception.handler",
        ),
        (
            # the native count's check (kspark/runtime/spark/lowering.py), raised by Spark
            "org.apache.spark.SparkRuntimeException: [USER_RAISED_EXCEPTION] Deserialization exception "
            "handler is set to fail upon a deserialization error (topic=clicks, partition=0, offset=5, "
            "source=KSTREAM-SOURCE-0000000000: Size of data received by LongDeserializer is not 8 (got 3 "
            "bytes)). SQLSTATE: P0001",
            "at the record of topic clicks, partition 0, offset 5: Size of data received by "
            "LongDeserializer is not 8 (got 3 bytes).",
            "default.deserialization.exception.handler",
        ),
        (
            "kspark.errors.StreamsException: Error encountered trying to serialize the value of a record "
            "for topic totals (partition=None, timestamp=1000) in sink KSTREAM-SINK-0000000004, task 1_0: "
            "Object of type set is not JSON serializable. Set 'production.exception.handler' to "
            "'log_and_continue' to skip such records.",
            "in sub-topology 1 (task 1_0, processor KSTREAM-SINK-0000000004) writing to topic totals: "
            "Object of type set is not JSON serializable.",
            "production.exception.handler",
        ),
        (
            "kspark.errors.StreamsException: task [2_3] Exception caught while punctuating processor "
            "'dedupe': KeyError('k')",
            "in sub-topology 2 (task 2_3, processor dedupe): KeyError('k').",
            "processing.exception.handler",
        ),
    ],
    ids=["deserialization", "native-deserialization", "production", "punctuation"],
)
def test_each_handler_the_engine_names_is_the_setting_to_change(
    engine_line: str, where: str, setting: str
) -> None:
    report = _report(Exception(_SPARK_FAILURE.replace(_SPARK_FAILURE.splitlines()[7], engine_line)))
    assert where in report, report
    assert f"set {setting} to log_and_continue" in report


def test_an_error_the_engine_did_not_name_keeps_its_own_message_and_no_advice() -> None:
    text = _SPARK_FAILURE.replace(
        _SPARK_FAILURE.splitlines()[7], "ZeroDivisionError: division by zero"
    ).replace("shop-subtopology-0", "shop-subtopologies-1-2")
    report = _report(Exception(text))
    assert report.startswith(
        "shop failed in sub-topologies 1, 2 (query shop-subtopologies-1-2): "
        "ZeroDivisionError: division by zero."
    )
    assert "exception.handler" not in report


def test_kspark_own_wording_of_a_query_failure_names_the_query_once() -> None:
    cause = Exception(
        "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: This server does not host"
    )
    explained = StreamsException(
        "shop-subtopology-0 failed: its input topics ['orders'] no longer exist (deleted while the "
        "application ran?): org.apache.kafka.common.errors.UnknownTopicOrPartitionException: This server"
    )
    explained.__cause__ = cause
    assert _report(explained).startswith(
        "shop failed in sub-topology 0 (query shop-subtopology-0): its input topics ['orders'] no "
        "longer exist"
    )


def test_a_failed_start_says_so() -> None:
    error = StreamsException("Source topics [orders] do not exist on the cluster at 127.0.0.1:9092")
    assert _report(error, starting=True) == (
        "shop failed to start: Source topics [orders] do not exist on the cluster at 127.0.0.1:9092. "
        "The full trace is in /state/shop/logs/kspark.log; --debug prints it here."
    )


def test_version_names_kspark_pyspark_and_kafka(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib import metadata

    from kspark.jvm.jars import BUNDLES

    with pytest.raises(SystemExit) as info:
        cli.main(["--version"])
    assert info.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"kspark {__version__}"
    assert lines[1] == f"pyspark {metadata.version('pyspark')}"
    assert f"Apache Kafka {BUNDLES['kafka-broker'].version} " in lines[2]
    assert "kafka-clients 3.9.2" in lines[3] and lines[4].startswith("confluent-kafka ")
