"""MCP over streamable HTTP on 127.0.0.1 with the real mcp client: tools, tool-layer faults as
isError results, transport-layer faults as real HTTP errors, resets and hangs, and trials that
share one server without ever seeing each other."""

from __future__ import annotations

import time
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_support import run_over_mcp, trial_toolbox

from chaoseval.channels.hub import ToolHub, TrialUrls, serve_mcp
from chaoseval.loading.files import installed

MODES = ["auto", "legacy"]  # the 2026-07-28 per-request era, and the initialize handshake


async def call_over_http(cell: str, mode: str = "auto", timeout: float | None = None) -> Any:
    """One ``lookup_order`` over HTTP; returns (result or the exception raised, faults)."""
    with trial_toolbox(cell) as (toolbox, state, givens):
        async with serve_mcp(toolbox) as url:
            outcome: Any
            try:
                async with Client(url, mode=mode, read_timeout_seconds=timeout) as client:
                    try:
                        outcome = await client.call_tool(
                            "lookup_order", {"order_id": givens["order_id"]}
                        )
                    except MCPError as exc:
                        outcome = exc
            except Exception as exc:  # the transport itself failed (a reset)
                outcome = exc
        return outcome, state.trajectory.faults


@pytest.mark.parametrize("mode", MODES)
def test_a_client_lists_and_calls_the_tools_over_http(mode: str) -> None:
    async def main() -> None:
        with trial_toolbox() as (toolbox, state, givens):
            async with serve_mcp(toolbox) as url, Client(url, mode=mode) as client:
                assert url.startswith("http://127.0.0.1:")
                listing = await client.list_tools()
                assert {t.name: t.input_schema for t in listing.tools} == {
                    n: s.params_schema() for n, s in toolbox.specs.items()
                }
                order = await client.call_tool("lookup_order", {"order_id": givens["order_id"]})
                assert order.structured_content["order_id"] == givens["order_id"]
                wrong = await client.call_tool("lookup_order", {"order_id": "ORD-0"})
                assert wrong.is_error
            assert [s.result_class for s in state.trajectory.tool_steps()] == ["ok", "tool_error"]

    anyio.run(main)


@pytest.mark.parametrize(
    ("cell", "text"),
    [
        ("timeout:probability=1,modes=429,retry_after=2", "429 Too Many Requests, retry after 2 s"),
        ("timeout:probability=1,modes=hang", "timeout: lookup_order did not answer within 5s"),
        ("malformed:probability=1,modes=html_error", "<!DOCTYPE html>"),
    ],
)
def test_tool_layer_faults_are_results_over_http(cell: str, text: str) -> None:
    result, faults = anyio.run(call_over_http, cell)
    assert result.content[0].text.startswith(text)
    assert result.is_error == ("malformed" not in cell)
    assert [f.delivered for f in faults] == [True]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fault", ["modes=429,retry_after=2", "modes=5xx", "modes=raise"])
def test_transport_faults_are_http_errors_the_client_raises(fault: str, mode: str) -> None:
    """The pinned mcp client turns an HTTP 4xx/5xx into an error at once (some versions hung)."""
    started = time.perf_counter()
    outcome, faults = anyio.run(
        call_over_http, f"timeout:probability=1,{fault},layer=transport", mode
    )
    assert isinstance(outcome, MCPError), outcome
    assert outcome.message == "Server returned an error response"
    assert time.perf_counter() - started < 10  # it raised; it did not wait for a timeout
    [fault_record] = faults
    assert fault_record.detail["layer"] == "transport" and fault_record.delivered


def test_transport_fault_statuses_on_the_wire() -> None:
    """What a plain HTTP client sees: the status, Retry-After, a 504 for a gateway timeout."""

    async def post(cell: str) -> httpx.Response:
        with trial_toolbox(cell) as (toolbox, _, givens):
            async with serve_mcp(toolbox) as url, httpx.AsyncClient() as http:
                # A 2026-07-28 request stands alone: its envelope in _meta, its method in headers.
                envelope = {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                }
                arguments = {"order_id": givens["order_id"]}
                call = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "lookup_order", "arguments": arguments, "_meta": envelope},
                }
                headers = {
                    "accept": "application/json, text/event-stream",
                    "mcp-protocol-version": "2026-07-28",
                    "mcp-method": "tools/call",
                    "mcp-name": "lookup_order",
                }
                return await http.post(url, json=call, headers=headers)

    rate = anyio.run(post, "timeout:probability=1,modes=429,retry_after=2,layer=transport")
    assert (rate.status_code, rate.headers["retry-after"]) == (429, "2")
    assert anyio.run(post, "timeout:probability=1,modes=raise,layer=transport").status_code == 504
    clean = anyio.run(post, "clean")
    assert clean.status_code == 200 and clean.json()["result"]["isError"] is False


