"""The ``kspark`` command line.

``kspark demo`` runs the pageviews demo; ``kspark run APP.py`` and ``kspark
describe APP.py`` load an application module (``describe --format svg|png|html``
draws it, :mod:`kspark.tools.picture`); ``kspark dev-kafka`` runs a local
broker; ``kspark fetch-jars`` fills the JVM jar cache ahead of time; ``kspark
--version`` names the versions kspark runs with.

``demo`` and ``run`` print kspark's own lines only: Spark's, the Kafka clients'
and kspark's logs go to a log file whose path they print first, unless
``--verbose`` (:mod:`kspark.runtime.logs`). A failed application is one
paragraph; ``run --debug`` adds the full trace. ``demo``, ``run`` and
``dev-kafka`` fetch the JVM jars they need on first use, saying so line by line.

An application module defines ``topology`` (a :class:`kspark.Topology`, or a
zero-argument function returning one) and ``config`` (a dict, or a function
returning one), in the Kafka Streams config names of shared/API.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import math
import os
import re
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import FrameType, ModuleType
from typing import TYPE_CHECKING, Any

from kspark.dev.errors import DevToolsError
from kspark.errors import StreamsException
from kspark.jvm.errors import JvmSetupError

if TYPE_CHECKING:
    from kspark.kafka_streams import KafkaStreams

__all__ = ["main", "build_parser", "load_app", "versions"]

_log = logging.getLogger(__name__)


class AppError(Exception):
    """An application module that cannot be loaded or lacks what it must define."""


def load_app(path: str | os.PathLike[str]) -> tuple[Any, dict[str, Any]]:
    """Import ``path`` and return its ``(topology, config)``.

    The module is imported under its file name, with its directory put on
    ``sys.path`` and ``PYTHONPATH``: Spark's Python workers must be able to
    import the user's functions by module name, and a module run as
    ``__main__`` cannot be.
    """
    file = Path(path).resolve()
    if not file.is_file():
        raise AppError(f"no such application file: {path}")
    directory = str(file.parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    existing = os.environ.get("PYTHONPATH", "")
    if directory not in existing.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (directory, existing) if p)
    name = file.stem
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise AppError(f"cannot import {file} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return _attr(module, file, "topology"), _config(module, file)


def _attr(module: ModuleType, file: Path, name: str) -> Any:
    if not hasattr(module, name):
        raise AppError(
            f"{file} defines no `{name}`; an application module defines `topology` "
            "(a Topology or a function returning one) and `config` (a dict or a function returning one)"
        )
    value = getattr(module, name)
    if callable(value) and not hasattr(value, "describe"):
        value = value()
    return value


def _config(module: ModuleType, file: Path) -> dict[str, Any]:
    config = _attr(module, file, "config")
    if not isinstance(config, dict):
        raise AppError(f"`config` in {file} is a {type(config).__name__}, not a dict")
    return config


def _wait_for_signal(
    stop_when: Callable[[], bool] = lambda: False,
    every: tuple[float, Callable[[], None]] | None = None,
) -> None:
    """Block until Ctrl-C or SIGTERM (both end in KeyboardInterrupt) or until ``stop_when()``;
    ``every``: (seconds, call) to call that often meanwhile."""

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_term)
    due = time.monotonic() + (every[0] if every else math.inf)
    while not stop_when():
        time.sleep(0.5)
        if every is not None and time.monotonic() >= due:
            every[1]()
            due = time.monotonic() + every[0]


def status_line(state: str, metrics: Mapping[Any, float]) -> str:
    """One line of a running application's state from its ``metrics()``: records processed and
    written per second (all queries, over Kafka's sample window), the largest input lag, the
    slowest recent micro-batch, and the queries running."""

    def values(name: str) -> list[float]:
        return [v for m, v in metrics.items() if m.name == name and not math.isnan(v)]

    slowest = max(values("commit-latency-max"), default=math.nan)
    batch = "-" if math.isnan(slowest) else f"{slowest:,.0f} ms"
    return (
        f"{state} | processed {sum(values('process-rate')):,.0f}/s | written "
        f"{sum(values('record-send-rate')):,.0f}/s | lag {max(values('records-lag-max'), default=0):,.0f} | "
        f"slowest batch {batch} | queries {sum(values('alive-stream-threads')):.0f}"
    )


def _fetch_jars_first(names: Sequence[str]) -> None:
    """Resolve the jar bundles ``names`` before a command starts a JVM: a bundle not in the cache
    yet (a first run) is downloaded with its progress printed, on the terminal, as kspark's own
    lines; a cached one costs a stamp read and prints nothing."""
    from kspark.jvm import jars

    for name in names:
        jars.resolve_bundle(name, log=lambda line: print(line, flush=True))


def _cmd_dev_kafka(args: argparse.Namespace) -> int:
    from kspark.dev.kafka import LocalKafka

    _fetch_jars_first(["kafka-broker"])
    with LocalKafka(port=args.port, heap=args.heap, security=args.secure) as kafka:
        for spec in args.topic or []:
            name, _, parts = spec.partition(":")
            kafka.create_topic(name, partitions=int(parts or 1))
            print(f"created topic {name} ({int(parts or 1)} partitions)", flush=True)
        print(f"Kafka {args.kafka_version} is up in {kafka.startup_seconds:.1f} s", flush=True)
        print(f"bootstrap.servers={kafka.bootstrap_servers}", flush=True)
        if args.secure:
            from kspark.dev.kafka_security import LISTENERS, SASL_MECHANISMS

            # A throwaway broker on loopback: the password is printed so it can be pasted.
            print(
                f"secured listeners: user {kafka.user}, password {kafka.password}, CA {kafka.ca_path}",
                flush=True,
            )
            for listener, protocol in LISTENERS.items():
                note = f" (sasl.mechanism: any of {', '.join(SASL_MECHANISMS)})" if "SASL" in protocol else ""
                print(f"[{listener}] {kafka.secured_bootstrap(listener)}{note}", flush=True)
                for key, value in kafka.client_settings(listener).items():
                    print(f"  {key}={value}", flush=True)
        print(f"broker log: {kafka.log_path}", flush=True)
        try:
            # Inside the try: whoever reads this line may press Ctrl-C at once, and an interrupt
            # between the print and the try would end the command with 130 instead of stopping.
            print("Ctrl-C to stop", flush=True)
            _wait_for_signal()
        except KeyboardInterrupt:
            print("\nstopping Kafka", flush=True)
    return 0


def _cmd_fetch_jars(args: argparse.Namespace) -> int:
    from kspark.jvm import jars

    names = sorted(jars.BUNDLES) if args.all else (args.bundles or list(jars.DEFAULT_BUNDLES))
    for name in names:
        cached = jars.is_resolved(name)
        paths = jars.resolve_bundle(name, log=lambda m: print(m, file=sys.stderr, flush=True))
        size = sum(p.stat().st_size for p in paths) / 1e6
        state = "cached" if cached else "fetched"
        print(f"{name}: {len(paths)} jars, {size:.1f} MB, {state} in {jars.bundle_dir(name)}")
    return 0


def _cmd_describe(args: argparse.Namespace) -> int:
    topology, config = load_app(args.app)
    if args.format == "text":
        text = str(topology.describe())
        if args.spark:
            from kspark.runtime.spark.plan import physical_plan

            partitions = _partitions(config) if args.partitions else None
            text += "\n" + str(physical_plan(topology, config, partitions))
        if args.output is None:
            print(text)
        else:
            Path(args.output).write_text(text + "\n")
            print(f"kspark: wrote {args.output}", file=sys.stderr)
        return 0
    return _describe_picture(args, topology, config)


def _describe_picture(args: argparse.Namespace, topology: Any, config: dict[str, Any]) -> int:
    """``describe --format svg|png|html``: the picture, always with the Spark plan's stages."""
    from kspark.processor.topology import Topology
    from kspark.runtime.spark.plan import physical_plan
    from kspark.tools.picture import render

    if not isinstance(topology, Topology):
        raise AppError(f"`topology` in {args.app} is a {type(topology).__name__}, not a kspark Topology")
    # Checked before the plan is made: a refusal should not wait for a cluster's partition counts.
    if args.output is None and args.format == "png" and sys.stdout.isatty():
        raise AppError("a PNG is not for a terminal: give --output FILE, or redirect the output")
    plan = physical_plan(topology, config, _partitions(config) if args.partitions else None)
    picture = render(topology, args.format, plan)
    if args.output is None:
        sys.stdout.buffer.write(picture)
        sys.stdout.flush()
    else:
        Path(args.output).write_bytes(picture)
        print(f"kspark: wrote {args.output} ({len(picture):,} bytes)", file=sys.stderr)
    return 0


def _partitions(config: dict[str, Any]) -> dict[str, int] | None:
    """The partition counts of the topics on the application's cluster, or None when it does not
    answer within a few seconds (the plan then shows tasks per input partition)."""
    from kspark.runtime.kafka_clients import cluster_metadata, librdkafka_client

    servers = config.get("bootstrap.servers")
    if not servers:
        return None
    settings = librdkafka_client(config, "admin")
    bootstrap = settings["bootstrap.servers"]
    try:
        metadata = cluster_metadata(settings, timeout=5)
    except Exception as e:  # an unreachable cluster: describe without task counts, and say so
        print(
            f"kspark: {bootstrap} did not answer ({e}); tasks are shown per input partition", file=sys.stderr
        )
        return None
    return {name: len(t.partitions) for name, t in metadata.topics.items()}


def _route_output(log_path: Path | None, title: str) -> None:
    """Send the command's logs to ``log_path`` (None: the terminal) and say where, once."""
    from kspark.runtime.logs import announcement, route_output

    route_output(log_path, title=title)
    line = announcement(log_path)
    if line is not None:
        print(line, flush=True)


def _cmd_run(args: argparse.Namespace) -> int:
    topology, config = load_app(args.app)
    from kspark import KafkaStreams
    from kspark.kafka_streams import StreamsUncaughtExceptionHandler
    from kspark.runtime.logs import application_log_path
    from kspark.runtime.spark.jars import CONNECTOR_BUNDLE

    app = KafkaStreams(topology, config)  # a bad setting fails here, on the terminal, in one line
    name = str(config.get("application.id", args.app))
    log_path = None if args.verbose else application_log_path(config)
    _route_output(log_path, f"kspark run {args.app}")  # before start(): the JVM inherits the routing
    _fetch_jars_first([CONNECTOR_BUNDLE])
    failures: list[BaseException] = []

    def on_failure(error: BaseException) -> StreamsUncaughtExceptionHandler:
        failures.append(error)  # reported once the command stops waiting
        return StreamsUncaughtExceptionHandler.SHUTDOWN_CLIENT

    app.set_uncaught_exception_handler(on_failure)
    try:
        app.start()
    except Exception as e:  # a start that fails, Spark's or Kafka's errors included: one paragraph
        _log.error("%s failed to start", name, exc_info=True)
        app.close()
        _report_failure(args, app, name, e, log_path, starting=True)
        return 1
    try:
        print(f"{name} running; Ctrl-C to stop", flush=True)  # see dev-kafka
        if app._query_server is not None:  # application.server: the page and the queries' endpoint
            print(f"live page: {app._query_server.url}/", flush=True)
        # A terminal gets the status line refreshed in place; a log file a plain line now and then.
        tty = sys.stdout.isatty()

        def status() -> None:
            try:
                line = status_line(app.state().value, app.metrics())
            except Exception as e:  # a status that cannot be read (Kafka away) says so, and runs on
                line = f"{app.state().value} | metrics unavailable: {e}"
            print(f"\r\x1b[K{line}" if tty else line, end="" if tty else "\n", flush=True)

        # A failed application ends the command (non-zero) instead of waiting for Ctrl-C.
        _wait_for_signal(
            lambda: app.state() is KafkaStreams.State.ERROR,
            every=(2.0 if tty else args.status_interval, status),
        )
    except KeyboardInterrupt:
        print("\nclosing", flush=True)
    finally:
        app.close()
    if app.state() is KafkaStreams.State.ERROR:
        if sys.stdout.isatty():
            print(flush=True)  # past the status line refreshed in place
        if failures:
            _report_failure(args, app, name, failures[0], log_path)
        else:  # every failure after start() reaches the handler; should one not, KafkaStreams logged it
            print(f"{name} failed; see {log_path or 'the log above'}", file=sys.stderr, flush=True)
        return 1
    return 0


def _report_failure(
    args: argparse.Namespace,
    app: KafkaStreams,
    name: str,
    error: BaseException,
    log_path: Path | None,
    *,
    starting: bool = False,
) -> None:
    """One paragraph on the terminal; the full trace too with ``--debug`` (``--verbose`` printed it
    already, and the log file always has it)."""
    from kspark.runtime.logs import failure_report

    try:
        queries = {q.name: [s.subtopology for s in q.subtopologies] for q in app.physical_plan().queries}
    except Exception as e:  # a plan that cannot be made (what start() may have failed on): no names
        _log.warning("no physical plan to name the failed sub-topology by: %s", e)
        queries = {}
    shown = args.debug and log_path is not None
    if shown:
        print("".join(traceback.format_exception(error)), file=sys.stderr, flush=True)
    paragraph = failure_report(
        error, application=name, queries=queries, log_path=log_path, trace_shown=shown, starting=starting
    )
    print(paragraph, file=sys.stderr, flush=True)


def _cmd_reset(args: argparse.Namespace) -> int:
    from kspark.runtime.reset import Position, execute, parse_datetime, parse_duration, plan_reset

    topology, config = load_app(args.app)
    if args.to_latest:
        position = Position("latest")
    elif args.to_offset is not None:
        position = Position("offset", args.to_offset)
    elif args.to_datetime is not None:
        position = Position("time", parse_datetime(args.to_datetime))
    elif args.by_duration is not None:
        position = Position(
            "time", int(time.time() * 1000 - parse_duration(args.by_duration).total_seconds() * 1000)
        )
    else:
        position = Position("earliest")
    plan = plan_reset(topology, config, position)
    print(plan.describe(), flush=True)
    if args.dry_run:
        print("dry run: nothing changed", flush=True)
        return 0
    execute(plan, config)
    print(f"reset {plan.application_id}: done", flush=True)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from kspark.dev.demo import run_demo
    from kspark.jvm.jars import DEFAULT_BUNDLES
    from kspark.runtime.logs import demo_log_path

    _route_output(None if args.verbose else demo_log_path(), "kspark demo")
    _fetch_jars_first(DEFAULT_BUNDLES)  # the broker's and Spark's Kafka connector
    return run_demo(events=args.events, timeout=args.timeout, exactly_once=args.exactly_once, out=sys.stdout)


def versions() -> str:
    """What ``kspark --version`` prints: kspark's version and the versions it pins (pyspark, the
    Kafka broker of ``dev-kafka`` and the demo, Spark's Kafka connector and its Java client) and
    the Kafka client library of its Python side."""
    from importlib import metadata

    import confluent_kafka

    from kspark import __version__
    from kspark.jvm.jars import BUNDLES

    def installed(distribution: str) -> str:
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            return "not installed"

    try:
        requires = metadata.requires("kspark") or []
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        requires = []
    pins = [m.group(1).strip() for r in requires if (m := re.match(r"pyspark\s*(==[^;\s]+)", r))]
    pyspark = installed("pyspark")
    pyspark_line = f"pyspark {pyspark}"
    if pins and pins[0] != f"=={pyspark}":
        pyspark_line += f" (kspark pins pyspark{pins[0]})"
    connector = BUNDLES["spark-kafka-connector"]
    java_client = "org.apache.kafka:kafka-clients:"
    clients = next((c[len(java_client) :] for c in connector.coordinates if c.startswith(java_client)), "?")
    librdkafka = confluent_kafka.libversion()[0]
    return "\n".join(
        (
            f"kspark {__version__}",
            pyspark_line,
            f"Apache Kafka {BUNDLES['kafka-broker'].version} (the broker of kspark dev-kafka and the demo)",
            f"Spark's Kafka connector {connector.version} (Java kafka-clients {clients})",
            f"confluent-kafka {installed('confluent-kafka')} (librdkafka {librdkafka})",
            f"Python {sys.version.split()[0]}",
        )
    )


class _VersionAction(argparse.Action):
    """``--version``: computed only when asked (it imports confluent_kafka)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, help: str | None = None):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(versions(), flush=True)
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    from kspark.jvm.jars import BUNDLES

    parser = argparse.ArgumentParser(
        prog="kspark",
        description="Kafka Streams' programming model for Python, on Spark Structured Streaming.",
    )
    parser.add_argument(
        "--version", action=_VersionAction, help="print kspark's version and the versions it pins, and exit"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    # demo and run: where the logs go (kspark/runtime/logs.py)
    output = argparse.ArgumentParser(add_help=False)
    output.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="Spark's, the Kafka clients' and kspark's logs on the terminal (by default they go to "
        "a log file, whose path is printed first)",
    )

    p = sub.add_parser("demo", parents=[output], help="run the pageviews demo on a local Kafka and Spark")
    p.add_argument("--events", type=int, default=400, help="pageview events to produce (default 400)")
    p.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for the output")
    p.add_argument("--exactly-once", action="store_true", help="processing.guarantee=exactly_once_v2")
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser(
        "run", parents=[output], help="run an application module on Spark until Ctrl-C or SIGTERM"
    )
    p.add_argument("app", metavar="APP.py")
    p.add_argument(
        "--debug",
        action="store_true",
        help="when the application fails, print the full trace too, not only the paragraph that "
        "names the record and the setting (the log file has it either way)",
    )
    p.add_argument(
        "--status-interval",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how often a status line goes to a log (not a terminal, which refreshes it every 2 s)",
    )
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser(
        "reset",
        help="start an application over: input offsets, internal topics, checkpoints (stop it first)",
    )
    p.add_argument("app", metavar="APP.py")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--to-earliest", action="store_true", help="input topics from their start (default)")
    where.add_argument("--to-latest", action="store_true", help="input topics from their end")
    where.add_argument("--to-offset", type=int, metavar="N", help="input topics from offset N")
    where.add_argument(
        "--to-datetime", metavar="TIME", help="from the first record at or after TIME (ISO 8601)"
    )
    where.add_argument("--by-duration", metavar="PnDTnHnMnS", help="from this long before now")
    p.add_argument("--dry-run", action="store_true", help="print what would change, change nothing")
    p.set_defaults(func=_cmd_reset)

    p = sub.add_parser(
        "describe", help="print an application's topology (and its Spark plan), or draw it (--format)"
    )
    p.add_argument("app", metavar="APP.py")
    p.add_argument(
        "--spark",
        action="store_true",
        help="also print the physical plan on Spark: queries, stages, and why each optimisation "
        "applied or not (a picture always shows it)",
    )
    p.add_argument(
        "--partitions",
        action="store_true",
        help="with --spark or a picture: read the topics' partition counts from the application's "
        "bootstrap.servers, for task counts and caps",
    )
    p.add_argument(
        "--format",
        choices=("text", "svg", "png", "html"),
        default="text",
        help="text (default): Kafka Streams' describe() layout; svg, png, html: a picture of the "
        "sub-topologies, processors, stores and topics, each sub-topology marked with how the Spark "
        "runner runs it (native, fused, engine); html is one self-contained page with the SVG inline",
    )
    p.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        help="write to FILE instead of standard output (a PNG goes to standard output only when "
        "it is not a terminal: redirect it or give FILE)",
    )
    p.set_defaults(func=_cmd_describe)

    broker = BUNDLES["kafka-broker"].version
    p = sub.add_parser("dev-kafka", help=f"run a local Apache Kafka {broker} broker until Ctrl-C")
    p.add_argument("--port", type=int, default=None, help="listener port (default: a free one)")
    p.add_argument("--heap", default="512m", help="broker JVM heap, -Xmx (default 512m)")
    p.add_argument(
        "--topic", action="append", metavar="NAME[:PARTITIONS]", help="create a topic (repeatable)"
    )
    p.add_argument(
        "--secure",
        action="store_true",
        help="also open SASL_PLAINTEXT, SSL, MTLS and SASL_SSL listeners (SASL PLAIN, SCRAM-SHA-256/512, "
        "OAUTHBEARER; one user 'kspark' with a random password; a test CA's PEM certificates) and print "
        "each one's Java client settings, password included: a throwaway dev broker, never a real "
        "one (needs pip install trustme)",
    )
    p.set_defaults(func=_cmd_dev_kafka, kafka_version=broker)

    p = sub.add_parser("fetch-jars", help="download the JVM jar bundles into the cache now")
    p.add_argument(
        "bundles",
        nargs="*",
        metavar="BUNDLE",
        help=f"bundles to fetch (default: kafka-broker spark-kafka-connector; "
        f"known: {', '.join(sorted(BUNDLES))})",
    )
    p.add_argument("--all", action="store_true", help="fetch every bundle, kafka-streams included")
    p.set_defaults(func=_cmd_fetch_jars)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kspark`` console script."""
    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except (DevToolsError, JvmSetupError, AppError, StreamsException) as exc:
        print(f"kspark: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
