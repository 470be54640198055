"""Tool faults on the wire are delivered when their bytes are written, not when the ToolBox
hands the outcome to the server: a spy between the server and the socket sees each fault
still undelivered as the answer's last byte goes out, and delivered once it is out."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
from mcp import Client
from mcp_support import trial_toolbox
from starlette.types import Message, Receive, Scope, Send

from chaoseval.channels.asgi import serve_asgi
from chaoseval.channels.hub import ToolHub
from chaoseval.engine.toolbox import TrialState

CELL = "timeout:probability=1,modes=429,retry_after=2"


async def _spied(over: str) -> tuple[list[list[bool]], list[bool]]:
    """One ``lookup_order`` over MCP or plain HTTP through a spying hub; what the spy saw as
    each response's last body chunk went out, and the faults' state after the call."""
    with trial_toolbox(CELL) as (toolbox, state, givens):
        hub = ToolHub()
        at_last_byte: list[list[bool]] = []

        async def spy_app(scope: Scope, receive: Receive, send: Send) -> None:
            async def spy(message: Message) -> None:
                if message["type"] == "http.response.body" and not message.get("more_body"):
                    at_last_byte.append(_delivered(state))
                await send(message)

            await hub(scope, receive, spy)

        async with serve_asgi(spy_app) as url:
            hub.base_url = url
            async with hub.trial(toolbox) as urls:
                args = {"order_id": givens["order_id"]}
                if over == "mcp":
                    async with Client(urls.mcp) as client:
                        result: Any = await client.call_tool("lookup_order", args)
                        assert result.is_error and "429" in result.content[0].text
                else:
                    async with httpx.AsyncClient() as http:
                        response = await http.post(f"{urls.tools}/tools/lookup_order", json=args)
                        assert response.status_code == 429
                        assert response.headers["retry-after"] == "2"
        return [seen for seen in at_last_byte if seen], _delivered(state)


def _delivered(state: TrialState) -> list[bool]:
    return [f.delivered for f in state.trajectory.faults]


def test_an_mcp_tool_fault_is_delivered_when_its_result_is_written() -> None:
    at_last_byte, after = anyio.run(_spied, "mcp")
    assert at_last_byte == [[False]]  # the result was ready, its bytes not yet written
    assert after == [True]


def test_an_http_tool_fault_is_delivered_when_its_answer_is_written() -> None:
    at_last_byte, after = anyio.run(_spied, "http")
    assert at_last_byte == [[False]]
    assert after == [True]
