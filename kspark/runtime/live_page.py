"""The live page of a running application: what it is doing, in a browser, beside its queries.

When ``application.server`` is set, the interactive-query server
(kspark/runtime/query_server.py) also serves, on the same host and port:

==========================  =========================================================================
``GET /``                   the page (kspark/runtime/live_page.html: plain HTML, CSS and JavaScript,
                            nothing fetched from elsewhere)
``GET /live/topology.svg``  the topology as ``kspark describe --format svg`` draws it, each
                            sub-topology marked with how the Spark runner runs it
``GET /live/metrics``       the last minutes of each Spark query (one or more sub-topologies):
                            input and output records per second, lag, batch duration, state size;
                            the application's state; its last warnings and errors
``GET /live/stores``        the queryable stores, each with its kind (key-value, window, session),
                            for the page's store browser (which reads through ``/state/...``)
==========================  =========================================================================

What the charts show, per query, one sample every :data:`SAMPLE_INTERVAL_S` for the last
:data:`HISTORY_S`: records read per second and written per second (from the committed
micro-batches, as ``KafkaStreams.metrics()`` counts them), lag (``records-lag-max``: the input
records not yet in a committed batch), the last batch's duration (Spark's ``batchDuration``)
and the state held by the query's stateful operators (Spark's ``stateOperators``: bytes in
memory and rows). A sample that could not be taken (Kafka unreachable for the lag, say) is
logged and shows as a gap, never as zero.

The last errors are the last :data:`ERRORS_KEPT` warnings and errors logged by kspark in this
process (a failed query, a replaced one, a replica that could not read its changelog), with the
configuration's secrets hidden as everywhere else on this server.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from importlib import resources
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response

from kspark.errors import InvalidStateStoreException
from kspark.state.queryable import QueryableStoreTypes

if TYPE_CHECKING:
    from kspark.kafka_streams import KafkaStreams
    from kspark.runtime.spark.replica import StoreReplicas

__all__ = ["LivePage", "SAMPLE_INTERVAL_S", "HISTORY_S", "ERRORS_KEPT", "store_kinds"]

_log = logging.getLogger(__name__)

SAMPLE_INTERVAL_S = 2.0
HISTORY_S = 600.0  # ten minutes of samples
ERRORS_KEPT = 20


class _RecentErrors(logging.Handler):
    """The last warnings and errors of kspark's loggers, secrets hidden."""

    def __init__(self, scrub: Callable[[str], str]) -> None:
        super().__init__(logging.WARNING)
        self.scrub = scrub
        self.kept: collections.deque[dict[str, Any]] = collections.deque(maxlen=ERRORS_KEPT)
        self.lock_ = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = self.scrub(record.getMessage())
        except Exception:  # a record whose arguments do not format: logging's own report
            self.handleError(record)
            return
        with self.lock_:
            self.kept.append(
                {
                    "time": int(record.created * 1000),
                    "level": record.levelname,
                    "logger": record.name,
                    "message": message,
                }
            )

    def last(self) -> list[dict[str, Any]]:
        with self.lock_:
            return list(self.kept)


