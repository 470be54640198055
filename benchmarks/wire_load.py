"""The client side of bench_wire: a process of its own (as an agent is), ``-j`` threads with one
keep-alive HTTP/1.1 connection each per kind, every request timed.

stdin, first line: ``{"concurrency": 8, "kinds": [{"name", "url", "method", "headers",
"bodies", "mcp"}]}`` (``headers``: one dict, or a list of them, thread t taking the t-th). The
process opens every kind's connections (``mcp``: an MCP session on each, as an MCP client does)
and prints ``ready``. Then each line ``{"kind": name, "start": a, "stop": b}`` sends that
kind's bodies a..b split over its threads and prints one line, ``[[index, ms], ...]``. So the
bench can interleave the kinds in rounds: each kind sees the same spells of the machine's other
load as the bare app it is compared with.
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


def main() -> None:
    spec = json.loads(sys.stdin.readline())
    kinds = {k["name"]: Kind(k, spec["concurrency"]) for k in spec["kinds"]}
    print("ready", flush=True)
    for line in sys.stdin:
        ask = json.loads(line)
        print(json.dumps(kinds[ask["kind"]].run(ask["start"], ask["stop"])), flush=True)


if __name__ == "__main__":
    main()
