"""The HTTP endpoint of interactive queries (kspark/runtime/query_server.py).

The integration test runs one application on Spark with ``application.server``
set, queries every resource over HTTP while and after it processes, and
checks each answer against ``KafkaStreams.store``'s (the same replicas read
from Python), the error codes, a position bound that waits and one that
times out, and the OpenAPI description. The fast tests check the text and
JSON conversions, and the endpoint of an application that is not running,
without Spark.
"""

from __future__ import annotations

import math
import socket
import struct
import sys
import threading
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from kspark import (
    Consumed,
    KafkaStreams,
    Materialized,
    Produced,
    SessionWindows,
    StreamsBuilder,
    TimeWindows,
    Topology,
)
from kspark.dev.kafka import LocalKafka, free_port
from kspark.errors import StreamsException
from kspark.kstream.windowed import TimeWindow, Windowed
from kspark.processor.internals.partitioning import default_partition
from kspark.query import HostInfo, Position
from kspark.runtime.query_codec import (
    QueryError,
    decode_cursor,
    encode_cursor,
    key_from_text,
    parse_position,
    to_json,
)
from kspark.runtime.query_server import QueryServer
from kspark.serde import Serdes
from kspark.state import QueryableStoreTypes
from kspark.state.api import ValueAndTimestamp
from tests.runtime.spark.test_interactive_queries import CENTURY_MS

S = Serdes.String()
L = Serdes.Long()


# ---------------------------------------------------------------- fast: conversions, no Spark
@pytest.mark.parametrize(
    ("serde", "text", "key"),
    [
        (Serdes.String(), "a/b c", "a/b c"),
        (Serdes.String(), "", ""),
        (Serdes.Long(), "-42", -42),
        (Serdes.Integer(), "7", 7),
        (Serdes.Short(), "300", 300),
        (Serdes.Double(), "2.5", 2.5),
        (Serdes.Float(), "1e3", 1000.0),
        (Serdes.Boolean(), "true", True),
        (
            Serdes.UUID(),
            "12345678-1234-5678-1234-567812345678",
            uuid.UUID("12345678-1234-5678-1234-567812345678"),
        ),
        (Serdes.JSON(), '{"user": 3}', {"user": 3}),
    ],
)
def test_a_url_key_takes_the_type_of_the_store_key_serde(serde: Any, text: str, key: Any) -> None:
    assert key_from_text(text, serde, "s") == key


@pytest.mark.parametrize(
    ("serde", "text", "why"),
    [
        (Serdes.Long(), "abc", "not a key of store s"),
        (Serdes.Long(), "1_000", "not a key of store s"),
        (Serdes.Integer(), str(2**31), "not a key of store s"),  # out of range for the serde
        (Serdes.Boolean(), "yes", "not a key of store s"),
        (Serdes.JSON(), "{nope", "not a key of store s"),
        (Serdes.ByteArray(), "x", "no text form"),
    ],
)
def test_a_url_key_that_does_not_convert_is_a_bad_request(serde: Any, text: str, why: str) -> None:
    with pytest.raises(QueryError, match=why) as e:
        key_from_text(text, serde, "s")
    assert e.value.status == 400


def test_answers_encode_windowed_keys_timestamped_values_and_anything_else() -> None:
    body = {
        "w": Windowed("k", TimeWindow(0, 10)),
        "vt": ValueAndTimestamp({"n": 1}, 5),
        "position": Position.from_map({"t": {0: 3}}),
        "raw": b"\x01",
        "big": 2**70,
        "nan": math.nan,
        "keys": {1: "int key"},
    }
    decoded = orjson.loads(to_json(body))
    assert decoded == {
        "w": {"key": "k", "start": 0, "end": 10},
        "vt": {"value": {"n": 1}, "timestamp": 5},
        "position": {"t": {"0": 3}},
        "raw": str(b"\x01"),
        "big": 2**70,
        "nan": None,
        "keys": {"1": "int key"},
    }


