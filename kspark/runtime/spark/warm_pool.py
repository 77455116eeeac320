"""Kafka clients kept in a Spark Python worker between Spark tasks, closed when left idle.

Spark reuses its Python workers across tasks, and a micro-batch is a task
per partition: a client opened per task paid its start every batch (a new
idempotent producer waits ~0.5 s for its producer id, ``python -m
bench.producer_start``; a consumer joins nothing but still connects and
fetches from scratch). A :class:`WarmPool` keeps each client, by a key that
says what it is for, for the next task of this process; one left unused for
``idle_seconds`` is closed, so it does not outlive its application for long.
A client is in the pool only while no task uses it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["WarmPool"]

C = TypeVar("C")


class WarmPool(Generic[C]):
    """Idle clients of this process by key; :meth:`borrow` one, :meth:`give_back` it when done.

    Several tasks of one process may use the same kind of client at once (a Spark task that
    writes for two Kafka Streams tasks holds two producers of one configuration): each is kept
    when given back, up to ``max_idle`` per key, and the next tasks take them again. Replacing
    one instead, as this pool once did, dropped a producer per micro-batch, and its threads and
    buffers with it only when the garbage collector got round to it (``python -m bench.soak``
    found 407 of them in one worker after 25 minutes)."""

    def __init__(
        self, idle_seconds: float, close: Callable[[C], None] = lambda client: None, max_idle: int = 8
    ) -> None:
        self.idle_seconds = idle_seconds
        self.max_idle = max_idle
        self._close = close
        self._lock = threading.Lock()
        self._idle: dict[str, list[tuple[C, threading.Timer]]] = {}

    def borrow(self, key: str, make: Callable[[], C]) -> C:
        """An idle client kept under ``key`` (the one given back last), or a new one from ``make``."""
        with self._lock:
            entries = self._idle.get(key)
            entry = entries.pop() if entries else None
            if entries is not None and not entries:
                del self._idle[key]
        if entry is None:
            return make()
        client, timer = entry
        timer.cancel()
        return client

    def give_back(self, key: str, client: C) -> None:
        """Keep ``client`` for the next task (a client that failed must not be given back)."""

        def evict() -> None:
            with self._lock:
                entries = self._idle.get(key, [])
                kept = [e for e in entries if e[0] is not client]
                if len(kept) == len(entries):
                    return  # borrowed again meanwhile
                if kept:
                    self._idle[key] = kept
                else:
                    del self._idle[key]
            self._close(client)

        timer = threading.Timer(self.idle_seconds, evict)
        timer.daemon = True
        with self._lock:
            entries = self._idle.setdefault(key, [])
            entries.append((client, timer))
            surplus = entries[: -self.max_idle] if len(entries) > self.max_idle else []
            del entries[: len(surplus)]
        timer.start()
        for old, old_timer in surplus:  # more at once than a process should ever need
            old_timer.cancel()
            self._close(old)

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return bool(self._idle.get(key))

    def idle(self, key: str) -> int:
        """How many clients are kept under ``key``."""
        with self._lock:
            return len(self._idle.get(key, []))
