"""What ``kspark run`` and ``kspark demo`` print: kspark's own lines on the terminal, the rest in a log file.

A command that runs an application starts a JVM (Spark's driver, which in local mode also runs
every task), Spark's Python workers (children of that JVM) and librdkafka clients (in this process
and in the workers). Each of them writes to the standard output and error it was given:

- the JVM: log4j's console appender (kspark's log4j2 file, kspark/runtime/spark/session.py, sends
  it to standard error: "Current batch is falling behind", "Failed to cancel job group") and the
  JVM's own start-up warning ("WARNING: Using incubator modules"), which no log4j setting reaches;
- the Python workers: Spark copies what a worker writes into the JVM's standard error (PySpark's
  transformWithState driver worker prints every UDF it starts and completes, unconditionally);
- librdkafka: C code writing ``%3|...|FAIL|rdkafka#producer-1|`` lines to descriptor 2 of the
  process that owns the client (a client given a ``logger`` logs through Python instead).

There is no one setting for all of them, but they share file descriptors 1 and 2 of this process:
PySpark launches the JVM with them, and the JVM hands its own to the workers. :func:`route_output`
points descriptors 1 and 2 at the log file *before* the JVM starts, and gives Python's
``sys.stdout`` and ``sys.stderr`` copies of the terminal's descriptors: what kspark prints reaches
the terminal; what anything else writes, in this process or a child, reaches the log. Python's
``logging`` (kspark's modules, py4j, librdkafka through a ``logger``) and ``warnings`` go to the same
file. Without a log file (``--verbose``) nothing is moved and logging goes to the terminal.

Only the command line calls :func:`route_output`: an application that runs ``KafkaStreams`` from
its own Python keeps its standard streams and its logging configuration.

:func:`failure_report` turns a failed application's error (Spark's ``StreamingQueryException``,
which wraps the Python worker's traceback, or a kspark ``StreamsException``) into the one paragraph
``kspark run`` prints: where it failed, the record, the error's own message, the setting that
changes what happens, and where the full trace is.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import tempfile
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

__all__ = [
    "LOG_FORMAT",
    "OutputRouting",
    "application_log_path",
    "demo_log_path",
    "route_output",
    "announcement",
    "failure_report",
]

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
"""Python's log lines in the file, laid out as Spark's log4j lines are (session.py)."""
_DATE_FORMAT = "%y/%m/%d %H:%M:%S"

_log = logging.getLogger(__name__)


def application_log_path(config: Mapping[str, Any]) -> Path:
    """``<state.dir>/<application.id>/logs/kspark.log``: beside the application's checkpoints, where
    its operator looks already; ``kspark reset`` removes it with them."""
    from kspark.config import StreamsConfig

    streams = StreamsConfig(config)
    return Path(streams.state_dir()) / streams.application_id() / "logs" / "kspark.log"


def demo_log_path() -> Path:
    """A new ``kspark-demo-*.log`` in the temporary directory: the demo's state goes when it ends,
    its log stays to be read."""
    fd, name = tempfile.mkstemp(prefix="kspark-demo-", suffix=".log")
    os.close(fd)
    return Path(name)


def announcement(log_path: Path | None) -> str | None:
    """The line a command prints once at start, saying where the logs go (None: they are here)."""
    if log_path is None:
        return None
    return f"kspark: Spark's, Kafka clients' and kspark's logs go to {log_path} (--verbose shows them here)"


@dataclass
class OutputRouting:
    """Where a command's output goes; :meth:`restore` puts the process back as it was.

    The command line never restores: the JVM keeps the descriptors it was started with, and the
    workers' librdkafka clients (and this process's, while it exits) may still write after the
    command is done; those lines belong in the log too. Tests that route in-process restore.
    """

    log_path: Path | None
    _handler: logging.Handler
    _kspark_level: int
    _streams: tuple[TextIO, TextIO]
    _saved_fds: tuple[int, int] | None = None
    _restored: bool = field(default=False)

    def restore(self) -> None:
        if self._restored:
            return
        self._restored = True
        logging.getLogger().removeHandler(self._handler)
        logging.getLogger("kspark").setLevel(self._kspark_level)
        logging.captureWarnings(False)
        self._handler.close()
        if self._saved_fds is None:
            return
        terminal = (sys.stdout, sys.stderr)
        for stream in terminal:
            stream.flush()
        for saved, target in zip(self._saved_fds, (1, 2), strict=True):
            os.dup2(saved, target)
        sys.stdout, sys.stderr = self._streams
        for stream in terminal:
            stream.close()  # closes the saved descriptors with them


def route_output(log_path: Path | None, *, title: str) -> OutputRouting:
    """Send everything but kspark's own lines to ``log_path`` for the rest of this process; with
    None (``--verbose``), leave the streams as they are and log to the terminal.

    Call it before the SparkSession starts: the JVM and its workers write to the descriptors they
    were started with. A non-empty log from an earlier run is kept as ``<name>.1``. ``title`` (the
    command) heads the log.
    """
    kspark = logging.getLogger("kspark")
    kspark_level = kspark.level
    streams = (sys.stdout, sys.stderr)
    saved: tuple[int, int] | None = None
    if log_path is None:
        handler: logging.Handler = logging.StreamHandler(sys.stderr)
    else:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        if log_path.exists() and log_path.stat().st_size > 0:
            os.replace(log_path, log_path.with_name(log_path.name + ".1"))
        for stream in streams:
            stream.flush()
        # 0600: a failure's trace quotes the record that failed.
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        saved = (os.dup(1), os.dup(2))  # not inherited (os.dup): no child holds the terminal
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        sys.stdout = _text_stream(saved[0], streams[0])
        sys.stderr = _text_stream(saved[1], streams[1])
        handler = logging.FileHandler(log_path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(LOG_FORMAT, _DATE_FORMAT))
    logging.getLogger().addHandler(handler)
    # kspark's INFO lines (session start, a query's starting offsets) are worth a log; py4j's and
    # other libraries' stay at the root's WARNING.
    kspark.setLevel(logging.INFO)
    logging.captureWarnings(True)
    routing = OutputRouting(log_path, handler, kspark_level, streams, saved)
    from kspark import __version__

    _log.info("kspark %s: %s (pid %d)", __version__, title, os.getpid())
    return routing


def _text_stream(fd: int, like: TextIO) -> TextIO:
    """A text stream on ``fd`` with ``like``'s encoding and buffering (a terminal's is line-buffered)."""
    return open(
        fd,
        "w",
        encoding=like.encoding,
        errors=like.errors,
        buffering=1 if like.line_buffering else -1,
        closefd=True,
    )


# ---------------------------------------------------------------------------------- failures


@dataclass(frozen=True)
class _Kind:
    """A failure the engine names in a known shape: its message's pattern, the setting that makes
    kspark skip such records instead, and what those records are."""

    pattern: re.Pattern[str]
    setting: str
    records: str


_KINDS = (
    _Kind(
        # kspark/processor/internals/task.py, a processor raised
        re.compile(
            r"Exception caught in process\. taskId=(?P<task>[^,]+), processor=(?P<processor>[^,]+), "
            r"topic=(?P<topic>[^,]*), partition=(?P<partition>-?\d+), offset=(?P<offset>-?\d+): (?P<cause>.+)"
        ),
        "processing.exception.handler",
        "records whose processing raises",
    ),
    _Kind(
        re.compile(
            r"task \[(?P<task>[^\]]+)\] Exception caught while punctuating processor '(?P<processor>[^']+)': "
            r"(?P<cause>.+)"
        ),
        "processing.exception.handler",
        "punctuations that raise",
    ),
    _Kind(
        # the engine's (task.py) and the native count's (lowering.py), which ends in "bytes))."
        re.compile(
            r"Deserialization exception handler is set to fail upon a deserialization error "
            r"\(topic=(?P<topic>[^,]*), partition=(?P<partition>-?\d+), offset=(?P<offset>-?\d+), "
            r"source=(?P<processor>[^:]+): (?P<cause>.+?)\)"
            r"(?:\. If you would rather|\.?(?:\s+SQLSTATE\b.*)?$)"
        ),
        "default.deserialization.exception.handler",
        "records that cannot be deserialized",
    ),
    _Kind(
        # kspark/processor/internals/record_collector.py: a sink's serializer raised
        re.compile(
            r"Error encountered trying to serialize the (?:key|value) of a record for topic "
            r"(?P<out_topic>\S+) \(partition=[^,]*, timestamp=[^)]*\) in sink (?P<processor>\S+), "
            r"task (?P<task>[^:]+): (?P<cause>.+?)\. Set 'production\.exception\.handler'"
        ),
        "production.exception.handler",
        "records that cannot be serialized for their output topic",
    ),
    _Kind(
        # kspark/processor/internals/global_task.py
        re.compile(
            r"Exception caught while updating global store from topic (?P<topic>\S+) at offset "
            r"(?P<offset>-?\d+) in processor (?P<processor>\S+): (?P<cause>.+)"
        ),
        "processing.exception.handler",
        "records whose processing raises",
    ),
)

_ERROR_LINE = re.compile(r"^(?P<type>[\w.]+(?:Error|Exception)): (?P<message>.+)")
_FRAMEWORKS = ("pyspark.", "py4j.", "org.", "java.", "scala.")
_QUERY = re.compile(r"Identifier: (?P<query>\S+) \[id = ")


def failure_report(
    error: BaseException,
    *,
    application: str,
    queries: Mapping[str, Sequence[int]],
    log_path: Path | None,
    trace_shown: bool = False,
    starting: bool = False,
    width: int = 100,
) -> str:
    """The paragraph ``kspark run`` prints when ``application`` fails with ``error``.

    ``queries``: the Spark query names of the application's plan and the sub-topologies each runs.
    ``log_path``: where the full trace is (None: it went to the terminal, ``--verbose``);
    ``trace_shown``: it was printed on the terminal too (``--debug``).
    ``starting``: the application failed in ``start()``, before any query ran.
    """
    texts = [str(e) for e in _chain(error)]
    lines = [line.strip() for text in texts for line in text.splitlines() if line.strip()]
    query = _query(texts, queries)
    where, fields, kind = _where(lines, query, queries)
    sentences = [f"{application} {'failed to start' if starting else 'failed'}{where}: "]
    if kind is not None:
        sentences[0] += f"{fields['cause'].strip()}."
        sentences.append(
            f"To log and skip {kind.records} instead of failing, set {kind.setting} to "
            "log_and_continue (or to a function that decides per record)."
        )
    else:
        message = _message(error, lines)
        if query is not None and message.startswith(f"{query} failed: "):
            message = message[len(f"{query} failed: ") :]  # said once, in the paragraph's start
        sentences[0] += message if message.endswith(".") else f"{message}."
    if log_path is None:
        sentences.append("The full trace is above.")
    elif trace_shown:
        sentences.append(f"The full trace is above and in {log_path}.")
    else:
        sentences.append(f"The full trace is in {log_path}; --debug prints it here.")
    return textwrap.fill(" ".join(sentences), width=width, break_long_words=False, break_on_hyphens=False)


def _chain(error: BaseException) -> list[BaseException]:
    """``error`` and its causes: kspark's own errors keep Spark's as their cause."""
    out: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in out:
        out.append(current)
        current = current.__cause__ or current.__context__
    return out


def _query(texts: list[str], queries: Mapping[str, Sequence[int]]) -> str | None:
    """The failed query: Spark names it in a StreamingQueryException's text, kspark at the start of
    its own wording of a query's failure (runner.py: "<query> failed: ...")."""
    query = next((m.group("query") for text in texts if (m := _QUERY.search(text))), None)
    if query is None:
        query = next((q for q in queries if any(t.startswith(f"{q} failed") for t in texts)), None)
    return query


