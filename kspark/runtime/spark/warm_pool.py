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
    """Idle clients of this process by key; :meth:`borrow` one, :meth:`give_back` it when done."""

    def __init__(self, idle_seconds: float, close: Callable[[C], None] = lambda client: None) -> None:
        self.idle_seconds = idle_seconds
        self._close = close
        self._lock = threading.Lock()
        self._idle: dict[str, tuple[C, threading.Timer]] = {}

    def borrow(self, key: str, make: Callable[[], C]) -> C:
        """The idle client kept under ``key``, or a new one from ``make``."""
        with self._lock:
            entry = self._idle.pop(key, None)
        if entry is None:
            return make()
        client, timer = entry
        timer.cancel()
        return client

    def give_back(self, key: str, client: C) -> None:
        """Keep ``client`` for the next task (a client that failed must not be given back)."""

        def evict() -> None:
            with self._lock:
                entry = self._idle.get(key)
                if entry is None or entry[0] is not client:
                    return
                del self._idle[key]
            self._close(client)

        timer = threading.Timer(self.idle_seconds, evict)
        timer.daemon = True
        with self._lock:
            replaced = self._idle.pop(key, None)
            self._idle[key] = (client, timer)
        timer.start()
        if replaced is not None:  # two tasks of one process used the same kind of client at once
            replaced[1].cancel()
            self._close(replaced[0])

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return key in self._idle
