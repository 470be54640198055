"""``ask_user`` on a trial's MCP and HTTP tool servers (chaoseval.engine.askuser), through the
real ``mcp`` client and httpx against the real servers on 127.0.0.1, in whole trials.

Listed only in a scenario with a user; a call is a turn of the user channel (a ``user`` step,
the user-channel plugins applied, the turn counted), never a tool step, and no tool-channel
plugin reaches it, even one that faults every tool call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

import httpx
from mcp import Client

from chaoseval.channels.hub import ToolHub
from chaoseval.engine import askuser
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import AgentOutput, ModelSettings, TrialRecord
from chaoseval.seams.agent import Episode
from chaoseval.seams.perturbation import CallNext, Perturbation, PerturbationContext, perturbation
from chaoseval.users.channel import UserCall

CONVERSATION = "conv-vending-refund"
PLAIN = "vending-refund-not-dispensed"
QUESTION = "What is your order number?"
PROPOSAL = "Shall I refund 2.75 for ORD-1042?"


@perturbation("test-user-shout")
class Shout(Perturbation):
    """A user-channel plugin: the user's reply in capitals, one fault a turn."""

    channel: ClassVar = "user"

    async def apply(self, call: UserCall, call_next: CallNext, ctx: PerturbationContext) -> Any:
        reply = await call_next(call)
        ctx.fault("user", "shout")
        return None if reply is None else reply.upper()


@dataclass
class Seen:
    """What the probe saw in one trial."""

    listed: list[str] = field(default_factory=list)
    replies: list[Any] = field(default_factory=list)  # (status or isError, body, structured)
    tool_error: str | None = None
    listing: dict[str, Any] = field(default_factory=dict)  # each tool as GET /tools lists it


class Probe:
    """Lists its tools and talks to the user over MCP or HTTP, then calls one tool: what it
    saw in each cell's trial is kept for the test."""

    clock = "virtual"

    def __init__(self, wire: str):
        self.wire = wire
        self.seen: dict[str, Seen] = {}

    async def run(self, episode: Episode) -> AgentOutput:
        assert episode.link is not None
        seen = self.seen.setdefault(episode.link.trial_id.split("/")[1], Seen())
        tools: Any = episode.tools
        async with ToolHub.serving() as hub, hub.trial(tools, user=episode.user) as urls:
            if self.wire == "mcp":
                await _over_mcp(urls.mcp, seen)
            else:
                await _over_http(urls.tools, seen)
        return AgentOutput(answer="done")


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def _over_mcp(url: str, seen: Seen) -> None:
    async with Client(url) as client:
        seen.listed = [t.name for t in (await client.list_tools()).tools]
        if "ask_user" not in seen.listed:
            return
        for text in (QUESTION, PROPOSAL):
            result = await client.call_tool("ask_user", {"message": text})
            seen.replies.append((result.is_error, json.loads(_text(result)),
                                 result.structured_content))  # fmt: skip
        bad = await client.call_tool("ask_user", {"text": "hello"})
        seen.replies.append((bad.is_error, _text(bad), None))
        tool = await client.call_tool("lookup_order", {"order_id": "ORD-1042"})
        seen.tool_error = _text(tool) if tool.is_error else None


async def _over_http(base: str, seen: Seen) -> None:
    async with httpx.AsyncClient(base_url=base) as client:
        seen.listing = {t["name"]: t for t in (await client.get("/tools")).json()}
        seen.listed = list(seen.listing)
        if "ask_user" not in seen.listed:
            return
        for text in (QUESTION, PROPOSAL):
            response = await client.post("/tools/ask_user", json={"message": text})
            seen.replies.append((response.status_code, response.json(), None))
        bad = await client.post("/tools/ask_user", json={"message": 5})
        seen.replies.append((bad.status_code, bad.json(), None))
        tool = await client.post("/tools/lookup_order", json={"order_id": "ORD-1042"})
        seen.tool_error = None if tool.status_code == 200 else tool.headers.get("x-chaoseval-error")


def trial(agent: Probe, scenario: str, cell: str | None = None) -> tuple[TrialRecord, Seen]:
    """One trial of ``scenario`` in ``cell`` (clean when None): its record, what the agent saw."""
    records = run(
        RunConfig(
            scenarios=select(installed(), [scenario]),
            agent=agent,
            agent_name="probe",
            cells=parse_cells([cell]) if cell else [],
            trials=1,
            seed=5,
            model=ModelSettings(temperature=0.0),
            journal=None,
        )
    ).records
    name = "clean" if cell is None else parse_cells([cell])[0].name
    return next(r for r in records if r.cell == name), agent.seen[name]


def user_steps(record: TrialRecord) -> list[Any]:
    return [s for s in record.trajectory.steps if s.kind == "user"]


def test_ask_user_is_listed_only_where_the_scenario_has_a_user() -> None:
    for wire in ("mcp", "http"):
        _, with_user = trial(Probe(wire), CONVERSATION)
        _, without = trial(Probe(wire), PLAIN)
        assert "ask_user" in with_user.listed and "lookup_order" in with_user.listed, wire
        assert "ask_user" not in without.listed and "lookup_order" in without.listed, wire


