"""Planted instructions through the wire (issue 22, point 4): an exec: agent is attacked the
way an in-process one is. Over real sockets with the real ``mcp`` and ``httpx`` clients, the
text a payload planted arrives byte for byte (MCP result, HTTP tool body, the page as served,
an MCP tool description) and its fault is delivered only once the bytes that hold it are
written: a listing or a page never fetched carries nothing that landed."""

from __future__ import annotations

import functools
import html
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client

from chaoseval.bundled.perturbations.injection import PAGE_PLACEMENTS, catalogue
from chaoseval.channels.browser.server import serve_pages
from chaoseval.channels.hub import ToolHub
from chaoseval.engine.listing import http_listing
from chaoseval.engine.runner import RunConfig, run
from chaoseval.engine.toolbox import ToolBox, TrialState
from chaoseval.engine.trial import instantiate
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.clock import VirtualClock
from chaoseval.model.injection import encode, instructions, pool
from chaoseval.model.records import AgentOutput, TrialRecord
from chaoseval.model.scenario import Scenario
from chaoseval.model.trajectory import Fault
from chaoseval.model.world import fresh_world
from chaoseval.seams.agent import Episode

SCENARIO = "inject-order-refund"
RESULT = "injection:encodings=[zero_width],tools=get_order"


@functools.cache
def scenario_of(scenario_id: str) -> Scenario:
    return select(installed(), [scenario_id])[0]


@contextmanager
def trial(cell: str) -> Iterator[tuple[ToolBox, TrialState, dict[str, Any]]]:
    scenario = scenario_of(SCENARIO)
    tables, givens = scenario.build(1)
    with fresh_world(tables, VirtualClock(scenario.start_time), 1, givens) as world:
        state = TrialState()
        yield (
            ToolBox(scenario, world, state, instantiate(parse_cells([cell])[0]), 3, 0),
            state,
            givens,
        )


def planted(fault: Fault, givens: dict[str, Any]) -> str:
    """The text the fault's payload planted, rebuilt from its detail."""
    scenario = scenario_of(SCENARIO)
    [payload] = [
        p for p in pool(catalogue(), scenario, givens, "tool") if p.id == fault.detail["payload"]
    ]
    return encode(payload.render(givens), str(fault.detail["encoding"]))


async def _result_over(over: str) -> tuple[str, Fault, dict[str, Any]]:
    with trial(RESULT) as (toolbox, state, givens):
        args = {"order_id": givens["order_id"]}
        async with ToolHub.serving() as hub, hub.trial(toolbox) as urls:
            if over == "mcp":
                async with Client(urls.mcp) as client:
                    result = await client.call_tool("get_order", args)
                text = result.content[0].text
            else:
                async with httpx.AsyncClient() as http:
                    response = await http.post(f"{urls.tools}/tools/get_order", json=args)
                text = response.content.decode()  # the bytes as sent, not httpx's JSON
        [fault] = state.trajectory.faults
        return text, fault, givens


def test_a_payload_in_a_tool_result_arrives_byte_for_byte_over_mcp_and_http() -> None:
    for over in ("mcp", "http"):
        text, fault, givens = anyio.run(_result_over, over)
        expected = planted(fault, givens)
        assert "\u200b" in expected
        # In the result's JSON as a JSON string: its characters themselves, only what JSON must
        # escape escaped (quotes), so a framework relaying the text relays what was planted.
        assert json.dumps(expected, ensure_ascii=False)[1:-1] in text, over
        assert expected in json.loads(text)[fault.detail["field"]], over
        assert instructions(json.loads(text)[fault.detail["field"]]), over  # and reads it back
        assert fault.delivered and fault.detail["tool"] == "get_order", over


async def _listings(cell: str, times: int) -> dict[str, Any]:
    with trial(cell) as (toolbox, state, givens):
        seen: list[list[bool]] = []
        listings = []
        async with ToolHub.serving() as hub, hub.trial(toolbox) as urls, Client(urls.mcp) as client:
            for _ in range(times):
                listings.append({t.name: t for t in (await client.list_tools()).tools})
                seen.append([f.delivered for f in state.trajectory.faults])
            order = await client.call_tool("get_order", {"order_id": givens["order_id"]})
        return {"listings": listings, "seen": seen, "faults": state.trajectory.faults,
                "givens": givens, "order": order}  # fmt: skip


