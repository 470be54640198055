"""A trivial OpenAI-compatible upstream for bench_wire, in a process of its own (as a real model
server is): every request gets one fixed chat completion from a bare starlette app on uvicorn.
Run as a script it prints its base URL, then serves until its stdin closes.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse

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


async def _serve() -> None:
    from chaoseval.channels.asgi import serve_asgi  # the same listener as every channel's

    async with serve_asgi(bare) as url:
        print(url, flush=True)
        await anyio.to_thread.run_sync(sys.stdin.read)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    anyio.run(_serve)
