"""The built-in HTTP endpoint of interactive queries: a running application's stores over REST.

When ``application.server`` (``host:port``) is set, ``KafkaStreams.start()``
and ``process_available()`` start this server, bound to that host and port,
and ``close()`` stops it. It answers what the Python API answers
(``KafkaStreams.store``, kspark/runtime/spark/replica.py), as JSON:

=====================================================  ==========================================
``GET /instances``                                     every instance: host, port, stores, input
                                                       topic partitions (``StreamsMetadata``)
``GET /instances/{store}``                             the instances that hold ``store``
``GET /instance/{store}/{key}``                        the instance and partition of a key
                                                       (``KeyQueryMetadata``)
``GET /state/keyvalue/{store}/{key}``                  ``{"store", "key", "value", "position"}``;
                                                       404 when the key is absent
``GET /state/keyvalue/{store}?from=&to=&limit=&after=``  a range (``from``/``to`` inclusive, either
                                                       may be left out) or everything, one page
                                                       of ``limit`` entries at a time; ``next``
                                                       is the ``after`` of the next page
``GET /state/windowed/{store}/{key}?from=&to=``        a key's windows: a window store's
                                                       ``fetch(key, from, to)`` (window starts in
                                                       [from, to]), a session store's
                                                       ``fetch(key)`` (with ``from``/``to``:
                                                       ``find_sessions(key, from, to)``)
``GET /openapi.json``                                  the OpenAPI description of all of these
``GET /``, ``GET /live/...``                           the live page and its data
                                                       (kspark/runtime/live_page.py)
=====================================================  ==========================================

Keys in the URL are text, converted with the store's key serde: String as
is, Long/Integer/Short as integers, Double/Float as numbers, Boolean as
``true``/``false``, UUID as its text, JSON as a JSON document (written as the
application writes it: the key's bytes must match); other key serdes are
refused with 400. Answers give keys and values as JSON: a windowed key as
``{"key", "start", "end"}``, a timestamped store's value as
``{"value", "timestamp"}`` when ``?timestamped=true`` asks for it (plain
values otherwise, as ``QueryableStoreTypes.key_value_store()`` gives them),
anything JSON cannot hold as its ``str()``.

Guarantees, those of the replica: every answer shows the state as of one
committed micro-batch, never part of one, and carries the ``position`` it
reflects (per input topic and partition, the offset of the last record
included). ``?position={"topic": {"0": 41}}`` asks for at least that
position (read-your-writes): the read waits for it up to ``timeout_ms``
(default 10 s; every wait has one), then answers 409 naming the position the
store has. The pages of a range are separate reads: each carries its own
position, and entries changed between two pages show their state at the
page that returns them (keys are never returned twice nor skipped, as the
cursor is a key: per task, in key-byte order).

Errors are ``{"error": message}``: 404 for an unknown store or an absent key,
409 for a store that cannot answer now (the application is not running,
its replica is still catching up, a position bound was not reached in time),
400 for bad input (a store of another type than the resource reads, a key or
position that does not parse, a store that exists but cannot be queried on
Spark, with the reason). Secrets of the configuration never appear in a
response; an unexpected failure answers 500 with the exception's type only
(its details go to the log).

FastAPI on uvicorn (uvloop and httptools), with its own event loop: in the
serving process of the application by default (kspark/runtime/spark/serving.py,
which runs :func:`create_app` over replicas of its own), in a thread of the
application process (:class:`QueryServer`) with
``spark.kspark.queryServerProcess=false``. A plain point read (no query string)
that needs no wait is answered before FastAPI (:class:`PointReads`), on the
event loop. The other endpoints are plain functions: FastAPI runs them in a
thread pool, because a store read takes the replica's lock and may wait for a
position, and the event loop must keep serving meanwhile. Answers are encoded
with orjson and returned as they are (no response-model validation on the hot
path); the models below only describe them in the OpenAPI document.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from kspark.errors import (
    InvalidStateStoreException,
    SerializationException,
    StreamsException,
    UnknownStateStoreException,
)
from kspark.query import (
    HostInfo,
    KeyQueryMetadata,
    StoreQueryParameters,
    StreamsMetadata,
)
from kspark.redaction import is_secret
from kspark.runtime.live_page import LivePage
from kspark.runtime.query_codec import (
    DEFAULT_PAGE_SIZE,
    DEFAULT_TIMEOUT_MS,
    MAX_PAGE_SIZE,
    MAX_TIMEOUT_MS,
    QueryError,
    decode_cursor,
    encode_cursor,
    key_from_text,
    parse_position,
    to_json,
)
from kspark.serde.windowed import LONG_MAX
from kspark.state.queryable import QueryableStoreType, QueryableStoreTypes

if TYPE_CHECKING:
    from kspark.kafka_streams import KafkaStreams
    from kspark.runtime.spark.replica import StoreReplicas

__all__ = [
    "PointReads",
    "QueryServer",
    "Queries",
    "create_app",
    "listen",
    "outcome",
    "scrubber",
    "secrets_of",
    "status_of",
    "url_host",
    "uvicorn_server",
]

_log = logging.getLogger(__name__)


class Queries:
    """What each resource answers, as JSON-able bodies; errors as exceptions (``QueryError`` or
    kspark's store exceptions, mapped to statuses by :func:`status_of`)."""

    def __init__(self, app: KafkaStreams) -> None:
        self._app = app

    # ------------------------------------------------------------ discovery
    def instances(self) -> list[dict[str, Any]]:
        return [_metadata_json(m) for m in self._app.metadata_for_all_streams_clients()]

    def instances_for(self, store: str) -> list[dict[str, Any]]:
        found = self._app.streams_metadata_for_store(store)
        if not found:
            self._store(store)  # why: not running (409), unknown (404), not queryable (400)
            raise QueryError(404, f"no instance holds store {store}")
        return [_metadata_json(m) for m in found]

    def instance_for_key(self, store: str, key_text: str) -> dict[str, Any]:
        _, s = self._store(store)
        key = key_from_text(key_text, s.key_serde, store)
        meta = self._app.query_metadata_for_key(store, key, s.key_serde)
        if meta is None:  # _store() found the store: it is in no sub-topology of the plan
            raise QueryError(404, f"store {store} has no source topics to place key {key_text!r} in")
        if meta == KeyQueryMetadata.NOT_AVAILABLE:
            raise QueryError(409, f"the instance of key {key_text!r} of store {store} is not known yet")
        return {
            "store": store,
            "key": key,
            "host": meta.active_host.host,
            "port": meta.active_host.port,
            "partition": meta.partition,
            "standby_hosts": [{"host": h.host, "port": h.port} for h in sorted(meta.standby_hosts, key=str)],
        }

    # ------------------------------------------------------------ state
    def get(
        self, store: str, key_text: str, *, timestamped: bool, position: str | None, timeout_ms: int
    ) -> dict[str, Any]:
        replicas, s = self._store(store)
        kind = self._key_value_type(store, s, timestamped)
        key = key_from_text(key_text, s.key_serde, store)
        params = self._params(store, kind, position, timeout_ms)
        value, at = replicas.read(store, lambda view: view.get(key), params)
        if value is None:
            raise QueryError(404, f"key {key_text!r} is not in store {store}", key=key, position=at.to_map())
        return {"store": store, "key": key, "value": value, "position": at.to_map()}

    def get_now(self, store: str, key_text: str, *, timestamped: bool) -> dict[str, Any] | None:
        """:meth:`get` without a position bound, if it can answer without waiting; else None."""
        replicas, s = self._store(store)
        kind = self._key_value_type(store, s, timestamped)
        key = key_from_text(key_text, s.key_serde, store)
        params = StoreQueryParameters.from_name_and_type(store, kind)
        read = replicas.read_now(store, lambda view: view.get(key), params)
        if read is None:
            return None
        value, at = read
        if value is None:
            raise QueryError(404, f"key {key_text!r} is not in store {store}", key=key, position=at.to_map())
        return {"store": store, "key": key, "value": value, "position": at.to_map()}

    def range(
        self,
        store: str,
        *,
        from_text: str | None,
        to_text: str | None,
        limit: int,
        after: str | None,
        timestamped: bool,
        position: str | None,
        timeout_ms: int,
    ) -> dict[str, Any]:
        replicas, s = self._store(store)
        kind = self._key_value_type(store, s, timestamped)
        low = None if from_text is None else key_from_text(from_text, s.key_serde, store)
        high = None if to_text is None else key_from_text(to_text, s.key_serde, store)
        cursor = None if after is None or after == "" else decode_cursor(after)
        params = self._params(store, kind, position, timeout_ms)

        def page(_view: Any) -> tuple[list[tuple[int, Any, Any]], str | None]:
            # Runs under the replica's lock (StoreReplicas.read): each task's store is iterated
            # lazily, in key-byte order, and only as far as the page needs; the locked view's
            # iterators would read a whole range first.
            stores: list[Any] = list(replicas.stores(store))  # metered stores: raw_key, key_from
            first = 0 if cursor is None else cursor[0]
            if first >= len(stores):
                raise QueryError(400, f"after={after!r} names task {first}; store {store} has {len(stores)}")
            out: list[tuple[int, Any, Any]] = []
            for partition in range(first, len(stores)):
                task_store = stores[partition]
                start, skip = low, None
                if cursor is not None and partition == first:
                    skip = cursor[1]
                    if low is None or skip > task_store.raw_key(low):
                        start = task_store.key_from(skip)
                view = kind.create([task_store])
                it = view.all() if start is None and high is None else view.range(start, high)
                try:
                    for kv in it:
                        if skip is not None and task_store.raw_key(kv.key) == skip:
                            continue  # the previous page's last key (only ever the first entry)
                        skip = None
                        out.append((partition, kv.key, kv.value))
                        if len(out) > limit:
                            break
                finally:
                    it.close()
                if len(out) > limit:
                    break
            if len(out) <= limit:
                return out, None
            last_partition, last_key, _ = out[limit - 1]
            return out[:limit], encode_cursor(last_partition, stores[last_partition].raw_key(last_key))

        (entries, next_cursor), at = replicas.read(store, page, params)
        return {
            "store": store,
            "entries": [{"key": k, "value": v} for _, k, v in entries],
            "next": next_cursor,
            "position": at.to_map(),
        }

    def windowed(
        self,
        store: str,
        key_text: str,
        *,
        time_from: int | None,
        time_to: int | None,
        timestamped: bool,
        position: str | None,
        timeout_ms: int,
    ) -> dict[str, Any]:
        replicas, s = self._store(store)
        key = key_from_text(key_text, s.key_serde, store)
        lo = 0 if time_from is None else time_from
        hi = LONG_MAX if time_to is None else time_to
        fetch: Callable[[Any], list[Any]]
        if QueryableStoreTypes.window_store().accepts(s):
            kind = (
                QueryableStoreTypes.timestamped_window_store()
                if timestamped
                else QueryableStoreTypes.window_store()
            )
            if not kind.accepts(s):
                raise QueryError(400, f"store {store} is not a timestamped window store (timestamped=true)")

            # fetch_range of one key: fetch(key, from, to)'s windows, with their ends
            def fetch(view: Any) -> list[Any]:
                return list(view.fetch_range(key, key, lo, hi))

        elif QueryableStoreTypes.session_store().accepts(s):
            if timestamped:
                raise QueryError(400, f"store {store} is a session store, which has no timestamped values")
            kind = QueryableStoreTypes.session_store()
            if time_from is None and time_to is None:

                def fetch(view: Any) -> list[Any]:
                    return list(view.fetch(key))

            else:

                def fetch(view: Any) -> list[Any]:
                    return list(view.find_sessions(key, lo, hi))

        else:
            raise QueryError(
                400, f"store {store} is a key-value store: read it at /state/keyvalue/{store}/{{key}}"
            )
        params = self._params(store, kind, position, timeout_ms)
        entries, at = replicas.read(store, fetch, params)
        return {
            "store": store,
            "key": key,
            "entries": [{"key": kv.key, "value": kv.value} for kv in entries],
            "position": at.to_map(),
        }

    # ------------------------------------------------------------ helpers
    def _store(self, name: str) -> tuple[StoreReplicas, Any]:
        """The replicas and the store (task 0's: serdes and type), started if need be; raises
        what a read of ``name`` would, before any wait."""
        replicas = self._app._replicas(name)  # not running: InvalidStateStoreException (409)
        replicas.check_open(name)
        if name not in replicas.homes:
            reason = replicas.refused.get(name)
            if reason is not None:
                raise QueryError(400, f"store {name} cannot be queried on Spark: {reason}")
            raise UnknownStateStoreException(
                f"no store {name} in this application (queryable stores: {sorted(replicas.homes)})"
            )
        replicas.start()  # builds the stores (idempotent); reads wait for the data below
        try:
            stores = replicas.stores(name)
        except KeyError as e:  # closed between the check and the start: nothing was built
            raise InvalidStateStoreException(f"store {name} is not open: the application is closing") from e
        return replicas, stores[0]

    @staticmethod
    def _key_value_type(store: str, s: Any, timestamped: bool) -> QueryableStoreType:
        if not QueryableStoreTypes.key_value_store().accepts(s):
            kind = "session" if QueryableStoreTypes.session_store().accepts(s) else "window"
            raise QueryError(
                400, f"store {store} is a {kind} store: read its keys at /state/windowed/{store}/{{key}}"
            )
        if not timestamped:
            return QueryableStoreTypes.key_value_store()
        kind_ts = QueryableStoreTypes.timestamped_key_value_store()
        if not kind_ts.accepts(s):
            raise QueryError(400, f"store {store} is not a timestamped key-value store (timestamped=true)")
        return kind_ts

    @staticmethod
    def _params(
        store: str, kind: QueryableStoreType, position: str | None, timeout_ms: int
    ) -> StoreQueryParameters:
        return StoreQueryParameters.from_name_and_type(store, kind).with_position_bound(
            parse_position(position), timedelta(milliseconds=timeout_ms)
        )


def _metadata_json(meta: StreamsMetadata) -> dict[str, Any]:
    def partitions(tps: Iterable[Any]) -> list[dict[str, Any]]:
        return [{"topic": tp.topic, "partition": tp.partition} for tp in sorted(tps)]

    return {
        "host": meta.host(),
        "port": meta.port(),
        "stores": sorted(meta.state_store_names),
        "topic_partitions": partitions(meta.topic_partitions),
        "standby_stores": sorted(meta.standby_state_store_names),
        "standby_topic_partitions": partitions(meta.standby_topic_partitions),
    }


def status_of(e: BaseException) -> int:
    """The HTTP status of a query's failure (see the module docstring)."""
    if isinstance(e, QueryError):
        return e.status
    if isinstance(e, UnknownStateStoreException):
        return 404
    if isinstance(e, InvalidStateStoreException):
        return 400 if "does not accept" in str(e) else 409
    if isinstance(e, SerializationException):
        return 400
    return 500


def secrets_of(settings: Mapping[str, Any]) -> list[str]:
    """The secret values of a configuration, longest first, the quoted options of JAAS
    configurations (their passwords) and the passwords of ``user:password`` settings, so that no
    answer can carry them."""
    found: set[str] = set()
    for key, value in settings.items():
        if value in (None, "") or not is_secret(str(key)):
            continue
        text = str(value)
        found.add(text)
        found.update(q for q in re.findall(r'"([^"]+)"', text))
        if str(key).endswith("user.info") and ":" in text:  # user:password, the password alone too
            found.add(text.split(":", 1)[1])
    return sorted(found, key=len, reverse=True)


# ---------------------------------------------------------------- the OpenAPI description
# The models describe the answers in /openapi.json; answers are encoded by to_json, not by them.
class TopicPartitionModel(BaseModel):
    topic: str
    partition: int


class InstanceModel(BaseModel):
    host: str
    port: int
    stores: list[str]
    topic_partitions: list[TopicPartitionModel]
    standby_stores: list[str]
    standby_topic_partitions: list[TopicPartitionModel]


class HostModel(BaseModel):
    host: str
    port: int


class KeyInstanceModel(BaseModel):
    store: str
    key: Any
    host: str
    port: int
    partition: int
    standby_hosts: list[HostModel]


class KeyValueModel(BaseModel):
    store: str
    key: Any
    value: Any
    position: dict[str, dict[str, int]]


class EntryModel(BaseModel):
    key: Any
    value: Any


class PageModel(BaseModel):
    store: str
    entries: list[EntryModel]
    next: str | None
    position: dict[str, dict[str, int]]


class WindowKeyModel(BaseModel):
    key: Any
    start: int
    end: int


class WindowEntryModel(BaseModel):
    key: WindowKeyModel
    value: Any


class WindowsModel(BaseModel):
    store: str
    key: Any
    entries: list[WindowEntryModel]
    position: dict[str, dict[str, int]]


class ErrorModel(BaseModel):
    error: str


_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorModel, "description": "bad input: key, position, cursor, store type"},
    404: {"model": ErrorModel, "description": "unknown store, or (a read by key) an absent key"},
    409: {
        "model": ErrorModel,
        "description": "not queryable now: not running, catching up, bound not reached",
    },
}


