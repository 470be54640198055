"""Tools over HTTP: serve a trial's tools on 127.0.0.1, call them with httpx, fault them with respx.

For an agent whose tools are HTTP APIs, the tool perturbations must apply on the wire. The
trial's ToolBox stays the single call path (policy, budgets, perturbation chain, fault ledger,
judging are identical to in-process agents); this module only moves its outcomes onto HTTP:

===========================  =====================================================
ToolBox outcome              on the wire
===========================  =====================================================
a JSON result                200, ``application/json``
a string (malformed body)    200, the raw text (``text/html`` when it looks like HTML)
ToolHTTPError                that status (429, 5xx, a 409 conflict, a scenario's own
                             4xx), ``Retry-After`` when the fault carries one; the body
                             the error's own JSON object when it is one (drift's
                             conflict), else ``{"error": ..., "kind": "http_error"}``
ToolTimeout                  server: 504 + ``X-Chaoseval-Error: timeout``;
                             respx: ``httpx.ReadTimeout`` raised by the transport
ToolConnectionError          server: connection closed without a response;
                             respx: ``httpx.RemoteProtocolError``
ToolError and other refusals 422 + ``X-Chaoseval-Error: <kind>``, ``{"error": ...}``
a body over the run's limit 413 + ``X-Chaoseval-Error: request_too_large`` (channels.limits)
HarnessError                 500 + ``X-Chaoseval-Error: harness_error``
===========================  =====================================================

:class:`HttpTools` is the client side: it maps those responses and httpx exceptions back to the
agent-visible errors, so an agent's harness code (retries, validation) is the same either way.
Over the server, faults are marked delivered once the answer's bytes are written (or the
connection reset); over respx (no socket), when the ToolBox hands the outcome over.

In a trial with a user, ``POST /tools/ask_user`` with ``{"message": "..."}`` is the user's turn
(chaoseval.engine.askuser): 200 and ``{"reply": ..., "ended": ...}``, a bad argument 422; it is
listed by ``GET /tools`` and never passes the ToolBox or its plugins.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import httpx
import respx
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from chaoseval import redact
from chaoseval.channels.asgi import drop_connection, serve_asgi
from chaoseval.channels.limits import (
    DEFAULT_REQUEST_LIMIT,
    BodyTooLarge,
    bounded_body,
    deep_message,
)
from chaoseval.engine import askuser
from chaoseval.engine.listing import http_listing, rewrites
from chaoseval.engine.toolbox import StepBudgetExceeded, ToolBox, held_faults
from chaoseval.engine.tooljson import utf8_json
from chaoseval.errors import (
    AgentVisibleError,
    HarnessError,
    ToolConnectionError,
    ToolError,
    ToolHTTPError,
    ToolTimeout,
)
from chaoseval.model import untrusted
from chaoseval.model.scenario import ToolDescription, ToolSpec
from chaoseval.seams.agent import ToolChannel, UserChannel

ERROR_HEADER = "X-Chaoseval-Error"
TOOL_PATH = r"^/tools/(?P<name>[a-z][a-z0-9_]*)$"
_TOOL_PATH = re.compile(TOOL_PATH)


# A JSON answer's headers, as every tool result has them: one read-only mapping, written by
# _write as the bytes it makes of it once (not made and encoded anew per call).
_JSON: Mapping[str, str] = MappingProxyType({"Content-Type": "application/json; charset=utf-8"})
_JSON_RAW = (b"content-type", _JSON["Content-Type"].encode("latin-1"))


@dataclass
class Reply:
    """One tool outcome as an HTTP answer (or as the absence of one)."""

    status: int
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    drop: bool = False  # close the connection without answering
    timeout: bool = False  # the tool did not answer in time


def _error(status: int, kind: str, message: str, **headers: str) -> Reply:
    body = json.dumps({"error": message, "kind": kind}, ensure_ascii=False).encode()
    return Reply(
        status,
        body,
        {"Content-Type": "application/json; charset=utf-8", ERROR_HEADER: kind, **headers},
        timeout=kind == "timeout",
    )


def _http_error(exc: ToolHTTPError) -> Reply:
    """A ToolHTTPError as the service would send it. A message that is a JSON object is the
    service's own error body (drift's 409: what changed and its value now), sent as it is, so
    a third-party agent reads ``current`` as it would from a real API."""
    extra = {} if exc.retry_after is None else {"Retry-After": f"{exc.retry_after:g}"}
    if _json_object(str(exc)) is None:
        return _error(exc.status, "http_error", str(exc), **extra)
    headers = {"Content-Type": "application/json; charset=utf-8", ERROR_HEADER: "http_error"}
    return Reply(exc.status, str(exc).encode(), {**headers, **extra})


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def encode_result(result: Any, text: str | None = None) -> Reply:
    """``text``: ``json.dumps(result)`` when at hand (ToolBox.call_json)."""
    if isinstance(result, str):
        kind = "text/html" if result.lstrip().startswith("<") else "application/json"
        return Reply(200, result.encode(), {"Content-Type": f"{kind}; charset=utf-8"})
    # UTF-8 as a real API sends it: an agent that relays the body's text to its model relays the
    # characters themselves, never \u escapes of them.
    body = utf8_json(result, text).encode()
    return Reply(200, body, _JSON)


async def answer(toolbox: ToolChannel, name: str, args: Any) -> Reply:
    """Run one call through the trial's ToolBox and encode its outcome for HTTP."""
    if not isinstance(args, dict):
        return _error(400, "tool_error", "the request body must be a JSON object of arguments")
    text = None
    try:
        if isinstance(toolbox, ToolBox):
            result, text = await toolbox.call_json(name, args)
        else:
            result = await toolbox.call(name, **args)
    except ToolTimeout as exc:
        return _error(504, "timeout", str(exc))
    except ToolHTTPError as exc:
        return _http_error(exc)
    except ToolConnectionError:
        return Reply(0, drop=True)
    except AgentVisibleError as exc:
        return _error(422, exc.kind, str(exc))
    except HarnessError as exc:
        return _error(500, "harness_error", str(exc))
    return encode_result(result, text)


