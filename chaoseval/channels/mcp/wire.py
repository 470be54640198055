"""One trial's MCP server over streamable HTTP, with its transport-layer faults.

:class:`TrialEndpoint` is the ASGI side of a trial's MCP server; chaoseval.channels.hub mounts
it at the trial's secret path. The ``mcp`` SDK's StreamableHTTPSessionManager runs the trial's
low-level Server (chaoseval.channels.mcp.server) in JSON-response mode: a request's response is
written only once its result is known, which is what lets a transport-layer fault replace it.

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

Faults are delivered when the response's last byte is written (a ``tools/list``'s
``tool_schema_drift``, a ``tools/call``'s tool faults, a tool-layer hang's late answer), a
transport fault when its status or reset is written, and a transport hang when the client gives
up or the trial ends. The ToolBox only collects them (``held_faults``) as it hands over.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Message, Receive, Scope, Send

from chaoseval.channels.asgi import drop_connection
from chaoseval.channels.mcp import logs
from chaoseval.channels.mcp.server import EXCHANGE_KEY, Exchange, TrialTools
from chaoseval.engine.toolbox import ToolBox
from chaoseval.errors import AgentVisibleError, ToolConnectionError, ToolHTTPError, ToolTimeout
from chaoseval.seams.agent import UserChannel

# The SDK's own default for a server on localhost: refuse DNS-rebinding Host/Origin headers.
LOCALHOST = TransportSecuritySettings(
    enable_dns_rebinding_protection=True,
    allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
    allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
)


logs.install()  # the SDK logs into the trial it serves, not onto chaoseval's stderr


class TrialEndpoint:
    """One trial's MCP server behind its path; applies that trial's transport faults."""

    def __init__(self, toolbox: ToolBox, user: UserChannel | None = None):
        self.tools = TrialTools(toolbox, user)
        self.manager = StreamableHTTPSessionManager(
            app=self.tools.server(),
            json_response=True,
            security_settings=LOCALHOST,
            session_idle_timeout=None,  # sessions end with the trial
            # The hub refuses (and records) a body over the run's limit before the SDK sees
            # it; the SDK's own 4 MiB default must not refuse one within it, unrecorded.
            max_request_body_size=toolbox.request_limit,
        )
        self.closed = anyio.Event()  # the trial is over: release what still hangs
        self.held_seconds = 0.0  # wall time spent holding injected hangs
        self.log = logs.TrialLog()  # the SDK's log records while it serves this trial

    @asynccontextmanager
    async def running(self) -> AsyncIterator[TrialEndpoint]:
        try:
            with self.log.bound():
                async with self.manager.run():
                    try:
                        yield self
                    finally:
                        self.closed.set()
        finally:
            self.log.keep()  # the SDK's shutdown notices included

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        exchange = Exchange(scope.get("headers", ()))
        scope[EXCHANGE_KEY] = exchange
        # ``receive`` is the hub's: the body it read within the run's limit, then the
        # connection's own messages (a hang below waits on those for the client to go).
        faulted = False

        async def sender(message: Message) -> None:
            nonlocal faulted
            if faulted:
                return  # the real response is swallowed: the fault took its place
            if message["type"] == "http.response.start" and exchange.transport_fault is not None:
                faulted = True
                await self._fail(exchange.transport_fault, receive, send)
                self._deliver(exchange.on_written)  # written, or the hang is over
                return
            await send(message)
            if (
                exchange.on_written  # (most answers deliver nothing: no call then)
                and message["type"] == "http.response.body"
                and not message.get("more_body", False)
            ):
                self._deliver(exchange.on_written)

        with self.log.bound():
            await self.manager.handle_request(scope, receive, sender)

    def _deliver(self, ids: list[int]) -> None:
        if ids:
            self.tools.toolbox.deliver(list(ids))
            ids.clear()

    async def _fail(self, fault: AgentVisibleError, receive: Receive, send: Send) -> None:
        if isinstance(fault, ToolHTTPError):
            headers = {} if fault.retry_after is None else {"retry-after": f"{fault.retry_after:g}"}
            await _plain(send, fault.status, str(fault), headers)
        elif isinstance(fault, ToolTimeout) and fault.hang:
            if not await self._hang(receive):
                await drop_connection(
                    send, reset=True
                )  # the trial ended first: the client waited for nothing
        elif isinstance(fault, ToolTimeout):
            await _plain(send, 504, str(fault))
        elif isinstance(fault, ToolConnectionError):
            await drop_connection(send, reset=True)
        else:
            await _plain(send, 502, str(fault))

    async def _hang(self, receive: Receive) -> bool:
        """Wait until the client gives up (disconnects: True) or the trial ends (False)."""
        gone, started = False, time.perf_counter()
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
        self.held_seconds += time.perf_counter() - started
        return gone


# --- ASGI plumbing --------------------------------------------------------------------------


async def _plain(send: Send, status: int, text: str, headers: dict[str, str] | None = None) -> None:
    body = text.encode()
    raw = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"%d" % len(body))]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
