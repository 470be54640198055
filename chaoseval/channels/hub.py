"""A run's tool channels on one 127.0.0.1 port: each trial's MCP server and HTTP tools.

:class:`ToolHub` is a plain ASGI app served by uvicorn in the run's event loop
(chaoseval.channels.asgi). Each trial registers its ToolBox and gets a secret path prefix,
``http://127.0.0.1:PORT/trials/<token>``, under which

- ``/mcp`` is its MCP server over streamable HTTP (chaoseval.channels.mcp.wire), and
- ``/tools`` (``GET``) and ``/tools/<name>`` (``POST``) are its HTTP tools
  (chaoseval.engine.http), ``ask_user`` among them and its MCP tools when the trial is given
  its user (chaoseval.engine.askuser), and
- ``/memory`` (``GET``) is the agent's memory, ``[{"key": ..., "value": ...}]``: the agent has
  read it (the memory channel's faults are delivered) once the response's last byte is written,

so concurrent trials never see each other's tools, sessions or faults: a path no other trial
can guess is the trial's credential. A path that names no live trial answers 404.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from mcp.types import INVALID_REQUEST, PARSE_ERROR
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import Receive, Scope, Send

from chaoseval.channels.asgi import serve_asgi
from chaoseval.channels.limits import BOUNDED, BodyTooLarge, deep_message, read_bounded
from chaoseval.channels.mcp.wire import TrialEndpoint
from chaoseval.engine.http import ToolsApp, too_large_tools
from chaoseval.engine.toolbox import ToolBox
from chaoseval.model import untrusted
from chaoseval.model.scenario import MemoryItem
from chaoseval.seams.agent import UserChannel

TRIAL_PATH = re.compile(r"^/trials/(?P<token>[A-Za-z0-9_-]+)(?P<rest>/.*)?$")


@dataclass(frozen=True)
class TrialUrls:
    """Where one trial's tools are served."""

    mcp: str  # the MCP endpoint (streamable HTTP)
    tools: str  # the HTTP tools' base URL: GET {tools}/tools, POST {tools}/tools/<name>
    memory: str  # GET: the agent's memory


# What a trial's memory route sends, and what it calls once the bytes are written
# (chaoseval.seams.agent.Episode.serve_memory).
MemorySource = Callable[[], tuple[list[MemoryItem], Callable[[], object]]]


@dataclass
class _Trial:
    mcp: TrialEndpoint
    tools: ToolsApp
    memory: MemorySource | None


