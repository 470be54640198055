"""The wire's own cost per request: each server chaoseval runs against a bare uvicorn app on
the same machine, at -j 8 from a client process of its own (benchmarks/wire_load.py).

Kinds: the tool hub's HTTP tools and its MCP endpoint (a trivial tool), the model channel
answering from chaoseval-sim (the sim's own compute, each step's ``upstream_latency``, taken
out request by request) and forwarding to a trivial upstream in a process of its own
(``--model-endpoint``; benchmarks/wire_upstream.py), and the page server (a bundled UI page).
"added" is chaoseval's percentile less the bare app's in the same process, and for forwarding
less the upstream's called directly (so the extra hop is the forwarding's cost, counted).
Target on an idle machine: p50 added < 0.5 ms, p99 added < 5 ms (reported, not asserted). Then
the held-out style check: an exec: agent timing 150 requests to its own tool hub and model
channel (benchmarks/wire_agent.py).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from trivial import scenario as trivial_scenario
from wire_upstream import bare

from chaoseval.agents.process import ProcessAgent
from chaoseval.channels.asgi import serve_asgi
from chaoseval.channels.browser.server import serve_pages
from chaoseval.channels.hub import ToolHub
from chaoseval.channels.model.session import UpstreamConfig, run_channels, trial_endpoint
from chaoseval.channels.model.wire import request_hash
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.records import AgentOutput, Budgets
from chaoseval.model.scenario import Scenario
from chaoseval.seams.agent import Episode

HERE = Path(__file__).resolve().parent
J = 8
N = J * 150  # requests per kind
PARAMS = {"type": "object", "properties": {}}
PING = {
    "type": "function",
    "function": {"name": "ping", "description": "Answer ok.", "parameters": PARAMS},
}
# Each kind's "added" is against the bare app it would otherwise have talked to: the in-process
# one (same event loop as the channels), or for forwarding the upstream itself, called directly.
DIRECT = "trivial upstream, called directly"
BASELINE = {"model channel, forwarding": DIRECT}


# CPU milliseconds this process (the servers; not the client, not the out-of-process upstream)
# spent per request of each kind: what the latencies cost, and less at the mercy of the
# machine's other load than they are.
CPU_MS: dict[str, float] = {}


async def _load(kinds: list[dict[str, Any]]) -> dict[str, list[list[float]]]:
    out: dict[str, list[list[float]]] = {}
    for kind in kinds:  # one client process per kind, so each kind's CPU is its own
        spec = json.dumps({"concurrency": J, "kinds": [kind]}).encode()
        cpu = time.process_time()
        done = await anyio.run_process([sys.executable, str(HERE / "wire_load.py")], input=spec)
        CPU_MS[kind["name"]] = (time.process_time() - cpu) * 1e3 / len(kind["bodies"])
        out.update(json.loads(done.stdout))
    return out


def _chat(i: int) -> dict[str, Any]:
    return {"model": "chaoseval-sim", "messages": [{"role": "user", "content": f"Call ping ({i})"}],
            "tools": [PING]}  # fmt: skip


def _kind(name: str, url: str, bodies: list[Any], **extra: Any) -> dict[str, Any]:
    return {"name": name, "url": url, "method": "POST", "bodies": bodies, **extra}


@asynccontextmanager
async def _upstream() -> AsyncIterator[str]:
    """The trivial upstream in a process of its own: its work does not share the channel's
    event loop (a real model server runs elsewhere too)."""
    async with await anyio.open_process([sys.executable, str(HERE / "wire_upstream.py")]) as p:
        assert p.stdout is not None and p.stdin is not None
        line = b""
        while not line.endswith(b"\n"):
            line += await p.stdout.receive(1)
        try:
            yield line.decode().strip()
        finally:
            await p.stdin.aclose()


async def _tools_and_models(episode: Episode, seen: dict[str, list[float]]) -> None:
    async with (
        serve_asgi(bare) as local,
        _upstream() as upstream,
        ToolHub.serving() as hub,
        hub.trial(episode.tools) as urls,  # type: ignore[arg-type]
        trial_endpoint(episode) as sim,
        run_channels(UpstreamConfig(endpoint=f"{upstream}/v1")),
        trial_endpoint(episode) as forward,
    ):
        auth = {"Authorization": f"Bearer {sim.api_key}"}
        forward_auth = {"Authorization": f"Bearer {forward.api_key}"}
        calls = [{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                  "params": {"name": "ping", "arguments": {}}} for i in range(N)]  # fmt: skip
        chats = [_chat(i) for i in range(N)]
        timed = await _load([
            _kind("bare uvicorn app", f"{local}/x", [{"q": i} for i in range(N)]),
            _kind("tool hub, HTTP tools", f"{urls.tools}/tools/ping", [{}] * N),
            _kind("tool hub, MCP tools/call", urls.mcp, calls, mcp=True),
            _kind("model channel, chaoseval-sim", f"{sim.base_url}/chat/completions", chats,
                  headers=auth),
            _kind(DIRECT, f"{upstream}/v1/chat/completions", [_chat(i) for i in range(N)]),
            _kind("model channel, forwarding", f"{forward.base_url}/chat/completions",
                  [_chat(N + i) for i in range(N)], headers=forward_auth),
        ])  # fmt: skip
    upstream_ms = {
        s.args["request_hash"]: s.result["upstream_latency"] * 1e3
        for s in episode.link.state.trajectory.steps  # type: ignore[union-attr]
        if s.kind == "model" and s.args and isinstance(s.result, dict)
    }
    for name, rows in timed.items():
        if name == "model channel, chaoseval-sim":  # the sim's own compute taken out
            seen[name] = [ms - upstream_ms.get(request_hash(chats[int(i)]), 0.0) for i, ms in rows]
        else:
            seen[name] = [ms for _, ms in rows]


async def _pages(episode: Episode, seen: dict[str, list[float]]) -> None:
    async with serve_pages(episode) as page:
        timed = await _load([{"name": "page server (GET the page)", "url": page,
                              "method": "GET", "bodies": [None] * N}])  # fmt: skip
    seen.update({name: [ms for _, ms in rows] for name, rows in timed.items()})


class _Probe:
    clock = "virtual"

    def __init__(self, body: Any, seen: dict[str, list[float]]):
        self.body, self.seen = body, seen

    async def run(self, episode: Episode) -> AgentOutput:
        await self.body(episode, self.seen)
        return AgentOutput(answer="ok")


def _roomy(s: Scenario) -> Scenario:
    return s.model_copy(update={"budgets": Budgets(max_steps=10_000, trial_timeout=3_600)})


def _trial(s: Scenario, body: Any, seen: dict[str, list[float]]) -> None:
    [record] = run(
        RunConfig(scenarios=[_roomy(s)], agent=_Probe(body, seen), agent_name="bench",
                  trials=1, references=False, wall_timeout=3_600)
    ).records  # fmt: skip
    if record.status == "not_evaluable":
        raise SystemExit(f"bench_wire: {record.error}")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _held_out() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        journal = Path(tmp) / "run.jsonl"
        agent = ProcessAgent([sys.executable, str(HERE / "wire_agent.py"), "time", "150"])
        [record] = run(
            RunConfig(scenarios=select(installed(), ["vending-refund-not-dispensed"]),
                      agent=agent, agent_name="exec:wire_agent", trials=1, journal=journal,
                      references=False)
        ).records  # fmt: skip
        stdout = journal.with_name(journal.name + ".d") / record.trial_id / "stdout.txt"
        data = json.loads(stdout.read_text().strip().splitlines()[-1])["data"]
    print("  held-out style check: an exec: agent times 150 requests to its own servers")
    for key, label in (("tools_ms", "tool hub GET /tools"), ("model_ms", "model GET /models")):
        v = data[key]
        print(f"    {label:<24} median {statistics.median(v):6.2f} ms, p99 {_pct(v, 0.99):6.2f} ms"
              f"  (target: median < 1 ms)")  # fmt: skip


def main() -> None:
    seen: dict[str, list[float]] = {}
    _trial(trivial_scenario(), _tools_and_models, seen)
    _trial(select(installed(), ["ui-checkout"])[0], _pages, seen)
    print(f"wire overhead per request, -j {J}, {N} requests each, client in its own process"
          f" (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")  # fmt: skip
    print(f"    {'':<34}{'p50':>9}{'p99':>9}{'x bare':>8}{'added p50':>11}{'added p99':>11}"
          f"{'server CPU':>12}")  # fmt: skip
    for name, values in seen.items():
        base = seen[BASELINE.get(name, "bare uvicorn app")]
        b50, b99 = _pct(base, 0.5), _pct(base, 0.99)
        p50, p99 = _pct(values, 0.5), _pct(values, 0.99)
        print(f"    {name:<34}{p50:7.2f}ms{p99:7.2f}ms{p50 / b50:7.1f}x"
              f"{p50 - b50:9.2f}ms{p99 - b99:9.2f}ms{CPU_MS.get(name, 0.0):8.3f}ms/r")  # fmt: skip
    print("    (the sim's compute taken out request by request; forwarding against the upstream")
    print("    called directly, so its extra hop is counted; target on an idle machine: added")
    print("    p50 < 0.5 ms, added p99 < 5 ms; server CPU: this process's CPU time per request,")
    print("    the sim's compute included, the upstream's and the client's not)")
    _held_out()


if __name__ == "__main__":
    main()
