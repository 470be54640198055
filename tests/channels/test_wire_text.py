"""Text a tool result carries reaches a wire agent as the characters themselves: an MCP
result's text content and an HTTP tool's body are UTF-8 JSON, never ``\\u`` escapes of it (a
model reading the relayed text must read what was planted: accents, zero-width joins)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
from mcp import Client
from mcp_support import SCENARIO

from chaoseval.channels.hub import ToolHub
from chaoseval.engine.toolbox import ToolBox, TrialState
from chaoseval.loading.files import installed, select
from chaoseval.model.clock import VirtualClock
from chaoseval.model.records import AgentOutput
from chaoseval.model.scenario import Check, Scenario, tool
from chaoseval.model.world import fresh_world
from chaoseval.seams.perturbation import CallNext, Perturbation, PerturbationContext, ToolCall

TEXT = "Zo\u00eb says: " + "\u200b".join("ignore") + " \u2014 \u0440\u0443\u0441 \U0001f600"


class Note(Perturbation):  # type: ignore[type-arg]
    """A tool result with a free-text note added (what a ticket or an email carries)."""

    channel = "tool"

    async def apply(self, call: ToolCall, call_next: CallNext, ctx: PerturbationContext) -> Any:
        result = await call_next(call)
        return {**result, "note": TEXT}


async def _over_the_wire() -> tuple[str, bytes]:
    scenario = select(installed(), [SCENARIO])[0]
    tables, givens = scenario.build(1)
    with fresh_world(tables, VirtualClock(scenario.start_time), 1, givens) as world:
        toolbox = ToolBox(scenario, world, TrialState(), [Note()], 3, 0)
        args = {"order_id": givens["order_id"]}
        async with ToolHub.serving() as hub, hub.trial(toolbox) as urls:
            async with Client(urls.mcp) as client:
                result = await client.call_tool("lookup_order", args)
            async with httpx.AsyncClient() as http:
                response = await http.post(f"{urls.tools}/tools/lookup_order", json=args)
    assert not result.is_error and result.structured_content is not None
    assert result.structured_content["note"] == TEXT
    return result.content[0].text, response.content


@tool()
def note(world: Any) -> dict[str, str]:
    """A note with free text."""
    return {"note": TEXT, "path": "C:\\users\\u"}


async def _read(actor: Any) -> AgentOutput:
    await actor.call("note")
    return AgentOutput(answer="read")


async def _plain_over_the_wire() -> tuple[str, bytes, str]:
    """No plugin: the answer is written from the ToolBox's own text of the result."""
    scenario = Scenario(
        id="wire-text", description="a note", domain="test", instruction="Read the note.",
        tools=[note], checks=[Check(name="read", fn=lambda world, output, trajectory: True)],
        solution=_read, reference_steps=1,
    )  # fmt: skip
    with fresh_world({}, VirtualClock(scenario.start_time), 1, {}) as world:
        toolbox = ToolBox(scenario, world, TrialState(), [], 3, 0)
        async with ToolHub.serving() as hub, hub.trial(toolbox) as urls:
            async with Client(urls.mcp) as client:
                result = await client.call_tool("note", {})
            async with httpx.AsyncClient() as http:
                response = await http.post(f"{urls.tools}/tools/note", json={})
    assert not result.is_error and result.structured_content == note.fn(None)
    return result.content[0].text, response.content, json.dumps(note.fn(None), ensure_ascii=False)


def test_a_plain_tool_s_answer_is_its_utf8_json_over_mcp_and_http() -> None:
    text, body, expected = anyio.run(_plain_over_the_wire)
    assert text == expected
    assert body == expected.encode()


def test_mcp_text_content_and_http_bodies_carry_the_characters_not_escapes() -> None:
    text, body = anyio.run(_over_the_wire)
    assert TEXT in text  # the characters a framework hands its model, as they were planted
    assert json.loads(text)["note"] == TEXT
    assert TEXT.encode() in body  # an HTTP client relaying response.text relays them too
    assert json.loads(body)["note"] == TEXT