_Store = Annotated[str, Path(description="a queryable store's name")]
_Key = Annotated[str, Path(description="the key as text, converted with the store's key serde")]
_Timestamped = Annotated[bool, Query(description="values as {value, timestamp} (timestamped stores only)")]
_Bound = Annotated[
    str | None,
    Query(description='read at least this position: JSON {"topic": {"partition": offset}}'),
]
_Timeout = Annotated[
    int, Query(ge=0, le=MAX_TIMEOUT_MS, description="how long a read may wait for its store (ms)")
]
_Limit = Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE, description="entries per page")]


# ---------------------------------------------------------------- the FastAPI application
def scrubber(secrets: Iterable[str]) -> Callable[[str], str]:
    """A function that hides each of ``secrets`` in a message."""
    hidden = [s for s in secrets if s]

    def scrub(message: str) -> str:
        for secret in hidden:
            message = message.replace(secret, "[hidden]")
        return message

    return scrub


def outcome(fn: Callable[[], Any], scrub: Callable[[str], str]) -> tuple[int, bytes]:
    """The status and JSON body that answer ``fn()``: its result, or its failure as
    ``{"error": message}`` (statuses per :func:`status_of`; a 500's details only in the log)."""

    def error(status: int, message: str, **extra: Any) -> tuple[int, bytes]:
        return status, to_json({"error": scrub(message), **extra})

    try:
        body = fn()
    except (QueryError, StreamsException) as e:
        status = status_of(e)
        if status == 500:
            _log.exception("interactive query failed")
            return error(500, f"internal error ({type(e).__name__}); see the application's log")
        extra = e.extra if isinstance(e, QueryError) else {}
        return error(status, e.message if isinstance(e, QueryError) else str(e), **extra)
    except Exception as e:
        _log.exception("interactive query failed")
        return error(500, f"internal error ({type(e).__name__}); see the application's log")
    return 200, to_json(body)