def _where(
    lines: list[str], query: str | None, queries: Mapping[str, Sequence[int]]
) -> tuple[str, dict[str, str], _Kind | None]:
    """`` in sub-topology 0 (task 0_1, processor X) at the record of topic T, partition P, offset O``,
    the fields found, and the kind of failure when the engine named it."""
    found: dict[str, str] = {}
    kind: _Kind | None = None
    for line in lines:
        for candidate in _KINDS:
            match = candidate.pattern.search(line)
            if match is not None:
                found = {k: v for k, v in match.groupdict().items() if v is not None}
                kind = candidate
                break
        if kind is not None:
            break
    details = [f"{k} {found[k]}" for k in ("task", "processor") if k in found]
    if "task" in found and "_" in found["task"]:
        place = f" in sub-topology {found['task'].split('_')[0]}"
    elif query is not None and query in queries:
        numbers = list(queries[query])
        place = f" in sub-topolog{'y' if len(numbers) == 1 else 'ies'} {', '.join(map(str, numbers))}"
        details.insert(0, f"query {query}")
    elif query is not None:
        place = f" in query {query}"
    else:
        place = ""
    if details:
        place += f" ({', '.join(details)})"
    if "topic" in found and "offset" in found:
        partition = f", partition {found['partition']}" if "partition" in found else ""
        place += f" at the record of topic {found['topic']}{partition}, offset {found['offset']}"
    elif "out_topic" in found:
        place += f" writing to topic {found['out_topic']}"
    return place, found, kind


def _message(error: BaseException, lines: list[str]) -> str:
    """The error's own message: the engine's line (``kspark.errors...``), else the first exception
    line that is not a framework's (the user's), else kspark's own error, else the first line."""
    # "PythonException: An exception was thrown from the Python worker:" heads a trace, says nothing
    errors = [m for line in lines if (m := _ERROR_LINE.match(line)) and not line.endswith(":")]
    ours = [m for m in errors if m.group("type").startswith("kspark.")]
    if ours:
        return ours[0].group("message")
    users = [m for m in errors if not m.group("type").startswith(_FRAMEWORKS)]
    if users:
        return f"{users[0].group('type').rsplit('.', 1)[-1]}: {users[0].group('message')}"
    from kspark.errors import StreamsException

    if isinstance(error, StreamsException) or not lines:
        return lines[0] if lines else type(error).__name__
    return errors[0].group(0) if errors else lines[0]
