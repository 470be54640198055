"""The client side of bench_wire: a process of its own (as an agent is), ``-j`` threads with one
keep-alive HTTP/1.1 connection each, every request timed.

stdin: ``{"concurrency": 8, "kinds": [{"name", "url", "method", "headers", "bodies",
"mcp"}]}``; each kind's bodies are sent in turn, split over the threads (``mcp``: open a
session first on each connection, as an MCP client does). stdout: ``{name: [[index, ms]]}``.
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time
from typing import Any
from urllib.parse import urlsplit

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


def _worker(kind: dict[str, Any], mine: list[int], out: list[list[float]]) -> None:
    conn, path = _connect(kind["url"])
    headers = dict(kind.get("headers") or {})
    if kind.get("mcp"):
        headers.update(_mcp_session(conn, path))
    for i in mine:
        started = time.perf_counter()
        _send(conn, kind["method"], path, kind["bodies"][i], headers)
        out.append([i, (time.perf_counter() - started) * 1e3])
    conn.close()


def main() -> None:
    spec = json.load(sys.stdin)
    j = spec["concurrency"]
    result: dict[str, list[list[float]]] = {}
    for kind in spec["kinds"]:
        out: list[list[float]] = []
        n = len(kind["bodies"])
        threads = [
            threading.Thread(target=_worker, args=(kind, list(range(t, n, j)), out))
            for t in range(j)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        result[kind["name"]] = out
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