@pytest.mark.parametrize("mode", MODES)
def test_a_transport_reset_drops_the_connection(mode: str) -> None:
    outcome, faults = anyio.run(
        call_over_http, "timeout:probability=1,modes=reset,layer=transport", mode
    )
    assert not isinstance(outcome, MCPError)
    assert "ReadError" in repr(outcome) or "RemoteProtocolError" in repr(outcome), outcome
    assert [f.kind for f in faults] == ["connection_reset"]


def test_a_transport_hang_lasts_until_the_client_gives_up() -> None:
    started = time.perf_counter()
    outcome, _ = anyio.run(
        call_over_http, "timeout:probability=1,modes=hang,layer=transport", "auto", 0.5
    )
    assert isinstance(outcome, MCPError) and "timed out" in outcome.message
    assert time.perf_counter() - started >= 0.5


def test_a_transport_hang_ends_when_the_trial_ends() -> None:
    """A client that would wait forever is cut off when the trial's endpoint closes."""

    async def main() -> BaseException | None:
        cell = "timeout:probability=1,modes=hang,layer=transport"
        with trial_toolbox(cell) as (tb, state, givens):
            async with ToolHub.serving() as hub:
                async with anyio.create_task_group() as tg:
                    caught: list[BaseException] = []

                    async def agent(url: str) -> None:
                        try:
                            async with Client(url) as client:
                                await client.call_tool(
                                    "lookup_order", {"order_id": givens["order_id"]}
                                )
                        except Exception as exc:
                            caught.append(exc)

                    # The trial ends once the call hangs (its fault is written down), not
                    # after a fixed 0.5 s a loaded machine may spend before the call arrives;
                    # the 60 s only bound a failure.
                    async with hub.trial(tb) as urls:
                        tg.start_soon(agent, urls.mcp)
                        with anyio.fail_after(60):
                            while not state.trajectory.faults:
                                await anyio.sleep(0.01)
                    with anyio.fail_after(60):
                        while not caught:
                            await anyio.sleep(0.05)
                return caught[0]

    assert anyio.run(main) is not None


def test_concurrent_trials_on_one_hub_never_mix() -> None:
    """Two trials of different scenarios share a server; each path serves only its own world,
    over MCP and over plain HTTP tools alike, and a path that names no trial is refused."""
    other = "calendar-book-room"

    async def main() -> None:
        with (
            trial_toolbox() as (vending, v_state, givens),
            trial_toolbox("clean", scenario_id=_scenario_id(other)) as (calendar, c_state, _),
        ):
            async with ToolHub.serving() as hub, hub.trial(vending) as a, hub.trial(calendar) as b:
                assert a.mcp != b.mcp and a.tools != b.tools
                assert a.mcp.startswith(hub.base_url) and b.tools.startswith(hub.base_url)

                async def use(urls: TrialUrls, toolbox: Any) -> None:
                    async with Client(urls.mcp) as client, httpx.AsyncClient() as http:
                        names = [t.name for t in (await client.list_tools()).tools]
                        assert names == list(toolbox.specs)
                        listed = (await http.get(f"{urls.tools}/tools")).json()
                        assert [t["name"] for t in listed] == names
                        if "lookup_order" in names:
                            order = {"order_id": givens["order_id"]}
                            for _ in range(3):
                                await client.call_tool("lookup_order", order)
                                await http.post(f"{urls.tools}/tools/lookup_order", json=order)

                async with anyio.create_task_group() as tg:
                    tg.start_soon(use, a, vending)
                    tg.start_soon(use, b, calendar)
                async with httpx.AsyncClient() as http:
                    for path in ("/trials/nope/mcp", "/trials/nope/tools/x", "/"):
                        assert (
                            await http.post(f"{hub.base_url}{path}", json={})
                        ).status_code == 404
            assert len(v_state.trajectory.tool_steps()) == 6
            assert c_state.trajectory.tool_steps() == []

    anyio.run(main)


def _scenario_id(prefix: str) -> str:
    return next(s.id for s in installed() if s.id.startswith(prefix.split("-")[0]))


def test_a_scripted_agent_over_mcp_is_judged_like_an_in_process_one() -> None:
    """Whole trials through the runner: clean passes; a 429 on every call fails, delivered."""
    records = run_over_mcp("timeout:probability=1,modes=429", 2)
    clean = [r for r in records if r.cell == "clean"]
    faulted = [r for r in records if r.cell != "clean"]
    assert [r.status for r in clean] == ["passed", "passed"]
    assert all(r.status == "failed" and r.faults_delivered() > 0 for r in faulted)
