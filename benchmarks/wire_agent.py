"""An ``exec:`` agent on the standard library only (http.client, one keep-alive connection
per server): starts in a fraction of a second, so a test or a benchmark of the wire measures
the wire, not an SDK's import time.

    python wire_agent.py            solve the task: chaoseval-sim picks the tool calls
    python wire_agent.py time N     also first time N requests to its tool hub (GET /tools)
                                    and N to its model channel (GET /v1/models), and put the
                                    milliseconds in the answer's data

It speaks the two protocols as any agent would: OpenAI chat completions with function tools
(OPENAI_BASE_URL, OPENAI_API_KEY) and the trial's HTTP tools (CHAOSEVAL_TOOLS_URL).
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import time
from typing import Any
from urllib.parse import urlsplit

MAX_TURNS = 30


class Server:
    """One keep-alive HTTP/1.1 connection to a base URL."""

    def __init__(self, base: str, headers: dict[str, str] | None = None):
        parts = urlsplit(base)
        self.path = parts.path.rstrip("/")
        self.conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port)
        self.headers = {"Content-Type": "application/json", **(headers or {})}

    def ask(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        self.conn.request(method, self.path + path, data, self.headers)
        response = self.conn.getresponse()
        raw = response.read()
        try:
            return response.status, json.loads(raw)
        except ValueError:
            return response.status, raw.decode("utf-8", "replace")


def timed(server: Server, path: str, n: int) -> list[float]:
    """Milliseconds of each of ``n`` GETs of ``path``, each answered 200."""
    out = []
    for _ in range(n):
        started = time.perf_counter()
        status, _ = server.ask("GET", path)
        out.append((time.perf_counter() - started) * 1e3)
        if status != 200:
            raise SystemExit(f"GET {path}: HTTP {status}")
    return out


def solve(task: str, tools: Server, model: Server) -> dict[str, Any]:
    _, described = tools.ask("GET", "/tools")
    offered = [
        {"type": "function", "function": {k: d[k] for k in ("name", "description", "parameters")}}
        for d in described
    ]
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for _ in range(MAX_TURNS):
        request = {"model": os.environ["CHAOSEVAL_MODEL"], "messages": messages, "tools": offered}
        status, done = model.ask("POST", "/chat/completions", request)
        if status != 200:
            return {"answer": f"model HTTP {status}", "gave_up": True}
        message = done["choices"][0]["message"]
        messages.append(message)
        calls = message.get("tool_calls") or []
        if not calls:
            return final(message.get("content") or "")
        for call in calls:
            function = call["function"]
            args = json.loads(function["arguments"] or "{}")
            status, result = tools.ask("POST", f"/tools/{function['name']}", args)
            content = result if status == 200 else {"error": result}
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(content)}
            )
    return {"answer": "out of turns", "gave_up": True}


def final(content: str) -> dict[str, Any]:
    """The model's last word: its JSON answer when it gave one, else its text."""
    try:
        parsed = json.loads(content)
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) and "answer" in parsed else {"answer": content}


def main() -> None:
    task = os.environ["CHAOSEVAL_INSTRUCTION"]
    tools = Server(os.environ["CHAOSEVAL_TOOLS_URL"])
    key = os.environ["OPENAI_API_KEY"]
    model = Server(os.environ["OPENAI_BASE_URL"], {"Authorization": f"Bearer {key}"})
    data: dict[str, Any] = {}
    if sys.argv[1:2] == ["time"]:
        n = int(sys.argv[2])
        data = {"tools_ms": timed(tools, "/tools", n), "model_ms": timed(model, "/models", n)}
    out = solve(task, tools, model)
    print(json.dumps({**out, "data": {**(out.get("data") or {}), **data}}))


if __name__ == "__main__":
    main()
