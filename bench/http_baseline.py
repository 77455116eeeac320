"""The HTTP floor: kspark's HTTP stack over a plain dict, in a process of its own (issue 20).

    python -m bench.http_baseline PORT KEYS

Serves ``GET /state/keyvalue/{store}/{key}`` as kspark's query server answers a point read
(FastAPI on uvicorn, one asyncio loop, the same uvicorn settings, an orjson body with the key's
value and a position), from a dict of ``KEYS`` keys ``u0000000`` .. (each counted once, as
bench.interactive_queries's store ``keys`` holds them). Nothing else runs in the process: no
Spark driver, no replica, no other thread. bench.interactive_queries ``--baseline`` times it
under the same load as the application's endpoint; the difference is what serving from inside
the application process costs, and what is left is the machine's (a core to run on) and the
HTTP stack's own. Prints ``ready`` once it listens.
"""

from __future__ import annotations

import socket
import sys

import orjson
import uvicorn
from fastapi import FastAPI
from fastapi.responses import Response


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


def main(argv: list[str]) -> int:
    port, keys = int(argv[0]), int(argv[1])
    app = create(keys)
    # As kspark's QueryServer binds it: TCP spelled out so asyncio sets TCP_NODELAY.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    config = uvicorn.Config(
        app, loop="asyncio", lifespan="off", ws="none", log_config=None, access_log=False, server_header=False
    )
    print("ready", flush=True)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
