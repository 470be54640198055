"""A worker process of the process executor: its own event loop, several trials at once.

Forked from the runner, so it already holds the plans, the scenarios and the agent; the
runner sends plan indices, the worker answers with finished trials (journal lines encoded
here, in parallel). It never writes the journal. A watchdog thread names the trial whose
code blocks the event loop (``time.sleep`` in async code, a busy loop), so the runner kills
the worker for that trial's timeout and re-queues the others, instead of blaming whichever
trial happened to start first.
"""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from functools import partial
from types import FrameType
from typing import Any

import anyio
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from chaoseval.engine.executors.base import TrialJob
from chaoseval.engine.executors.one import agent_session, finish
from chaoseval.engine.executors.wire import BLOCKER, HEARTBEAT, receive, send
from chaoseval.engine.loops import run_loop
from chaoseval.engine.trial import TrialPlan
from chaoseval.errors import relay, user_facing

BEAT = 0.05  # seconds between heartbeats of the worker's event loop
STALL = 0.5  # seconds without a heartbeat after which the loop counts as blocked
PR_SET_PDEATHSIG = 1


def main(
    sock: socket.socket,
    plans: Sequence[TrialPlan],
    job: TrialJob,
    shared: Any,
    close: Sequence[int],
) -> None:
    """The worker process's body (multiprocessing calls it after the fork)."""
    for fd in close:  # the runner's ends of the other workers' sockets
        with contextlib.suppress(OSError):
            os.close(fd)
    _die_with_parent()
    # Its own process group: killing a worker kills what its trials started (an exec:
    # agent's process), not only the worker.
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    # Ctrl-C reaches the whole process group; the runner decides what happens to trials.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    shared[HEARTBEAT] = time.monotonic()
    shared[BLOCKER] = -1
    watchdog = threading.Thread(
        target=_watch, args=(shared, threading.main_thread().ident), daemon=True
    )
    watchdog.start()
    # A fresh context: the fork happened inside the runner's task, whose context says an
    # event loop is running (anyio would refuse to start this worker's own).
    # The runner's own kind of loop (uvloop where installed): a new one, made in this process.
    serve = partial(run_loop, _serve, sock, plans, job, shared)
    contextvars.Context().run(serve)


def _die_with_parent() -> None:
    """On Linux, the kernel kills this worker when the runner dies (even by SIGKILL), so no
    blocked trial outlives its run."""
    if sys.platform != "linux":
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


async def _serve(
    sock: socket.socket, plans: Sequence[TrialPlan], job: TrialJob, shared: Any
) -> None:
    stream = await SocketStream.from_socket(sock)
    reader = BufferedByteReceiveStream(stream)
    lock = anyio.Lock()

    async def reply(message: tuple[Any, ...]) -> None:
        async with lock:  # one frame at a time on the socket
            await send(stream, message)

    async def trial(index: int) -> None:
        finished = await finish(plans[index], job)  # run_trial records every outcome itself
        finished.parsed = None  # the line is what travels
        await reply(("done", index, finished))

    try:
        async with agent_session(job.agent), anyio.create_task_group() as outer:
            outer.start_soon(_heartbeat, shared)
            async with anyio.create_task_group() as trials:
                while True:
                    try:
                        message = await receive(reader)
                    except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError):
                        outer.cancel_scope.cancel()  # the runner is gone: nobody to answer
                        return
                    if message[0] == "stop":
                        break
                    trials.start_soon(trial, message[1])
            outer.cancel_scope.cancel()
    except Exception as exc:  # the agent's session could not start: the run cannot go on
        # What the user must fix (no Chromium, a bad setting) travels as its one message and
        # this worker ends quietly: no traceback on the terminal around it.
        found = user_facing(exc)
        with contextlib.suppress(Exception):
            await reply(("fatal", traceback.format_exc(limit=8), found and relay(found)))
        if found is None:
            raise


async def _heartbeat(shared: Any) -> None:
    while True:
        shared[HEARTBEAT] = time.monotonic()
        shared[BLOCKER] = -1
        await anyio.sleep(BEAT)


def _watch(shared: Any, main_ident: int | None, where: str = __file__) -> None:
    """While the event loop is blocked, name the trial whose code is on the loop thread's
    stack (the ``trial`` function of ``where``, this module's :func:`_serve` by default, its
    ``index`` local)."""
    while True:
        time.sleep(BEAT)
        if time.monotonic() - shared[HEARTBEAT] < STALL or main_ident is None:
            continue
        frame = sys._current_frames().get(main_ident)
        shared[BLOCKER] = _trial_index(frame, where)


def _trial_index(frame: FrameType | None, where: str) -> int:
    while frame is not None:
        if frame.f_code.co_name == "trial" and frame.f_code.co_filename == where:
            index = frame.f_locals.get("index")
            return index if isinstance(index, int) else -1
        frame = frame.f_back
    return -1