def test_cursors_and_positions_parse_or_are_bad_requests() -> None:
    assert decode_cursor(encode_cursor(3, b"\x00k\xff")) == (3, b"\x00k\xff")
    assert parse_position('{"t": {"1": 41}}').position == Position.from_map({"t": {1: 41}})
    assert parse_position(None).is_unbounded()
    for bad in ("[1]", '{"t": 3}', '{"t": {"0": "x"}}', "{"):
        with pytest.raises(QueryError, match="position must be JSON") as e:
            parse_position(bad)
        assert e.value.status == 400
    with pytest.raises(QueryError, match="not a cursor"):
        decode_cursor("garbage")


class _Queries:
    """What PointReads asks of Queries: ``get_now``'s answer per key (None: would wait)."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def get_now(self, store: str, key: str, *, timestamped: bool) -> dict[str, Any] | None:
        self.asked.append((store, key))
        if key == "busy":
            return None
        if key == "absent":
            raise QueryError(404, f"key {key!r} is not in store {store}", key=key)
        if key == "boom":
            raise RuntimeError("secret-value leaked?")
        return {"store": store, "key": key, "value": 1}


def test_plain_point_reads_are_answered_before_the_framework_and_the_rest_passes_through() -> None:
    import asyncio

    from kspark.runtime.query_server import PointReads, scrubber

    passed: list[str] = []

    async def framework(scope: Any, receive: Any, send: Any) -> None:
        passed.append(scope["path"] + "?" + scope["query_string"].decode())

    queries = _Queries()
    app = PointReads(framework, queries, scrubber(["secret-value"]))  # type: ignore[arg-type]

    def get(path: str, query: bytes = b"", method: str = "GET") -> tuple[int | None, bytes]:
        sent: list[dict[str, Any]] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {"type": "http", "method": method, "path": path, "query_string": query}
        asyncio.run(app(scope, None, send))
        if not sent:
            return None, b""
        assert dict(sent[0]["headers"])[b"content-length"] == str(len(sent[1]["body"])).encode()
        return sent[0]["status"], sent[1]["body"]

    assert get("/state/keyvalue/counts/a/b") == (200, b'{"store":"counts","key":"a/b","value":1}')
    status, body = get("/state/keyvalue/counts/absent")
    assert status == 404 and orjson.loads(body) == {
        "error": "key 'absent' is not in store counts",
        "key": "absent",
    }
    status, body = get("/state/keyvalue/counts/boom")  # a 500 names the type, never the message
    assert status == 500 and b"RuntimeError" in body and b"secret" not in body
    assert queries.asked == [("counts", "a/b"), ("counts", "absent"), ("counts", "boom")]
    # A read that would wait, one with a query string, an empty key, another method or resource:
    # the framework answers.
    for path, query, method in [
        ("/state/keyvalue/counts/busy", b"", "GET"),
        ("/state/keyvalue/counts/k", b"timestamped=true", "GET"),
        ("/state/keyvalue/counts/", b"", "GET"),
        ("/state/keyvalue/counts", b"", "GET"),
        ("/state/keyvalue/counts/k", b"", "HEAD"),
        ("/instances", b"", "GET"),
    ]:
        assert get(path, query, method) == (None, b"")
    assert passed == [
        "/state/keyvalue/counts/busy?",
        "/state/keyvalue/counts/k?timestamped=true",
        "/state/keyvalue/counts/?",
        "/state/keyvalue/counts?",
        "/state/keyvalue/counts/k?",
        "/instances?",
    ]
    assert queries.asked[-1] == ("counts", "busy")


@pytest.mark.parametrize("in_process", [True, False], ids=["thread", "serving-process"])
def test_an_application_that_is_not_running_answers_409_and_hides_its_secrets(
    tmp_path: Path, in_process: bool
) -> None:
    from kspark.runtime.spark.serving import ServingProcess

    secret = "s3cr3t-pa55word"
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, S)).group_by_key().count(Materialized.as_("counts"))
    config = {
        "application.id": "qs-created",
        "bootstrap.servers": "127.0.0.1:9",  # never contacted: the app does not start
        "state.dir": str(tmp_path),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="u" password="{secret}";',
    }
    app = KafkaStreams(b.build(), config)
    kind = QueryServer if in_process else ServingProcess
    server = kind(app, HostInfo("127.0.0.1", 0))
    server.on_state(app.state())
    if isinstance(server, QueryServer):
        # asyncio sets TCP_NODELAY on a TCP socket's connections only: else ~40 ms per answer
        assert server._socket.proto == socket.IPPROTO_TCP
    try:
        with httpx.Client(base_url=server.url, timeout=10) as http:
            r = http.get("/instances")  # refused before start(), as Kafka Streams' metadata calls
            assert r.status_code == 409 and "has not been started" in r.json()["error"]
            r = http.get("/state/keyvalue/counts/k")
            assert r.status_code == 409 and "CREATED" in r.json()["error"]
            r = http.get(f"/state/keyvalue/{secret}/k")  # a message that would carry the secret
            assert r.status_code == 409 and secret not in r.text and "[hidden]" in r.text
            r = http.get("/no/such/resource")
            assert r.status_code == 404 and "error" in r.json()
            assert "/state/keyvalue/{store}/{key}" in http.get("/openapi.json").json()["paths"]
    finally:
        server.close()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{server.url}/instances", timeout=2)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(StreamsException, match=f"application.server=127.0.0.1:{port}: cannot listen"):
            kind(app, HostInfo("127.0.0.1", port))


# ---------------------------------------------------------------- integration: an app on Spark
def _topology(src: str, ids: str, dst: str) -> Topology:
    """Every store kind: a count (timestamped key-value), a windowed count, a session count of
    String keys; a count of Long keys from a second topic."""
    b = StreamsBuilder()
    grouped = b.stream(src, Consumed.with_(S, S)).group_by_key()
    grouped.count(Materialized.as_("counts")).to_stream().to(dst, Produced.with_(S, L))
    grouped.windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(0))).count(
        Materialized.as_("windowed")
    )
    grouped.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(timedelta(seconds=5))).count(
        Materialized.as_("sessions")
    )
    b.stream(ids, Consumed.with_(L, S)).group_by_key().count(Materialized.as_("by-id"))
    return b.build()


def _produce(kafka: LocalKafka, topic: str, records: list[tuple[bytes, bytes, int]], partitions: int) -> None:
    """Where the Java producer (Kafka's default partitioner) would put them."""
    kafka.produce(topic, [(k, v, ts, default_partition(k, partitions)) for k, v, ts in records])


def _records(n: int, keys: int, start: int = 0) -> list[tuple[bytes, bytes, int]]:
    # Timestamps from 1 s: librdkafka writes a record with timestamp 0 with the time of sending.
    return [(f"k{i % keys}".encode(), f"v{i}".encode(), 1000 * (i + 1)) for i in range(start, start + n)]


def _ends(records: list[tuple[bytes, bytes, int]], partitions: int) -> dict[int, int]:
    """Per partition, the offset of the last of ``records`` (all produced from offset 0)."""
    counts = [0] * partitions
    for k, _, _ in records:
        counts[default_partition(k, partitions)] += 1
    return {p: c - 1 for p, c in enumerate(counts) if c}


def _bound(topic: str, ends: dict[int, int]) -> str:
    return orjson.dumps({topic: {str(p): o for p, o in ends.items()}}).decode()


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("own_process", [True, False], ids=["serving-process", "thread"])
def test_every_resource_answers_as_the_python_api_while_and_after_processing(
    kafka: LocalKafka, spark: Any, topic_factory: Callable[..., str], tmp_path: Path, own_process: bool
) -> None:
    pytest.importorskip("pyspark.cloudpickle").register_pickle_by_value(sys.modules[__name__])
    src, ids, dst = (
        topic_factory("in", partitions=2),
        topic_factory("ids"),
        topic_factory("out", partitions=2),
    )
    first = _records(60, keys=7)
    _produce(kafka, src, first, 2)
    kafka.produce(ids, [(struct.pack(">q", i % 3), b"x", 1000 * (i + 1), 0) for i in range(10)])
    port = free_port()
    config = {
        # One application per variant: the second would otherwise restore the first's changelogs.
        "application.id": f"qs-all-{'serving' if own_process else 'thread'}",
        "bootstrap.servers": kafka.bootstrap_servers,
        "state.dir": str(tmp_path / "state"),
        "spark.kspark.nativeLowering": "false",  # the engine's stores: queryable
        "spark.kspark.queryServerProcess": str(own_process).lower(),
        "commit.interval.ms": 200,
        "application.server": f"127.0.0.1:{port}",
        # Else the broker deletes the 1970 windows at its next retention check (see there).
        "windowstore.changelog.additional.retention.ms": CENTURY_MS,
    }
    app = KafkaStreams(_topology(src, ids, dst), config, spark=spark)
    app.start()
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=150)
    try:
        # The first read waits (bounded) until the first records are in the store.
        done = _bound(src, _ends(first, 2))
        r = http.get("/state/keyvalue/counts/k3", params={"position": done, "timeout_ms": 120_000})
        assert r.status_code == 200, r.text
        http.get("/state/keyvalue/by-id/0", params={"position": _bound(ids, {0: 9}), "timeout_ms": 120_000})

        counts = app.store("counts", QueryableStoreTypes.key_value_store())
        position = {
            t: {str(p): o for p, o in parts.items()} for t, parts in counts.position().to_map().items()
        }
        assert r.json() == {"store": "counts", "key": "k3", "value": counts.get("k3"), "position": position}
        assert position[src] == {str(p): o for p, o in _ends(first, 2).items()}

        # Discovery.
        (meta,) = app.metadata_for_all_streams_clients()
        instances = http.get("/instances").json()
        assert instances == [
            {
                "host": "127.0.0.1",
                "port": port,
                "stores": sorted(meta.state_store_names),
                "topic_partitions": [
                    {"topic": tp.topic, "partition": tp.partition} for tp in sorted(meta.topic_partitions)
                ],
                "standby_stores": [],
                "standby_topic_partitions": [],
            }
        ]
        assert {"counts", "windowed", "sessions", "by-id"} <= set(instances[0]["stores"])
        assert http.get("/instances/windowed").json() == instances
        key_meta = app.query_metadata_for_key("counts", "k3", S.serializer())
        assert http.get("/instance/counts/k3").json() == {
            "store": "counts",
            "key": "k3",
            "host": "127.0.0.1",
            "port": port,
            "partition": key_meta.partition,
            "standby_hosts": [],
        }
        assert http.get("/instance/by-id/2").json()["partition"] == default_partition(struct.pack(">q", 2), 1)

        # Values by key, timestamped on request; integer keys from the URL.
        ts = app.store("counts", QueryableStoreTypes.timestamped_key_value_store()).get("k0")
        got = http.get("/state/keyvalue/counts/k0", params={"timestamped": "true"}).json()
        assert got["value"] == {"value": ts.value, "timestamp": ts.timestamp}
        by_id = app.store("by-id", QueryableStoreTypes.key_value_store())
        assert http.get("/state/keyvalue/by-id/1").json()["value"] == by_id.get(1) == 3
        r = http.get("/state/keyvalue/counts/nope")
        assert r.status_code == 404 and "nope" in r.json()["error"] and r.json()["position"] == position

        # Everything, page by page, in the view's order (per task, by key bytes); and a range.
        entries, pages, after = [], 0, None
        while True:
            params: dict[str, Any] = {"limit": 3} | ({"after": after} if after else {})
            page = http.get("/state/keyvalue/counts", params=params).json()
            entries += [(e["key"], e["value"]) for e in page["entries"]]
            pages += 1
            after = page["next"]
            if after is None:
                break
        assert entries == [(kv.key, kv.value) for kv in counts.all()] and len(entries) == 7
        assert pages == 3
        page = http.get("/state/keyvalue/counts", params={"from": "k1", "to": "k3"}).json()
        assert [(e["key"], e["value"]) for e in page["entries"]] == [
            (kv.key, kv.value) for kv in counts.range("k1", "k3")
        ]
        assert page["next"] is None and page["position"] == position

        # Windows of a key: a window store's, with their ends, and a session store's.
        windowed = app.store("windowed", QueryableStoreTypes.window_store())
        got = http.get("/state/windowed/windowed/k1", params={"from": 0, "to": 100_000}).json()
        answered = [(e["key"]["start"], e["key"]["end"], e["value"]) for e in got["entries"]]
        assert answered == [
            (start, start + 10_000, value) for start, value in windowed.fetch("k1", 0, 100_000)
        ]
        assert got["entries"] and {e["key"]["key"] for e in got["entries"]} == {"k1"}
        got = http.get("/state/windowed/windowed/k1", params={"timestamped": "true"}).json()
        assert all(set(e["value"]) == {"value", "timestamp"} for e in got["entries"])
        sessions = app.store("sessions", QueryableStoreTypes.session_store())
        got = http.get("/state/windowed/sessions/k2").json()
        assert [(e["key"]["start"], e["key"]["end"], e["value"]) for e in got["entries"]] == [
            (kv.key.window.start, kv.key.window.end, kv.value) for kv in sessions.fetch("k2")
        ]

        # Errors: 404 unknown store, 400 bad input, 409 a bound not reached in time.
        for path, params, status, says in [
            ("/state/keyvalue/nope/k1", {}, 404, "no store nope"),
            ("/instances/nope", {}, 404, "no store nope"),
            ("/state/keyvalue/windowed/k1", {}, 400, "/state/windowed/windowed"),
            ("/state/windowed/counts/k1", {}, 400, "/state/keyvalue/counts"),
            ("/state/keyvalue/by-id/abc", {}, 400, "not a key of store by-id"),
            ("/state/keyvalue/by-id/1", {"timestamped": "maybe"}, 400, "timestamped"),
            ("/state/windowed/sessions/k1", {"timestamped": "true"}, 400, "no timestamped"),
            ("/state/keyvalue/counts/k1", {"position": "{"}, 400, "position must be JSON"),
            ("/state/keyvalue/counts", {"limit": 0}, 400, "limit"),
            ("/state/keyvalue/counts", {"after": "x"}, 400, "not a cursor"),
        ]:
            r = http.get(path, params=params)
            assert (r.status_code, list(r.json())[:1]) == (status, ["error"]), (path, r.text)
            assert says in r.json()["error"], (path, r.text)
        # A plain point read (PointReads, on the event loop) answers as the FastAPI route does (a
        # query string takes the route): the same status and the same bytes.
        for path in [
            "/state/keyvalue/counts/k3",
            "/state/keyvalue/counts/nope",
            "/state/keyvalue/by-id/1",
            "/state/keyvalue/by-id/abc",
            "/state/keyvalue/nope/k1",
            "/state/keyvalue/windowed/k1",
            "/state/keyvalue/counts/a%2Fb%20c",
        ]:
            plain, routed = http.get(path), http.get(path, params={"timestamped": "false"})
            assert (plain.status_code, plain.content) == (routed.status_code, routed.content), path
            assert plain.headers["content-type"] == "application/json", path
        started = time.monotonic()
        r = http.get(
            "/state/keyvalue/counts/k1", params={"position": _bound(src, {0: 10**6}), "timeout_ms": 500}
        )
        assert r.status_code == 409 and "not the bound" in r.json()["error"]
        assert time.monotonic() - started < 10

        spec = http.get("/openapi.json").json()
        assert {
            "/instances",
            "/instances/{store}",
            "/instance/{store}/{key}",
            "/state/keyvalue/{store}",
            "/state/keyvalue/{store}/{key}",
            "/state/windowed/{store}/{key}",
        } <= set(spec["paths"])

        # Read-your-writes: a read bound to records not produced yet waits for them.
        more = _records(14, keys=7, start=len(first))
        answer: dict[str, Any] = {}

        def wait_for_more() -> None:
            params = {"position": _bound(src, _ends(first + more, 2)), "timeout_ms": 120_000}
            answer["r"] = http.get("/state/keyvalue/counts/k3", params=params)

        reader = threading.Thread(target=wait_for_more)
        reader.start()
        time.sleep(0.5)
        assert "r" not in answer, "the bound was not reached yet"
        _produce(kafka, src, more, 2)
        reader.join(timeout=150)
        r = answer["r"]
        assert r.status_code == 200, r.text
        # k3 was read by key before: a replica's cached entry must not hide the new count
        assert r.json()["value"] == sum(1 for k, _, _ in first + more if k == b"k3")

    finally:
        http.close()
        app.close()
    with pytest.raises(httpx.TransportError):  # close() stops the endpoint
        httpx.get(f"http://127.0.0.1:{port}/instances", timeout=2)
