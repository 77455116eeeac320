"""What the exactly-once fault tests share: steady input, and checks of eos_app's outputs.

:class:`Input` produces record ``i`` (key ``user-<i % USERS>``, value ``i``,
timestamp now) to every input topic at a steady rate; :func:`check` compares
what an application (eos_app.py's topologies) wrote, read ``read_committed``,
with what was sent.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from typing import Any

from kspark.dev.kafka import LocalKafka
from kspark.serde import Serdes
from tests.runtime.spark.eos_app import WINDOW_MS, region_of

__all__ = ["Input", "check", "RATE", "USERS"]

RATE = 200  # input records a second, each written to every input topic
USERS = 40

L = Serdes.Long().deserializer()


class Input(threading.Thread):
    """Produces record i (key ``user-<i % USERS>``, value ``i``, timestamp now) to every input topic."""

    def __init__(self, kafka: LocalKafka, topics: list[str], rate: int = RATE) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "enable.idempotence": True})
        self.topics = topics
        self.rate = rate
        self.sent: list[tuple[str, int, int]] = []  # (user, i, timestamp)
        self.stop = threading.Event()

    def run(self) -> None:
        i, started = 0, time.monotonic()
        while not self.stop.is_set():
            due = int((time.monotonic() - started) * self.rate)
            for _ in range(due - i):
                user, ts = f"user-{i % USERS}", int(time.time() * 1000)
                for topic in self.topics:
                    while True:
                        try:
                            self.producer.produce(topic, str(i).encode(), user.encode(), timestamp=ts)
                            break
                        except BufferError:  # the broker is away (a fault test): wait for it
                            self.producer.poll(0.1)
                self.sent.append((user, i, ts))
                i += 1
            self.producer.poll(0)
            time.sleep(0.01)
        assert self.producer.flush(60) == 0


def check(kafka: LocalKafka, topics: dict[str, str], sent: list[tuple[str, int, int]]) -> dict[str, Any]:
    """What the outputs hold against the input: losses, duplicates, and whether every count is exact."""
    inputs = Counter(i for _, i, _ in sent)
    copies = Counter(int(r.value) for r in kafka.consume_all(topics["copy"], read_committed=True))
    per_user = Counter(user for user, _, _ in sent)
    counts: dict[str, list[int]] = {}
    for r in sorted(
        kafka.consume_all(topics["count"], read_committed=True), key=lambda r: (r.partition, r.offset)
    ):
        counts.setdefault(r.key.decode(), []).append(L.deserialize("", r.value))
    numbered: dict[str, list[int]] = {}
    numbered_inputs: Counter[int] = Counter()
    for r in kafka.consume_all(f"{topics['application.id']}-numbered-repartition", read_committed=True):
        user, n, i = r.value.decode().split(":")
        numbered.setdefault(user, []).append(int(n))
        numbered_inputs[int(i)] += 1
    per_window = Counter(f"{region_of(user)}@{ts - ts % WINDOW_MS}" for user, _, ts in sent)
    windows: dict[str, list[int]] = {}
    for r in sorted(
        kafka.consume_all(topics["windowed"], read_committed=True), key=lambda r: (r.partition, r.offset)
    ):
        windows.setdefault(r.key.decode(), []).append(L.deserialize("", r.value))

    def increasing(seqs: dict[str, list[int]]) -> bool:
        return all(all(a < b for a, b in itertools.pairwise(s)) for s in seqs.values())

    return {
        "inputs": len(inputs),
        "copy_lost": sum(1 for i in inputs if i not in copies),
        "copy_duplicates": sum(n - 1 for n in copies.values() if n > 1),
        "counts_exact": {k: v[-1] for k, v in counts.items()} == dict(per_user),
        "counts_strictly_increase": increasing(counts),
        "count_records_written_twice": sum(len(v) - len(set(v)) for v in counts.values()),
        "numbered_lost": sum(1 for i in inputs if i not in numbered_inputs),
        "numbered_duplicates": sum(n - 1 for n in numbered_inputs.values() if n > 1),
        "numbering_exact": all(sorted(v) == list(range(1, per_user[u] + 1)) for u, v in numbered.items())
        and set(numbered) == set(per_user),
        "windows_exact": {k: v[-1] for k, v in windows.items()} == dict(per_window),
        "windows_strictly_increase": increasing(windows),
        "windows": len(per_window),
    }
