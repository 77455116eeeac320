"""Asking Linux's scheduler for short time slices for a thread that answers requests.

Why: the HTTP endpoint of interactive queries answers a point read in a fraction of a
millisecond of CPU, but on a machine whose cores the application's own tasks keep busy it first
waits for a core. Since Linux 6.6 the fair scheduler is EEVDF: each thread runs for a *slice* (a
base slice scaled by the number of cores: 1.4 ms on this 2-core machine) and the runnable thread
with the earliest virtual deadline (where it stands plus its slice) runs next. Since Linux 6.12 a
thread may ask for a shorter slice (``sched_setattr``'s ``sched_runtime`` for ``SCHED_OTHER``,
0.1-100 ms), no privilege needed: it then gets earlier deadlines, so a core sooner when it wakes,
in exchange for being preempted sooner. It does not get more CPU than its share.

Measured (bench/results/iq-slice/): with W2 filling this machine's two cores, a bare HTTP server
over a dict answered point reads at p99 2.8-3.4 ms with the default slice and 2.1-2.6 ms with
0.5 ms, in the same runs.

Elsewhere (another OS, a kernel before 6.12, seccomp forbidding the call) the request fails and
the thread keeps the default: :func:`request_slice` says so in its answer, never raises.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
import threading

__all__ = ["request_slice"]

_SYSCALLS = {"x86_64": (314, 315), "aarch64": (274, 275)}  # (sched_setattr, sched_getattr)
_MIN_SLICE_NS = 100_000  # Linux clamps a requested slice to 0.1-100 ms
_MAX_SLICE_NS = 100_000_000


class _SchedAttr(ctypes.Structure):
    """``struct sched_attr`` (include/uapi/linux/sched/types.h): ``SCHED_ATTR_SIZE_VER1``, 56 bytes."""

    _fields_ = [
        ("size", ctypes.c_uint32),
        ("sched_policy", ctypes.c_uint32),
        ("sched_flags", ctypes.c_uint64),
        ("sched_nice", ctypes.c_int32),
        ("sched_priority", ctypes.c_uint32),
        ("sched_runtime", ctypes.c_uint64),
        ("sched_deadline", ctypes.c_uint64),
        ("sched_period", ctypes.c_uint64),
        ("sched_util_min", ctypes.c_uint32),
        ("sched_util_max", ctypes.c_uint32),
    ]


def request_slice(seconds: float, thread_id: int | None = None) -> str | None:
    """Ask for a scheduler slice of ``seconds`` (clamped to 0.1-100 ms) for ``thread_id`` (a
    native id; the calling thread by default), keeping its policy and nice value. None when
    Linux took it, else why not (for a log line: it changes no result, only latency)."""
    if not sys.platform.startswith("linux"):
        return f"time slices are Linux's, not {sys.platform}'s"
    calls = _SYSCALLS.get(platform.machine())
    if calls is None:
        return f"no sched_setattr number known for {platform.machine()}"
    set_call, get_call = calls
    tid = threading.get_native_id() if thread_id is None else thread_id
    libc = ctypes.CDLL(None, use_errno=True)
    attr = _SchedAttr()
    if libc.syscall(get_call, tid, ctypes.byref(attr), ctypes.sizeof(attr), 0) != 0:
        return f"sched_getattr failed: {_errno_text()}"
    if attr.sched_policy != 0:  # SCHED_OTHER only: a slice means nothing to the others
        return f"the thread's policy is {attr.sched_policy}, not SCHED_OTHER"
    attr.size = ctypes.sizeof(attr)
    attr.sched_flags = 0
    attr.sched_runtime = min(max(int(seconds * 1e9), _MIN_SLICE_NS), _MAX_SLICE_NS)
    if libc.syscall(set_call, tid, ctypes.byref(attr), 0) != 0:
        return f"sched_setattr failed: {_errno_text()}"
    check = _SchedAttr()
    libc.syscall(get_call, tid, ctypes.byref(check), ctypes.sizeof(check), 0)
    if check.sched_runtime != attr.sched_runtime:  # a kernel before 6.12 ignores it
        return "this kernel ignores a requested slice (EEVDF custom slices came in Linux 6.12)"
    return None


def _errno_text() -> str:
    code = ctypes.get_errno()
    return f"{os.strerror(code)} (errno {code})"