# --- the server -----------------------------------------------------------------------------


class ToolsApp:
    """``POST /tools/{name}`` (JSON arguments) and ``GET /tools``: an ASGI app on one ToolBox.

    Served by uvicorn inside the trial's event loop (chaoseval.channels.asgi), so a request
    reaches the ToolBox and its clock directly, with no thread or portal in between.
    """

    def __init__(self, toolbox: ToolChannel, user: UserChannel | None = None):
        self.toolbox = toolbox
        # The trial's user, when ``ask_user`` is served (chaoseval.engine.askuser).
        self.user = user if askuser.offered(toolbox.specs, user) else None
        # GET /tools's reply while no plugin rewrites listings: the same bytes every time
        # (the scenario's tools), so made once, not decoded and encoded anew per request.
        self._listed: Reply | None = None
        # Each tool's own path and its name, as TOOL_PATH matches them (a name the pattern
        # refuses is left out: the pattern answers for it as for any other path).
        names = [*toolbox.specs, *([askuser.ASK_USER] if self.user is not None else [])]
        paths = [f"/tools/{name}" for name in names]
        self._routes = {
            path: match["name"] for path in paths if (match := _TOOL_PATH.match(path)) is not None
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # no lifespan or websocket protocol here
        try:
            receive = await bounded_body(scope, receive, _limit(self.toolbox))
        except BodyTooLarge as exc:
            if isinstance(self.toolbox, ToolBox):
                self.toolbox.note_oversized("tools", scope["path"], exc)
            await too_large_tools(exc)(scope, receive, send)
            return
        path, method = scope["path"], scope["method"]
        raw = b""
        if method == "POST" and self._tool_name(path) is not None:
            raw = await Request(scope, receive).body()
        await self.respond(method, path, raw, send)

    async def respond(self, method: str, path: str, raw: bytes, send: Send) -> None:
        """Answer ``method path`` (``raw``: a POST's body, read within the limit): the app
        once its request is read; the tool hub calls it with the body it read itself."""
        name = self._tool_name(path)
        held: list[int] = []
        if method == "GET" and path.rstrip("/") == "/tools":
            reply, held = self._listing()
        elif method == "POST" and name is not None:
            reply, held = await self._call(name, raw)
        else:
            reply = _error(404, "tool_error", f"no route {method} {path}")
        if reply.drop:
            await drop_connection(send)  # a reset: the client gets no response at all
        else:
            await _write(reply, send)
        if held and isinstance(self.toolbox, ToolBox):
            self.toolbox.deliver(held)  # the outcome's bytes are written (or the reset is)

    def _tool_name(self, path: str) -> str | None:
        """``TOOL_PATH``'s name in ``path`` (None: no match): the scenario's own tools' paths
        looked up, any other matched (the same name: each was matched when the table was made)."""
        name = self._routes.get(path)
        if name is None:
            match = _TOOL_PATH.match(path)
            name = match["name"] if match else None
        return name

    def _listing(self) -> tuple[Reply, list[int]]:
        """The tool listing, rewritten by the listing plugins as MCP's ``tools/list`` is (a
        poisoned description, a drifted schema); its faults delivered once it is written."""
        if not isinstance(self.toolbox, ToolBox):
            asks = [askuser.described()] if self.user is not None else []
            return encode_result([*self.toolbox.describe(), *asks]), []
        plain = not rewrites(self.toolbox)
        if plain and self._listed is not None:
            self.toolbox.listings += 1  # counted as http_listing counts it
            return self._listed, []
        tools, fired = http_listing(self.toolbox, self.user)
        reply = encode_result(tools)
        if plain:
            self._listed = reply
        return reply, fired

    async def _call(self, name: str, raw: bytes) -> tuple[Reply, list[int]]:
        """The call's answer, and its faults: delivered once the answer is written."""
        if untrusted.deeper(raw):  # past what a record or json takes: the agent is told
            if isinstance(self.toolbox, ToolBox):
                self.toolbox.note_deep("tools", f"/tools/{name}")
            return _error(400, "request_too_deep", deep_message()), []
        try:
            args = json.loads(raw or b"{}")
        except ValueError:
            return _error(400, "tool_error", "the request body is not JSON"), []
        if self.user is not None and name == askuser.ASK_USER:
            return await ask_user(self.user, args, self.toolbox), []
        if not isinstance(self.toolbox, ToolBox):
            return await answer(self.toolbox, name, args), []
        with held_faults() as held:
            return await answer(self.toolbox, name, args), held


async def ask_user(user: UserChannel, args: Any, toolbox: Any) -> Reply:
    """``POST /tools/ask_user``: the user's turn, past the ToolBox (chaoseval.engine.askuser)."""
    try:
        return encode_result(await askuser.ask(user, args, toolbox))
    except AgentVisibleError as exc:
        return _error(422, exc.kind, str(exc))
    except HarnessError as exc:
        return _error(500, "harness_error", str(exc))


async def _write(reply: Reply, send: Send) -> None:
    """What ``Response(reply.body, reply.status, reply.headers)`` sends (its headers, then a
    Content-Length), without building one per call."""
    if reply.headers is _JSON:
        headers = [_JSON_RAW]
    else:
        headers = [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers.items()
        ]
    if not (reply.status < 200 or reply.status in (204, 304)):
        headers.append((b"content-length", b"%d" % len(reply.body)))
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": reply.body})


def _limit(toolbox: ToolChannel) -> int:
    return toolbox.request_limit if isinstance(toolbox, ToolBox) else DEFAULT_REQUEST_LIMIT


def too_large_tools(error: BodyTooLarge) -> Response:
    """413 with the tools' own error body (``{"error", "kind"}``)."""
    reply = _error(413, "request_too_large", str(error))
    return Response(reply.body, reply.status, reply.headers)


@asynccontextmanager
async def serve_tools(toolbox: ToolChannel, user: UserChannel | None = None) -> AsyncIterator[str]:
    """Serve ``toolbox`` (and ``ask_user`` with a ``user``) over HTTP for the duration of the
    block; yields the base URL."""
    async with serve_asgi(ToolsApp(toolbox, user)) as url:
        yield url


# --- respx: the same faults at the httpx layer, no socket ------------------------------------


def tool_responder(toolbox: ToolChannel) -> Callable[..., Awaitable[httpx.Response]]:
    """A respx side effect answering ``POST /tools/{name}`` from the trial's ToolBox."""

    async def respond(request: httpx.Request, name: str) -> httpx.Response:
        try:
            args = untrusted.loads(request.content or b"{}")
        except ValueError:  # not JSON, or too deep for json (untrusted.TooDeep)
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
        raise HarnessError(f"tool server: {redact.head(response.text, 300)}")
    if kind == "timeout":
        raise ToolTimeout(f"{name}: gateway timeout ({status})")
    if kind == "http_error":
        # The ToolBox's own ToolHTTPError (any status: a 409 conflict too): the same exception
        # and message the agent gets in process, so its handling and the record are the same.
        raise ToolHTTPError(status, _http_message(response), retry_after=retry_after(response))
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


def _http_message(response: httpx.Response) -> str:
    """An http_error's message: the envelope's ``error``, or the service's own body."""
    body = _json_object(response.text)
    if body is not None and body.get("kind") == "http_error" and "error" in body:
        return str(body["error"])
    return response.text


def _message(response: httpx.Response) -> str:
    try:
        return str(response.json()["error"])
    except (ValueError, KeyError, TypeError):
        return redact.head(response.text, 300) or f"HTTP {response.status_code}"


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
