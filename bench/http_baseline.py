"""The HTTP floor: an HTTP stack over a plain dict, in a process of its own (issue 20).

    python -m bench.http_baseline PORT KEYS [STACK]

Serves ``GET /state/keyvalue/{store}/{key}`` with the body kspark's query server answers a
point read with (orjson: the key, its value and a position), from a dict of ``KEYS`` keys
``u0000000`` .. (each counted once, as bench.interactive_queries's store ``keys`` holds them),
on one of these stacks (``STACK``):

* ``fastapi`` (default): a FastAPI route on uvicorn with asyncio and h11, as kspark served every
  request before its point reads got a path of their own;
* ``raw``: a bare ASGI callable on the same uvicorn (no framework);
* ``uvloop``: the bare ASGI callable on uvicorn with uvloop and httptools, as kspark's query
  server answers a plain point read today (kspark/runtime/query_server.py ``PointReads``);
* ``uvloop-slice``: ``uvloop`` with the event loop's thread asking Linux for the scheduler slice
  kspark's serving process asks for (kspark/runtime/scheduling.py), as it answers today;
* ``granian``: a bare RSGI callable on granian (a Rust HTTP server; ``pip install
  granian==2.8.9``, not one of kspark's dependencies).

Nothing else runs in the process: no Spark driver, no replica, no other thread.
bench.interactive_queries ``--baseline`` times it under the same load as the application's
endpoint; the difference is what serving from inside the application process costs, and what
is left is the machine's (a core to run on) and the HTTP stack's own. Prints ``ready`` once it
listens.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable
from typing import Any

import orjson
import uvicorn
from fastapi import FastAPI
from fastapi.responses import Response

from kspark.runtime.scheduling import request_slice
from kspark.runtime.spark.serving import EVENT_LOOP_SLICE_S


def create(keys: int) -> FastAPI:
    store = {f"u{i:07d}": 1 for i in range(keys)}
    position = {"keys": {"0": keys}}
    app = FastAPI()

    @app.get("/state/keyvalue/{name}/{key}")
    async def get(name: str, key: str) -> Response:
        value = store.get(key)
        if value is None:
            return Response(orjson.dumps({"error": f"no key {key}"}), 404, media_type="application/json")
        body = {"store": name, "key": key, "value": value, "position": position}
        return Response(orjson.dumps(body), media_type="application/json")

    return app


STACKS = ("fastapi", "raw", "uvloop", "uvloop-slice", "granian")


def _lookup(keys: int) -> Callable[[str], tuple[int, bytes]]:
    """The point read every bare stack answers: a request path to its status and JSON body."""
    store = {f"u{i:07d}": 1 for i in range(keys)}
    position = {"keys": {"0": keys}}

    def answer(path: str) -> tuple[int, bytes]:
        parts = path.split("/")
        name, key = parts[3], parts[4]
        value = store.get(key)
        if value is None:
            return 404, orjson.dumps({"error": f"no key {key}"})
        return 200, orjson.dumps({"store": name, "key": key, "value": value, "position": position})

    return answer


def create_raw(keys: int) -> Any:
    """The same answer as a bare ASGI callable: no framework between the server and the dict."""
    answer = _lookup(keys)
    headers = [(b"content-type", b"application/json")]

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        status, body = answer(scope["path"])
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def main(argv: list[str]) -> int:
    port, keys = int(argv[0]), int(argv[1])
    stack = argv[2] if len(argv) > 2 else "fastapi"
    if stack not in STACKS:
        raise SystemExit(f"unknown stack {stack!r}: one of {', '.join(STACKS)}")
    if stack == "granian":
        return _granian(port, keys)
    app = create(keys) if stack == "fastapi" else create_raw(keys)
    extra: dict[str, Any] = {} if stack in ("fastapi", "raw") else {"loop": "uvloop", "http": "httptools"}
    # As kspark's QueryServer binds it: TCP spelled out so asyncio sets TCP_NODELAY.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    config = uvicorn.Config(
        app,
        **({"loop": "asyncio"} | extra),
        lifespan="off",
        ws="none",
        log_config=None,
        access_log=False,
        server_header=False,
    )
    if stack == "uvloop-slice":
        refused = request_slice(EVENT_LOOP_SLICE_S)
        if refused is not None:
            raise SystemExit(f"uvloop-slice: {refused}")
    print("ready", flush=True)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


def _granian(port: int, keys: int) -> int:
    try:
        from granian.constants import Interfaces
        from granian.server import Server
    except ImportError as e:
        raise SystemExit(f"the granian stack needs granian: pip install granian==2.8.9 ({e})") from e

    os.environ["KSPARK_BASELINE_KEYS"] = str(keys)  # granian's worker process imports the app anew
    print("ready", flush=True)
    Server(
        "bench.http_baseline:granian_app",
        address="127.0.0.1",
        port=port,
        interface=Interfaces.RSGI,
        workers=1,
        factory=True,
        log_enabled=False,
    ).serve()
    return 0


def granian_app() -> Any:
    """The bare answer as an RSGI app (granian's own interface: no ASGI message dicts)."""
    answer = _lookup(int(os.environ["KSPARK_BASELINE_KEYS"]))
    headers = [("content-type", "application/json")]

    async def app(scope: Any, proto: Any) -> None:
        status, body = answer(scope.path)
        proto.response_bytes(status, headers, body)

    return app


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