_POINT_READ = "/state/keyvalue/"
_JSON_HEADERS = [(b"content-type", b"application/json")]


class PointReads:
    """The server's ASGI application: plain point reads (``GET /state/keyvalue/{store}/{key}``,
    no query string) answered here on the event loop, everything else by the FastAPI app.

    Why: on a loaded machine each step of a request may wait for a core and, in the
    application's process, for the interpreter lock. Over a dict in a process of its own, with W2
    filling the cores, this path on uvloop and httptools answered at p99 4.8 ms where a FastAPI
    route on asyncio took 17.3 ms (docs/interactive-queries.md, "Numbers"). It answers exactly
    as the FastAPI route would (the same :meth:`Queries.get_now` and :func:`outcome`); a read
    that has to wait (the replica is applying a batch, or not started) or any other request goes
    to FastAPI, whose route reads in its thread pool."""

    def __init__(self, app: Any, queries: Queries, scrub: Callable[[str], str]) -> None:
        self.app = app
        self._queries = queries
        self._scrub = scrub

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] == "GET"
            and not scope["query_string"]
            and scope["path"].startswith(_POINT_READ)
        ):
            store, slash, key = scope["path"][len(_POINT_READ) :].partition("/")
            if slash and store and key:
                answered: list[bool] = []

                def now() -> Any:
                    body = self._queries.get_now(store, key, timestamped=False)
                    answered.append(body is not None)
                    return body

                status, body = outcome(now, self._scrub)
                if answered != [False]:  # answered, or failed at once (an error is an answer too)
                    headers = [*_JSON_HEADERS, (b"content-length", str(len(body)).encode())]
                    await send({"type": "http.response.start", "status": status, "headers": headers})
                    await send({"type": "http.response.body", "body": body})
                    return
        await self.app(scope, receive, send)


