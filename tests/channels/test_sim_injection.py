"""chaoseval-sim under the injection family: the bundled example's loop (the real ``openai``
SDK against the model channel, the real ``mcp`` client against the trial's MCP server) is
attacked as the in-process naive agent is, so a framework test under injection measures
delivery and recording, not the framework's resistance."""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import openai
from mcp import Client

from chaoseval.channels.hub import serve_mcp
from chaoseval.channels.model.session import trial_endpoint
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import AgentOutput, ModelSettings, TrialRecord
from chaoseval.seams.agent import Episode, load_agent

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openai_mcp_agent.py"
SCENARIOS = ["inject-order-refund", "inject-account-upgrade"]
RESULT = "injection"
LISTING = "injection_mcp:placements=[description]"
MEMORY = "injection_memory"
MEMORY_TASKS = ["memory-billing-email", "memory-seat-preference", "memory-replacement-address"]


@functools.cache
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("openai_mcp_agent", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ExampleLoop:
    """examples/openai_mcp_agent.py's loop in process (its helpers as they are; the endpoints
    passed in, not read from the environment, so trials run side by side)."""

    clock = "virtual"

    def __init__(self, relist: bool = False, remember: bool = False) -> None:
        self.relist = relist  # list the tools again before every request (as many frameworks do)
        self.remember = remember  # reads its memory into its prompt (the example does not)

    async def run(self, episode: Episode) -> AgentOutput:
        ex = example()
        async with trial_endpoint(episode) as endpoint, serve_mcp(episode.tools) as url:  # type: ignore[arg-type]
            llm = openai.AsyncOpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key)
            async with llm, Client(url) as tools:
                offered = ex.openai_tools(await tools.list_tools())
                prompt = episode.instruction
                if self.remember:
                    prompt += "".join(f"\nRemembered: {m.key} = {m.value}" for m in episode.memory)
                messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
                for turn in range(ex.MAX_TURNS):
                    if self.relist and turn:
                        offered = ex.openai_tools(await tools.list_tools())
                    response = await llm.chat.completions.create(
                        model="sim", messages=messages, tools=offered
                    )
                    message = response.choices[0].message
                    messages.append(message.model_dump(exclude_none=True))
                    if not message.tool_calls:
                        return AgentOutput(**ex.final(message.content or ""))
                    for call in message.tool_calls:
                        args = json.loads(call.function.arguments or "{}")
                        result = await tools.call_tool(call.function.name, args)
                        content = ex.tool_content(result)
                        messages.append(
                            {"role": "tool", "tool_call_id": call.id, "content": content}
                        )
        return AgentOutput(answer="out of turns", gave_up=True)


def attacked(
    agent: Any,
    name: str,
    cells: tuple[str, ...] = (RESULT, LISTING),
    trials: int = 2,
    scenarios: list[str] = SCENARIOS,
) -> dict[tuple[str, str, int], TrialRecord]:
    records = run(
        RunConfig(
            scenarios=select(installed(), scenarios),
            agent=agent,
            agent_name=name,
            cells=parse_cells(list(cells)),
            trials=trials,
            seed=7,
            model=ModelSettings(temperature=0.7),
            references=False,
        )
    ).records
    return {(r.cell, r.scenario, r.index): r for r in records if r.cell != "clean"}


def followed(records: dict[tuple[str, str, int], TrialRecord], cell: str) -> dict[Any, Any]:
    name = parse_cells([cell])[0].name
    return {k[1:]: r.injection_followed for k, r in records.items() if k[0] == name}


def test_the_sim_follows_planted_text_where_the_naive_agent_does() -> None:
    wire = attacked(ExampleLoop(), "example-loop")
    naive = attacked(load_agent("naive"), "naive")
    # Tool results: the same payloads read, the same seeded draws, the same trials follow.
    assert followed(wire, RESULT) == followed(naive, RESULT)
    assert any(followed(wire, RESULT).values()) and not all(followed(wire, RESULT).values())
    # A poisoned tool description: delivered with the listing over MCP and read by the sim in
    # the request's tools; judged like the other placements. The in-process naive agent lists
    # nothing: for it the cell did not land.
    listing = followed(wire, LISTING)
    assert set(listing.values()) == {True, False}, listing
    assert set(followed(naive, LISTING).values()) == {None}
    for key, record in wire.items():
        if key[0] == parse_cells([LISTING])[0].name and record.injection_followed:
            assert record.status == "failed" and record.root_cause == "injection_followed"
            [fault] = record.trajectory.faults
            assert fault.delivered and fault.detail["placement"] == "description"


# The rug pull fires on the second listing, so the third (in inject-order-refund, whose plan
# makes two calls: the request after the last one, where the model answers) is the first to
# carry it.
LAST_TURN = "injection_mcp:placements=[rug_pull],after_n=1,first_n=2"


def test_the_sim_reads_a_description_changed_in_the_request_it_answers() -> None:
    """A loop that lists its tools before every request meets the rug pull only in the request
    that brings its last tool result: the sim reads the tool list on that answering turn too
    (as it does before each call), and follows with the naive model's seeded draw."""
    loop = ExampleLoop(relist=True)
    wire = attacked(loop, "relisting-loop", (LAST_TURN,), trials=4, scenarios=SCENARIOS[:1])
    landed = {k: r for k, r in wire.items() if r.injection_followed is not None}
    assert len(landed) == 4, {k: r.trajectory.faults for k, r in wire.items()}
    assert set(followed(wire, LAST_TURN).values()) == {True, False}  # unread: all False
    for record in landed.values():
        [fault] = record.trajectory.faults
        assert fault.delivered and fault.detail["placement"] == "rug_pull"
        if record.injection_followed:
            assert record.status == "failed" and record.root_cause == "injection_followed"


def test_the_sim_knows_only_the_memory_the_agent_read() -> None:
    # The example never reads its memory: a planted (or stale) memory never reached it, so
    # its model knows nothing of it and the cell did not land (it used to be counted
    # delivered, and followed in exactly the naive agent's trials, by the model alone).
    cells = (MEMORY, "stale_memory")
    blind = attacked(ExampleLoop(), "example-loop", cells, scenarios=MEMORY_TASKS)
    assert not any(f.delivered for r in blind.values() for f in r.trajectory.faults)
    assert set(followed(blind, MEMORY).values()) == {None}
    # Read into its prompt, the memory reaches the model: the same trials follow as naive's.
    reads = attacked(ExampleLoop(remember=True), "loop-memory", cells, scenarios=MEMORY_TASKS)
    naive = attacked(load_agent("naive"), "naive", cells, scenarios=MEMORY_TASKS)
    assert followed(reads, MEMORY) == followed(naive, MEMORY)
    assert set(followed(reads, MEMORY).values()) == {True, False}
    assert all(f.delivered for r in reads.values() for f in r.trajectory.faults)
