"""The wire bench's other ends (bench_wire): the processes it talks to and the bare apps it
compares chaoseval's servers with.

- ``python wire_peers.py upstream``: a trivial OpenAI-compatible upstream in a process of its
  own (as a real model server is): every request gets one fixed chat completion from a bare
  starlette app on uvicorn. It prints its base URL, then serves until its stdin closes.
- ``python wire_peers.py client``: the client, a process of its own (as an agent is); see
  ``client``.
- The bare apps: ``bare`` (the baseline), ``computing`` (the sim's: ``bare`` spending the
  sim's CPU time a request), ``bare_proxy`` (forwarding's) and ``bare_mcp`` (the mcp SDK
  alone: the tool hub's MCP baseline).
- ``serve`` and ``Session``: an ASGI app called in process with an in-memory upstream
  session (the A/B harness's request path, benchmarks/run.py).
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

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
    no OpenTelemetry middleware). What the library costs by itself: the tool hub's MCP less
    this is chaoseval's own share."""
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
    # call with arguments lists the tools to check its Mcp-Param-* headers.
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


# --- the client (`wire_peers.py client`) ------------------------------------------------

MCP_ACCEPT = "application/json, text/event-stream"


def _connect(url: str) -> tuple[http.client.HTTPConnection, str]:
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port), parts.path


def _send(conn: http.client.HTTPConnection, method: str, path: str, body: Any,
          headers: dict[str, str]) -> http.client.HTTPResponse:  # fmt: skip
    data = None if body is None else json.dumps(body).encode()
    conn.request(method, path, data, {"Content-Type": "application/json", **headers})
    response = conn.getresponse()
    response.read()
    if response.status >= 400:
        raise SystemExit(f"{method} {path}: HTTP {response.status}")
    return response


def _mcp_session(conn: http.client.HTTPConnection, path: str) -> dict[str, str]:
    headers = {"Accept": MCP_ACCEPT}
    hello = {"protocolVersion": "2025-06-18", "capabilities": {},
             "clientInfo": {"name": "bench", "version": "1"}}  # fmt: skip
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
    session = _send(conn, "POST", path, init, headers).getheader("mcp-session-id") or ""
    headers = {**headers, "Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18"}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    _send(conn, "POST", path, note, headers)
    return headers


class Kind:
    """One kind's connections (one a thread) and bodies."""

    def __init__(self, spec: dict[str, Any], j: int):
        self.spec = spec
        self.links = []
        given = spec.get("headers") or {}
        for t in range(j):
            conn, path = _connect(spec["url"])
            # A list: thread t's are its t-th (mod its length), e.g. each its own trial's key.
            headers = dict(given[t % len(given)] if isinstance(given, list) else given)
            if spec.get("mcp"):
                headers.update(_mcp_session(conn, path))
            self.links.append((conn, path, headers))

    def run(self, start: int, stop: int) -> list[list[float]]:
        out: list[list[float]] = []
        j = len(self.links)
        threads = [
            threading.Thread(target=self._worker, args=(link, range(start + t, stop, j), out))
            for t, link in enumerate(self.links)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return out

    def _worker(self, link: Any, mine: range, out: list[list[float]]) -> None:
        conn, path, headers = link
        method, bodies = self.spec["method"], self.spec["bodies"]
        for i in mine:
            started = time.perf_counter()
            _send(conn, method, path, bodies[i], headers)
            out.append([i, (time.perf_counter() - started) * 1e3])


def client() -> None:
    """stdin, first line: ``{"concurrency": 8, "kinds": [{"name", "url", "method", "headers",
    "bodies", "mcp"}]}`` (``headers``: one dict, or a list of them, thread t taking the t-th).
    ``-j`` threads with one keep-alive HTTP/1.1 connection each per kind (``mcp``: an MCP
    session on each, as an MCP client opens it), then ``ready``. Then each line ``{"kind":
    name, "start": a, "stop": b}`` sends that kind's bodies a..b split over its threads and
    prints ``[[index, ms], ...]``: so the bench interleaves the kinds in rounds, each meeting
    the same spells of the machine's other load as the bare app it is compared with."""
    spec = json.loads(sys.stdin.readline())
    kinds = {k["name"]: Kind(k, spec["concurrency"]) for k in spec["kinds"]}
    print("ready", flush=True)
    for line in sys.stdin:
        ask = json.loads(line)
        print(json.dumps(kinds[ask["kind"]].run(ask["start"], ask["stop"])), flush=True)


# --- in process: an app served without sockets, its upstream in memory ---------------------

COMPLETION_BYTES = json.dumps(COMPLETION).encode()


class Answer:
    """What the apps read of an aiohttp response: its body, status and headers."""

    status = 200
    headers: ClassVar[dict[str, str]] = {}

    async def __aenter__(self) -> Answer:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        return None

    async def read(self) -> bytes:
        return COMPLETION_BYTES


class Session:
    """An aiohttp ClientSession's ``post`` answered in memory: the hop's own sockets (the
    same in both kinds) left out of the count."""

    def post(self, url: str, **kwargs: Any) -> Answer:
        return Answer()


def scope_of(
    path: str, data: bytes, headers: list[tuple[bytes, bytes]], host: bytes = b"127.0.0.1"
) -> dict[str, Any]:
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 5000),
        "headers": [(b"host", host), (b"content-type", b"application/json"),
                    (b"content-length", str(len(data)).encode()), *headers],
    }  # fmt: skip


async def serve(app: Any, path: str, bodies: list[bytes], headers: list[Any]) -> None:
    """Each body POSTed to ``app`` in process, the i-th with ``headers[i % len(headers)]``
    (one list for all, or one a trial, as bench_wire's clients send them); each answered 200."""
    sent: list[Any] = []

    async def send(message: Any) -> None:
        sent.append(message)

    for i, data in enumerate(bodies):

        async def receive(data: bytes = data) -> dict[str, Any]:
            return {"type": "http.request", "body": data, "more_body": False}

        await app(scope_of(path, data, headers[i % len(headers)]), receive, send)
        if sent[0]["status"] != 200:
            raise SystemExit(f"wire_peers.serve: HTTP {sent[0]['status']}: {sent[1:]}")
        sent.clear()


async def _upstream() -> None:
    from chaoseval.channels.asgi import serve_asgi  # the same listener as every channel's

    async with serve_asgi(bare) as url:
        print(url, flush=True)
        await anyio.to_thread.run_sync(sys.stdin.read)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    if sys.argv[1:] == ["upstream"]:
        anyio.run(_upstream)
    elif sys.argv[1:] == ["client"]:
        client()
    else:
        raise SystemExit("usage: python wire_peers.py upstream|client")
