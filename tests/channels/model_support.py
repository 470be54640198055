"""Running wire agents through the real runner, the real server and the real OpenAI SDK."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import AgentOutput, ModelSettings, TrialRecord
from chaoseval.seams.agent import AgentAdapter, Episode

SCENARIO = "vending-refund-not-dispensed"


def run_agent(
    agent: AgentAdapter,
    scenarios: list[str] | None = None,
    cells: list[str] | None = None,
    trials: int = 2,
    seed: int = 3,
    temperature: float = 0.7,
    concurrency: int = 4,
    wall_timeout: float | None = None,
) -> list[TrialRecord]:
    return run(
        RunConfig(
            scenarios=select(installed(), scenarios or [SCENARIO]),
            agent=agent,
            agent_name=type(agent).__name__,
            cells=parse_cells(cells or []),
            trials=trials,
            seed=seed,
            model=ModelSettings(temperature=temperature),
            concurrency=concurrency,
            wall_timeout=wall_timeout,
        )
    ).records


class Probe:
    """An agent that runs a test's own coroutine against the episode (e.g. raw SDK calls)."""

    clock = "virtual"

    def __init__(self, body: Callable[[Episode], Awaitable[Any]]):
        self.body = body

    async def run(self, episode: Episode) -> AgentOutput:
        answer = await self.body(episode)
        return AgentOutput(answer=str(answer), usage=episode.usage)


def model_steps(record: TrialRecord) -> list[Any]:
    return [s for s in record.trajectory.steps if s.kind == "model"]


def info(step: Any) -> dict[str, Any]:
    """A model step's request (args), answer (result) and cost (data) in one mapping."""
    return {**(step.args or {}), **(step.result or {}), **step.data.model_dump()}


def probe_trial(
    body: Callable[[Episode], Awaitable[Any]], scenario: str = SCENARIO, **config: Any
) -> TrialRecord:
    """One clean trial of a Probe running ``body``, no reference runs; ``config``: more
    RunConfig fields (a journal, a request limit)."""
    [record] = run(
        RunConfig(
            scenarios=select(installed(), [scenario]),
            agent=Probe(body),
            agent_name="probe",
            trials=1,
            seed=3,
            references=False,
            **config,
        )
    ).records
    return record
