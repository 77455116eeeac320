"""The HTTP endpoint of interactive queries served by a process of its own.

Why: in the application's process (the Spark driver) every step of an HTTP read waits for the
interpreter lock, which Spark's driver threads (py4j, the listener, the replicas) take in turns;
with W2 filling this machine's two cores that made a point read's p99 10-17 ms where the same
server over a dict in a process of its own answered at 2.5-5 ms (docs/interactive-queries.md).
So by default (``spark.kspark.queryServerProcess``) ``application.server`` is served by a child
process that keeps read replicas of its own, fed exactly as the driver's are:

- the driver binds ``application.server`` (a port that cannot be used fails ``start()``), starts
  the child with the listening socket, and closes its own copy once the child is up;
- once the plan is known, the driver sends the child the stores (what builds each task's stores,
  as the driver's replica builds them), the changelog consumer's settings and the discovery
  answers (fixed for the run, kspark/runtime/discovery.py); from then on every committed batch
  the driver's replicas are handed (``StoreReplicas.follow``) and every state change of the
  application. The child's replicas read the changelogs up to each committed batch's ends, so
  its answers have the same guarantee: one committed micro-batch, never part of one;
- the child answers the state and discovery resources itself (the same :class:`Queries` and
  :func:`create_app` as the in-process server) and the live page's store list from its own
  replicas; it passes the page, its metrics and its picture (the driver's) to the driver's own
  server, on loopback;
- the child ends when the driver closes it, or when the driver's end of its pipe closes (the
  driver died); a child that ends otherwise is started again, on the same port.

The messages to the child are pickled frames on its standard input (cloudpickle: the stores'
builders hold the topology's functions, as the specs shipped to Spark's workers do).
"""

from __future__ import annotations

import logging
import os
import pickle
import queue
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from typing import IO, TYPE_CHECKING, Any, BinaryIO

from kspark.errors import InvalidStateStoreException, StreamsException
from kspark.query import HostInfo
from kspark.runtime.discovery import Discovery, DiscoveryCalls
from kspark.runtime.query_server import (
    PointReads,
    Queries,
    QueryServer,
    create_app,
    listen,
    scrubber,
    secrets_of,
    url_host,
    uvicorn_server,
)
from kspark.runtime.scheduling import request_slice

if TYPE_CHECKING:
    from kspark.kafka_streams import KafkaStreams
    from kspark.runtime.spark.replica import CommittedBatch, StoreReplicas

__all__ = ["ServingProcess", "SWITCH_INTERVAL_S", "RESTARTS"]

_log = logging.getLogger(__name__)

# The child's threads (the event loop, the replica applying a batch, reads that wait) switch the
# interpreter lock every 0.5 ms instead of 5: a point read waits at most that long for the loop.
SWITCH_INTERVAL_S = 0.0005
# The event loop's scheduler slice (kspark/runtime/scheduling.py): a waking loop gets a core sooner.
EVENT_LOOP_SLICE_S = 0.0005
RESTARTS = 5  # a child that ends unasked is started again, this many times per run
PLAN_WAIT_S = 15.0  # how long a read in the child waits for the application's plan to arrive
_LIVE_PATHS = ("/", "/live/topology.svg", "/live/metrics")  # answered by the driver's server
_READY = b"ready\n"


