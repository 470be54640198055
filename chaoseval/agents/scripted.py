"""The scripted agent: executes the scenario's reference solution exactly."""

from __future__ import annotations

from chaoseval.agents.actor import Actor, run_solution
from chaoseval.seams.agent import AgentOutput, Episode, agent


class ScriptedAgent:
    clock = "virtual"

    async def run(self, episode: Episode) -> AgentOutput:
        if episode.reference is None:
            raise RuntimeError("the scripted agent needs the scenario's reference solution")
        return await run_solution(Actor(episode), episode.reference)


@agent("scripted")
def scripted() -> ScriptedAgent:
    return ScriptedAgent()
