"""A guard that kills ``exec:`` agents when the process that started them dies.

An exec: agent runs in a session of its own, so that it and its children can be stopped as
one process group (:mod:`chaoseval.agents.process`). When the process that started it dies
without stopping it (a worker SIGKILLed from outside, by the OOM killer, or by Ray), nothing
would: the agent is reparented to init and runs on. ``PR_SET_PDEATHSIG`` set in the agent
would not do: it covers the agent and not its children, and it fires when the *thread* that
started the agent ends, not its process.

So each process that starts agents first starts one guard: a small Python process reading a
pipe whose write end only its starter holds. The starter writes an agent's process group id
when it starts the agent, and the id negated once the group is stopped. However the starter
dies, the kernel closes its end of the pipe: the guard reads end-of-file, SIGKILLs every
group still written down, and exits. It is started once per process (a forked worker starts
its own), in a session of its own so that a signal to its starter's group spares it.

A group id is known only once the agent has started, and the starter may die between the two
(SIGKILLed while its loop was busy elsewhere). So before it starts an agent the starter writes a
mark (:func:`expect`) that it also puts in the agent's environment, and takes it back once the
group is written down: at end-of-file the guard also kills every process whose environment
carries a mark still pending (Linux's ``/proc``; elsewhere only the groups are killed).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import threading
from dataclasses import dataclass

GUARD = """\
import os, signal, sys
groups, marks = set(), set()
for line in sys.stdin.buffer:
    if line[:1] == b"T":
        marks.add(b"CHAOSEVAL_GUARD=" + line[1:].strip())
    elif line[:1] == b"t":
        marks.discard(b"CHAOSEVAL_GUARD=" + line[1:].strip())
    elif int(line) > 0:
        groups.add(int(line))
    else:
        groups.discard(-int(line))
for group in groups:
    try:
        os.killpg(group, signal.SIGKILL)
    except OSError:
        pass
for entry in os.listdir("/proc") if marks and os.path.isdir("/proc") else ():
    try:
        with open("/proc/" + entry + "/environ", "rb") as f:
            if not marks.intersection(f.read().split(b"\\0")):
                continue
        os.killpg(os.getpgid(int(entry)), signal.SIGKILL)
    except (OSError, ValueError):
        pass
"""


@dataclass
class _Guard:
    owner: int  # the pid that started it (a forked child inherits the object, not the guard)
    proc: subprocess.Popen[bytes]
    fd: int  # the write end of its pipe


_guard: _Guard | None = None
_lock = threading.Lock()


MARK = "CHAOSEVAL_GUARD"  # the environment variable an agent's mark is put in


def expect() -> str:
    """A mark to put in the environment (as :data:`MARK`) of an agent about to start: if this
    process dies before :func:`watch` has its group, the guard kills what carries it."""
    mark = secrets.token_hex(8)
    _send(f"T{mark}")
    return mark


def watch(group: int, mark: str | None = None) -> None:
    """Kill process group ``group`` if this process dies before it calls :func:`forget`;
    ``mark`` (from :func:`expect`) is then no longer needed."""
    _send(str(group))
    if mark is not None:
        _send(f"t{mark}")


def forget(group: int) -> None:
    """``group`` is stopped: its id may be reused by another group."""
    _send(str(-group))


def _send(line: str) -> None:
    with _lock:
        for _ in range(2):  # once more with a new guard if this one was killed
            guard = _current()
            if guard is None:
                return
            try:
                os.write(guard.fd, f"{line}\n".encode())
                return
            except OSError:
                _drop(guard)


def _after_fork() -> None:
    """In a forked child: close the copy of the parent's write end at once. Kept open, it
    would hide the parent's death from the parent's guard for as long as this child lives,
    whether or not the child ever starts an agent. The child starts its own guard on use."""
    global _guard
    if _guard is not None and _guard.owner != os.getpid():
        with contextlib.suppress(OSError):
            os.close(_guard.fd)
        _guard = None


os.register_at_fork(after_in_child=_after_fork)


def _current() -> _Guard | None:
    """This process's guard, started on first use (None where it cannot start)."""
    global _guard
    _after_fork()  # a child forked by a way that skips the fork hooks (os.fork in C code)
    if _guard is not None and _guard.proc.poll() is not None:
        _drop(_guard)
    if _guard is None:
        _guard = _start()
    return _guard


def _start() -> _Guard | None:
    read, write = os.pipe()  # neither end is inherited by what this process starts later
    try:
        proc = subprocess.Popen(
            [sys.executable, "-S", "-c", GUARD],
            stdin=read,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        os.close(write)
        return None
    finally:
        os.close(read)
    return _Guard(os.getpid(), proc, write)


def _drop(guard: _Guard) -> None:
    global _guard
    with contextlib.suppress(OSError):
        os.close(guard.fd)
    if _guard is guard:
        _guard = None
