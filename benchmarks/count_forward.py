"""Forwarding's own work a request, counted in instructions (callgrind), which the machine's load
does not move: the model channel's server (a trial's key, ``--model-endpoint``, no plugin)
against a bare starlette+aiohttp-style proxy, each app called in process with bench_wire's
request bodies and the same in-memory upstream session (one fixed completion), in a real
trial (its loop, frozen startup heap and collector settings, its trajectory).

``python benchmarks/count_forward.py`` runs each kind under ``valgrind --tool=callgrind`` twice
(``WARM`` requests, then ``WARM + N``) and prints the difference over ``N``: instructions a
request with startup, imports and the trial's setup taken out; the collector's passes are in.
``count_forward.py KIND`` counts KIND alone; ``count_forward.py KIND COUNT`` serves COUNT
requests of KIND (forward or proxy) and exits.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, ClassVar

HERE = Path(__file__).resolve().parent
WARM, N = 100, 400
KINDS = ("forward", "proxy")
COMPLETION = json.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "bench",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}).encode()  # fmt: skip


class _Answer:
    """What the apps read of an aiohttp response: its body, status and headers."""

    status = 200
    headers: ClassVar[dict[str, str]] = {}

    async def __aenter__(self) -> _Answer:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        return None

    async def read(self) -> bytes:
        return COMPLETION


class _Session:
    """An aiohttp ClientSession's ``post`` answered in memory: the hop's own sockets (the
    same in both kinds) left out of the count."""

    def post(self, url: str, **kwargs: Any) -> _Answer:
        return _Answer()


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
            raise SystemExit(f"count_forward: HTTP {sent[0]['status']}: {sent[1:]}")
        sent.clear()


def _proxy(session: _Session) -> Any:
    """wire_upstream.bare_proxy's app on the in-memory session."""
    from starlette.requests import Request
    from starlette.responses import Response

    url, headers = "http://upstream/v1/chat/completions", {"Content-Type": "application/json"}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        body = await Request(scope, receive).body()
        async with session.post(url, data=body, headers=headers) as answer:
            raw, status = await answer.read(), answer.status
        await Response(raw, status, media_type="application/json")(scope, receive, send)

    return app


def _served(kind: str, count: int) -> None:
    """COUNT requests of KIND in a trial (bench_wire's probe agent, the real clock)."""
    sys.path.insert(0, str(HERE))
    from bench_wire import _chat, _trial, _turn
    from trivial import scenario

    from chaoseval.channels.model.session import UpstreamConfig, run_channels, trial_endpoint
    from chaoseval.seams.agent import Episode

    # "-turns": bench_wire's agent's turns 1-10 (3.5 to 20 kB) rather than one message.
    make = _turn if kind.endswith("-turns") else _chat
    bodies = [json.dumps(make(i)).encode() for i in range(count)]
    kind = kind.removesuffix("-turns")
    path = "/v1/chat/completions"

    async def body(episode: Episode, seen: Any) -> None:
        session = _Session()
        if kind == "proxy":
            await serve(_proxy(session), path, bodies, [[]])
            return
        async with (
            run_channels(UpstreamConfig(endpoint="http://upstream/v1")) as channels,
            trial_endpoint(episode) as endpoint,
        ):
            channels.upstream._session = session  # type: ignore[union-attr]
            auth = [(b"authorization", f"Bearer {endpoint.api_key}".encode())]
            await serve(channels.server, path, bodies, [auth])
        steps = episode.link.state.trajectory.steps  # type: ignore[union-attr]
        if sum(s.kind == "model" for s in steps) != count:
            raise SystemExit("count_forward: a request was not recorded")
        # The trial's end (its record, redaction, the journal's encoding) walks every step:
        # only WARM steps are left for it in both counts, so the difference is the requests'.
        del steps[min(count, WARM) :]

    _trial(scenario(), body, {})


def _counts(script: str, runs: list[tuple[str, int]]) -> list[int]:
    """Each (kind, count) served by ``script`` under callgrind, side by side: its instructions
    in all."""
    with tempfile.TemporaryDirectory() as tmp:
        outs = [Path(tmp) / f"callgrind.{i}" for i in range(len(runs))]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        procs = []
        for (kind, count), out in zip(runs, outs, strict=True):
            command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                       sys.executable, script, kind, str(count)]  # fmt: skip
            quiet = subprocess.DEVNULL
            procs.append(subprocess.Popen(command, stdout=quiet, stderr=quiet, env=env))
        found = []
        for proc, out in zip(procs, outs, strict=True):
            if proc.wait():
                raise SystemExit(f"count: {proc.args} failed")
            summary = re.search(rb"^summary: (\d+)", out.read_bytes(), re.M)
            if summary is None:
                raise SystemExit("count: no summary in callgrind's output")
            found.append(int(summary.group(1)))
        return found


def measure(script: str, kinds: tuple[str, ...]) -> dict[str, float]:
    """Instructions a request of each kind ``script`` serves (``script KIND COUNT``), printed
    as they are known: the WARM + N run's count less the WARM run's, over N."""
    runs = [(kind, count) for kind in kinds for count in (WARM + N, WARM)]
    counts = dict(zip(runs, _counts(script, runs), strict=True))
    each = {}
    for kind in kinds:
        each[kind] = (counts[kind, WARM + N] - counts[kind, WARM]) / N
        print(f"{kind:<10} {each[kind] / 1e3:8.1f}k instructions a request")
    return each


def main(kinds: tuple[str, ...] = KINDS) -> None:
    each = measure(__file__, kinds)
    if len(kinds) < len(KINDS):
        return
    added = (each["forward"] - each["proxy"]) / 1e3
    print(f"forwarding's own work over the bare proxy: {added:.1f}k instructions a request")


if __name__ == "__main__":
    if len(sys.argv) == 3:
        _served(sys.argv[1], int(sys.argv[2]))
    else:
        main(tuple(sys.argv[1:2]) or KINDS)  # one kind alone: ``count_forward.py forward``