def create_app(queries: Queries, secrets: Iterable[str] = (), live: LivePage | None = None) -> FastAPI:
    """The FastAPI application of :class:`Queries` (the server runs it; tests may call it), with
    the live page's routes when ``live`` is given (kspark/runtime/live_page.py)."""
    scrub = scrubber(secrets)

    def error(status: int, message: str, **extra: Any) -> Response:
        return Response(to_json({"error": scrub(message), **extra}), status, media_type="application/json")

    def answer(fn: Callable[[], Any]) -> Response:
        status, body = outcome(fn, scrub)
        return Response(body, status, media_type="application/json")

    def ok(model: type[BaseModel], description: str) -> dict[int | str, dict[str, Any]]:
        return {200: {"model": model, "description": description}, **_ERRORS}

    app = FastAPI(
        title="kspark interactive queries",
        description=(
            "The stores of a running kspark application (Kafka Streams on Spark), read from "
            "replicas fed by its changelogs. Every state answer reflects one committed micro-batch and says "
            "which: `position`, per input topic and partition the offset of the last record included."
        ),
        version="1",
    )

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError) -> Response:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}" for e in exc.errors()
        )
        return error(400, f"bad request: {problems}")

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        return error(exc.status_code, f"{exc.detail}: {request.method} {request.url.path}")

    @app.get("/instances", responses=ok(InstanceModel, "every instance of the application"))
    def instances() -> Response:
        return answer(queries.instances)

    @app.get("/instances/{store}", responses=ok(InstanceModel, "the instances that hold the store"))
    def instances_for(store: _Store) -> Response:
        return answer(lambda: queries.instances_for(store))

    @app.get("/instance/{store}/{key:path}", responses=ok(KeyInstanceModel, "where the key lives"))
    def instance_for_key(store: _Store, key: _Key) -> Response:
        return answer(lambda: queries.instance_for_key(store, key))

    @app.get("/state/keyvalue/{store}", responses=ok(PageModel, "a page of a range, or of all entries"))
    def key_value_range(
        store: _Store,
        from_: Annotated[str | None, Query(alias="from", description="first key (inclusive)")] = None,
        to: Annotated[str | None, Query(description="last key (inclusive)")] = None,
        limit: _Limit = DEFAULT_PAGE_SIZE,
        after: Annotated[str | None, Query(description="the previous page's next")] = None,
        timestamped: _Timestamped = False,
        position: _Bound = None,
        timeout_ms: _Timeout = DEFAULT_TIMEOUT_MS,
    ) -> Response:
        return answer(
            lambda: queries.range(
                store,
                from_text=from_,
                to_text=to,
                limit=limit,
                after=after,
                timestamped=timestamped,
                position=position,
                timeout_ms=timeout_ms,
            )
        )

    @app.get("/state/keyvalue/{store}/{key:path}", responses=ok(KeyValueModel, "the key's value"))
    async def key_value_get(
        store: _Store,
        key: _Key,
        timestamped: _Timestamped = False,
        position: _Bound = None,
        timeout_ms: _Timeout = DEFAULT_TIMEOUT_MS,
    ) -> Response:
        # A point read that needs no wait is answered on the event loop: each hop to the thread
        # pool and back waits for the interpreter lock, which the application's own threads
        # (Spark's driver, the replicas) hold in turns of 5 ms; that made p99 ~14 ms under load.
        if position is None:
            fast: list[bool] = []

            def now() -> Any:
                body = queries.get_now(store, key, timestamped=timestamped)
                fast.append(body is not None)
                return body

            response = answer(now)
            if fast != [False]:  # answered, or failed at once (an error is an answer too)
                return response
        return await run_in_threadpool(
            answer,
            lambda: queries.get(
                store, key, timestamped=timestamped, position=position, timeout_ms=timeout_ms
            ),
        )

    @app.get("/state/windowed/{store}/{key:path}", responses=ok(WindowsModel, "the key's windows"))
    def windowed_get(
        store: _Store,
        key: _Key,
        from_: Annotated[
            int | None, Query(alias="from", description="window store: earliest window start (epoch ms)")
        ] = None,
        to: Annotated[int | None, Query(description="window store: latest window start (epoch ms)")] = None,
        timestamped: _Timestamped = False,
        position: _Bound = None,
        timeout_ms: _Timeout = DEFAULT_TIMEOUT_MS,
    ) -> Response:
        return answer(
            lambda: queries.windowed(
                store,
                key,
                time_from=from_,
                time_to=to,
                timestamped=timestamped,
                position=position,
                timeout_ms=timeout_ms,
            )
        )

    if live is not None:
        live.install(app, answer)
    return app


