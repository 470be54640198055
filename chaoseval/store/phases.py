"""Where a read's time goes: each phase of reading a journal (and of the report after it)
printed to standard error as it ends, when ``CHAOSEVAL_TRACE_READ=1``.

A line per phase and process: seconds since the process started this clock (wall), its CPU
seconds (its own; ``kids``: the readers it forked and joined), and from the kernel's
scheduler statistics how the wall time divides: on a CPU, runnable but waiting for one
(another process had it: load), and neither (asleep: waiting for the disk, a pipe, a
forked reader). Off by default: nothing is read or printed then.
"""

from __future__ import annotations

import os
import sys
import time

__all__ = ["ENV", "enabled", "phase"]

ENV = "CHAOSEVAL_TRACE_READ"


def enabled() -> bool:
    return os.environ.get(ENV) == "1"


def _scheduled() -> tuple[float, float] | None:
    """Seconds this process spent on a CPU and waiting in a run queue (Linux), else None."""
    try:
        with open("/proc/self/schedstat") as fh:
            run, wait, _ = fh.read().split()
        return int(run) / 1e9, int(wait) / 1e9
    except (OSError, ValueError):
        return None


_start: tuple[int, float, tuple[float, float] | None] | None = None  # pid, wall, scheduled


def phase(what: str) -> None:
    """``what`` has just ended: one line to standard error (only when tracing is on)."""
    global _start
    if not enabled():
        return
    pid, now, sched = os.getpid(), time.perf_counter(), _scheduled()
    if _start is None or _start[0] != pid:  # the first line here (a forked reader: its own)
        _start = (pid, now, sched)
    wall = now - _start[1]
    t = os.times()
    parts = [
        f"pid {pid}",
        f"wall {wall:7.2f}",
        f"cpu {t.user + t.system:7.2f}",
        f"kids {t.children_user + t.children_system:7.2f}",
    ]
    first = _start[2]
    if sched is not None and first is not None:
        on, queued = sched[0] - first[0], sched[1] - first[1]
        parts += [f"on-cpu {on:7.2f}", f"run-queue {queued:7.2f}",
                  f"asleep {wall - on - queued:7.2f}"]  # fmt: skip
    print(f"[read] {' '.join(parts)}: {what}", file=sys.stderr, flush=True)