def _poisoned(listing: dict[str, Any], fault: Fault) -> str:
    tool = listing[fault.detail["tool"]]
    if fault.detail["field"] == "description":
        return str(tool.description)
    return str(tool.input_schema["properties"][fault.detail["field"]]["description"])


def test_a_poisoned_tool_description_is_listed_byte_for_byte() -> None:
    for placement in ("description", "parameter"):
        got = anyio.run(_listings, f"injection_mcp:placements={placement}", 2)
        [fault] = got["faults"]
        assert fault.detail["placement"] == placement
        text = planted(fault, got["givens"])
        assert text in _poisoned(got["listings"][0], fault)
        assert text in _poisoned(got["listings"][1], fault)  # it stays
        assert got["seen"] == [[True], [True]]  # delivered with the first listing's bytes
        assert not got["order"].is_error  # the schema is untouched: calls work as before


def test_a_rug_pull_changes_the_description_after_the_first_listing() -> None:
    got = anyio.run(_listings, "injection_mcp:placements=rug_pull", 3)
    # The first listing is clean and records nothing: an agent that lists once never meets it.
    assert got["seen"][0] == []
    first, second = got["listings"][:2]
    [fault] = got["faults"]
    assert fault.detail["placement"] == "rug_pull" and fault.delivered
    text = planted(fault, got["givens"])
    tool = fault.detail["tool"]
    assert text not in str(first[tool].description) and text in str(second[tool].description)
    assert got["seen"][1:] == [[True], [True]]


def test_an_agent_that_never_lists_never_meets_the_listing_payload() -> None:
    async def main() -> list[Fault]:
        with trial("injection_mcp") as (toolbox, state, givens):
            await toolbox.call("get_order", order_id=givens["order_id"])
            return state.trajectory.faults

    assert anyio.run(main) == []


class PageReader:
    """An agent that opens its trial's page server and, with ``fetch``, reads the page over
    HTTP (as an exec: agent without a browser would)."""

    clock = "virtual"

    def __init__(self, fetch: bool) -> None:
        self.fetch = fetch
        self.pages: list[str] = []
        self.givens: dict[str, Any] = {}

    async def run(self, episode: Episode) -> AgentOutput:
        assert episode.link is not None
        if "injection" not in episode.link.trial_id:
            return AgentOutput(answer="clean twin: not read")
        self.givens = dict(episode.link.world.givens)
        async with serve_pages(episode) as url:
            if self.fetch:
                async with httpx.AsyncClient() as http:
                    self.pages += [(await http.get(url)).text for _ in range(2)]
        return AgentOutput(answer="done")


def _page_trial(fetch: bool) -> tuple[PageReader, TrialRecord]:
    agent = PageReader(fetch)
    config = RunConfig(
        scenarios=[scenario_of("ui-refund-admin")],
        agent=agent,  # type: ignore[arg-type]
        agent_name="page-reader",
        cells=parse_cells(["injection_page:encodings=[plain]"]),
        trials=1,
        seed=3,
        journal=None,
    )
    [record] = [r for r in run(config).records if r.cell != "clean"]
    return agent, record


def test_a_payload_planted_in_a_page_is_in_the_page_as_served() -> None:
    agent, record = _page_trial(fetch=True)
    [fault] = [f for f in record.trajectory.faults if f.kind == "injection"]
    assert fault.delivered
    scenario = scenario_of("ui-refund-admin")
    [payload] = [
        p
        for p in pool(catalogue(), scenario, agent.givens, "observation")
        if p.id == fault.detail["payload"]
    ]
    text = html.escape(encode(payload.render(agent.givens), "plain"), quote=True)
    element = PAGE_PLACEMENTS[str(fault.detail["placement"])].format(text)
    # In the HTML itself (a reader without a script gets it), on every load of the page.
    assert all(element in page for page in agent.pages)
    assert all(instructions(page) for page in agent.pages)