class ToolHub:
    """The run's tool endpoint: routes ``/trials/<token>/...`` to that trial's channels."""

    def __init__(self) -> None:
        self.base_url = ""
        self._trials: dict[str, _Trial] = {}

    @classmethod
    @asynccontextmanager
    async def serving(cls) -> AsyncIterator[ToolHub]:
        """A hub served on a free port of 127.0.0.1 for the block."""
        hub = cls()
        async with serve_asgi(hub) as url:
            hub.base_url = url
            yield hub

    @asynccontextmanager
    async def trial(
        self,
        toolbox: ToolBox,
        memory: MemorySource | None = None,
        user: UserChannel | None = None,
    ) -> AsyncIterator[TrialUrls]:
        """Serve ``toolbox`` (and ``memory``, and ``ask_user`` for ``user``, when given) for
        the block; yields the URLs."""
        token = secrets.token_urlsafe(16)
        async with TrialEndpoint(toolbox, user).running() as endpoint:
            self._trials[token] = _Trial(endpoint, ToolsApp(toolbox, user), memory)
            base = f"{self.base_url}/trials/{token}"
            try:
                yield TrialUrls(mcp=f"{base}/mcp", tools=base, memory=f"{base}/memory")
            finally:
                del self._trials[token]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # no lifespan or websocket protocol here
        token, rest = trial_path(scope["path"])
        trial = self._trials.get(token)
        if trial is None:
            await PlainTextResponse("no such trial", 404)(scope, receive, send)
            return
        # The channel's own time: the request's, less the tool's and the hangs injected. Two
        # requests of one trial at once subtract each other's tool time (an underestimate).
        toolbox = trial.mcp.tools.toolbox
        started, busy, held = time.perf_counter(), toolbox.busy_seconds, trial.mcp.held_seconds
        mcp = rest.rstrip("/") == "/mcp"
        limit = toolbox.request_limit
        body = None  # None: not read here (or the client left first): the apps read it
        try:
            if scope.get(BOUNDED, limit + 1) > limit:  # limits.bounded_body, one frame less
                body, receive = await read_bounded(scope, receive, limit)
        except BodyTooLarge as exc:
            toolbox.note_oversized("mcp" if mcp else "tools", rest, exc)
            await (too_large_rpc(exc) if mcp else too_large_tools(exc))(scope, receive, send)
            return
        # Nesting no record or reader takes: refused with a 400 the agent reads, as the HTTP
        # tools refuse it (ToolsApp): the MCP SDK's parser would take up to 200 levels.
        if mcp and body is not None and untrusted.deeper(body):
            toolbox.note_deep("mcp", rest)
            await too_deep_rpc()(scope, receive, send)
            return
        if mcp:
            await trial.mcp.handle(scope, receive, send)
            if scope.get("method") == "GET":
                return  # the server's event stream, open as long as the session: no exchange
        elif rest.startswith("/tools") and body is not None:
            # The body in hand: the app answers from it (what it would read from the replay),
            # with no scope of its own made, nor the replay read again (ToolsApp.__call__).
            await trial.tools.respond(scope["method"], rest, body, send)
        elif rest.startswith("/tools"):
            prefix = scope["path"][: len(scope["path"]) - len(rest)]
            inner = {**scope, "path": rest, "root_path": scope.get("root_path", "") + prefix}
            await trial.tools(inner, receive, send)
        elif rest.rstrip("/") == "/memory" and trial.memory is not None:
            await _memory(trial.memory, scope, receive, send)
        else:
            await PlainTextResponse("no such trial", 404)(scope, receive, send)
        toolbox.add_overhead(
            time.perf_counter()
            - started
            - (toolbox.busy_seconds - busy)
            - (trial.mcp.held_seconds - held)
        )


def trial_path(path: str) -> tuple[str, str]:
    """``TRIAL_PATH``'s token ("": no match, no trial's) and rest (``/`` when none): asked on
    every request, so split at its slashes rather than matched. A token of other characters than the
    pattern's is no trial's (``secrets.token_urlsafe`` makes them), so it finds none either
    way; a newline, where ``$`` and ``.`` differ from a split, goes to the pattern itself
    (tests/channels/test_hub_paths.py: the same trial and rest for any path)."""
    if path.startswith("/trials/") and "\n" not in path:
        token, slash, tail = path[8:].partition("/")
        return token, slash + tail or "/"
    match = TRIAL_PATH.match(path)
    return (match["token"], match["rest"] or "/") if match else ("", "/")


async def _memory(source: MemorySource, scope: Scope, receive: Receive, send: Send) -> None:
    if scope.get("method") != "GET":
        await PlainTextResponse("GET the memory", 405, {"Allow": "GET"})(scope, receive, send)
        return
    items, read = source()
    # UTF-8 as the tools' bodies: planted characters (zero-width ones too) arrive as they are.
    body = json.dumps([m.model_dump(mode="json") for m in items], ensure_ascii=False)
    headers = {"Content-Type": "application/json; charset=utf-8"}
    await Response(body.encode(), 200, headers)(scope, receive, send)
    read()  # the last byte is written: the agent has its memory


def too_large_rpc(error: BodyTooLarge) -> Response:
    """413 as the mcp library's own transport writes it: a JSON-RPC error with no id."""
    message = {"code": INVALID_REQUEST, "message": f"Payload Too Large: {error}"}
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": message}, 413)


def too_deep_rpc() -> Response:
    """400 for a body nested too deep: a JSON-RPC parse error with no id, as for any body
    the mcp library's transport cannot parse."""
    message = {"code": PARSE_ERROR, "message": f"Parse error: {deep_message()}"}
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": message}, 400)


@asynccontextmanager
async def serve_mcp(toolbox: ToolBox, user: UserChannel | None = None) -> AsyncIterator[str]:
    """One trial's MCP tools (``ask_user`` too, given a ``user``) on a server of their own;
    yields the MCP URL."""
    async with ToolHub.serving() as hub, hub.trial(toolbox, user=user) as urls:
        yield urls.mcp
