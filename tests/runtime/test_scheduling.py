"""kspark/runtime/scheduling.py: a thread's request for a short scheduler slice, read back from
Linux (``/proc/<pid>/task/<tid>/sched``), and what it answers where Linux does not take it."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from kspark.runtime.scheduling import request_slice

T = TypeVar("T")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="time slices are Linux's")


def slice_ns(pid: int, tid: int) -> int:
    """The slice Linux gives thread ``tid`` of process ``pid`` (EEVDF's ``se.slice``)."""
    for line in Path(f"/proc/{pid}/task/{tid}/sched").read_text().splitlines():
        if line.startswith("se.slice"):
            return int(line.split(":")[1])
    raise AssertionError(f"no se.slice for thread {tid} of {pid}: not an EEVDF kernel")


def in_thread(fn: Callable[[], T]) -> T:
    """``fn()`` in a new thread (a slice or a policy set there stays there)."""
    out: list[T] = []
    worker = threading.Thread(target=lambda: out.append(fn()))
    worker.start()
    worker.join()
    return out[0]


def test_a_thread_gets_the_slice_it_asks_for_clamped_and_its_threads_inherit_it() -> None:
    def ask() -> tuple[str | None, int, int, int]:
        why = request_slice(0.0005)
        mine = slice_ns(os.getpid(), threading.get_native_id())
        child = in_thread(lambda: slice_ns(os.getpid(), threading.get_native_id()))
        request_slice(10.0)  # above Linux's 100 ms: clamped, not refused
        return why, mine, child, slice_ns(os.getpid(), threading.get_native_id())

    default = slice_ns(os.getpid(), threading.get_native_id())
    why, mine, child, clamped = in_thread(ask)
    if why is not None and "kernel ignores" in why:
        pytest.skip(why)
    assert why is None
    assert (mine, child, clamped) == (500_000, 500_000, 100_000_000)
    assert slice_ns(os.getpid(), threading.get_native_id()) == default  # the caller's thread only


def test_another_thread_is_named_by_its_native_id() -> None:
    started, stop = threading.Event(), threading.Event()
    ids: list[int] = []

    def wait() -> None:
        ids.append(threading.get_native_id())
        started.set()
        stop.wait()

    worker = threading.Thread(target=wait)
    worker.start()
    try:
        started.wait()
        why = request_slice(0.0002, ids[0])
        if why is not None and "kernel ignores" in why:
            pytest.skip(why)
        assert why is None and slice_ns(os.getpid(), ids[0]) == 200_000
    finally:
        stop.set()
        worker.join()


def test_a_refusal_is_an_answer_naming_why_never_an_exception() -> None:
    def batch_thread() -> str | None:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
        return request_slice(0.0005)

    assert in_thread(batch_thread) == f"the thread's policy is {os.SCHED_BATCH}, not SCHED_OTHER"
    why = request_slice(0.0005, 2**22 + 12345)  # above pid_max's ceiling: no such thread
    assert why is not None and why.startswith("sched_getattr failed: No such process")
