"""The worker's pools of warm Kafka clients (warm_pool.py) and the producers they keep."""

from __future__ import annotations

import gc
import os
import time

from kspark.runtime.spark.kafka_io import _WarmProducer
from kspark.runtime.spark.warm_pool import WarmPool


class Client:
    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = False


def test_clients_used_at_once_are_all_kept_and_taken_again() -> None:
    made: list[Client] = []

    def make() -> Client:
        made.append(Client(f"c{len(made)}"))
        return made[-1]

    pool: WarmPool[Client] = WarmPool(60.0, close=lambda c: setattr(c, "closed", True))
    # One Spark task writing for two Kafka Streams tasks holds two producers of one configuration.
    a, b = pool.borrow("conf", make), pool.borrow("conf", make)
    pool.give_back("conf", a)
    pool.give_back("conf", b)
    assert pool.idle("conf") == 2 and not a.closed and not b.closed
    again = {pool.borrow("conf", make).name, pool.borrow("conf", make).name}
    assert again == {"c0", "c1"} and len(made) == 2  # the next batch makes none
    assert "conf" not in pool and pool.idle("conf") == 0


def test_an_idle_client_is_closed_and_a_surplus_at_once() -> None:
    pool: WarmPool[Client] = WarmPool(0.2, close=lambda c: setattr(c, "closed", True), max_idle=2)
    clients = [Client(str(i)) for i in range(3)]
    for c in clients:
        pool.give_back("k", c)
    assert clients[0].closed and pool.idle("k") == 2  # beyond max_idle: the oldest goes
    taken = pool.borrow("k", lambda: Client("new"))
    assert taken is clients[2]
    deadline = time.monotonic() + 5
    while not clients[1].closed and time.monotonic() < deadline:
        time.sleep(0.05)
    assert clients[1].closed and "k" not in pool
    assert not clients[2].closed  # borrowed before its idle time ran out: its timer was cancelled


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def test_a_dropped_warm_producer_is_destroyed_without_the_garbage_collector() -> None:
    """Its delivery callback must not hold it (a cycle through librdkafka's handle kept 407
    producers, each with its threads, alive in one worker: bench.soak)."""
    gc.disable()
    try:
        before = _threads()
        warm = _WarmProducer({"bootstrap.servers": "127.0.0.1:9"})
        assert _threads() > before  # librdkafka's own threads
        del warm
        deadline = time.monotonic() + 10
        while _threads() > before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _threads() == before
    finally:
        gc.enable()
