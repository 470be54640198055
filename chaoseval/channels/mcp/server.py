"""One trial's tools as an MCP server, on the low-level ``mcp`` Server API.

The tools are the scenario's ToolSpecs with their own JSON schemas (``spec.params_schema()``,
the schema the harness validates against), never a schema re-derived from a Python signature,
so what an MCP client is offered and what the trial accepts cannot disagree. Every
``tools/call`` goes through the trial's ToolBox: policy, budgets, perturbations, the fault
ledger and the judge are the same as for an in-process agent. This module maps outcomes:

============================  =========================================================
ToolBox outcome               MCP answer
============================  =========================================================
a JSON result                 ``content``: the JSON text; ``structuredContent``: the object
a string (malformed body)     ``content``: the raw text
ToolError, budget exceeded    ``isError`` result with the tool's message
ToolTimeout                   ``isError``: "timeout: ..."
ToolHTTPError                 ``isError``: "429 Too Many Requests, retry after 2 s"
ToolConnectionError           ``isError``: "connection reset: ..."
a fault on ``layer=transport``  the same ``isError`` result, which the HTTP layer replaces by
                              a real 429/5xx, reset or hang (chaoseval.channels.mcp.wire);
                              over stdio and in process only the tool layer exists
HarnessError                  a JSON-RPC error (the trial is not evaluable anyway)
============================  =========================================================

``isError`` results also carry the fault's fields in ``_meta`` under :data:`ERROR_META`.

In a trial with a user, ``ask_user`` is listed too and answered by the user channel, never the
ToolBox (chaoseval.engine.askuser): ``{"reply": ..., "ended": ...}`` as the result's JSON and
``structuredContent``, or ``isError`` for a bad argument; no tool-channel fault reaches it.
"""

from __future__ import annotations

from collections.abc import Iterable
from http import HTTPStatus
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from chaoseval.engine import askuser
from chaoseval.engine.listing import listing
from chaoseval.engine.toolbox import ToolBox, held_faults
from chaoseval.engine.tooljson import utf8_json
from chaoseval.errors import (
    AgentVisibleError,
    HarnessError,
    ToolConnectionError,
    ToolHTTPError,
    ToolTimeout,
)
from chaoseval.seams.agent import UserChannel

SERVER_NAME = "chaoseval"
ERROR_META = "dev.chaoseval/error"
RELAY_HEADER = b"x-chaoseval-relay"  # set by ``chaoseval mcp-relay``: the agent speaks stdio
EXCHANGE_KEY = "chaoseval.mcp.exchange"  # where the HTTP layer leaves an Exchange in the scope


