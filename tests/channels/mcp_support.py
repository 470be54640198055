"""Helpers for the MCP channel tests: a trial's ToolBox on a bundled world, an actor over MCP."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mcp import Client

from chaoseval.agents.actor import Actor, run_solution
from chaoseval.channels.hub import serve_mcp
from chaoseval.channels.mcp import ERROR_META
from chaoseval.engine.runner import RunConfig, run
from chaoseval.engine.toolbox import ToolBox, TrialState
from chaoseval.engine.trial import instantiate
from chaoseval.errors import ToolConnectionError, ToolError, ToolHTTPError, ToolTimeout
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.clock import VirtualClock
from chaoseval.model.records import ModelSettings, TrialRecord
from chaoseval.model.world import fresh_world
from chaoseval.seams.agent import AgentOutput, Episode

SCENARIO = "vending-refund-not-dispensed"


@contextmanager
def trial_toolbox(
    cell: str = "clean", scenario_id: str = SCENARIO
) -> Iterator[tuple[ToolBox, TrialState, dict[str, Any]]]:
    """A ToolBox on a fresh world of a bundled scenario, perturbed by ``cell``."""
    scenario = select(installed(), [scenario_id])[0]
    tables, givens = scenario.build(1)
    clock = VirtualClock(scenario.start_time)
    with fresh_world(tables, clock, 1, givens) as world:
        state = TrialState()
        plugins = [] if cell == "clean" else instantiate(parse_cells([cell])[0])
        yield ToolBox(scenario, world, state, plugins, 3, 0), state, givens


class McpActorTools:
    """``episode.tools`` for an agent whose tools are an MCP server: the mcp client underneath,
    isError results raised as the agent-visible errors their ``_meta`` names."""

    def __init__(self, client: Client, toolbox: ToolBox):
        self.client = client
        self.specs = toolbox.specs

    async def call(self, name: str, /, **args: Any) -> Any:
        result = await self.client.call_tool(name, args)
        text = "".join(getattr(c, "text", "") for c in result.content)
        if result.is_error:
            detail = (result.meta or {}).get(ERROR_META, {})
            kind = detail.get("kind")
            if kind == "http_error":
                raise ToolHTTPError(detail["status"], text, retry_after=detail["retry_after"])
            if kind == "timeout":
                raise ToolTimeout(text)
            if kind == "connection_reset":
                raise ToolConnectionError(text)
            raise ToolError(text)
        if result.structured_content is not None:
            return result.structured_content
        try:
            return json.loads(text)
        except ValueError:
            return text


class McpScripted:
    """The scripted agent with its tools behind MCP over streamable HTTP on 127.0.0.1.

    With ``lists_tools`` it lists the tools first, as MCP agents do, but keeps calling them by
    the names it was written against (so a schema drift reaches it)."""

    clock = "virtual"

    def __init__(self, lists_tools: bool = False):
        self.lists_tools = lists_tools

    async def run(self, episode: Episode) -> AgentOutput:
        assert episode.reference is not None
        async with serve_mcp(episode.tools) as url, Client(url) as client:
            if self.lists_tools:
                await client.list_tools()
            over_mcp = dataclasses.replace(episode, tools=McpActorTools(client, episode.tools))
            return await run_solution(Actor(over_mcp), episode.reference)


def run_over_mcp(cell: str, trials: int, lists_tools: bool = False) -> list[TrialRecord]:
    """Whole trials of the scripted agent over MCP through the runner: clean and ``cell``."""
    return run(
        RunConfig(
            scenarios=select(installed(), [SCENARIO]),
            agent=McpScripted(lists_tools=lists_tools),
            agent_name="mcp-scripted",
            cells=parse_cells([cell]),
            trials=trials,
            seed=5,
            model=ModelSettings(temperature=0.0),
            journal=None,
        )
    ).records
