"""``kspark demo``: the paper's pageviews example, end to end on real parts.

Starts a local Apache Kafka, writes a stream of pageview events (JSON, keyed
by user, event timestamps in ms, some arriving out of order), runs a DSL
topology on Spark Structured Streaming, and prints the output records as
they arrive: the engaged views (long enough to count as reading) enriched
with their category, and, as in the paper's running example, the number of
views per category in one-minute event-time windows (a ``group_by``
through a repartition topic, then a windowed count with a grace period).

The topology's functions live in this importable module on purpose: Spark's
Python workers import them by name.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import uuid
from collections import Counter
from typing import Any, TextIO

from confluent_kafka import Consumer, KafkaError, KafkaException

from kspark.dev.kafka import LocalKafka, free_port

__all__ = [
    "INPUT_TOPIC",
    "OUTPUT_TOPIC",
    "COUNTS_TOPIC",
    "WINDOW_MS",
    "window_counts",
    "count_record",
    "ENGAGED_MS",
    "pageview_events",
    "is_engaged",
    "enrich",
    "build_topology",
    "run_demo",
]

INPUT_TOPIC = "pageviews"
OUTPUT_TOPIC = "pageviews-enriched"
COUNTS_TOPIC = "pageviews-per-category"
ENGAGED_MS = 5_000
"""A view shorter than this is a bounce, not a read."""
WINDOW_MS = 60_000
GRACE_MS = 300_000
"""Generous on purpose: the demo pre-loads its input, so the first micro-batch holds all of it and
the four upstream tasks' records follow each other in the repartition topic, minutes apart in event
time. A late view is still counted; one later than the grace would be dropped, as in Kafka Streams."""

_PAGES: dict[str, list[str]] = {
    "news": ["/news/elections", "/news/markets", "/news/weather"],
    "sports": ["/sports/football", "/sports/tennis", "/sports/cycling"],
    "tech": ["/tech/kafka-streams", "/tech/spark-4", "/tech/python-3-11"],
    "culture": ["/culture/film", "/culture/books"],
}
_CATEGORY_OF_PAGE = {page: cat for cat, pages in _PAGES.items() for page in pages}


def pageview_events(
    count: int, *, start_ms: int, seed: int = 7, users: int = 25
) -> list[tuple[str, dict[str, Any]]]:
    """``count`` pageviews as (user, event), in the order they are produced.

    Event time advances about 250 ms per view; roughly one view in eight
    arrives late (its timestamp up to 20 s in the past), as from a phone that
    was offline for a moment.
    """
    rng = random.Random(seed)
    out: list[tuple[str, dict[str, Any]]] = []
    now = start_ms
    for _ in range(count):
        now += rng.randint(50, 450)
        ts = now - rng.randint(1_000, 20_000) if rng.random() < 0.125 else now
        user = f"user-{rng.randint(1, users):02d}"
        category = rng.choice(list(_PAGES))
        out.append(
            (
                user,
                {
                    "user": user,
                    "page": rng.choice(_PAGES[category]),
                    "duration_ms": int(rng.lognormvariate(8.3, 0.9)),
                    "ts": ts,
                },
            )
        )
    return out


def is_engaged(_user: str, view: dict[str, Any]) -> bool:
    return int(view["duration_ms"]) >= ENGAGED_MS


def enrich(view: dict[str, Any]) -> dict[str, Any]:
    return {
        **view,
        "category": _CATEGORY_OF_PAGE.get(str(view["page"]), "other"),
        "engaged_seconds": round(int(view["duration_ms"]) / 1000, 1),
    }


def by_category(_user: str, view: dict[str, Any]) -> str:
    return str(view["category"])


def count_record(window: Any, views: int) -> Any:
    """A windowed count as a readable record: key ``category@window-start``, JSON value."""
    from kspark import KeyValue

    start = window.window.start
    return KeyValue(
        f"{window.key}@{start}",
        {"category": window.key, "window_start": start, "window_end": window.window.end, "views": views},
    )


def window_counts(events: list[tuple[str, dict[str, Any]]]) -> dict[str, int]:
    """What the windowed count must end at: views per ``category@window-start``."""
    counts: Counter[str] = Counter()
    for _, view in events:
        start = view["ts"] - view["ts"] % WINDOW_MS
        counts[f"{enrich(view)['category']}@{start}"] += 1
    return dict(counts)


def build_topology() -> Any:
    """``pageviews`` -> map_values(enrich) -> filter(engaged) -> ``pageviews-enriched``, and
    -> group_by(category) -> windowed_by(1 min) -> count -> ``pageviews-per-category``."""
    from kspark import Consumed, Grouped, Materialized, Produced, StreamsBuilder, TimeWindows
    from kspark.serde import Serdes

    strings, json_serde = Serdes.String(), Serdes.JSON()
    builder = StreamsBuilder()
    views = builder.stream(INPUT_TOPIC, Consumed(key_serde=strings, value_serde=json_serde)).map_values(
        enrich
    )
    views.filter(is_engaged).to(OUTPUT_TOPIC, Produced(key_serde=strings, value_serde=json_serde))
    (
        views.group_by(by_category, Grouped.with_(strings, json_serde))
        .windowed_by(TimeWindows(size=WINDOW_MS, grace=GRACE_MS))
        .count(Materialized.as_("views-per-category"))
        .to_stream()
        .map(count_record)
        .to(COUNTS_TOPIC, Produced(key_serde=strings, value_serde=json_serde))
    )
    return builder.build()


def _print(out: TextIO, msg: str) -> None:
    print(msg, file=out, flush=True)


def run_demo(
    *,
    events: int = 400,
    timeout: float = 180.0,
    exactly_once: bool = False,
    out: TextIO | None = None,
) -> int:
    """Run the demo; returns 0 when both outputs arrived and match what Python computes.

    ``out``: where the demo's lines go, ``sys.stdout`` as it is at the call (``kspark demo`` gives
    it the terminal, having sent Spark's and the Kafka clients' logs to a file)."""
    from kspark import KafkaStreams

    out = sys.stdout if out is None else out

    t0 = time.monotonic()
    start_ms = int(time.time() * 1000) - 5 * 60_000
    produced = pageview_events(events, start_ms=start_ms)
    expected = [(user, enrich(view)) for user, view in produced if is_engaged(user, view)]
    expected_counts = window_counts(produced)
    out_of_order, high = 0, 0
    for _, view in produced:
        out_of_order += view["ts"] < high
        high = max(high, view["ts"])

    _print(out, f"kspark demo: {INPUT_TOPIC} -> engaged views -> {OUTPUT_TOPIC}")
    _print(out, f"             {INPUT_TOPIC} -> views per category per minute -> {COUNTS_TOPIC}")
    with LocalKafka() as kafka, tempfile.TemporaryDirectory(prefix="kspark-demo-") as state_dir:
        _print(out, f"Kafka up at {kafka.bootstrap_servers} in {kafka.startup_seconds:.1f} s")
        for topic in (INPUT_TOPIC, OUTPUT_TOPIC, COUNTS_TOPIC):
            kafka.create_topic(topic, partitions=4)
        kafka.produce(
            INPUT_TOPIC,
            [(u.encode(), json.dumps(v).encode(), v["ts"]) for u, v in produced],
        )
        _print(
            out,
            f"produced {len(produced)} pageviews of {len({u for u, _ in produced})} users to "
            f"'{INPUT_TOPIC}' (4 partitions), {out_of_order} out of order; "
            f"expecting {len(expected)} engaged views (>= {ENGAGED_MS // 1000} s) "
            f"and {len(expected_counts)} category windows",
        )

        topology = build_topology()
        _print(out, str(topology.describe()).rstrip())
        config = {
            "application.id": f"kspark-demo-{uuid.uuid4().hex[:8]}",
            "bootstrap.servers": kafka.bootstrap_servers,
            "processing.guarantee": "exactly_once_v2" if exactly_once else "at_least_once",
            "commit.interval.ms": 1000,
            "state.dir": state_dir,
            # Interactive queries over HTTP (docs/interactive-queries.md), on loopback.
            "application.server": f"127.0.0.1:{free_port()}",
        }
        app = KafkaStreams(topology, config)
        t_start = time.monotonic()
        app.start()
        _print(out, f"KafkaStreams started on Spark in {time.monotonic() - t_start:.1f} s; output:")
        try:
            received, counts, first_at = _tail_output(
                kafka, len(expected), expected_counts, timeout, t_start, out
            )
            queried = _query_counts(str(config["application.server"]), expected_counts, out)
        finally:
            app.close()

    elapsed = time.monotonic() - t_start
    by_category = Counter(str(v.get("category")) for _, v in received)
    _print(out, "")
    _print(out, f"summary: {len(received)}/{len(expected)} enriched views in {elapsed:.1f} s")
    if first_at is not None:
        _print(out, f"  first output {first_at:.1f} s after start")
    _print(
        out, "  engaged views by category: " + ", ".join(f"{c}={n}" for c, n in sorted(by_category.items()))
    )
    _print(out, f"  category windows: {len(counts)}/{len(expected_counts)} with their final counts")
    _print(out, f"  total demo time {time.monotonic() - t0:.1f} s")
    want = sorted((u, json.dumps(v, sort_keys=True)) for u, v in expected)
    got = sorted((u, json.dumps(v, sort_keys=True)) for u, v in received)
    if got != want:
        _print(out, "MISMATCH: the enriched views differ from the filter and enrichment applied in Python")
        return 1
    if counts != expected_counts:
        _print(out, "MISMATCH: the windowed counts differ from the counts computed in Python")
        return 1
    if queried != expected_counts:
        _print(out, "MISMATCH: the store, queried over HTTP, differs from the counts computed in Python")
        return 1
    _print(out, "output matches the expected records exactly")
    return 0


def _query_counts(server: str, want: dict[str, int], out: TextIO) -> dict[str, int]:
    """Read the windowed counts' store over HTTP while the application runs, as a service would:
    ``GET /state/windowed/views-per-category/{category}`` per category. The output already holds
    every final count; the store shows a batch once Spark has committed it, so this asks again
    (for up to 30 s) until the answers hold every window, then prints them."""
    categories = sorted({key.split("@")[0] for key in want})
    deadline = time.monotonic() + 30
    while True:
        found: dict[str, int] = {}
        answers: dict[str, Any] = {}
        for category in categories:
            url = f"http://{server}/state/windowed/views-per-category/{urllib.parse.quote(category)}"
            with urllib.request.urlopen(url, timeout=30) as response:
                answers[category] = json.load(response)
            for entry in answers[category]["entries"]:
                found[f"{category}@{entry['key']['start']}"] = int(entry["value"])
        if found == want or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    _print(out, f"interactive queries at http://{server} (store views-per-category), one GET per category:")
    for category, answer in answers.items():
        windows = [(e["key"]["start"], int(e["value"])) for e in answer["entries"]]
        shown = ", ".join(f"{time.strftime('%H:%M', time.gmtime(t / 1000))}={v}" for t, v in windows)
        _print(out, f"  {category:<8} {len(windows)} windows: {shown}")
    if answers:
        _print(out, f"  (each answer is one committed micro-batch; the last reflects {answer['position']})")
    return found


def _tail_output(
    kafka: LocalKafka,
    want: int,
    want_counts: dict[str, int],
    timeout: float,
    t_start: float,
    out: TextIO,
) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, int], float | None]:
    """Print output records as they are committed, until both outputs are complete."""
    consumer = Consumer(
        {
            "bootstrap.servers": kafka.bootstrap_servers,
            "group.id": f"kspark-demo-reader-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    received: list[tuple[str, dict[str, Any]]] = []
    counts: dict[str, int] = {}
    first_at: float | None = None
    deadline = time.monotonic() + timeout
    try:
        consumer.subscribe([OUTPUT_TOPIC, COUNTS_TOPIC])
        while len(received) < want or counts != want_counts:
            if time.monotonic() > deadline:
                _print(out, f"timed out after {timeout:.0f} s with {len(received)}/{want} views")
                break
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(err)
            if first_at is None:
                first_at = time.monotonic() - t_start
            key = (msg.key() or b"").decode()
            value = json.loads(msg.value() or b"null")
            if msg.topic() == COUNTS_TOPIC:
                counts[key] = int(value["views"])
                window = time.strftime("%H:%M", time.gmtime(value["window_start"] / 1000))
                _print(out, f"  count  {value['category']:<8} window {window} UTC  views={value['views']}")
                continue
            received.append((key, value))
            _print(
                out,
                f"  view   p{msg.partition()} @{msg.offset():<4} {key}  {value['category']:<8} "
                f"{value['page']:<22} {value['engaged_seconds']:>6.1f} s  ts={value['ts']}",
            )
    finally:
        consumer.close()
    return received, counts, first_at
