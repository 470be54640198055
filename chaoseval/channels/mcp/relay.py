"""``chaoseval mcp-relay``: a stdio MCP server relaying to a trial's streamable-HTTP endpoint.

Agents that launch their MCP servers as processes (a ``command`` in their MCP config) get this
command in place of the real server. It speaks MCP on stdin/stdout and forwards every
``tools/list`` and ``tools/call`` to the trial's URL with the mcp client, so the trial's ToolBox,
faults and ledger are the same as over HTTP. A stdio pipe has no transport layer: the relay
announces itself (``X-Chaoseval-Relay``) and the trial answers transport-layer faults as
``isError`` results instead of HTTP failures, which the relay passes on unchanged.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared._httpx_utils import create_mcp_http_client

from chaoseval.channels.mcp.server import RELAY_HEADER, SERVER_NAME
from chaoseval.errors import ConfigError

URL_ENV = "CHAOSEVAL_MCP_URL"


@asynccontextmanager
async def upstream(url: str) -> AsyncIterator[Client]:
    """An mcp client session on the trial's URL, marked as coming through the stdio relay."""
    http: httpx2.AsyncClient = create_mcp_http_client(headers={RELAY_HEADER.decode(): "stdio"})
    async with http, Client(streamable_http_client(url, http_client=http), cache=None) as client:
        yield client


def relay_server(client: Client) -> Server[Any]:
    """A low-level Server whose tools are whatever the upstream trial lists, answered by it."""

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return await client.list_tools()

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        result = await client.call_tool(params.name, params.arguments or {})
        assert isinstance(result, types.CallToolResult)
        return result

    return Server(SERVER_NAME, on_list_tools=list_tools, on_call_tool=call_tool)


async def relay(url: str) -> None:
    """Serve MCP on this process's stdin/stdout until the client closes them."""
    async with upstream(url) as client, stdio_server() as (read, write):
        server = relay_server(client)
        await server.run(read, write, server.create_initialization_options())


def resolve_url(url: str | None) -> str:
    found = url or os.environ.get(URL_ENV)
    if not found:
        raise ConfigError(f"mcp-relay needs the trial's MCP URL: an argument or ${URL_ENV}")
    return found


def main(url: str | None = None) -> None:
    """The command's body: relay until stdin closes."""
    try:
        anyio.run(relay, resolve_url(url))
    except KeyboardInterrupt:  # pragma: no cover - the agent stopped us
        sys.exit(130)
