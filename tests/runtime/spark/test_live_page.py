"""The live page (kspark/runtime/live_page.py), in a real headless browser (Debian's chromium).

The integration test runs a counting application on Spark with ``application.server`` set while
records keep arriving, opens its page in chromium (driven by Playwright) and checks what a
person would: the topology picture is drawn, the charts have points and gain more as samples
come, every sub-topology is in the legend, the application's state shows, a warning logged by
kspark appears with the configuration's secret hidden, and the store browser answers a key
lookup and a listing with what ``KafkaStreams.store`` reads. With ``KSPARK_SCREENSHOTS=DIR`` it
also saves the page as ``DIR/live-page.png`` (docs/img/live-page.png was made so).

The fast tests check the samples and the error log without Spark or a browser.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from kspark import (
    Consumed,
    KafkaStreams,
    Materialized,
    Produced,
    StreamsBuilder,
    TimeWindows,
    Topology,
)
from kspark.dev.kafka import LocalKafka, free_port
from kspark.runtime.live_page import _RecentErrors
from kspark.runtime.query_server import scrubber
from kspark.serde import Serdes
from kspark.state import QueryableStoreTypes

S, L = Serdes.String(), Serdes.Long()
SECRET = "s3cret-for-the-live-page"


# ---------------------------------------------------------------- fast: no Spark, no browser
def test_recent_errors_keep_the_last_warnings_with_secrets_hidden() -> None:
    handler = _RecentErrors(scrubber([SECRET]))
    log = logging.getLogger("kspark.test-live-page")
    log.addHandler(handler)
    try:
        log.info("not kept: below WARNING")
        for i in range(25):
            log.warning("warning %d with %s", i, SECRET)
        log.error("the last one")
    finally:
        log.removeHandler(handler)
    kept = handler.last()
    assert len(kept) == 20  # ERRORS_KEPT: the oldest went
    assert kept[0]["message"] == "warning 6 with [hidden]"
    assert kept[-1] == {**kept[-1], "level": "ERROR", "message": "the last one"}
    assert all(SECRET not in e["message"] for e in kept)


# ---------------------------------------------------------------- the page in a browser
def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail(
            "no chromium on PATH: the live page's test needs Debian's chromium "
            "(./dev test installs it: apt-get install chromium)"
        )
    return found


def _topology(src: str, dst: str) -> Topology:
    b = StreamsBuilder()
    words = b.stream(src, Consumed.with_(S, S))
    words.group_by_key().count(Materialized.as_("counts")).to_stream().to(dst, Produced.with_(S, L))
    words.group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(60_000)).count(
        Materialized.as_("per-minute")
    )
    return b.build()


def _keep_producing(kafka: LocalKafka, topic: str, stop: threading.Event, sent: dict[str, int]) -> None:
    n = 0
    while not stop.is_set():
        batch = []
        for _ in range(20):
            key = f"k{n % 7}"
            batch.append((key.encode(), b"x", 1_700_000_000_000 + n))
            sent[key] = sent.get(key, 0) + 1
            n += 1
        kafka.produce(topic, batch)
        stop.wait(0.2)


def _wait(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout:.0f} s")
        time.sleep(0.2)


@pytest.mark.integration
@pytest.mark.slow
def test_the_live_page_draws_charts_that_update_and_its_store_browser_answers(
    kafka: LocalKafka, spark: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    pytest.importorskip("pyspark.cloudpickle").register_pickle_by_value(sys.modules[__name__])
    chromium = _chromium()
    # Short names (the screenshot shows them), unique in the run's broker.
    suffix = uuid.uuid4().hex[:6]
    src, dst = f"words-{suffix}", f"counts-{suffix}"
    kafka.create_topic(src, partitions=2)
    kafka.create_topic(dst, partitions=1)
    port = free_port()
    config = {
        "application.id": "live-page",
        "bootstrap.servers": kafka.bootstrap_servers,
        "state.dir": str(tmp_path / "state"),
        "commit.interval.ms": 200,
        "application.server": f"127.0.0.1:{port}",
        "basic.auth.user.info": f"reader:{SECRET}",  # a secret the page must never show
    }
    app = KafkaStreams(_topology(src, dst), config, spark=spark)
    stop, sent = threading.Event(), {}
    producer = threading.Thread(target=_keep_producing, args=(kafka, src, stop, sent), daemon=True)
    producer.start()
    app.start()
    url = f"http://127.0.0.1:{port}"
    try:
        logging.getLogger("kspark.test").warning("a warning the page shows, with %s hidden", SECRET)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            try:
                page = browser.new_page(viewport={"width": 1440, "height": 1100})
                page.goto(url)
                page.wait_for_selector("#picture svg", timeout=60_000)
                assert "counts" in page.inner_text("#picture")  # the store, drawn in its box
                page.wait_for_function("document.querySelector('#state').textContent === 'RUNNING'")

                # The charts gain points as samples come (one every 2 s).
                points = "Number(document.querySelector('#chart-in svg').dataset.points || 0)"
                page.wait_for_function(f"{points} >= 2", timeout=90_000)
                before = page.evaluate(points)
                page.wait_for_function(f"{points} > {before}", timeout=30_000)
                for chart in ("in", "out", "lag", "batch_ms", "state_bytes"):
                    # A series starts with the first batch (state, batch duration) or the first
                    # listing of the input's ends (lag) after the page opened.
                    page.wait_for_selector(f"#chart-{chart} svg polyline", state="attached", timeout=30_000)
                plan_queries = app.physical_plan().queries
                assert page.locator("#legend span").count() == len(plan_queries)
                metrics = httpx.get(f"{url}/live/metrics", timeout=30).json()
                samples = metrics["samples"]
                assert any((s["queries"].get(q.name) or {}).get("in") for s in samples for q in plan_queries)
                assert "a warning the page shows, with [hidden] hidden" in page.inner_text("#errors")
                assert SECRET not in page.content()

                # The store browser, once the input stops and the store has all of it.
                stop.set()
                producer.join()
                counts = app.store("counts", QueryableStoreTypes.key_value_store())
                _wait(lambda: all(counts.get(k) == n for k, n in sent.items()), 120, "counts caught up")
                page.wait_for_selector("#store option[value='counts']", state="attached", timeout=30_000)
                page.select_option("#store", "counts")
                page.fill("#key", "k3")
                page.click("#look-up")
                page.wait_for_selector("#value", timeout=30_000)
                assert json.loads(page.inner_text("#value")) == sent["k3"]
                page.click("#browse")
                page.wait_for_selector("#result table", timeout=30_000)
                listed = page.locator("#result table tr").all_inner_texts()[1:]
                assert sorted(row.split("\t")[0] for row in listed) == sorted(json.dumps(k) for k in sent)
                page.fill("#key", "no-such-key")
                page.click("#look-up")
                page.wait_for_selector("#result.problem", timeout=30_000)
                assert "not in store counts" in page.inner_text("#result")

                shots = os.environ.get("KSPARK_SCREENSHOTS")
                if shots:
                    page.select_option("#store", "counts")
                    page.fill("#key", "k3")
                    page.click("#look-up")
                    page.wait_for_selector("#value", timeout=30_000)
                    page.screenshot(path=str(Path(shots) / "live-page.png"), full_page=True)
            finally:
                browser.close()
    finally:
        stop.set()
        app.close()