# ---------------------------------------------------------------- the server
class QueryServer:
    """The HTTP endpoint of one application: uvicorn serving :func:`create_app` in a daemon thread.

    The socket is bound here, in the caller's thread, so that a host or port that cannot be
    used fails ``KafkaStreams.start()`` with a clear error instead of a log line."""

    def __init__(self, app: KafkaStreams, host: HostInfo, *, startup_timeout_s: float = 30.0) -> None:
        self.host = host
        self._socket = listen(host)
        self.port = int(self._socket.getsockname()[1])
        secrets = secrets_of(app._config.originals())
        scrub = scrubber(secrets)
        self.live = LivePage(app, scrub)
        queries = Queries(app)
        self._server = uvicorn_server(PointReads(create_app(queries, secrets, self.live), queries, scrub))
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._socket]},
            name="kspark-query-server",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + startup_timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.close()
                raise StreamsException(f"the interactive-query endpoint on {host} did not start")
            time.sleep(0.01)
        _log.info("interactive queries over HTTP on http://%s:%d", url_host(host.host), self.port)

    @property
    def url(self) -> str:
        """``http://host:port`` of the endpoint (the bound port, for a port 0)."""
        return f"http://{url_host(self.host.host)}:{self.port}"

    def on_state(self, _state: Any) -> None:
        """The application's state changed: nothing to do, this server asks the application."""

    def attach(self, _app: KafkaStreams, _replicas: StoreReplicas) -> None:
        """The application's replicas were made: nothing to do, this server asks the application."""

    def close(self) -> None:
        self.live.close()
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self._socket.close()


