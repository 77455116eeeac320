"""The HTTP endpoint's serving process (kspark/runtime/spark/serving.py), without Spark.

An application that is not started has a serving process as a started one does (its child is
told the application's state): this checks what the child answers before the plan is known,
that it passes the live page to the driver's server, that a child that dies is started again on
the same port and told what the first was, and that close() ends it. test_query_server.py checks
the child's answers for an application that is not running (secrets hidden) beside the
in-process server's, and a running application's in its integration test (the default).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest

from kspark import Consumed, KafkaStreams, Materialized, StreamsBuilder
from kspark.errors import InvalidStateStoreException
from kspark.query import HostInfo
from kspark.runtime.scheduling import request_slice
from kspark.runtime.spark.serving import EVENT_LOOP_SLICE_S, ServingProcess, _Served
from kspark.serde import Serdes
from tests.runtime.test_scheduling import in_thread, slice_ns

S = Serdes.String()
SECRET = "s3cr3t-pa55word"


def _app(tmp_path: Path) -> KafkaStreams:
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, S)).group_by_key().count(Materialized.as_("counts"))
    return KafkaStreams(
        b.build(),
        {
            "application.id": "serving-created",
            "bootstrap.servers": "127.0.0.1:9",  # never contacted: the app does not start
            "state.dir": str(tmp_path),
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="user" password="{SECRET}";',
        },
    )


def _answers_409(url: str, timeout_s: float = 30.0) -> httpx.Response:
    """The child's answer to a state read, waiting while a new child starts (refused meanwhile)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return httpx.get(f"{url}/state/keyvalue/counts/k", timeout=5)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_the_serving_process_answers_for_the_application_and_is_restarted_when_it_dies(
    tmp_path: Path,
) -> None:
    app = _app(tmp_path)
    server = ServingProcess(app, HostInfo("127.0.0.1", 0))
    server.on_state(app.state())
    first = server._child.pid
    try:
        assert first != os.getpid()
        # What the child answers for an application that is not running, and how it hides the
        # configuration's secrets: test_query_server.py, as for the server in a thread.
        with httpx.Client(base_url=server.url, timeout=10) as http:
            # The live page and its metrics are the driver's, passed through.
            assert http.get("/").headers["content-type"].startswith("text/html")
            metrics = http.get("/live/metrics")
            assert metrics.status_code == 200 and metrics.json()["state"] == "CREATED"
            r = http.get("/live/stores")  # the child's own replicas: none before the plan
            assert r.status_code == 409 and "still starting" in r.json()["error"]

        # Its event loop (the main thread) asked for a short scheduler slice, where Linux has them.
        if in_thread(lambda: request_slice(EVENT_LOOP_SLICE_S)) is None:
            assert slice_ns(first, first) == int(EVENT_LOOP_SLICE_S * 1e9)

        # The state the child is told is the one it refuses with.
        server.on_state(KafkaStreams.State.REBALANCING)
        r = _answers_409(server.url)
        assert r.status_code == 409 and "still starting" in r.json()["error"]

        os.kill(first, signal.SIGKILL)  # a child that dies is started again, on the same port
        deadline = time.monotonic() + 30
        while server._child.pid == first and time.monotonic() < deadline:
            time.sleep(0.1)
        assert server._child.pid != first
        r = _answers_409(server.url)  # and is told what the first was
        assert r.status_code == 409 and "still starting" in r.json()["error"]
    finally:
        server.close()
    assert server._child.poll() is not None
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{server.url}/instances", timeout=2)


def test_a_read_sent_before_the_plan_reaches_the_serving_process_waits_for_it() -> None:
    # start() returns once the driver has its replicas; the child gets the plan a moment later.
    # A read in that moment (here, the plan cannot be loaded) waits for it and then answers what
    # the plan brought, instead of "still starting"; on the event loop it never waits.
    served = _Served()
    served.apply("state", KafkaStreams.State.REBALANCING.value)
    with pytest.raises(InvalidStateStoreException, match="still starting"):
        served._replicas("counts")  # the main thread: at once
    answers: list[str] = []

    def read() -> None:
        try:
            served._replicas("counts")
        except InvalidStateStoreException as e:
            answers.append(str(e))

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(0.5)
    assert reader.is_alive() and not answers  # waiting for the plan
    served.apply("plan", b"not a plan")
    reader.join(10)
    assert len(answers) == 1 and "could not load the application's stores" in answers[0], answers
