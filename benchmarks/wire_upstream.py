"""A trivial OpenAI-compatible upstream for bench_wire, in a process of its own (as a real model
server is): every request gets one fixed chat completion from a bare starlette app on uvicorn.
Run as a script it prints its base URL, then serves until its stdin closes. Also the bench's
bare apps: ``bare`` (its baseline), ``computing`` (the sim's: ``bare`` spending the sim's CPU
time a request), ``bare_proxy`` (forwarding's baseline) and ``bare_mcp`` (the mcp SDK alone:
the tool hub's MCP baseline).
"""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

COMPLETION = {
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "bench",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}  # fmt: skip


async def bare(scope: Any, receive: Any, send: Any) -> None:
    """uvicorn and starlette, no chaoseval: the bench's baseline and its trivial upstream."""
    if scope["type"] != "http":
        return
    request = Request(scope, receive)
    await request.body()
    await JSONResponse(COMPLETION)(scope, receive, send)


def computing(seconds: float) -> Any:
    """``bare`` that spends ``seconds`` of CPU time on each request before it answers, as
    chaoseval-sim spends its own: the sim's kind's baseline. At -j 8 a request also waits for
    the others' compute; against ``bare`` alone that wait was booked as the channel's."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await Request(scope, receive).body()
        until = time.thread_time() + seconds  # CPU time: a wait for the core is not compute
        while time.thread_time() < until:
            pass
        await JSONResponse(COMPLETION)(scope, receive, send)

    return app


@asynccontextmanager
async def bare_proxy(upstream: str) -> AsyncIterator[Any]:
    """uvicorn, starlette and aiohttp, no chaoseval: the least any forwarding costs (a request's
    body handed on to ``upstream`` over one keep-alive session, set up as the model channel's,
    and its answer written back as it came). The bench's baseline for forwarding: what is
    left over it is chaoseval's own share of the hop."""
    from chaoseval.channels.model.forward import POOL

    url, headers = f"{upstream}/v1/chat/completions", {"Content-Type": "application/json"}
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=POOL, limit_per_host=0),
        trust_env=False,
        cookie_jar=aiohttp.DummyCookieJar(),
    ) as session:

        async def app(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                return
            body = await Request(scope, receive).body()
            async with session.post(url, data=body, headers=headers) as answer:
                raw, status = await answer.read(), answer.status
            await Response(raw, status, media_type="application/json")(scope, receive, send)

        yield app


@asynccontextmanager
async def bare_mcp() -> AsyncIterator[Any]:
    """The mcp SDK alone, no chaoseval: a low-level Server with one trivial tool behind the tool
    hub's transport settings (stateful streamable HTTP, JSON responses, the localhost checks,
    no OpenTelemetry middleware). What the library costs by itself: the tool hub's MCP less this
is chaoseval's own share."""
    import mcp_types as types
    from mcp.server import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from chaoseval.channels.mcp.server import ok_result
    from chaoseval.channels.mcp.wire import LOCALHOST

    ping = types.Tool(name="ping", input_schema={"type": "object", "properties": {}})

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[ping])

    async def call_tool(ctx: Any, params: Any) -> dict[str, Any]:
        return ok_result({"ok": True})

    # Its tool's schema at hand (the tool hub's TrialTools has it too): else a 2026-protocol
    # call with arguments lists the tools to check its Mcp-Param-* headers (count_tools.py).
    schema = ping.input_schema
    server: Server[Any] = Server(
        "bare", on_list_tools=list_tools, get_tool_input_schema=lambda name: schema
    )
    server.add_request_handler("tools/call", types.CallToolRequestParams, call_tool)
    server.middleware = []
    manager = StreamableHTTPSessionManager(
        app=server, json_response=True, security_settings=LOCALHOST, session_idle_timeout=None
    )

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await manager.handle_request(scope, receive, send)

    async with manager.run():
        yield app


async def _serve() -> None:
    from chaoseval.channels.asgi import serve_asgi  # the same listener as every channel's

    async with serve_asgi(bare) as url:
        print(url, flush=True)
        await anyio.to_thread.run_sync(sys.stdin.read)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    anyio.run(_serve)