def url_host(host: str) -> str:
    """``host`` as a URL holds it (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host else host


def uvicorn_server(app: Any) -> Any:
    """uvicorn serving ``app`` as the interactive-query endpoint is served (``run(sockets=...)``)."""
    import uvicorn

    config = uvicorn.Config(
        app,
        # uvloop and httptools (C): fewer steps per request than asyncio's and h11's Python,
        # each a wait for the interpreter lock under load. A loop of its own, in the thread that
        # runs the server (uvicorn's loop factory): no global event loop policy is set.
        loop="uvloop",
        http="httptools",
        lifespan="off",
        ws="none",
        log_config=None,  # leave the application's logging as it is
        access_log=False,
        server_header=False,
        # Reads that wait are woken by close() (the replica raises); nothing waits longer.
        timeout_graceful_shutdown=5,
    )
    return uvicorn.Server(config)


def listen(host: HostInfo) -> socket.socket:
    """A listening socket on ``host``; a host or port that cannot be used is a StreamsException."""
    try:
        infos = socket.getaddrinfo(host.host, host.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, _, _, _, address = infos[0]
        # IPPROTO_TCP spelled out: asyncio sets TCP_NODELAY only on connections of a socket whose
        # protocol says TCP; with proto 0 each answer waits ~40 ms for a delayed ACK (Nagle).
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    except OSError as e:
        raise StreamsException(f"application.server={host}: cannot listen there: {e}") from e
    try:
        # A restarted application takes its port back while old connections are in TIME_WAIT.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as e:
        sock.close()
        raise StreamsException(f"application.server={host}: cannot listen there: {e}") from e
    return sock
