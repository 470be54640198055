"""One trial as every executor runs it, and the agent's run-wide session."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from chaoseval.engine.trial import TrialPlan, run_trial
from chaoseval.model.records import TrialRecord
from chaoseval.seams.agent import AgentAdapter
from chaoseval.store.artifacts import binding

if TYPE_CHECKING:
    from chaoseval.engine.executors.base import TrialJob


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
        )
    record.artifacts = list(kept.refs) if kept is not None else []
    return record


def agent_session(agent: AgentAdapter) -> AbstractAsyncContextManager[Any]:
    """An agent may hold run-wide resources (the wire agents' model-channel server): an
    optional ``session()`` async context manager, entered once around the trials of each
    event loop that runs them (the runner's, or each worker process's)."""
    session = getattr(agent, "session", None)
    return session() if callable(session) else nullcontext()
