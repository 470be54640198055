"""The trivial workload of the run benchmarks: one scenario, one tool, an agent that calls it
once and answers. What is left is the harness's own cost per trial."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from chaoseval.model.records import AgentOutput
from chaoseval.model.scenario import Check, Scenario, tool
from chaoseval.seams.agent import Episode


@tool()
def ping(world: Any) -> dict[str, bool]:
    """Answer ok."""
    return {"ok": True}


async def _solution(actor: Any) -> AgentOutput:
    await actor.call("ping")
    return AgentOutput(answer="ok")


def scenario(sid: str = "bench-ping") -> Scenario:
    return Scenario(
        id=sid,
        description="one tool, one call",
        domain="bench",
        instruction="Call ping.",
        tools=[ping],
        checks=[Check(name="answered", fn=lambda world, output, trajectory: output.answer == "ok")],
        solution=_solution,
        reference_steps=1,
    )


class TrivialAgent:
    """Calls the one tool and answers; virtual clock unless told otherwise."""

    def __init__(self, clock: str = "virtual", sleep: float = 0.0):
        self.clock = clock
        self.sleep = sleep

    async def run(self, episode: Episode) -> AgentOutput:
        if self.sleep:
            await episode.clock.sleep(self.sleep)
        await episode.tools.call("ping")
        return AgentOutput(answer="ok")


class _BareTools:
    def __init__(self, world: dict[str, Any]):
        self.world = world

    async def call(self, name: str, /, **args: Any) -> Any:
        return ping.fn(self.world, **args)


class _BareEpisode:
    def __init__(self) -> None:
        self.tools = _BareTools({})


def bare_loop(trials: int, concurrency: int) -> float:
    """The same agent and tool on a plain asyncio loop: the floor any harness sits on."""
    agent = TrivialAgent()

    async def main() -> None:
        gate = asyncio.Semaphore(concurrency)

        async def one() -> None:
            async with gate:
                await agent.run(_BareEpisode())  # type: ignore[arg-type]

        await asyncio.gather(*(one() for _ in range(trials)))

    started = time.perf_counter()
    asyncio.run(main())
    return time.perf_counter() - started
