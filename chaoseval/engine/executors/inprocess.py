"""The in-process executor: trials as tasks on the runner's event loop.

``concurrency`` lanes each take the next plan from one shared iterator, so the tasks alive
at any time are bounded by the lanes, not by the matrix (a million plans cost a million
small dataclasses, never a million coroutines)."""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from chaoseval.engine.executors.base import Sink, TrialJob
from chaoseval.engine.executors.one import agent_session, finish
from chaoseval.engine.trial import TrialPlan


class InProcessExecutor:
    name = "inprocess"

    async def run(self, plans: Sequence[TrialPlan], job: TrialJob, sink: Sink) -> None:
        queue = iter(plans)

        async def lane() -> None:
            for plan in queue:
                if not sink.may_start():
                    continue  # the budget is reached: the rest are skipped, not started
                sink.done(await finish(plan, job))

        async with agent_session(job.agent), anyio.create_task_group() as tg:
            for _ in range(max(1, min(job.concurrency, len(plans)))):
                tg.start_soon(lane)
