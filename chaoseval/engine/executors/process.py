"""The process executor: trials in forked worker processes, supervised by the runner.

Each worker runs several trials at once on its own event loop (``slots``), so a run at
``-j 64`` hides latency as well as in process, on as many workers as there are CPUs. What
no trial can do any more is sink the run:

- a trial past its wall timeout is killed with its worker and recorded as a timeout; the
  trial blamed is the one whose code blocks the worker's event loop when it is blocked (the
  worker's watchdog names it), else the overdue one;
- a worker that exits (``os._exit``), dies of a signal (a segfault) or goes past
  ``--max-memory`` (its RSS, polled) is an agent crash. With one trial in flight, that trial
  is recorded as the crash; with several, none is blamed on a guess: they are run again one
  at a time (``solo``), so the one that crashes its worker again is the one recorded;
- the other trials in flight in a lost worker are queued again, first in line: never lost,
  never scored from half a run (a killed worker's records never reach the journal).

Workers are forked (POSIX): they inherit the loaded scenarios, plugins and agent, so user
code needs no importable module. The runner stays the journal's only writer.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from typing import Any

import anyio
from anyio.abc import SocketStream, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream

from chaoseval.engine.executors import worker
from chaoseval.engine.executors.base import AgentCrashed, Finished, Sink, TrialJob
from chaoseval.engine.executors.one import Flight, kill_grace, overdue
from chaoseval.engine.executors.queue import TrialQueue
from chaoseval.engine.executors.reap import kill_tree
from chaoseval.engine.executors.wire import BLOCKER, HEARTBEAT, receive, send
from chaoseval.engine.trial import TrialPlan
from chaoseval.errors import ChaosevalError, ConfigError, HarnessError, relayed

TICK = 0.1  # seconds between the supervisor's looks at its workers
LOST_IDLE = 3  # workers dying with no trial in flight before the run gives up


@dataclass
class _Worker:
    proc: BaseProcess
    stream: SocketStream
    reader: BufferedByteReceiveStream
    shared: Any  # multiprocessing RawArray: HEARTBEAT, BLOCKER
    fd: int
    inflight: dict[int, Flight] = field(default_factory=dict)
    solo: bool = False  # running a suspect: nothing else is sent to it
    kill_reason: str | None = None  # why the runner killed it
    kill_blame: int | None = None
    kill_timeout: bool = False

    def kill(self, reason: str, blame: int | None, *, timeout: bool) -> None:
        self.kill_reason, self.kill_blame, self.kill_timeout = reason, blame, timeout
        _kill_group(self.proc)


def _kill_group(proc: BaseProcess) -> None:
    """SIGKILL the worker, its process group and what its trials started in sessions of their
    own (an exec: agent's), so no agent outlives its trial."""
    if proc.pid is not None and proc.exitcode is None:  # a reaped pid may be another's now
        kill_tree(proc.pid, group=True)
    proc.kill()


class ProcessExecutor:
    name = "process"

    def __init__(self, workers: int | None = None):
        self.workers = workers

    async def run(self, plans: Sequence[TrialPlan], job: TrialJob, sink: Sink) -> None:
        if not plans:
            return
        if job.max_memory is not None and _rss(os.getpid()) is None:
            raise ConfigError("--max-memory reads worker memory from /proc: Linux only")
        n = self.workers or min(len(plans), job.concurrency, os.cpu_count() or 1)
        await _Pool(plans, job, sink, n, math.ceil(job.concurrency / n)).run()


class _Pool:
    def __init__(
        self, plans: Sequence[TrialPlan], job: TrialJob, sink: Sink, size: int, slots: int
    ):
        self.plans, self.job, self.sink = plans, job, sink
        self.size, self.slots = size, slots
        # (plan index, queued again, suspect): a trial queued again skips the budget gate.
        self.queue = TrialQueue(len(plans))
        self.workers: list[_Worker] = []
        self.ctx = multiprocessing.get_context("fork")
        self.finished = anyio.Event()
        self.fatal: str | None = None
        self.fatal_error: ChaosevalError | None = None
        self.idle_losses = 0
        self.settling = 0  # lost workers whose trials are not settled yet
        self._tg: TaskGroup | None = None

    async def run(self) -> None:
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                for _ in range(self.size):
                    await self._spawn()
                tg.start_soon(self._supervise)
                await self.finished.wait()
                tg.cancel_scope.cancel()
        finally:
            await self._stop_all()
        if self.fatal_error is not None:
            raise self.fatal_error
        if self.fatal is not None:
            raise HarnessError(f"a worker process could not start the agent:\n{self.fatal}")

    # --- workers -----------------------------------------------------------------------------

    async def _spawn(self) -> None:
        parent, child = socket.socketpair()
        shared = self.ctx.RawArray("d", 2)
        proc = self.ctx.Process(
            target=worker.main,
            args=(child, self.plans, self.job, shared, [w.fd for w in self.workers]),
            daemon=True,
            name="chaoseval-worker",
        )
        proc.start()
        child.close()
        stream = await SocketStream.from_socket(parent)
        w = _Worker(proc, stream, BufferedByteReceiveStream(stream), shared, parent.fileno())
        self.workers.append(w)
        assert self._tg is not None
        self._tg.start_soon(self._read, w)
        await self._fill(w)

    async def _read(self, w: _Worker) -> None:
        try:
            while True:
                message = await receive(w.reader)
                if message[0] == "done":
                    await self._done(w, message[1], message[2])
                elif message[0] == "fatal":
                    self.fatal = message[1]
                    if message[2] is not None:  # what the user must fix: said as it was
                        self.fatal_error = relayed(*message[2])
                    self.finished.set()
        except (
            anyio.EndOfStream,
            anyio.IncompleteRead,
            anyio.BrokenResourceError,
            anyio.ClosedResourceError,
        ):
            pass
        await self._gone(w)

    async def _done(self, w: _Worker, index: int, finished: Finished) -> None:
        flight = w.inflight.pop(index, None)
        if flight is None:
            return  # already settled (its worker was being killed as it answered)
        if flight.suspect:
            w.solo = False
        self.sink.done(finished)
        await self._fill(w)
        self._check_finished()

    async def _fill(self, w: _Worker) -> None:
        """Send ``w`` trials up to its slots; a suspect only to an empty worker, alone."""
        while self.queue and not w.solo and len(w.inflight) < self.slots:
            if w.kill_reason is not None or w.proc.exitcode is not None:
                return
            taken = self.queue.take(bool(w.inflight), self.sink.may_start)
            if taken is None:
                break  # emptied by skips (the run may be finished), or a suspect waits
            index, suspect = taken
            w.inflight[index] = Flight.now(suspect)
            w.solo = suspect
            try:
                await send(w.stream, ("run", index))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                return  # the worker is gone; _gone re-queues what it held
        self._check_finished()

    async def _gone(self, w: _Worker) -> None:
        """A worker's socket closed: it exited, crashed or was killed. Settle its trials."""
        if w not in self.workers:
            return
        self.workers.remove(w)
        # Counted until settled: two workers lost at once must not let the first to settle
        # declare the run finished while the other's trials are still in flight.
        self.settling += 1
        try:
            await self._settle_gone(w)
        finally:
            self.settling -= 1
        self._check_finished()

    async def _settle_gone(self, w: _Worker) -> None:
        await w.stream.aclose()
        code = await _exit_code(w.proc)
        if self.finished.is_set():
            return
        reason = w.kill_reason or _describe_exit(code)
        if not w.inflight:
            self.idle_losses += 1
            if self.idle_losses >= LOST_IDLE:
                self.fatal = f"worker processes keep dying with no trial running ({reason})"
                self.finished.set()
                return
        self._settle(w, reason)
        if self.queue:
            await self._spawn()

    def _settle(self, w: _Worker, reason: str) -> None:
        """Record the blamed trial; queue the others again (as suspects when nobody could be
        blamed), first in line."""
        flights, w.inflight = w.inflight, {}
        blame, again = self.queue.settle(flights, w.kill_blame)
        if self.job.store is not None:
            for index in again:  # it runs again from the start
                self.job.store.discard(self.plans[index].trial_id)
        if blame is not None:
            error: BaseException = TimeoutError(reason) if w.kill_timeout else AgentCrashed(reason)
            record = flights[blame].lost(self.plans[blame], self.job, error)
            self.sink.done(Finished.of(record))

    def _check_finished(self) -> None:
        if not self.queue and not self.settling and not any(w.inflight for w in self.workers):
            self.finished.set()

    # --- supervision -------------------------------------------------------------------------

    async def _supervise(self) -> None:
        while True:
            await anyio.sleep(TICK)
            now = time.monotonic()
            for w in list(self.workers):
                if w.kill_reason is None and w.proc.exitcode is None:
                    self._look_at(w, now)

    def _look_at(self, w: _Worker, now: float) -> None:
        limit = self.job.max_memory
        if limit is not None:
            rss = _rss(w.proc.pid or 0)
            if rss is not None and rss > limit:
                w.kill(
                    f"its worker process went past --max-memory ({rss / 2**20:.0f} MB RSS > "
                    f"{limit / 2**20:.0f} MB)",
                    None,
                    timeout=False,
                )
                return
        wall = self.job.wall_timeout
        blocked = now - w.shared[HEARTBEAT] > worker.STALL
        blocker = int(w.shared[BLOCKER]) if blocked else -1
        due = overdue(w.inflight, now, wall, blocked, blocker, kill_grace(self.job.agent))
        if due is not None:
            w.kill(_timeout_text(wall, due[1]), due[0], timeout=True)

    async def _stop_all(self) -> None:
        for w in self.workers:
            try:
                await send(w.stream, ("stop",))
            except Exception:
                _kill_group(w.proc)
        deadline = time.monotonic() + 5
        for w in list(self.workers):
            while w.proc.exitcode is None and time.monotonic() < deadline:
                await anyio.sleep(0.01)
            if w.proc.exitcode is None:
                _kill_group(w.proc)
            await _exit_code(w.proc)
            await w.stream.aclose()
        self.workers.clear()


def _timeout_text(wall: float, how: str) -> str:
    return f"trial exceeded its time budget ({wall:g}s wall); {how}, so its worker was killed"


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "its worker process stopped answering"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"its worker process was killed by {name}"
    return f"its worker process exited with code {code} (os._exit, or a crash outside Python)"


async def _exit_code(proc: BaseProcess) -> int | None:
    """The worker's exit code, reaped without blocking the event loop (a second at most)."""
    for _ in range(200):
        if proc.exitcode is not None:
            break
        await anyio.sleep(0.005)
    return proc.exitcode


PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _rss(pid: int) -> int | None:
    """Resident memory of ``pid`` in bytes, or None when it cannot be read here."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as fh:
            return int(fh.read().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return None