def test_a_page_never_fetched_carries_no_payload_that_landed() -> None:
    _, record = _page_trial(fetch=False)
    assert not [f for f in record.trajectory.faults if f.delivered]


async def _http_listings(cell: str, times: int, mcp_first: bool = False) -> dict[str, Any]:
    """``GET /tools`` on the tool hub ``times`` times (after one MCP ``tools/list``)."""
    with trial(cell) as (toolbox, state, givens):
        seen: list[list[bool]] = [[f.delivered for f in state.trajectory.faults]]
        raw: list[bytes] = []
        async with ToolHub.serving() as hub, hub.trial(toolbox) as urls:
            if mcp_first:
                async with Client(urls.mcp) as client:
                    await client.list_tools()
            async with httpx.AsyncClient() as http:
                for _ in range(times):
                    raw.append((await http.get(f"{urls.tools}/tools")).content)
                    seen.append([f.delivered for f in state.trajectory.faults])
                args = {"order_id": givens["order_id"]}
                order = await http.post(f"{urls.tools}/tools/get_order", json=args)
        return {"raw": raw, "seen": seen, "faults": state.trajectory.faults, "givens": givens,
                "order": order, "listings": toolbox.listings}  # fmt: skip


def _http_poisoned(raw: bytes, fault: Fault) -> str:
    tool = next(t for t in json.loads(raw) if t["name"] == fault.detail["tool"])
    if fault.detail["field"] == "description":
        return str(tool["description"])
    return str(tool["parameters"]["properties"][fault.detail["field"]]["description"])


def test_a_poisoned_tool_description_reaches_the_http_tool_listing() -> None:
    """``GET /tools`` (an exec: agent's CHAOSEVAL_TOOLS_URL) is poisoned as ``tools/list`` is:
    the planted text in the listing's bytes (zero-width characters themselves, not escapes),
    delivered once the listing is written, never before it is fetched."""
    for placement in ("description", "parameter"):
        cell = f"injection_mcp:placements={placement},encodings=[zero_width]"
        got = anyio.run(_http_listings, cell, 2)
        [fault] = got["faults"]
        assert fault.detail["placement"] == placement
        text = planted(fault, got["givens"])
        assert "\u200b" in text
        assert json.dumps(text, ensure_ascii=False)[1:-1].encode() in got["raw"][0], placement
        assert text in _http_poisoned(got["raw"][0], fault)
        assert text in _http_poisoned(got["raw"][1], fault)  # it stays
        assert got["seen"] == [[], [True], [True]]  # nothing before the first listing
        assert got["order"].status_code == 200  # the schema is untouched: calls work as before


def test_a_rug_pull_reaches_the_http_listing_after_a_first_one_over_mcp() -> None:
    """The listings are counted per trial over both wires: one tool server, so an agent that
    saw the clean tools over MCP meets the rug pull in its next listing over HTTP."""
    got = anyio.run(_http_listings, "injection_mcp:placements=rug_pull", 1, True)
    [fault] = got["faults"]
    assert fault.detail["placement"] == "rug_pull" and fault.delivered
    assert planted(fault, got["givens"]) in _http_poisoned(got["raw"][0], fault)
    # Listed only over MCP, once: the rug pull never comes, nothing landed.
    alone = anyio.run(_http_listings, "injection_mcp:placements=rug_pull", 0, True)
    assert alone["faults"] == [] and alone["seen"] == [[]]


def test_a_plain_http_listing_is_the_tools_listed_and_counted_every_time() -> None:
    """With no plugin rewriting listings, ``GET /tools`` is made once a trial (ToolsApp): every
    listing the same bytes, the tools as http_listing lists them, and each one counted."""
    got = anyio.run(_http_listings, "latency", 3, True)  # no listing plugin
    assert got["raw"][0] == got["raw"][1] == got["raw"][2]
    assert got["listings"] == 4  # the one over MCP and three over HTTP
    with trial("latency") as (toolbox, _, _):
        tools, fired = http_listing(toolbox)
    assert json.loads(got["raw"][0]) == tools and fired == []
    assert got["raw"][0] == json.dumps(tools, ensure_ascii=False).encode()


