"""The tool hub's own work a tool call, counted in instructions (callgrind), which the machine's
load does not move: MCP ``tools/call`` through the hub against the bare ``mcp`` SDK server
serving the same call (wire_upstream.bare_mcp), and the hub's HTTP tools (``POST
/tools/ping``) against the bare starlette app (wire_upstream.bare), as bench_wire pairs them.
Each app is called in process with bench_wire's request bodies, in a real trial (bench_wire's
probe: the real clock an exec: agent's trial has, its loop, frozen startup heap and collector
settings, its trajectory), an MCP session opened first as a client opens it.

``python benchmarks/count_tools.py`` runs each kind under ``valgrind --tool=callgrind`` twice
(``WARM`` requests, then ``WARM + N``: count_forward's method) and prints the difference over
``N``: instructions a request with startup, imports, the session's opening and the trial's
setup taken out. ``count_tools.py KIND...`` counts those kinds alone; ``count_tools.py KIND
COUNT`` serves COUNT requests and exits. Kinds: mcp, bare_mcp; mcp26, bare_mcp26 (the same
call from a client on the 2026 protocol: no session, and the SDK checks ``Mcp-Param-*``
headers against the tool's input schema on every call with arguments); http, bare; toolbox
(a ToolBox call alone, as the hub makes it, in process). ``COUNT_GC=off``: with the collector
off while the requests are served.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from count_forward import WARM, measure, scope_of  # noqa: E402

# Each chaoseval kind and the bare app its added share is measured against (bench_wire's pairs).
PAIRS = {"mcp": "bare_mcp", "mcp26": "bare_mcp26", "http": "bare"}
KINDS = ("mcp", "bare_mcp", "mcp26", "bare_mcp26", "http", "bare", "toolbox")
ACCEPT = (b"accept", b"application/json, text/event-stream")
HANDSHAKE, MODERN = "2025-06-18", "2026-07-28"


async def _post(app: Any, path: str, body: Any, headers: list[tuple[bytes, bytes]]) -> list[Any]:
    """One POST of ``body`` (JSON) to the ASGI app; the messages it sent back."""
    data = json.dumps(body).encode()
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": data, "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    # With a port, as a client sends it: the MCP servers' DNS-rebinding check wants one.
    await app(scope_of(path, data, headers, b"127.0.0.1:8000"), receive, send)
    if not sent or sent[0]["status"] >= 300:
        raise SystemExit(f"count_tools: {path}: {sent}")
    return sent


def _call(i: int, arguments: dict[str, Any]) -> dict[str, Any]:
    """bench_wire's tools/call body (the 2026 form adds the protocol's ``_meta``)."""
    params = {"name": "ping", "arguments": arguments}
    return {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": params}


async def _mcp(app: Any, path: str, count: int) -> None:
    """A session opened as an MCP client opens it (initialize, initialized), then COUNT calls."""
    hello = {"protocolVersion": HANDSHAKE, "capabilities": {},
             "clientInfo": {"name": "bench", "version": "1"}}  # fmt: skip
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
    start = (await _post(app, path, init, [ACCEPT]))[0]
    session = dict(start["headers"])[b"mcp-session-id"]
    headers = [ACCEPT, (b"mcp-session-id", session), (b"mcp-protocol-version", HANDSHAKE.encode())]
    await _post(app, path, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
    bodies = [_call(i, {}) for i in range(count)]
    for body in bodies:
        await _post(app, path, body, headers)


async def _mcp26(app: Any, path: str, count: int) -> None:
    """COUNT calls from a client on the 2026 protocol: no session; the protocol version and
    the client's identity in each request's ``_meta``; an argument, so the SDK looks the
    tool's input schema up for its ``Mcp-Param-*`` check, as every real call with one does."""
    headers = [ACCEPT, (b"mcp-protocol-version", MODERN.encode()), (b"mcp-method", b"tools/call"),
               (b"mcp-name", b"ping")]  # fmt: skip
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}  # fmt: skip
    bodies = [_call(i, {"note": "x"}) for i in range(count)]
    for body in bodies:
        body["params"]["_meta"] = meta
        await _post(app, path, body, headers)


async def _http(app: Any, path: str, bodies: list[Any]) -> None:
    for body in bodies:
        await _post(app, path, body, [])


def _served(kind: str, count: int) -> None:
    """COUNT requests of KIND in a trial (bench_wire's probe agent, the real clock)."""
    from bench_wire import _trial
    from trivial import scenario
    from wire_upstream import bare, bare_mcp

    from chaoseval.channels.hub import ToolHub
    from chaoseval.seams.agent import Episode

    async def body(episode: Episode, seen: Any) -> None:
        if os.environ.get("COUNT_GC") == "off":
            # The requests' own instructions: a change that moves the collector's passes in or
            # out of the N requests' window moves a count with them by ~10k a request.
            gc.disable()
        try:
            await serve(episode)
        finally:
            gc.enable()

    async def serve(episode: Episode) -> None:
        if kind == "bare":
            await _http(bare, "/x", [{"q": i} for i in range(count)])
            return
        if kind.startswith("bare_mcp"):
            async with bare_mcp() as app:
                await (_mcp26 if kind.endswith("26") else _mcp)(app, "/mcp", count)
            return
        if kind == "toolbox":  # the ToolBox alone, as the hub calls it (in process)
            for _ in range(count):
                await episode.tools.call_json("ping", {})  # type: ignore[attr-defined]
        else:
            hub = ToolHub()
            async with hub.trial(episode.tools) as urls:  # type: ignore[arg-type]
                if kind == "http":
                    await _http(hub, f"{urls.tools}/tools/ping", [{}] * count)
                else:
                    await (_mcp26 if kind.endswith("26") else _mcp)(hub, urls.mcp, count)
        state = episode.link.state  # type: ignore[union-attr]
        if sum(s.kind == "tool" for s in state.trajectory.steps) != count:
            raise SystemExit(f"count_tools: {kind}: a call was not recorded")
        # The trial's end (its record, the judge, the journal's encoding) walks every step
        # and every received text: only WARM of each are left for it in both counts.
        del state.trajectory.steps[min(count, WARM) :], state.received[min(count, WARM) :]

    _trial(_scenario(scenario()), body, {})


def _scenario(base: Any) -> Any:
    """The trivial scenario, its ping taking an optional ``note`` (the 2026 kinds send one)."""
    from chaoseval.model.scenario import tool

    @tool()
    def ping(world: Any, note: str = "") -> dict[str, bool]:
        """Answer ok."""
        return {"ok": True}

    return base.model_copy(update={"tools": [ping]})


def main(kinds: tuple[str, ...]) -> None:
    each = measure(__file__, kinds)
    for kind, base in PAIRS.items():
        if kind in each and base in each:
            added = (each[kind] - each[base]) / 1e3
            print(f"{kind:<6} over {base}: {added:.1f}k instructions a request")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[2].isdigit():
        _served(sys.argv[1], int(sys.argv[2]))
    else:
        main(tuple(sys.argv[1:]) or KINDS)
