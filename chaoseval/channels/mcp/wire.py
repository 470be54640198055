"""MCP over streamable HTTP on 127.0.0.1: one server for a run, one secret path per trial.

``McpHub`` is a plain ASGI app served by uvicorn in the run's event loop. Each trial registers
its ToolBox and gets ``http://127.0.0.1:PORT/trials/<token>/mcp``, a path no other trial can
guess, so concurrent trials never see each other's tools, sessions or faults. Behind the path,
the ``mcp`` SDK's StreamableHTTPSessionManager runs the trial's low-level Server
(chaoseval.channels.mcp.server) in JSON-response mode: a request's response is written only once
its result is known, which is what lets a transport-layer fault replace it.

Transport-layer faults (``timeout:layer=transport``) fail the HTTP exchange itself, as a broken
gateway or server would:

=====================  ======================================================================
fault                  on the wire
=====================  ======================================================================
ToolHTTPError          that status (429, 5xx) with ``Retry-After`` when the fault carries one
ToolTimeout            504 Gateway Timeout at once
ToolTimeout, hang      no answer until the client gives up (disconnects) or the trial ends
ToolConnectionError    the TCP connection is reset (SO_LINGER 0, RST), no response at all
=====================  ======================================================================

Faults of a ``tools/list`` (``tool_schema_drift``) are delivered when its response's last byte
is written; ``tools/call`` faults are delivered by the ToolBox as it hands the outcome over.
"""

from __future__ import annotations

import re
import secrets
import socket
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Message, Receive, Scope, Send

from chaoseval.channels.asgi import serve_asgi
from chaoseval.channels.mcp.server import EXCHANGE_KEY, Exchange, TrialTools
from chaoseval.engine.toolbox import ToolBox
from chaoseval.errors import AgentVisibleError, ToolConnectionError, ToolHTTPError, ToolTimeout

TRIAL_PATH = re.compile(r"^/trials/(?P<token>[A-Za-z0-9_-]+)/mcp/?$")
RELAY_HEADER = b"x-chaoseval-relay"  # set by ``chaoseval mcp-relay``: the agent speaks stdio

# The SDK's own default for a server on localhost: refuse DNS-rebinding Host/Origin headers.
LOCALHOST = TransportSecuritySettings(
    enable_dns_rebinding_protection=True,
    allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
    allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
)


class TrialEndpoint:
    """One trial's MCP server behind its path; applies that trial's transport faults."""

    def __init__(self, toolbox: ToolBox):
        self.tools = TrialTools(toolbox)
        self.manager = StreamableHTTPSessionManager(
            app=self.tools.server(),
            json_response=True,
            security_settings=LOCALHOST,
            session_idle_timeout=None,  # sessions end with the trial
        )
        self.closed = anyio.Event()  # the trial is over: release what still hangs

    @asynccontextmanager
    async def running(self) -> AsyncIterator[TrialEndpoint]:
        async with self.manager.run():
            try:
                yield self
            finally:
                self.closed.set()

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        exchange = Exchange(relay=any(k == RELAY_HEADER for k, _ in scope.get("headers", [])))
        scope[EXCHANGE_KEY] = exchange
        body = await _read_body(receive) if scope.get("method") == "POST" else None
        replay = _replay(body, receive) if body is not None else receive
        faulted = False

        async def sender(message: Message) -> None:
            nonlocal faulted
            if faulted:
                return  # the real response is swallowed: the fault took its place
            if message["type"] == "http.response.start" and exchange.transport_fault is not None:
                faulted = True
                await self._fail(exchange.transport_fault, receive, send)
                return
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                self.tools.toolbox.deliver(exchange.on_written)
                exchange.on_written.clear()

        await self.manager.handle_request(scope, replay, sender)

    async def _fail(self, fault: AgentVisibleError, receive: Receive, send: Send) -> None:
        if isinstance(fault, ToolHTTPError):
            headers = {} if fault.retry_after is None else {"retry-after": f"{fault.retry_after:g}"}
            await _plain(send, fault.status, str(fault), headers)
        elif isinstance(fault, ToolTimeout) and fault.hang:
            if not await self._hang(receive):
                await _reset(send)  # the trial ended first: the client waited for nothing
        elif isinstance(fault, ToolTimeout):
            await _plain(send, 504, str(fault))
        elif isinstance(fault, ToolConnectionError):
            await _reset(send)
        else:
            await _plain(send, 502, str(fault))

    async def _hang(self, receive: Receive) -> bool:
        """Wait until the client gives up (disconnects: True) or the trial ends (False)."""
        gone = False
        async with anyio.create_task_group() as tg:

            async def client_gone() -> None:
                nonlocal gone
                while (await receive())["type"] != "http.disconnect":
                    pass
                gone = True
                tg.cancel_scope.cancel()

            async def trial_over() -> None:
                await self.closed.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(client_gone)
            tg.start_soon(trial_over)
        return gone


class McpHub:
    """The run's MCP endpoint: an ASGI app routing ``/trials/<token>/mcp`` to the trial."""

    def __init__(self) -> None:
        self.base_url = ""
        self._trials: dict[str, TrialEndpoint] = {}

    @classmethod
    @asynccontextmanager
    async def serving(cls) -> AsyncIterator[McpHub]:
        """A hub served on a free port of 127.0.0.1 for the block."""
        hub = cls()
        async with serve_asgi(hub) as url:
            hub.base_url = url
            yield hub

    @asynccontextmanager
    async def trial(self, toolbox: ToolBox) -> AsyncIterator[str]:
        """Serve ``toolbox`` for the block; yields the trial's MCP URL."""
        token = secrets.token_urlsafe(16)
        async with TrialEndpoint(toolbox).running() as endpoint:
            self._trials[token] = endpoint
            try:
                yield f"{self.base_url}/trials/{token}/mcp"
            finally:
                del self._trials[token]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # no lifespan or websocket protocol here
        match = TRIAL_PATH.match(scope["path"])
        endpoint = self._trials.get(match["token"]) if match else None
        if endpoint is None:
            await _plain(send, 404, "no such trial")
            return
        await endpoint.handle(scope, receive, send)


@asynccontextmanager
async def serve_mcp(toolbox: ToolBox) -> AsyncIterator[str]:
    """One trial's tools over streamable HTTP on their own server; yields the MCP URL."""
    async with McpHub.serving() as hub, hub.trial(toolbox) as url:
        yield url


# --- ASGI plumbing --------------------------------------------------------------------------


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that hands the already-read body over once, then waits as the real one does."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


async def _plain(send: Send, status: int, text: str, headers: dict[str, str] | None = None) -> None:
    body = text.encode()
    raw = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"%d" % len(body))]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


async def _reset(send: Send) -> None:
    """Drop the connection with a TCP RST and no response, as a crashed peer or proxy does.

    ASGI has no message for this; uvicorn's ``send`` is a bound method of the request cycle,
    which holds the asyncio transport. Elsewhere, raising makes the server close the exchange.
    """
    transport = getattr(getattr(send, "__self__", None), "transport", None)
    if transport is None:
        raise ConnectionResetError("chaoseval: injected connection reset")
    if transport.is_closing():
        return
    sock = transport.get_extra_info("socket")
    try:
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass  # the peer is already gone: closing is all that is left
    transport.abort()
    await anyio.sleep(0)  # let the server see the connection lost before the app returns