class ServingProcess:
    """``application.server`` served by a child process (module docstring); the driver's own
    :class:`QueryServer` answers its live page on loopback.

    What the child is told goes through a queue to a thread of its own, which writes it to the
    child's pipe: the threads that report a state change or a committed batch (Spark's listener)
    never wait for the child. The last frame of each kind is kept under ``_lock``, with the child
    it goes to: a child started again gets them first, and a frame recorded after that goes to
    the new child (the sender looks the child up after taking a frame)."""

    def __init__(self, app: KafkaStreams, host: HostInfo, *, startup_timeout_s: float = 60.0) -> None:
        self.host = host
        self._startup_timeout_s = startup_timeout_s
        self._lock = threading.Lock()  # the frames a new child starts with, and which child is current
        self._closing = False
        self._restarts = 0
        self._state: bytes | None = None
        self._plan: bytes | None = None
        self._latest: dict[str, bytes] = {}  # per query, the last committed batch sent
        self._outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        sock = listen(host)
        self.port = int(sock.getsockname()[1])
        self._inner = QueryServer(app, HostInfo("127.0.0.1", 0))
        self._setup = _frame(
            (
                "setup",
                {
                    "path": list(sys.path),
                    "secrets": secrets_of(app._config.originals()),
                    "inner": self._inner.url,
                    "host": host,
                },
            )
        )
        try:
            self._start_child(sock)
        except BaseException:
            self._inner.close()
            raise
        finally:
            sock.close()  # the child's copy listens; a dead child's port refuses at once
        self._sender = threading.Thread(target=self._send_all, name="kspark-serving-send", daemon=True)
        self._sender.start()
        self._watcher = threading.Thread(target=self._watch, name="kspark-serving-watch", daemon=True)
        self._watcher.start()
        _log.info("interactive queries over HTTP on %s (process %d)", self.url, self._child.pid)

    @property
    def url(self) -> str:
        """``http://host:port`` of the endpoint (the bound port, for a port 0)."""
        return f"http://{url_host(self.host.host)}:{self.port}"

    # ------------------------------------------------------------ what the child is told
    def on_state(self, state: Any) -> None:
        """The application's state changed (``KafkaStreams._set_state``)."""
        frame = _frame(("state", state.value))
        with self._lock:
            self._state = frame
            self._outbox.put(frame)

    def attach(self, app: KafkaStreams, replicas: StoreReplicas) -> None:
        """The plan is known and ``replicas`` are the driver's: the child builds its own and
        follows the batches they are handed."""
        from pyspark import cloudpickle

        runner = app._runner
        assert runner is not None
        subtopologies = {h.subtopology for h in replicas.homes.values()}
        plan = cloudpickle.dumps(  # type: ignore[no-untyped-call]
            {
                "homes": replicas.homes,
                "refused": replicas.refused,
                "specs": {s: runner.replica_spec(s) for s in subtopologies},
                "consumer": replicas.consumer_config,
                "discovery": app._discovery(),
            }
        )
        frame = _frame(("plan", plan))
        with self._lock:
            self._plan = frame
            self._outbox.put(frame)
        replicas.follow(self._committed)

    def _committed(self, batch: CommittedBatch) -> None:
        frame = _frame(("committed", batch))
        with self._lock:
            self._latest[batch.query] = frame
            self._outbox.put(frame)

    def _send_all(self) -> None:
        while (frame := self._outbox.get()) is not None:
            with self._lock:
                stdin = self._child.stdin
            try:
                assert stdin is not None
                stdin.write(frame)
                stdin.flush()
            except (BrokenPipeError, ValueError):  # ended or closed: a new child gets the latest
                pass

    # ------------------------------------------------------------ the child's life
    def _start_child(self, sock: socket.socket) -> None:
        """Make a child listening on ``sock``, told what the last one was, the current one; return
        once it is up."""
        with self._lock:
            child = self._spawn(sock)
        ready: list[bytes] = []
        stdout = child.stdout
        assert stdout is not None
        reader = threading.Thread(target=lambda: ready.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(self._startup_timeout_s)
        stdout.close()  # the child writes nothing more to it
        if ready != [_READY]:
            child.kill()
            child.wait()
            raise StreamsException(
                f"the interactive-query process for {self.host} did not start (exit code {child.returncode}; "
                "its error is on standard error)"
            )

    def _spawn(self, sock: socket.socket) -> subprocess.Popen[bytes]:
        """Under ``_lock``: start a child, write it the frames it starts with, make it current."""
        import kspark

        root = os.path.dirname(os.path.dirname(os.path.abspath(kspark.__file__)))
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])]),
        }
        child = subprocess.Popen(
            [sys.executable, "-m", "kspark.runtime.spark.serving", str(sock.fileno())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            pass_fds=(sock.fileno(),),
            env=env,
        )
        assert child.stdin is not None
        frames = [self._setup, *filter(None, [self._state, self._plan]), *self._latest.values(), _SYNC]
        try:
            child.stdin.write(b"".join(frames))
            child.stdin.flush()
        except BrokenPipeError:
            pass  # it ended at once: it does not say ready, which says so
        self._child = child  # frames recorded from now on go to it
        return child

    def _watch(self) -> None:
        """Start a child that ended unasked again, on the same port."""
        while True:
            code = self._child.wait()
            with self._lock:
                if self._closing:
                    return
                _close_quietly(self._child.stdin)
            if self._restarts >= RESTARTS:
                _log.error(
                    "the interactive-query process ended with exit code %d; not started again after "
                    "%d restarts: %s answers nothing until the application restarts",
                    code,
                    RESTARTS,
                    self.url,
                )
                return
            self._restarts += 1
            _log.error("the interactive-query process ended with exit code %d; starting another", code)
            try:
                sock = listen(HostInfo(self.host.host, self.port))
                try:
                    self._start_child(sock)
                finally:
                    sock.close()
            except StreamsException as e:
                _log.error("the interactive-query process could not be started again: %s", e)
                return

    def close(self) -> None:
        self._outbox.put(None)
        self._sender.join(timeout=15)
        with self._lock:
            self._closing = True
            _close_quietly(self._child.stdin)  # the child's end of input: it closes its replicas, exits
        try:
            self._child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            _log.warning("the interactive-query process did not end in 15 s; killing it")
            self._child.kill()
            self._child.wait()
        self._inner.close()


def _close_quietly(pipe: IO[bytes] | None) -> None:
    """Close the pipe to a child; one that ended may leave a frame unwritten, which is moot."""
    try:
        if pipe is not None:
            pipe.close()
    except BrokenPipeError:
        pass


def _frame(message: tuple[str, Any]) -> bytes:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return struct.pack(">I", len(data)) + data


_SYNC = _frame(("sync", None))
"""Ends the frames a child is started with (:meth:`_Served.catch_up`)."""


def _read_frame(stream: BinaryIO) -> tuple[str, Any] | None:
    head = stream.read(4)
    if len(head) < 4:
        return None  # the driver closed its end (close(), or it died)
    (size,) = struct.unpack(">I", head)
    data = stream.read(size)
    if len(data) < size:
        return None
    message: tuple[str, Any] = pickle.loads(data)
    return message


# ---------------------------------------------------------------- the child
class _Served(DiscoveryCalls):
    """What :class:`Queries` asks of ``KafkaStreams``, in the child: the application's state as
    the driver reports it, replicas of the child's own, discovery from the driver's answers."""

    def __init__(self) -> None:
        from kspark.kafka_streams import KafkaStreams

        self.state = KafkaStreams.State.CREATED
        self.replicas: StoreReplicas | None = None
        self.discovery: Discovery | None = None
        self.failed: Exception | None = None  # the stores could not be loaded here
        self.planned = threading.Event()  # the plan was applied here (or failed to load)
        self._batches: dict[str, int] = {}  # per query, the last batch id handed to the replicas

    def _validate_is_running_or_rebalancing(self, what: str = "") -> None:
        from kspark.kafka_streams import validate_running

        validate_running(self.state, what)

    def _discovery(self) -> Discovery | None:
        return self.discovery

    def _replicas(self, name: str) -> StoreReplicas:
        self._validate_is_running_or_rebalancing(f"Cannot get state store {name}: ")
        if threading.current_thread() is not threading.main_thread():
            # start() returns once the driver has its replicas; the plan reaches this process a
            # moment later. A read sent in between waits for it, as it would have found the
            # driver's; never on the event loop (the main thread), which answers at once.
            self.planned.wait(PLAN_WAIT_S)
        if self.failed is not None:
            raise InvalidStateStoreException(
                f"Cannot get state store {name}: the interactive-query process could not load the "
                f"application's stores: {type(self.failed).__name__}: {self.failed}"
            )
        if self.replicas is None:
            raise InvalidStateStoreException(
                f"Cannot get state store {name}: the application is still starting"
            )
        return self.replicas

    def catch_up(self, stream: BinaryIO) -> None:
        """Apply the frames the driver sent before the child was started (up to its sync frame),
        so that the first answer knows what the driver knew then."""
        while (message := _read_frame(stream)) is not None and message[0] != "sync":
            self.apply(*message)

    def follow(self, stream: BinaryIO, server: Any) -> None:
        """Apply the driver's frames until its end closes; then close and stop the server."""
        try:
            while (message := _read_frame(stream)) is not None:
                self.apply(*message)
        except BaseException:
            _log.exception("the interactive-query process failed to follow the application")
            raise
        finally:
            if self.replicas is not None:
                self.replicas.close()  # reads still waiting fail at once (409)
            server.should_exit = True

    def apply(self, kind: str, body: Any) -> None:
        from kspark.kafka_streams import KafkaStreams
        from kspark.runtime.spark.replica import StoreReplicas

        if kind == "state":
            self.state = KafkaStreams.State(body)
        elif kind == "plan":
            try:
                plan: Mapping[str, Any] = pickle.loads(body)
            except Exception as e:  # the topology's code cannot be loaded here: say so on every read
                _log.exception("the interactive-query process cannot load the application's stores")
                self.failed = e
                self.planned.set()
                return
            self.discovery = plan["discovery"]
            self.replicas = StoreReplicas(
                plan["homes"], plan["refused"], _task_builder(plan["specs"]), plan["consumer"], None
            )
            self.planned.set()
        # A child started again may get a batch it was started with once more, or an older one
        # queued for the child before it: a replica never goes back.
        elif (
            kind == "committed"
            and self.replicas is not None
            and body.batch_id > self._batches.get(body.query, -1)
        ):
            self._batches[body.query] = body.batch_id
            self.replicas.committed(body)


def _task_builder(specs: Mapping[int, Any]) -> Callable[[int, int], Any]:
    """``build_task(subtopology, partition)`` of the replicas, from each sub-topology's spec."""
    return lambda subtopology, partition: specs[subtopology].build_task(partition)


def _proxy(inner: str, path: str) -> Any:
    """A route answering ``path`` as the driver's server does (a loopback GET, in a thread)."""
    import urllib.error
    import urllib.request

    from fastapi.responses import Response
    from starlette.concurrency import run_in_threadpool

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never an HTTP proxy

    def fetch() -> tuple[int, bytes, str | None]:
        try:
            with opener.open(inner + path, timeout=30) as r:
                return int(r.status), r.read(), r.headers.get("content-type")
        except urllib.error.HTTPError as e:  # the driver's own error answer, passed on
            return e.code, e.read(), e.headers.get("content-type")

    async def forward() -> Response:
        status, body, kind = await run_in_threadpool(fetch)
        return Response(body, status, media_type=kind)

    return forward


def main() -> None:
    """The child: ``python -m kspark.runtime.spark.serving <fd of the listening socket>``."""
    from kspark.runtime.live_page import store_kinds

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    stdin = sys.stdin.buffer
    first = _read_frame(stdin)
    if first is None or first[0] != "setup":
        raise SystemExit("kspark.runtime.spark.serving: no setup frame on standard input")
    setup = first[1]
    sys.path[:] = [*setup["path"], *(p for p in sys.path if p not in setup["path"])]
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    sock = socket.socket(fileno=int(sys.argv[1]))
    served = _Served()
    queries = Queries(served)  # type: ignore[arg-type]
    scrub = scrubber(setup["secrets"])
    app = create_app(queries, setup["secrets"])
    for path in _LIVE_PATHS:
        app.add_api_route(path, _proxy(setup["inner"], path), include_in_schema=False)

    def live_stores() -> Any:
        from fastapi.responses import Response

        from kspark.runtime.query_server import outcome

        status, body = outcome(
            lambda: store_kinds(served.replicas if served.state.is_running_or_rebalancing() else None), scrub
        )
        return Response(body, status, media_type="application/json")

    app.add_api_route("/live/stores", live_stores, include_in_schema=False)
    server = uvicorn_server(PointReads(app, queries, scrub))
    served.catch_up(stdin)
    threading.Thread(
        target=served.follow, args=(stdin, server), name="kspark-serving-follow", daemon=True
    ).start()
    sys.stdout.buffer.write(_READY)
    sys.stdout.buffer.flush()
    os.dup2(2, 1)  # nobody reads the pipe after this line: anything printed goes where errors go
    # This thread runs the event loop; the threads it starts from now on (reads FastAPI hands to
    # its pool) inherit the slice, the replica's thread started above keeps the default.
    refused = request_slice(EVENT_LOOP_SLICE_S)
    if refused is not None:
        _log.info("the serving process's event loop keeps the default time slice: %s", refused)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
