"""Tools over HTTP: serve a trial's tools on 127.0.0.1, call them with httpx, fault them with respx.

For an agent whose tools are HTTP APIs, the tool perturbations must apply on the wire. The
trial's ToolBox stays the single call path (policy, budgets, perturbation chain, fault ledger,
judging are identical to in-process agents); this module only moves its outcomes onto HTTP:

===========================  =====================================================
ToolBox outcome              on the wire
===========================  =====================================================
a JSON result                200, ``application/json``
a string (malformed body)    200, the raw text (``text/html`` when it looks like HTML)
ToolHTTPError 429/5xx        that status, ``Retry-After`` when the fault carries one
ToolTimeout                  server: 504 + ``X-Chaoseval-Error: timeout``;
                             respx: ``httpx.ReadTimeout`` raised by the transport
ToolConnectionError          server: connection closed without a response;
                             respx: ``httpx.RemoteProtocolError``
ToolError and other refusals 422 + ``X-Chaoseval-Error: <kind>``, ``{"error": ...}``
HarnessError                 500 + ``X-Chaoseval-Error: harness_error``
===========================  =====================================================

:class:`HttpTools` is the client side: it maps those responses and httpx exceptions back to the
agent-visible errors, so an agent's harness code (retries, validation) is the same either way.
Faults are marked delivered when the ToolBox hands the outcome to the HTTP layer, a hop before
the agent reads the response.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import anyio.to_thread
import httpx
import respx
from anyio.from_thread import BlockingPortal

from chaoseval.channels.asgi import single
from chaoseval.engine.toolbox import StepBudgetExceeded
from chaoseval.errors import (
    AgentVisibleError,
    HarnessError,
    ToolConnectionError,
    ToolError,
    ToolHTTPError,
    ToolTimeout,
)
from chaoseval.model.scenario import ToolDescription, ToolSpec
from chaoseval.seams.agent import ToolChannel

ERROR_HEADER = "X-Chaoseval-Error"
TOOL_PATH = r"^/tools/(?P<name>[a-z][a-z0-9_]*)$"


@dataclass
class Reply:
    """One tool outcome as an HTTP answer (or as the absence of one)."""

    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False  # close the connection without answering
    timeout: bool = False  # the tool did not answer in time


def _error(status: int, kind: str, message: str, **headers: str) -> Reply:
    body = json.dumps({"error": message, "kind": kind}).encode()
    return Reply(
        status,
        body,
        {"Content-Type": "application/json", ERROR_HEADER: kind, **headers},
        timeout=kind == "timeout",
    )


def encode_result(result: Any) -> Reply:
    if isinstance(result, str):
        kind = "text/html" if result.lstrip().startswith("<") else "application/json"
        return Reply(200, result.encode(), {"Content-Type": f"{kind}; charset=utf-8"})
    return Reply(200, json.dumps(result).encode(), {"Content-Type": "application/json"})


async def answer(toolbox: ToolChannel, name: str, args: Any) -> Reply:
    """Run one call through the trial's ToolBox and encode its outcome for HTTP."""
    if not isinstance(args, dict):
        return _error(400, "tool_error", "the request body must be a JSON object of arguments")
    try:
        result = await toolbox.call(name, **args)
    except ToolTimeout as exc:
        return _error(504, "timeout", str(exc))
    except ToolHTTPError as exc:
        extra = {} if exc.retry_after is None else {"Retry-After": f"{exc.retry_after:g}"}
        return _error(exc.status, "http_error", str(exc), **extra)
    except ToolConnectionError:
        return Reply(0, drop=True)
    except AgentVisibleError as exc:
        return _error(422, exc.kind, str(exc))
    except HarnessError as exc:
        return _error(500, "harness_error", str(exc))
    return encode_result(result)


# --- the server -----------------------------------------------------------------------------


class ToolServer:
    """``POST /tools/{name}`` (JSON arguments) and ``GET /tools`` on 127.0.0.1, a free port.

    Requests arrive on server threads; each call runs in the trial's event loop through an anyio
    BlockingPortal, so the ToolBox and its clock are only ever touched from that loop.
    """

    def __init__(self, toolbox: ToolChannel, portal: BlockingPortal):
        self.toolbox = toolbox
        self.portal = portal
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Handler, self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def __init__(self, server: ToolServer, *args: Any):
        self.tools = server
        super().__init__(*args)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the trajectory is the log

    def do_GET(self) -> None:
        if self.path.rstrip("/") != "/tools":
            self._send(_error(404, "tool_error", f"no route {self.path}"))
            return
        self._send(encode_result(self.tools.toolbox.describe()))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        match = re.match(TOOL_PATH, self.path)
        if match is None:
            self._send(_error(404, "tool_error", f"no route {self.path}"))
            return
        try:
            args = json.loads(raw or b"{}")
        except ValueError:
            self._send(_error(400, "tool_error", "the request body is not JSON"))
            return
        reply = self.tools.portal.call(answer, self.tools.toolbox, match["name"], args)
        if reply.drop:
            self.close_connection = True  # a reset: the client gets no response at all
            return
        self._send(reply)

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)