class LivePage:
    """The page's data (samples of every query, recent errors) and its routes on the query server.

    A daemon thread samples the application every :data:`SAMPLE_INTERVAL_S` until :meth:`close`."""

    def __init__(self, app: KafkaStreams, scrub: Callable[[str], str]) -> None:
        self._app = app
        self._scrub = scrub
        self._samples: collections.deque[dict[str, Any]] = collections.deque(
            maxlen=int(HISTORY_S / SAMPLE_INTERVAL_S)
        )
        self._lock = threading.Lock()
        self._previous: dict[str, tuple[float, float, float]] = {}  # query -> (when, read, written)
        self._svg: bytes | None = None
        self._errors = _RecentErrors(scrub)
        logging.getLogger("kspark").addHandler(self._errors)
        self._stop = threading.Event()
        self._failed_once = False
        self._thread = threading.Thread(target=self._run, name="kspark-live-page", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        logging.getLogger("kspark").removeHandler(self._errors)

    # ------------------------------------------------------------ sampling
    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            try:
                self.sample()
            except Exception as e:
                # Logged once per run of failures (not every two seconds); the chart shows a gap.
                if not self._failed_once:
                    _log.warning("the live page could not sample the application: %s", self._scrub(str(e)))
                self._failed_once = True
            else:
                self._failed_once = False

    def sample(self) -> None:
        """Take one sample of every running query (the thread does, every interval)."""
        runner = self._app._runner
        if runner is None:
            return
        now = time.time()
        metrics = self._app.metrics()
        read: dict[str, float] = {}
        written: dict[str, float] = {}
        lag: dict[str, float] = {}
        for metric, value in metrics.items():
            if metric.name == "process-total":
                read[metric.tags["thread-id"]] = value
            elif metric.name == "record-send-total":
                written[metric.tags["client-id"]] = value
            elif metric.name == "records-lag-max":
                lag[metric.tags["client-id"]] = value
        per_query: dict[str, dict[str, float | None]] = {}
        for query in list(runner.queries):
            name = str(query.name)
            progress = query.lastProgress
            state_bytes = state_rows = None
            batch_ms = None
            if progress is not None:
                batch_ms = float(progress.batchDuration)
                operators = list(progress.stateOperators or [])
                if operators:
                    state_bytes = float(sum(op.memoryUsedBytes for op in operators))
                    state_rows = float(sum(op.numRowsTotal for op in operators))
            total_in, total_out = read.get(name, 0.0), written.get(name, 0.0)
            before = self._previous.get(name)
            self._previous[name] = (now, total_in, total_out)
            rate_in = rate_out = None
            if before is not None and now > before[0]:
                rate_in = (total_in - before[1]) / (now - before[0])
                rate_out = (total_out - before[2]) / (now - before[0])
            per_query[name] = {
                "in": rate_in,
                "out": rate_out,
                "lag": lag.get(name),
                "batch_ms": batch_ms,
                "state_bytes": state_bytes,
                "state_rows": state_rows,
            }
        with self._lock:
            self._samples.append({"t": int(now * 1000), "queries": per_query})

    # ------------------------------------------------------------ what the routes answer
    def metrics(self) -> dict[str, Any]:
        runner = self._app._runner
        queries = []
        if runner is not None:
            for q in runner.plan().queries:
                queries.append(
                    {
                        "name": q.name,
                        "stage": q.stage.value,
                        "subtopologies": [s.subtopology for s in q.subtopologies],
                    }
                )
        with self._lock:
            samples = list(self._samples)
        return {
            "application_id": self._app._config.application_id(),
            "state": self._app.state().value,
            "interval_ms": int(SAMPLE_INTERVAL_S * 1000),
            "queries": queries,
            "samples": samples,
            "errors": self._errors.last(),
        }

    def topology_svg(self) -> bytes:
        if self._svg is None:
            from kspark.tools.picture import topology_svg

            self._svg = topology_svg(self._app._topology, self._app.physical_plan()).encode()
        return self._svg

    def stores(self) -> list[dict[str, Any]]:
        runner = self._app._runner
        return store_kinds(runner.replicas if runner is not None else None)

    # ------------------------------------------------------------ routes
    def install(self, app: FastAPI, answer: Callable[[Callable[[], Any]], Response]) -> None:
        """Add the page's routes to ``app``; ``answer`` turns a body or an error into a response
        as the query server's other resources do."""
        page = resources.files("kspark.runtime").joinpath("live_page.html").read_text(encoding="utf-8")

        @app.get("/", response_class=HTMLResponse, include_in_schema=False)
        def index() -> HTMLResponse:
            return HTMLResponse(page)

        @app.get("/live/topology.svg", include_in_schema=False)
        def topology() -> Response:
            return Response(self.topology_svg(), media_type="image/svg+xml")

        @app.get("/live/metrics", include_in_schema=False)
        def live_metrics() -> Response:
            return answer(self.metrics)

        @app.get("/live/stores", include_in_schema=False)
        def live_stores() -> Response:
            return answer(self.stores)


def store_kinds(replicas: StoreReplicas | None) -> list[dict[str, Any]]:
    """The stores the page can browse: name and kind; those that cannot be read, with why
    (``/live/stores``; None: the application is still starting)."""
    if replicas is None:
        raise InvalidStateStoreException("the application is still starting: no store can be read yet")
    out: list[dict[str, Any]] = []
    replicas.start()
    for name in sorted(replicas.homes):
        store = replicas.stores(name)[0]
        if QueryableStoreTypes.key_value_store().accepts(store):
            kind = "keyvalue"
        elif QueryableStoreTypes.session_store().accepts(store):
            kind = "session"
        else:
            kind = "window"
        out.append({"name": name, "kind": kind})
    out.extend({"name": n, "kind": None, "refused": why} for n, why in sorted(replicas.refused.items()))
    return out