class Exchange:
    """One HTTP request carrying an MCP message, shared by the HTTP layer and the handlers.

    The handler that runs the message (in the MCP session's task) leaves a transport-layer
    fault here, and the fault ids to mark delivered once the response is written.
    """

    __slots__ = ("_headers", "on_written", "transport_fault")

    def __init__(self, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
        self._headers = headers  # the request's, as ASGI has them
        self.transport_fault: AgentVisibleError | None = None
        self.on_written: list[int] = []

    @property
    def relay(self) -> bool:
        """Came through ``chaoseval mcp-relay`` (its header): stdio has no transport layer.
        Looked up when a transport fault comes, not on every request."""
        return any(k == RELAY_HEADER for k, _ in self._headers)


def exchange_of(ctx: ServerRequestContext[Any, Any]) -> Exchange | None:
    scope = getattr(ctx.request, "scope", None)
    return scope.get(EXCHANGE_KEY) if isinstance(scope, dict) else None


class TrialTools:
    """The MCP face of one trial's ToolBox: ``server()`` builds a low-level mcp Server on it."""

    def __init__(self, toolbox: ToolBox, user: UserChannel | None = None):
        self.toolbox = toolbox
        # The trial's user, when ``ask_user`` is listed (chaoseval.engine.askuser).
        self.user = user if askuser.offered(toolbox.specs, user) else None
        self._current: dict[str, dict[str, Any]] = {}

    def server(self) -> Server[Any]:
        server: Server[Any] = Server(
            SERVER_NAME,
            version=_version(),
            instructions="The tools of one chaoseval trial.",
            on_list_tools=self._on_list_tools,
            get_tool_input_schema=self.input_schema,
        )
        # A call is answered in the wire's own form (a dict): the SDK validates a result
        # against the protocol version's schema and writes that either way, so building its
        # pydantic model first (and dumping it again) only cost CPU (make bench: bench_wire).
        # (A listing stays a model: its 2026 form has fields the model fills in.)
        server.add_request_handler("tools/call", types.CallToolRequestParams, self._on_call_tool)
        # The SDK wraps every message in an OpenTelemetry span by default (its documented
        # opt-out: drop the middleware). chaoseval exports no traces, and the no-op span
        # cost a tenth of an MCP request's CPU (make bench: bench_wire).
        server.middleware = []
        return server

    def listing(self) -> tuple[list[dict[str, Any]], list[int]]:
        """What ``tools/list`` answers now, and the faults that shaped it (to deliver on write)."""
        tools, fired = listing(self.toolbox, self.user)
        self._current = {t["name"]: t for t in tools}
        return tools, fired

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """The schema last listed for ``name`` (the SDK checks ``Mcp-Param-*`` headers with it);
        asking must not count as a listing, or it would fire the listing's faults."""
        tool = self._current.get(name)
        if tool is None and name == askuser.ASK_USER and self.user is not None:
            return askuser.PARAMETERS
        if tool is None:
            spec = self.toolbox.specs.get(name)
            return None if spec is None else spec.params_schema()
        return tool["inputSchema"]

    async def _on_list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools, fired = self.listing()
        exchange = exchange_of(ctx)
        if exchange is not None:
            exchange.on_written.extend(fired)  # delivered when the response's bytes go out
        else:
            self.toolbox.deliver(fired)  # in process: handing the result over is delivery
        return types.ListToolsResult(tools=[types.Tool.model_validate(t) for t in tools])

    async def _on_call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> dict[str, Any]:
        return await self.call(params.name, params.arguments or {}, exchange_of(ctx))

    async def call(
        self, name: str, arguments: dict[str, Any], exchange: Exchange | None = None
    ) -> dict[str, Any]:
        """Run one ``tools/call`` through the ToolBox and encode the outcome (a
        ``CallToolResult`` in its wire form). Over HTTP (an ``exchange``) the call's faults
        are held, and delivered when the response is written; in process handing the outcome
        over is delivery. (One frame: every MCP request runs it.)"""
        if self.user is not None and name == askuser.ASK_USER:
            return await self._ask_user(arguments)
        holding = None if exchange is None else held_faults()
        held = None if holding is None else holding.__enter__()
        try:
            result, text = await self.toolbox.call_json(name, arguments)
        except AgentVisibleError as exc:
            if exc.layer == "transport" and exchange is not None and not exchange.relay:
                exchange.transport_fault = exc
            return error_result(exc)
        except HarnessError as exc:
            raise MCPError(types.INTERNAL_ERROR, f"chaoseval harness error: {exc}") from exc
        finally:
            if holding is not None:
                holding.__exit__(None, None, None)
                exchange.on_written.extend(held)  # type: ignore[union-attr,arg-type]
        return ok_result(result, text)

    async def _ask_user(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """``ask_user``: the user channel's turn, past the ToolBox and its plugins."""
        assert self.user is not None
        try:
            return ok_result(await askuser.ask(self.user, arguments, self.toolbox))
        except AgentVisibleError as exc:  # a bad argument
            return error_result(exc)
        except HarnessError as exc:
            raise MCPError(types.INTERNAL_ERROR, f"chaoseval harness error: {exc}") from exc


def ok_result(result: Any, text: str | None = None) -> dict[str, Any]:
    """``text``: ``json.dumps(result)`` when at hand (ToolBox.call_json)."""
    if isinstance(result, str):  # a malformed body: the raw text, as a broken server sends it
        return _result(result)
    # As a real server writes it (FastMCP: UTF-8 JSON): text the agent's model reads must not
    # turn into \u escapes (a zero-width or accented payload would read differently).
    answer = _result(utf8_json(result, text))
    if isinstance(result, dict):
        answer["structuredContent"] = result
    return answer


def error_result(exc: AgentVisibleError) -> dict[str, Any]:
    detail: dict[str, Any] = {"kind": exc.kind}
    if isinstance(exc, ToolHTTPError):
        detail.update(status=exc.status, retry_after=exc.retry_after)
    return {"_meta": {ERROR_META: detail}, **_result(error_text(exc), error=True)}


def _result(text: str, error: bool = False) -> dict[str, Any]:
    """A ``CallToolResult`` with one text block as the SDK dumps the model (``resultType`` is
    the 2026 protocol's; the SDK drops it for an older client)."""
    return {"content": [{"type": "text", "text": text}], "isError": error, "resultType": "complete"}


def error_text(exc: AgentVisibleError) -> str:
    """The fault's detail in words a model reads: "429 Too Many Requests, retry after 2 s"."""
    message = str(exc)
    if isinstance(exc, ToolHTTPError):
        phrase = _phrase(exc.status)
        text = f"{exc.status} {phrase}".rstrip()
        if exc.retry_after is not None:
            text += f", retry after {exc.retry_after:g} s"
        return text if message in ("", phrase, f"HTTP {exc.status}") else f"{text} ({message})"
    if isinstance(exc, ToolTimeout):
        return f"timeout: {message}"
    if isinstance(exc, ToolConnectionError):
        return f"connection reset: {message}"
    return message


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("chaoseval")
    except PackageNotFoundError:  # pragma: no cover - running from an uninstalled tree
        return "0"
