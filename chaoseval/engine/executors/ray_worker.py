"""The Ray executor's actor: trials on a Ray worker, several at once on its event loop.

Why an actor pool and not one Ray task per trial: a task holds a CPU for its whole life, so a
node with 2 CPUs would run 2 trials at a time and none of the latency hiding ``-j 64`` buys;
and each task would start the agent's run-wide session (the wire agents' model-channel server)
afresh. An async actor runs many trials on one event loop, as a process executor's worker does,
and keeps its session, its scenarios and its agent for every trial it is sent.

A trial's channels (model, MCP, page servers) are started by ``run_trial`` itself, so they run
beside it on this worker. Its artifacts are written to a store under this worker's temp dir and
travel back as bytes with its journal line; the driver writes both (it is the journal's only
writer, and its disk may be on another machine).

The ``watch`` concurrency group runs on a thread of its own: it answers while a trial's code
blocks the trials' event loop (it names that trial, so the driver blames the right one), and
it kills the worker's exec: agents before the driver kills the worker.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import pickle
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from chaoseval.channels.model import prices
from chaoseval.channels.model.prices import Prices
from chaoseval.engine.executors import worker
from chaoseval.engine.executors.base import Finished, TrialJob
from chaoseval.engine.executors.one import agent_session, finish
from chaoseval.engine.executors.process import _rss
from chaoseval.engine.executors.reap import kill_descendants
from chaoseval.engine.executors.wire import BLOCKER, HEARTBEAT
from chaoseval.engine.trial import TrialPlan
from chaoseval.errors import relay, relayed, user_facing

WATCH = "watch"  # the concurrency group of blocker(), watch() and abort()

# A finished trial as it travels back: its Finished (the line, encoded here) and its artifact
# files as (path relative to the journal's folder, bytes).
Result = tuple[Finished, list[tuple[str, bytes]]]


def _warm(plans: Sequence[TrialPlan]) -> None:
    """Load now what a first trial would load on its own clock: a fresh Ray worker, unlike a
    forked one, has imported nothing yet (the journal's encoder, the cells' plugins), and a
    trial whose imports hold the event loop past a short timeout would be blamed for it."""
    from chaoseval.engine.trial import instantiate

    importlib.import_module("chaoseval.store.journal")
    for cell in {id(plan.cell): plan.cell for plan in plans}.values():
        instantiate(cell)


class TrialActor:
    """One Ray worker's share of the run (the driver decorates it with ``ray.remote``)."""

    def __init__(
        self, payload: bytes, paths: Sequence[str], store_name: str | None, temp_root: str
    ):
        from chaoseval.store.artifacts import ArtifactStore

        # The driver's import path first (its --app-dir, a test's directory), then the plans
        # and the agent, whose classes may live there: so they are pickled as bytes, not
        # handed to Ray as arguments it would unpickle before this constructor runs.
        for path in paths:
            if path not in sys.path:
                sys.path.append(path)
        plans: Sequence[TrialPlan]
        job: TrialJob
        table: Prices
        plans, job, table = pickle.loads(payload)
        prices.configure(table)  # the driver's (--prices): the table every call is priced by
        self.plans = plans
        _warm(plans)
        # Under the run's root on this node: the driver removes the root at the end, so a
        # worker killed mid-trial (which cannot clean up) leaves nothing on the driver's node.
        root = Path(tempfile.gettempdir()) / temp_root
        root.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix="actor-", dir=root))
        # The same relative paths as the driver's store: <journal>.d/<trial>/<name>.
        store = ArtifactStore(self.tmp / store_name) if store_name else None
        self.job = replace(job, store=store)
        self.shared = [time.monotonic(), -1.0]  # HEARTBEAT, BLOCKER (wire.py's layout)
        self._ready: asyncio.Event | None = None
        self._closing: asyncio.Event | None = None
        self._serving: asyncio.Task[None] | None = None
        self._failed: BaseException | None = None

    async def _started(self) -> None:
        """The agent's session and the heartbeat, started by the first trial: they live in a
        task of their own, entered and left in it (anyio's scopes must be)."""
        if self._serving is None:
            self._ready, self._closing = asyncio.Event(), asyncio.Event()
            self._serving = asyncio.get_running_loop().create_task(self._serve())
            threading.Thread(
                target=worker._watch,
                args=(self.shared, threading.get_ident(), __file__),
                daemon=True,
            ).start()
        assert self._ready is not None
        await self._ready.wait()
        if self._failed is not None:
            raise self._failed

    async def _serve(self) -> None:
        assert self._ready is not None and self._closing is not None
        try:
            async with agent_session(self.job.agent):
                self._ready.set()
                while not self._closing.is_set():
                    self.shared[HEARTBEAT] = time.monotonic()
                    self.shared[BLOCKER] = -1
                    await asyncio.sleep(worker.BEAT)
        except Exception as exc:  # the session could not start: every trial says so
            found = user_facing(exc)
            # What the user must fix, rebuilt as a one-message error that pickles: the driver
            # says it as it is (ray.py), with no worker traceback around it.
            self._failed = relayed(*relay(found)) if found is not None else exc
            self._ready.set()

    async def trial(self, index: int) -> Result:
        await self._started()
        finished = await finish(self.plans[index], self.job)  # records every outcome itself
        record = finished.parsed
        files: list[tuple[str, bytes]] = []
        store = self.job.store
        if store is not None and record is not None and record.artifacts:
            for ref in record.artifacts:
                path = store.file(ref.path, record=record.trial_id)
                files.append((ref.path, path.read_bytes()))
            store.discard(record.trial_id)  # shipped: not kept here too
        finished.parsed = None  # the line is what travels
        return finished, files

    async def blocker(self) -> tuple[bool, int, int]:
        """Whether the trials' event loop is blocked, by which trial (-1: not known), and this
        worker's RSS in bytes (-1: not known); run in the ``watch`` group, on a thread of its
        own, so it answers while the loop is held."""
        rss = _rss(os.getpid())
        memory = -1 if rss is None else rss
        if time.monotonic() - self.shared[HEARTBEAT] < worker.STALL:
            return False, -1, memory
        return True, int(self.shared[BLOCKER]), memory

    async def watch(self) -> None:
        """Never answers: the driver keeps this call open, and its failure is how the driver
        learns at once that this worker died, even with no trial in flight (``watch`` group)."""
        await asyncio.Event().wait()

    async def abort(self) -> None:
        """Kill what the trials started (exec: agents in sessions of their own), then this
        worker (run in the ``watch`` group, just before the driver kills the actor)."""
        kill_descendants(os.getpid())
        shutil.rmtree(self.tmp, ignore_errors=True)
        os._exit(1)

    async def close(self) -> None:
        """Leave the agent's session; nothing is in flight any more."""
        if self._closing is not None and self._serving is not None:
            self._closing.set()
            await self._serving
        shutil.rmtree(self.tmp, ignore_errors=True)