def test_over_mcp_each_call_is_a_recorded_user_turn() -> None:
    record, seen = trial(Probe("mcp"), CONVERSATION)
    (error1, first, structured), (error2, second, _), (bad_error, bad, _) = seen.replies
    assert not error1 and not error2
    assert bad_error and "ask_user takes one argument" in bad  # a bad argument: no turn
    assert first == structured == {"reply": "My order number is ORD-1042.", "ended": False}
    assert second["reply"].startswith("Yes") and second["ended"] is False
    turns = user_steps(record)
    assert [s.args["text"] for s in turns] == [QUESTION, PROPOSAL]
    assert [s.result for s in turns] == [first["reply"], second["reply"]]
    assert [s.data.turn for s in turns] == [1, 2]
    assert turns[1].data.agreed and "amount" in turns[1].data.stated
    assert not [s for s in record.trajectory.tool_steps() if s.tool == "ask_user"]


def test_over_http_each_call_is_a_recorded_user_turn() -> None:
    record, seen = trial(Probe("http"), CONVERSATION)
    (s1, first, _), (s2, second, _), (bad, body, _) = seen.replies
    assert (s1, s2, bad) == (200, 200, 422) and "ask_user takes one argument" in body["error"]
    assert first == {"reply": "My order number is ORD-1042.", "ended": False}
    assert [s.result for s in user_steps(record)] == [first["reply"], second["reply"]]
    assert not [s for s in record.trajectory.tool_steps() if s.tool == "ask_user"]


def test_no_tool_channel_fault_reaches_ask_user() -> None:
    """``timeout:probability=1`` faults every tool call, and no user turn."""
    for wire in ("mcp", "http"):
        record, seen = trial(Probe(wire), CONVERSATION, "timeout:probability=1")
        assert seen.tool_error, wire  # the plugin is on: the tool call timed out
        assert seen.replies[0][1] == {"reply": "My order number is ORD-1042.", "ended": False}
        turns = user_steps(record)
        assert len(turns) == 2 and all(not s.faults for s in turns), wire
        faulted = {record.trajectory.steps[f.step].kind for f in record.trajectory.faults}
        assert faulted == {"tool"}, wire


def test_user_channel_plugins_apply_to_ask_user() -> None:
    for wire in ("mcp", "http"):
        record, seen = trial(Probe(wire), CONVERSATION, "test-user-shout")
        assert seen.replies[0][1]["reply"] == "MY ORDER NUMBER IS ORD-1042.", wire
        turns = user_steps(record)
        assert [s.result for s in turns] == [r[1]["reply"] for r in seen.replies[:2]]
        shouts = [f for f in record.trajectory.faults if f.kind == "shout"]
        assert [f.step for f in shouts] == [s.index for s in turns], wire
        assert all(f.delivered for f in shouts), wire


def test_no_listing_plugin_rewrites_ask_user() -> None:
    """A drifted schema or a poisoned description reaches the scenario's tools, never
    ask_user: it is listed after the listing plugins."""
    for cell in ("tool_schema_drift:modes=[rename]", "injection_mcp:placements=[description]"):
        _, seen = trial(Probe("http"), CONVERSATION, cell)
        _, clean = trial(Probe("http"), CONVERSATION)
        assert seen.listing["ask_user"] == askuser.described() == clean.listing["ask_user"]
        changed = [n for n in clean.listing if seen.listing[n] != clean.listing[n]]
        assert changed and "ask_user" not in changed, cell  # the plugin did rewrite a tool
        assert seen.replies[0][0] == 200, cell


class Chatter:
    """Says hello over MCP until the user leaves, and once more."""

    clock = "virtual"

    def __init__(self) -> None:
        self.results: list[Any] = []

    async def run(self, episode: Episode) -> AgentOutput:
        tools: Any = episode.tools
        async with (
            ToolHub.serving() as hub,
            hub.trial(tools, user=episode.user) as urls,
            Client(urls.mcp) as client,
        ):
            for _ in range(20):
                result = await client.call_tool("ask_user", {"message": "Hello?"})
                self.results.append(result.structured_content)
                if len([r for r in self.results if r["ended"]]) == 2:
                    break
        return AgentOutput(answer="bye")


def test_once_the_user_has_left_the_reply_is_null_and_ended() -> None:
    agent = Chatter()
    [record] = run(
        RunConfig(
            scenarios=select(installed(), [CONVERSATION]),
            agent=agent,
            agent_name="chatter",
            trials=1,
            seed=5,
            journal=None,
        )
    ).records
    *talk, goodbye, gone = agent.results
    assert talk and not any(r["ended"] for r in talk)
    assert goodbye["ended"] is True and isinstance(goodbye["reply"], str)  # their goodbye
    assert gone == {"reply": None, "ended": True}
    turns = user_steps(record)
    assert len(turns) == len(agent.results) and turns[-1].result is None
    assert [s.data.ended for s in turns[-2:]] == [True, True]
