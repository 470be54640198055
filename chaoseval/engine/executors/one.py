"""One trial as every executor runs it, and the agent's run-wide session."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from chaoseval.engine.executors.base import Finished
from chaoseval.engine.trial import TrialPlan, record_unfinished, run_trial
from chaoseval.errors import HarnessError, HarnessStop
from chaoseval.model.records import TrialRecord
from chaoseval.seams.agent import AgentAdapter
from chaoseval.store.artifacts import binding

if TYPE_CHECKING:
    from chaoseval.engine.executors.base import TrialJob

GRACE = 2.0  # seconds a live worker gets to record the timeout itself, once its agent stopped


def kill_grace(agent: object) -> float:
    """Seconds past a trial's wall timeout before its worker is killed for it: the agent's
    own ``stop_grace`` (an exec: agent's SIGTERM to SIGKILL), then :data:`GRACE`. Derived,
    not fixed: a fixed one raced an exec: agent's grace, and a worker killed first is booked
    as one that "ignored its cancellation" with every other trial in flight on it run again."""
    return float(getattr(agent, "stop_grace", 0.0)) + GRACE


async def finish(plan: TrialPlan, job: TrialJob) -> Finished:
    """``plan`` run (:func:`run_one`) as the runner receives it: its record, or, when the
    harness could not go on (HarnessStop: a full disk), why, and no record at all."""
    try:
        return Finished.of(await run_one(plan, job))
    except HarnessStop as exc:
        if job.store is not None:  # what it wrote before the disk filled belongs to no record
            with contextlib.suppress(OSError, HarnessError):
                job.store.discard(plan.trial_id)
        return Finished.stopped(plan.trial_id, str(exc))


async def run_one(plan: TrialPlan, job: TrialJob) -> TrialRecord:
    """Run ``plan``; its artifact directory is bound while it runs (exec agents' output)."""
    with binding(job.store, plan.trial_id) as kept:
        record = await run_trial(
            plan,
            job.agent,
            agent_name=job.agent_name,
            model=job.model,
            clock_mode=job.clock_mode,
            run_id=job.run_id,
            run_seed=job.run_seed,
            wall_timeout=job.wall_timeout,
            trial_timeout=job.trial_timeout,
            request_limit=job.request_limit,
            user_model=job.user_model,
        )
    if kept is not None and kept.refs:  # the field's default is already empty
        record.artifacts = list(kept.refs)
    return record


def unfinished(
    plan: TrialPlan, job: TrialJob, error: BaseException, started_at: datetime, wall: float
) -> TrialRecord:
    """The record of a trial lost with its worker (killed past its timeout, or crashed by the
    agent): judged on ``error`` alone (:func:`~chaoseval.engine.trial.record_unfinished`)."""
    return record_unfinished(
        plan,
        error,
        agent_name=job.agent_name,
        model=job.model,
        clock_mode=job.clock_mode,
        run_id=job.run_id,
        run_seed=job.run_seed,
        started_at=started_at,
        wall_seconds=wall,
    )


@dataclass
class Flight:
    """A trial a worker pool (process or Ray) has handed to one of its workers."""

    started: float  # time.monotonic() when sent to the worker
    started_at: datetime
    suspect: bool  # run again alone after a crash that several trials could have caused

    @classmethod
    def now(cls, suspect: bool) -> Flight:
        return cls(time.monotonic(), datetime.now(UTC), suspect)

    def lost(self, plan: TrialPlan, job: TrialJob, error: BaseException) -> TrialRecord:
        """The record of this trial lost with its worker (:func:`unfinished`)."""
        return unfinished(plan, job, error, self.started_at, time.monotonic() - self.started)


def overdue(
    inflight: Mapping[int, Flight],
    now: float,
    wall: float,
    blocked: bool,
    blocker: int,
    grace: float,
) -> tuple[int, str] | None:
    """The trial a worker is to be killed for, with how it overran (None: none is due).

    ``blocker`` (-1: none) is the trial whose code holds the worker's blocked event loop:
    nothing else there can run, so it is the one to blame, at its own deadline. Otherwise the
    oldest trial past its deadline plus ``grace`` (:func:`kill_grace`: a live loop gets that
    long to stop its agent and record the timeout itself). Both pools (process and Ray) kill
    by this one rule."""
    if blocker in inflight:
        if now - inflight[blocker].started > wall:
            return blocker, "its code blocked the event loop"
        return None
    late = [i for i, f in inflight.items() if now - f.started > wall + grace]
    if not late:
        return None
    oldest = min(late, key=lambda i: inflight[i].started)
    return oldest, "the event loop was blocked" if blocked else "it ignored its cancellation"


def agent_session(agent: AgentAdapter) -> AbstractAsyncContextManager[Any]:
    """An agent may hold run-wide resources (the wire agents' model-channel server): an
    optional ``session()`` async context manager, entered once around the trials of each
    event loop that runs them (the runner's, or each worker process's)."""
    session = getattr(agent, "session", None)
    return session() if callable(session) else nullcontext()