# An exec: agent on the openai SDK: it reads the order over the HTTP tools, then hands the tool's
# body to its model as the tool message, as every function-calling loop does.
RELAYING_AGENT = """
import json, os, re, httpx, openai
tools, task = os.environ["CHAOSEVAL_TOOLS_URL"], os.environ["CHAOSEVAL_INSTRUCTION"]
order = {"order_id": re.search(r"ORD-\\d+", task).group(0)}
listed = httpx.get(f"{tools}/tools").json()
body = httpx.post(f"{tools}/tools/get_order", json=order).text
call = {"id": "call_1", "type": "function",
        "function": {"name": "get_order", "arguments": json.dumps(order)}}
done = openai.OpenAI().chat.completions.create(
    model=os.environ["CHAOSEVAL_MODEL"],
    messages=[{"role": "user", "content": task},
              {"role": "assistant", "content": None, "tool_calls": [call]},
              {"role": "tool", "tool_call_id": "call_1", "content": body}],
    tools=[{"type": "function", "function": {"name": t["name"], "description": t["description"],
            "parameters": t["parameters"]}} for t in listed],
    user=os.environ["CHAOSEVAL_TRIAL_ID"],  # the test finds the trial's request by it
)
print(json.dumps({"answer": done.choices[0].message.content}))
"""
ENCODINGS = ("plain", "markdown", "html_comment", "zero_width", "base64")


def test_a_payload_reaches_a_model_endpoint_upstream_byte_for_byte(tmp_path: Path) -> None:
    """A tool result's planted text, relayed by an exec: agent (openai SDK) as its tool
    message, reaches the ``--model-endpoint`` upstream (a real OpenAI-compatible app on
    127.0.0.1 keeping the raw request bodies) in every encoding, its bytes unchanged: the
    characters themselves (zero-width ones included) as the SDK sent them, never escapes."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from chaoseval.agents.process import ProcessAgent
    from chaoseval.channels.asgi import serve_asgi
    from chaoseval.channels.model.session import UpstreamConfig
    from chaoseval.engine.runner import run_matrix

    raw: list[bytes] = []

    async def chat(request: Request) -> JSONResponse:
        raw.append(await request.body())
        message = {"role": "assistant", "content": "refunded"}
        return JSONResponse(
            {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
             "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
        )  # fmt: skip

    script = tmp_path / "agent.py"
    script.write_text(RELAYING_AGENT)
    upstream = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])

    async def main() -> list[TrialRecord]:
        async with serve_asgi(upstream) as url:
            agent = ProcessAgent(
                f"{sys.executable} {script}", upstream=UpstreamConfig(endpoint=f"{url}/v1")
            )
            config = RunConfig(
                scenarios=[scenario_of(SCENARIO)],
                agent=agent,
                agent_name="relaying",
                cells=parse_cells(
                    [f"injection:encodings=[{e}],tools=get_order" for e in ENCODINGS]
                ),
                trials=1,
                seed=5,
                references=False,
            )
            return (await run_matrix(config)).records

    records = [r for r in anyio.run(main) if r.cell != "clean"]
    assert len(records) == len(ENCODINGS) and len(raw) == len(ENCODINGS) + 1  # and clean's
    for record in records:
        assert record.answer == "refunded", record.error
        [fault] = record.trajectory.faults
        givens = scenario_of(SCENARIO).build(record.world_seed)[1]
        text = planted(fault, givens)
        # In the tool message: the result's JSON as a JSON string, so JSON's own escapes twice
        # (quotes, backslashes), every other character as its UTF-8 bytes.
        once = json.dumps(text, ensure_ascii=False)[1:-1]
        wire = json.dumps(once, ensure_ascii=False)[1:-1].encode()
        [body] = [b for b in raw if json.loads(b)["user"] == record.trial_id]
        assert wire in body
        tool = json.loads(body)["messages"][-1]
        assert tool["role"] == "tool" and text in json.loads(tool["content"])[fault.detail["field"]]
        if fault.detail["encoding"] == "zero_width":
            assert "\u200b".encode() in body and b"\\u200b" not in body