@asynccontextmanager
async def serve_tools(toolbox: ToolChannel) -> AsyncIterator[str]:
    """Serve ``toolbox`` over HTTP for the duration of the block; yields the base URL."""
    try:
        async with BlockingPortal() as portal:
            server = ToolServer(toolbox, portal)
            server.start()
            try:
                yield server.url
            finally:
                await anyio.to_thread.run_sync(server.stop)
    except BaseExceptionGroup as group:
        # The portal's task group wraps whatever the agent raised inside the block; the judge
        # must see the agent's own exception (a ToolTimeout, a crash), not a group.
        raise single(group) from None


# --- respx: the same faults at the httpx layer, no socket ------------------------------------


def tool_responder(toolbox: ToolChannel) -> Callable[..., Awaitable[httpx.Response]]:
    """A respx side effect answering ``POST /tools/{name}`` from the trial's ToolBox."""

    async def respond(request: httpx.Request, name: str) -> httpx.Response:
        try:
            args = json.loads(request.content or b"{}")
        except ValueError:
            args = None
        reply = await answer(toolbox, name, args)
        if reply.timeout:
            raise httpx.ReadTimeout(f"{name}: no answer before the deadline", request=request)
        if reply.drop:
            raise httpx.RemoteProtocolError(
                "Server disconnected without sending a response.", request=request
            )
        return httpx.Response(reply.status, content=reply.body, headers=reply.headers)

    return respond


def mock_tools(toolbox: ToolChannel, base_url: str = "http://tools.test") -> respx.MockRouter:
    """A respx router that answers ``POST {base_url}/tools/{name}`` from the trial's ToolBox.

    The same perturbation chain and ledger as in-process, with no socket: use it as a transport,
    ``httpx.MockTransport(router.async_handler)``. Routes added in front of it inject faults of
    their own (those bypass the ToolBox and its fault ledger).
    """
    router = respx.MockRouter(base_url=base_url, assert_all_called=False)
    router.post(path__regex=TOOL_PATH).mock(side_effect=tool_responder(toolbox))
    return router


# --- the client -----------------------------------------------------------------------------


def retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP-date: a real client would parse it; the tools here send seconds


def decode(name: str, response: httpx.Response) -> Any:
    """The tool result in a response, or the agent-visible error it stands for."""
    kind = response.headers.get(ERROR_HEADER)
    status = response.status_code
    if kind == "harness_error":
        raise HarnessError(f"tool server: {response.text[:300]}")
    if kind == "timeout":
        raise ToolTimeout(f"{name}: gateway timeout ({status})")
    if status == 429 or status >= 500:
        raise ToolHTTPError(status, f"{name}: HTTP {status}", retry_after=retry_after(response))
    if status >= 400:
        message = _message(response)
        if kind == "budget_exceeded":
            raise StepBudgetExceeded(message)
        raise ToolError(message)
    text = response.text
    if not text.strip():
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text  # not JSON: hand the raw body over, as a plain HTTP client would


def _message(response: httpx.Response) -> str:
    try:
        return str(response.json()["error"])
    except (ValueError, KeyError, TypeError):
        return response.text[:300] or f"HTTP {response.status_code}"


class HttpTools:
    """What an HTTP agent has in place of ``episode.tools``: the same ToolChannel, over httpx.

    Calls go over the wire; the descriptions and the model-call notes stay with the trial's
    own channel (they are bookkeeping, not traffic an agent would send to a tool server)."""

    def __init__(self, client: httpx.AsyncClient, toolbox: ToolChannel):
        self.client = client
        self._toolbox = toolbox

    @property
    def specs(self) -> Mapping[str, ToolSpec]:
        return self._toolbox.specs

    def describe(self) -> list[ToolDescription]:
        return self._toolbox.describe()

    def note_model_call(self, input_tokens: int, output_tokens: int, cost: float) -> None:
        self._toolbox.note_model_call(input_tokens, output_tokens, cost)

    async def call(self, name: str, /, **args: Any) -> Any:
        try:
            response = await self.client.post(f"/tools/{name}", json=args)
        except httpx.TimeoutException as exc:
            raise ToolTimeout(f"{name}: {type(exc).__name__}: {exc}") from None
        except (httpx.RemoteProtocolError, httpx.ConnectError, httpx.ReadError) as exc:
            raise ToolConnectionError(f"{name}: {type(exc).__name__}: {exc}") from None
        return decode(name, response)
