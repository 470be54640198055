"""``chaoseval mcp-relay``: a stdio client launches the relay, which serves the trial's tools;
over stdio only the tool layer exists, so transport faults arrive as isError results."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_support import trial_toolbox

from chaoseval.channels.hub import serve_mcp
from chaoseval.channels.mcp.relay import resolve_url
from chaoseval.errors import ConfigError


async def over_stdio(cell: str) -> dict[str, Any]:
    with trial_toolbox(cell) as (toolbox, state, givens):
        async with serve_mcp(toolbox) as url:
            command = StdioServerParameters(
                command=sys.executable, args=["-m", "chaoseval", "mcp-relay", url]
            )
            with anyio.fail_after(60):
                async with Client(command) as client:
                    listing = await client.list_tools()
                    result = await client.call_tool(
                        "lookup_order", {"order_id": givens["order_id"]}
                    )
        return {"listing": listing, "result": result, "state": state, "toolbox": toolbox}


def test_a_stdio_client_uses_the_trial_through_the_relay() -> None:
    """One launch covers both: the relayed listing, and a transport 429 as a tool-layer error."""
    got = anyio.run(over_stdio, "timeout:probability=1,modes=429,retry_after=2,layer=transport")
    offered = {t.name: t.input_schema for t in got["listing"].tools}
    assert offered == {n: s.params_schema() for n, s in got["toolbox"].specs.items()}
    result = got["result"]
    assert result.is_error
    assert result.content[0].text == "429 Too Many Requests, retry after 2 s"
    [fault] = got["state"].trajectory.faults
    assert fault.delivered and fault.detail["layer"] == "transport"


def test_the_relay_needs_a_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHAOSEVAL_MCP_URL", raising=False)
    with pytest.raises(ConfigError, match="CHAOSEVAL_MCP_URL"):
        resolve_url(None)
    monkeypatch.setenv("CHAOSEVAL_MCP_URL", "http://127.0.0.1:9/trials/x/mcp")
    assert resolve_url(None).endswith("/trials/x/mcp")
