"""The Ray executor: trials on a Ray cluster, one machine or many (``chaoseval[ray]``).

``--ray-address`` joins an existing cluster (``ray start --head`` on one machine, ``ray start
--address ...`` on the others); without it a local Ray is started for the run (``-j`` CPUs at
most, no dashboard, no usage stats, its files under a temp dir) and shut down after it.

Trials run in a pool of async actors (:mod:`ray_worker` says why not one task per trial), one
per CPU used, several trials each. The driver (this process) is the journal's only writer:
each finished trial comes back as its encoded journal line with its artifacts' bytes. The
supervision is the process executor's, over Ray:

- a trial past its wall timeout gets its actor killed and is recorded as a timeout (the one
  whose code blocks the actor's event loop when it is blocked, else the overdue one);
- an actor whose worker process dies (``os._exit``, a signal) or goes past ``--max-memory``
  (its RSS, asked every tick) is an agent crash: with one trial in flight, that trial's; with
  several, each is run again alone (``solo``) so the one that kills its worker again is
  recorded;
- the other trials of a lost actor are queued again, first in line, for any actor with a
  free slot; a trial lost with its node (a machine gone) is queued again, and after
  ``NODE_RETRIES`` losses recorded as not evaluable: never lost, never scored from half a run;
- one call kept open on every actor (:meth:`TrialActor.watch`) fails when its worker dies,
  so a worker that dies idle is settled then, not blamed on the next trial sent to it.

User code reaches the workers: on a cluster, ``--app-dir`` is uploaded as the job's runtime
environment ``working_dir`` (for ``--agent module:factory``); on a Ray on this machine, each
actor adds the driver's import path (``--app-dir`` included) to its ``sys.path`` before it
unpickles the agent (:meth:`RayExecutor._import_path` says why not a runtime environment's
``PYTHONPATH``). See docs/RAY.md.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from chaoseval.channels.model import prices
from chaoseval.engine.executors.base import AgentCrashed, Finished, Sink, TrialJob
from chaoseval.engine.executors.one import Flight, kill_grace, overdue
from chaoseval.engine.executors.queue import TrialQueue
from chaoseval.engine.executors.ray_worker import WATCH, Result, TrialActor
from chaoseval.engine.trial import TrialPlan
from chaoseval.errors import ChaosevalError, ConfigError, HarnessError, HarnessStop, user_facing

TICK = 0.1  # seconds between the driver's looks at its actors
LOST_IDLE = 3  # actors dying with no trial in flight before the run gives up
NODE_RETRIES = 2  # times a trial is queued again after its node was lost
KILL_DELAY = 0.5  # seconds an actor gets to kill its exec: agents before it is killed
USER_MODULES = "chaoseval_user_"  # how chaoseval.loading.files names scenario files' modules
# Never uploaded as the working_dir: environments, VCS data, journals and their artifacts.
EXCLUDES = [".venv", "venv", ".git", "__pycache__", "*.jsonl", "*.jsonl.d", "node_modules"]


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(
            "--executor ray needs Ray: pip install 'chaoseval[ray]' (on every node of the cluster)"
        ) from exc
    return ray


class RayExecutor:
    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        app_dir: Path | None = None,
        num_cpus: int | None = None,
    ):
        self.address, self.app_dir, self.num_cpus = address, app_dir, num_cpus

    async def run(self, plans: Sequence[TrialPlan], job: TrialJob, sink: Sink) -> None:
        if not plans:
            return
        ray = _import_ray()
        # On the event loop's thread (nothing else runs yet): Ray sets its signal handlers
        # only from the main thread.
        temp = self._connect(ray, job.concurrency)
        try:
            cpus = int(ray.cluster_resources().get("CPU", 1))
            size = max(1, min(len(plans), job.concurrency, cpus))
            pool = _Pool(ray, plans, job, sink, size, math.ceil(job.concurrency / size))
            pool.paths = [] if self.address else self._import_path()
            await pool.run()
        finally:
            if temp is not None:  # we started this Ray: it ends with the run
                await anyio.to_thread.run_sync(ray.shutdown)
                shutil.rmtree(temp, ignore_errors=True)

    def _connect(self, ray: Any, concurrency: int) -> str | None:
        """Join ``--ray-address``, or the Ray this process already joined, or start a local
        one; the temp dir of a Ray we started (None otherwise)."""
        if ray.is_initialized():
            return None
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        quiet: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
        if self.address:
            env: dict[str, Any] = {}
            if self.app_dir is not None:
                env = {"working_dir": str(self.app_dir), "excludes": EXCLUDES}
            ray.init(address=self.address, runtime_env=env, **quiet)
            return None
        temp = tempfile.mkdtemp(prefix="chaoseval-ray-")  # short: Ray's socket paths live here
        ray.init(
            num_cpus=self.num_cpus or min(concurrency, os.cpu_count() or 1),
            include_dashboard=False,
            _temp_dir=temp,
            **quiet,
        )
        return temp

    def _import_path(self) -> list[str]:
        """On this machine, workers import what the driver imports: its path (the --app-dir,
        a test's directory) beyond the interpreter's own, which they share. Sent to each actor
        rather than set as a runtime environment's PYTHONPATH: an actor with a runtime
        environment of its own needs a freshly started worker process (1.5 s here), one
        without takes a worker Ray has already started (0.15 s), and a lost actor's
        replacement starts that much sooner."""
        roots = (sys.prefix, sys.base_prefix)
        paths = [str(self.app_dir)] if self.app_dir is not None else []
        for entry in sys.path:
            full = os.path.abspath(entry or os.getcwd())
            if os.path.isdir(full) and not full.startswith(roots) and full not in paths:
                paths.append(full)
        return paths


@dataclass
class _Actor:
    handle: Any
    ready: bool = False
    inflight: dict[int, Flight] = field(default_factory=dict)
    solo: bool = False
    kill_reason: str | None = None
    kill_blame: int | None = None
    kill_timeout: bool = False
    # When the newest call it answered was sent (time.monotonic()): a trial sent later has no
    # sign yet that the actor was alive to receive it.
    alive: float = 0.0


class _Pool:
    def __init__(
        self, ray: Any, plans: Sequence[TrialPlan], job: TrialJob, sink: Sink, size: int, slots: int
    ):
        self.ray, self.plans, self.job, self.sink = ray, plans, job, sink
        self.size, self.slots = size, slots
        self.paths: list[str] = []  # the driver's import path, for a Ray on this machine
        # (plan index, queued again, suspect): a trial queued again skips the budget gate.
        self.queue = TrialQueue(len(plans))
        self.node_losses: dict[int, int] = {}
        self.actors: list[_Actor] = []
        self.finished = anyio.Event()
        self.fatal: str | None = None
        self.fatal_error: ChaosevalError | None = None
        self.idle_losses = 0
        self.remote: Any = None
        self.shared: Any = None  # the plans and job, put once in Ray's object store
        self._tg: TaskGroup | None = None

    async def run(self) -> None:
        store = self.job.store
        _by_value(self.ray)
        self.remote = self.ray.remote(concurrency_groups={WATCH: 4})(TrialActor)
        # The run's price table (--prices) goes with them: it is this process's setting, and
        # an actor is a new interpreter that would otherwise price with the built-in table.
        table = prices.current()
        payload = self.ray.cloudpickle.dumps((self.plans, self.job, table), protocol=5)
        temp_root = f"chaoseval-ray-run-{self.job.run_id}"  # the actors' files, per node
        self.shared = (
            self.ray.put(payload),
            self.paths,
            None if store is None else store.root.name,
            temp_root,
        )
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                for _ in range(self.size):
                    tg.start_soon(self._spawn)
                tg.start_soon(self._supervise)
                await self.finished.wait()
                tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self._stop_all()
            shutil.rmtree(Path(tempfile.gettempdir()) / temp_root, ignore_errors=True)
        if self.fatal_error is not None:
            raise self.fatal_error
        if self.fatal is not None:
            raise HarnessError(f"a Ray worker could not run the agent:\n{self.fatal}")

    # --- actors ------------------------------------------------------------------------------

    async def _spawn(self) -> None:
        """A new actor; trials are sent once it is up (its start is no trial's time)."""
        handle = self.remote.options(
            num_cpus=1,
            max_concurrency=self.slots + 2,  # + the watch group's calls
            max_restarts=0,
        ).remote(*self.shared)
        a = _Actor(handle)
        self.actors.append(a)
        try:
            await handle.blocker.options(concurrency_group=WATCH).remote()
            a.alive = time.monotonic()
        except self.ray.exceptions.RayActorError as exc:
            await self._lost(a, exc)  # its node died as it started, or its creation failed
            return
        except self.ray.exceptions.RayError as exc:
            self._fatal(exc)  # it could not start: a runtime env, an import, the plans
            return
        a.ready = True
        assert self._tg is not None
        self._tg.start_soon(self._watch, a)
        self._fill(a)

    async def _watch(self, a: _Actor) -> None:
        """Keep one call open on ``a`` (:meth:`TrialActor.watch` never answers): a worker that
        dies idle is settled when it dies, not when it is next sent a trial."""
        try:
            await a.handle.watch.options(concurrency_group=WATCH).remote()
        except self.ray.exceptions.RayActorError as exc:
            await self._lost(a, exc)

    def _fatal(self, exc: BaseException) -> None:
        """The run cannot go on; what the user must fix is said as its one message."""
        self.fatal = str(exc)
        self.fatal_error = user_facing(exc)
        self.finished.set()

    def _fill(self, a: _Actor) -> None:
        """Send ``a`` trials up to its slots; a suspect only to an empty actor, alone."""
        while self.queue and a.ready and not a.solo and len(a.inflight) < self.slots:
            if a.kill_reason is not None or a not in self.actors:
                return
            taken = self.queue.take(bool(a.inflight), self.sink.may_start)
            if taken is None:
                break  # emptied by skips (the run may be finished), or a suspect waits
            index, suspect = taken
            a.inflight[index] = Flight.now(suspect)
            a.solo = suspect
            assert self._tg is not None
            self._tg.start_soon(self._call, a, index, a.handle.trial.remote(index))
        self._check_finished()

    async def _call(self, a: _Actor, index: int, ref: Any) -> None:
        try:
            finished, files = await ref
        except self.ray.exceptions.RayActorError as exc:
            await self._lost(a, exc)
            return
        except self.ray.exceptions.RayError as exc:  # the agent's session failed to start
            self._fatal(exc)
            return
        flight = a.inflight.pop(index, None)
        if flight is None:
            return  # already settled (its actor was being killed as it answered)
        a.alive = max(a.alive, flight.started)
        if flight.suspect:
            a.solo = False
        self._done((finished, files))
        self._fill(a)
        self._check_finished()

    def _done(self, result: Result) -> None:
        """Write the trial's artifacts where the driver's store keeps them, then hand it on."""
        finished, files = result
        store = self.job.store
        if store is not None and files:
            # As a local trial's first artifact does: what an earlier attempt left goes.
            store.discard(finished.trial_id)
            try:
                for relative, data in files:
                    store.place(relative, data)
            except HarnessStop as exc:  # the driver's disk is full: the run stops
                store.discard(finished.trial_id)
                finished = Finished.stopped(finished.trial_id, str(exc))
        self.sink.done(finished)

    async def _lost(self, a: _Actor, exc: BaseException) -> None:
        """``a``'s worker died (killed by us, by the agent, or with its node): settle it."""
        if a not in self.actors:
            return  # settled by the first of its calls to fail
        self.actors.remove(a)
        text = str(exc)
        if self.finished.is_set():
            return
        if getattr(exc, "actor_init_failed", False):
            self.fatal = text  # its creation failed: an import, the plans, the runtime env
            self.finished.set()
            return
        node_lost = a.kill_reason is None and _node_lost(self.ray, exc)
        if not a.inflight and not node_lost:  # a lost machine is no sign of a broken agent
            self.idle_losses += 1
            if self.idle_losses >= LOST_IDLE:
                self.fatal = f"Ray workers keep dying with no trial running:\n{text}"
                self.finished.set()
                return
        if node_lost:
            self.ray.kill(a.handle, no_restart=True)  # unavailable may still be running
            self._requeue_node_lost(a)
        else:
            self._settle(a, a.kill_reason or _describe(text))
        assert self._tg is not None
        if self.queue:
            self._tg.start_soon(self._spawn)  # waits for a CPU when its node is gone for good
        for other in list(self.actors):  # an idle actor takes what was queued again now
            self._fill(other)
        self._check_finished()

    def _settle(self, a: _Actor, reason: str) -> None:
        """Record the blamed trial; queue the others again (as suspects when nobody could be
        blamed), first in line (the process executor's rule)."""
        flights, a.inflight = a.inflight, {}
        if a.kill_reason is None and len(flights) == 1:  # it died on its own
            [(index, flight)] = flights.items()
            if not flight.suspect and flight.started > a.alive:
                # No answer since it was sent: the actor may have died before the trial
                # reached it. It runs again alone; if its worker dies again, it is to blame.
                self.queue.appendleft((index, True, True))
                return
        blame, _ = self.queue.settle(flights, a.kill_blame)
        if blame is not None:
            error = TimeoutError(reason) if a.kill_timeout else AgentCrashed(reason)
            self._record_lost(blame, flights[blame], error)

    def _requeue_node_lost(self, a: _Actor) -> None:
        """A machine went away: none of its trials is to blame. Run them again elsewhere; a
        trial whose node keeps dying is not evaluable (the cluster's fault, not the agent's)."""
        flights, a.inflight = a.inflight, {}
        for index in sorted(flights, reverse=True):
            self.node_losses[index] = self.node_losses.get(index, 0) + 1
            if self.node_losses[index] > NODE_RETRIES:
                losses = NODE_RETRIES + 1
                error = HarnessError(f"lost with its Ray node {losses}x (retries: {NODE_RETRIES})")
                self._record_lost(index, flights[index], error)
            else:
                self.queue.appendleft((index, True, False))

    def _record_lost(self, index: int, flight: Flight, error: BaseException) -> None:
        self.sink.done(Finished.of(flight.lost(self.plans[index], self.job, error)))

    def _check_finished(self) -> None:
        if not self.queue and not any(a.inflight for a in self.actors):
            self.finished.set()

    # --- supervision -------------------------------------------------------------------------

    async def _supervise(self) -> None:
        while True:
            await anyio.sleep(TICK)
            for a in list(self.actors):
                if a.kill_reason is None and a.inflight:
                    await self._look_at(a, time.monotonic())

    async def _look_at(self, a: _Actor, now: float) -> None:
        wall, limit = self.job.wall_timeout, self.job.max_memory
        late = any(now - f.started > wall for f in a.inflight.values())
        unseen = any(f.started > a.alive for f in a.inflight.values())
        if not late and limit is None and not unseen:
            return  # nothing to ask the actor
        blocked, blocker, rss = False, -1, -1
        with anyio.move_on_after(1.0):
            try:
                status = await a.handle.blocker.options(concurrency_group=WATCH).remote()
                a.alive = max(a.alive, now)  # alive after every trial sent before now
                blocked, blocker, rss = status
            except self.ray.exceptions.RayError:
                return  # it is dying: its calls settle it
        if limit is not None and rss > limit:
            self._kill(a, _memory_text(rss, limit), None, timeout=False)
            return
        due = overdue(a.inflight, now, wall, blocked, blocker, kill_grace(self.job.agent))
        if due is not None:
            self._kill(a, _timeout_text(wall, due[1]), due[0], timeout=True)

    def _kill(self, a: _Actor, reason: str, blame: int | None, *, timeout: bool) -> None:
        a.kill_reason, a.kill_blame, a.kill_timeout = reason, blame, timeout
        assert self._tg is not None
        self._tg.start_soon(self._terminate, a)

    async def _terminate(self, a: _Actor) -> None:
        """The actor kills its exec: agents and exits (its watch thread answers even while the
        loop is blocked); Ray's kill follows in case it could not."""
        a.handle.abort.options(concurrency_group=WATCH).remote()
        await anyio.sleep(KILL_DELAY)
        self.ray.kill(a.handle, no_restart=True)

    async def _stop_all(self) -> None:
        async def stop(a: _Actor) -> None:
            if not a.ready:  # still waiting for a CPU (its node was lost), or starting
                self.ray.kill(a.handle, no_restart=True)
                return
            with anyio.move_on_after(5):
                try:
                    await a.handle.close.remote()
                except self.ray.exceptions.RayError:
                    pass
            self.ray.kill(a.handle, no_restart=True)

        async with anyio.create_task_group() as tg:
            for a in self.actors:
                tg.start_soon(stop, a)
        self.actors.clear()


def _by_value(ray: Any) -> None:
    """Scenario files' modules (their tools, their models) exist only in this process, under
    names no worker can import (chaoseval.loading.files): they travel by value."""
    for name, module in list(sys.modules.items()):
        if name.startswith(USER_MODULES) and module is not None:
            ray.cloudpickle.register_pickle_by_value(module)


def _memory_text(rss: int, limit: int) -> str:
    return (
        f"its Ray worker went past --max-memory ({rss / 2**20:.0f} MB RSS > {limit / 2**20:.0f} MB)"
    )


def _timeout_text(wall: float, how: str) -> str:
    return f"trial exceeded its time budget ({wall:g}s wall); {how}, so its Ray worker was killed"


def _node_lost(ray: Any, exc: BaseException) -> bool:
    """Lost with its machine (dead, preempted, out of reach), not by anything its trials did."""
    if isinstance(exc, ray.exceptions.ActorUnavailableError):
        return True
    return bool(getattr(exc, "preempted", False)) or "because its node has died" in str(exc)


def _describe(text: str) -> str:
    """Why an actor's worker died. Ray's own account names pids and addresses: it would make
    two runs' journals differ, so it is not copied into the record."""
    return "its Ray worker process died (os._exit, a signal, or a crash outside Python)"
