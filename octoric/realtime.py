"""Real-time scheduling for the processes on the latency path, opt-in.

``OCTORIC_RT_PRIORITY=N`` (1-99) puts a process that calls ``apply_from_env`` first thing
under ``SCHED_FIFO`` priority N; the threads it starts afterwards (RMR's receive threads, the
xApp's handlers) inherit it. On a busy host, a message that wakes a thread of an ordinary
process waits behind whatever else the scheduler runs (measured on the 2-core CI machine: a
UDP ping between two processes, p99 0.12 ms idle, 0.43 ms while the handover benchmark runs);
every hop of the E2 -> e2term -> RMR -> xApp path pays it. A RAN host gives its real-time work
this priority (srsRAN_Project's gNB runs so). It needs CAP_SYS_NICE (root has it); without it
the process runs as before and says so once. The kernel's RT throttling (95% of each second
by default) keeps a runaway RT thread from taking a whole core forever.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import threading

ENV = "OCTORIC_RT_PRIORITY"
# A background thread's nice value in a real-time process. Loop bench 1x100@1ms, 2026-11-27,
# the OCC xApp's SDL writer at nice 0: p99 1.24-1.37 ms; at 10: 0.98-1.09; at 19: 1.06-1.07.
BACKGROUND_NICE = 10
log = logging.getLogger("octoric.realtime")


def priority_from_env() -> int | None:
    """The priority ``OCTORIC_RT_PRIORITY`` asks for; None when unset or 0. A value outside
    1-99 raises ``ValueError`` with what is allowed."""
    raw = os.environ.get(ENV, "").strip()
    if not raw or raw == "0":
        return None
    if not raw.isdigit() or not 1 <= int(raw) <= 99:
        raise ValueError(f"{ENV}={raw!r}: a SCHED_FIFO priority 1-99, or 0 for none")
    return int(raw)


def may_grant(priority: int) -> bool:
    """Can this process give ``priority`` to the processes it starts (root, or an
    RLIMIT_RTPRIO that high)?"""
    import resource

    return os.geteuid() == 0 or resource.getrlimit(resource.RLIMIT_RTPRIO)[0] >= priority


def apply_from_env(who: str, reset_on_fork: bool = False) -> int | None:
    """Run the calling thread (and the threads it starts from now on) under SCHED_FIFO at the
    priority ``OCTORIC_RT_PRIORITY`` gives; the priority, or None (unset, bad, or not
    permitted: said in the log, the process runs on at normal priority). ``reset_on_fork``:
    processes it starts later run at normal priority (SCHED_RESET_ON_FORK), for a supervisor
    whose children choose their own."""
    try:
        prio = priority_from_env()
    except ValueError as e:
        log.error("%s: %s", who, e)
        return None
    if prio is None:
        return None
    try:
        policy = os.SCHED_FIFO | (os.SCHED_RESET_ON_FORK if reset_on_fork else 0)
        os.sched_setscheduler(0, policy, os.sched_param(prio))
    except (PermissionError, OSError) as e:
        log.warning("%s: %s=%d not applied (%s): running at normal priority", who, ENV, prio, e)
        return None
    log.info("%s: SCHED_FIFO priority %d", who, prio)
    return prio


def grant(pid: int, who: str) -> int | None:
    """Put another process (one that cannot call ``apply_from_env`` itself: redis-server) under
    SCHED_FIFO at the priority ``OCTORIC_RT_PRIORITY`` gives; the priority, or None.

    Redis is on the RIC's path (e2term, submgr and the xApps read and write the SDL): left at
    normal priority beside real-time e2term, xApps and a 4-cell gNB it got too little CPU to
    answer the testbed's checks within 2 s for 45 s (2026-11-28)."""
    try:
        prio = priority_from_env()
    except ValueError:
        return None  # said by the processes that apply it
    if prio is None:
        return None
    try:
        os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(prio))
    except (PermissionError, OSError) as e:
        log.warning("%s: %s=%d not applied (%s): running at normal priority", who, ENV, prio, e)
        return None
    log.info("%s: SCHED_FIFO priority %d", who, prio)
    return prio


def background_thread() -> bool:
    """Run the calling thread at normal priority again (SCHED_OTHER, nice ``BACKGROUND_NICE``),
    when its process runs under SCHED_FIFO: for a thread off the latency path (an SDL
    writer), which would otherwise preempt every ordinary process on the host (Redis, the
    senders that read the feedback) whenever it works. True if it changed the thread's
    policy."""
    if os.sched_getscheduler(0) != os.SCHED_FIFO:
        return False
    try:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))  # 0: this thread (Linux)
    except OSError as e:
        log.warning("background thread stays SCHED_FIFO: %s", e)
        return False
    with contextlib.suppress(OSError):  # and behind the host's ordinary work (nice, per thread)
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)
    return True


def freeze_startup_heap() -> int:
    """Move every object alive now (modules, the ASN.1 codecs' type objects, the RMR and
    HTTP machinery) out of the garbage collector's sight (``gc.freeze``); the number frozen.

    A full collection walks every tracked object: with the start-up heap of an xApp (pycrate's
    generated types alone are tens of thousands of objects) that stalls every thread of the
    process for tens of ms, a few times a minute at 1000 indications/s. The start-up heap
    lives as long as the process, so collecting it gains nothing. Call once, after start-up.
    ``OCTORIC_GC_FREEZE=0`` leaves the collector as Python has it (an A/B switch for the
    benchmarks)."""
    if os.environ.get("OCTORIC_GC_FREEZE") == "0":
        return 0
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
