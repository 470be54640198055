"""The wire's own cost per request: each server chaoseval runs against a bare uvicorn app on the
same machine, at -j 8 from a client process of its own (benchmarks/wire_peers.py).

Kinds: the tool hub's HTTP tools and its MCP endpoint (a trivial tool), the model channel
answering from chaoseval-sim (against a bare app that spends the sim's own compute a request,
the median ``upstream_latency`` of its requests served alone at -j 1: at -j 8 a request waits
for the others' compute as well as its own) and forwarding to a trivial upstream in a process
of its own (``--model-endpoint``; wire_peers.py upstream), and the page server (a bundled
UI page). All kinds run side by side from one client process, in rounds (the machine is shared:
each kind meets the same spells of others' load as the bare app it is compared with). "added"
is chaoseval's percentile less the bare app's in the same rounds; for forwarding the bare app
is a bare proxy to the same upstream (uvicorn, starlette, aiohttp; wire_peers.bare_proxy),
so the upstream's own exchange is in both and "added" is chaoseval's share of the hop, as the
sim's compute is in the sim's kind and its baseline; the whole hop (less the upstream called
directly) is printed below the table. Forwarding is measured twice: with a one-message request
(~0.2 kB), and with requests as a tool-using agent sends them over its first ten turns (3.5 to
20 kB: its history and tool schemas, which every chat API resends each turn; _turn), against
the bare proxy passing the same bodies on (measured twice in the same rounds: the one less the
other, printed below the table, is what "added" reads between two measurements of the same
app, the bench's own resolution). The channel reads of such a body only what its step records
(wire.read_top: the messages and tools counted, not decoded), only where it grew since the
request it repeats (resent.ConversationReader), and fingerprints its bytes. MCP likewise:
its bare app is the ``mcp`` SDK alone serving the same tools/call (wire_peers.bare_mcp, the
tool hub's transport settings: stateful streamable HTTP in JSON-response mode, no
OpenTelemetry middleware), so "added" is chaoseval's share; the SDK's
own cost over the bare uvicorn app is printed below the table, as information (chaoseval keeps
the SDK rather than speak the protocol itself). Target on an idle machine: p50 added < 0.5 ms,
p99 added < 5 ms (reported with the load average, not asserted; `make bench-wire` runs this
part alone). Then the held-out style check: an exec: agent timing 150 requests to its own tool
hub and model channel (benchmarks/wire_agent.py). Between the table and that check: reading a
conversation's requests in process (``conversation_reads``).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream
from bench_run import scenario as trivial_scenario
from wire_peers import bare, bare_mcp, bare_proxy, computing

from chaoseval.agents.process import ProcessAgent
from chaoseval.channels.asgi import serve_asgi
from chaoseval.channels.browser.server import serve_pages
from chaoseval.channels.hub import ToolHub
from chaoseval.channels.model.resent import ConversationReader, read_whole
from chaoseval.channels.model.session import (
    ModelEndpoint,
    UpstreamConfig,
    run_channels,
    trial_endpoint,
)
from chaoseval.channels.model.wire import fingerprint
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.records import AgentOutput, Budgets
from chaoseval.model.scenario import Scenario
from chaoseval.seams.agent import Episode
from chaoseval.store.artifacts import ArtifactStore, binding

HERE = Path(__file__).resolve().parent
J = 8  # concurrent clients (the target's -j 8); `bench_wire.py -j N` for another
N = 1200  # requests per kind
PARAMS = {"type": "object", "properties": {}}
PING = {
    "type": "function",
    "function": {"name": "ping", "description": "Answer ok.", "parameters": PARAMS},
}
# Each kind's "added" is against the bare app beside it (same event loop as the channels): for
# forwarding a bare app that forwards too (the upstream's own exchange is in both, as the sim's
# compute is taken out of the sim's kind), so "added" is chaoseval's share of the hop; the
# whole hop (forwarding against the upstream called directly) is printed beside it. For MCP
# the mcp SDK alone with the same tool (its transport is the library's, which chaoseval keeps):
# "added" is what chaoseval does around it, the SDK's own cost over the bare app printed apart.
BARE = "bare uvicorn app"
DIRECT = "trivial upstream, called directly"
PROXY = "bare uvicorn+aiohttp proxy to it"
FORWARD = "model channel, forwarding"
# The same two with requests as a tool-using agent sends them over its first ten turns (_turn:
# each resends the conversation's last request one round longer, 3.5 to 20 kB): chaoseval reads
# each body, the proxy only passes it on, so this is what the channel adds to a real agent's.
PROXY_BIG = "bare proxy, an agent's turns 1-10"
FORWARD_BIG = "model channel, forwarding them"
# The bare proxy's turns a second time, in the same rounds: what "added" reads between two
# measurements of the same app, the bench's own resolution on this machine at this load.
PROXY_AGAIN = "bare proxy, the same turns again"
MCP = "tool hub, MCP tools/call"
SIM = "model channel, chaoseval-sim"
SIM_ALONE = "the sim alone, -j 1"  # its compute a request, which SIM's baseline spends too
SIM_COMPUTE_MS: list[float] = []  # (the median, once known)
BARE_SIM = "bare uvicorn app, computing as the sim"
BARE_MCP = "bare mcp SDK server, tools/call"
PAGES = "page server (GET the page)"
BARE_PAGES = "bare uvicorn app, beside the pages"
BASELINE = {SIM: BARE_SIM, FORWARD: PROXY, FORWARD_BIG: PROXY_BIG, MCP: BARE_MCP,
            PAGES: BARE_PAGES}  # fmt: skip
UNCOMPARED = (BARE, BARE_SIM, BARE_PAGES, DIRECT, PROXY, PROXY_BIG, PROXY_AGAIN, BARE_MCP)
# Printed under the table: a kind less another, for where its cost lies.
BESIDE = {
    FORWARD: (DIRECT, "forwarding's whole hop (less the upstream called directly)"),
    BARE_MCP: (BARE, "the mcp SDK's own cost over the bare app (the library's; information)"),
    PROXY_AGAIN: (PROXY_BIG, "the bench's resolution (the bare proxy's turns less themselves)"),
}
TARGET_P50, TARGET_P99 = 0.5, 5.0  # ms added per request, on an idle machine


ROUNDS = 10  # the kinds take turns, N / ROUNDS requests each a turn

# CPU milliseconds this process (the servers; not the client, not the out-of-process upstream)
# spent per request of each kind: what the latencies cost, and less at the mercy of the
# machine's other load than they are.
CPU_MS: dict[str, float] = {}


async def _load(kinds: list[dict[str, Any]], j: int | None = None) -> dict[str, list[list[float]]]:
    """Every kind from one client process, side by side: in rounds, the order turning each
    round, so each kind meets the same spells of others' load as the bare app beside it."""
    out: dict[str, list[list[float]]] = {k["name"]: [] for k in kinds}
    cpu = dict.fromkeys(out, 0.0)
    client = [sys.executable, str(HERE / "wire_peers.py"), "client"]
    async with await anyio.open_process(client) as p:
        assert p.stdin is not None and p.stdout is not None
        lines = BufferedByteReceiveStream(p.stdout)
        await p.stdin.send(json.dumps({"concurrency": j or J, "kinds": kinds}).encode() + b"\n")
        await lines.receive_until(b"\n", 16)  # ready: every connection and session open
        for r in range(ROUNDS):
            turn = kinds[r % len(kinds) :] + kinds[: r % len(kinds)]
            for kind in turn:
                n = len(kind["bodies"])
                ask = {"kind": kind["name"], "start": r * n // ROUNDS,
                       "stop": (r + 1) * n // ROUNDS}  # fmt: skip
                started = time.process_time()
                await p.stdin.send(json.dumps(ask).encode() + b"\n")
                rows = json.loads(await lines.receive_until(b"\n", 1 << 24))
                cpu[kind["name"]] += time.process_time() - started
                out[kind["name"]] += rows
        await p.stdin.aclose()
    for kind in kinds:
        CPU_MS[kind["name"]] = cpu[kind["name"]] * 1e3 / len(kind["bodies"])
    return out


def _chat(i: int) -> dict[str, Any]:
    return {"model": "chaoseval-sim", "messages": [{"role": "user", "content": f"Call ping ({i})"}],
            "tools": [PING]}  # fmt: skip


TURNS = 10  # a conversation's requests in the bench: a tool-using agent's first ten turns
_PARAMS = {"type": "object", "required": ["order_id"], "properties": {
    "order_id": {"type": "string", "description": "The order's id, as the customer gave it."},
    "reason": {"type": "string", "description": "Why, in the customer's words."}}}  # fmt: skip
# The eight tools' schemas and each round's tool result: the same in every request (made once).
_TOOLS = [{"type": "function", "function": {"name": f"tool_{t}", "parameters": _PARAMS,
           "description": f"Tool {t}: looks up or changes one order."}}
          for t in range(8)]  # fmt: skip
_RESULTS = [json.dumps({"order_id": f"A-{k}", "status": "shipped", "history": [
    {"at": f"2026-11-{d + 1:02d}T10:00:00Z", "event": f"step {d}", "note": "on time"}
    for d in range(18)]}) for k in range(TURNS)]  # fmt: skip


def _turn(i: int, turns: int = TURNS) -> dict[str, Any]:
    """Request ``i`` of the conversations the client's threads hold, one at a time each (its
    thread ``i % J`` sends it as its ``i // J``-th): a system prompt, eight tools with their
    schemas and, at turn k, k - 1 rounds of a question, a tool call and the tool's JSON
    result before the k-th question. Each request resends its conversation's last one, one
    round longer, as chat APIs have it: ~3.5 kB at the first turn, ~20 kB at the tenth."""
    thread, n = i % J, i // J
    talk, turn = f"{thread}.{n // turns}", n % turns
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a support agent. Use the tools. " * 12}
    ]
    for k in range(turn + 1):
        messages.append({"role": "user", "content": f"What happened to order A-{k} ({talk})?"})
        if k == turn:
            break
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [{"id": f"call_{k}",
             "type": "function", "function": {"name": f"tool_{k % 8}",
                                              "arguments": json.dumps({"order_id": f"A-{k}"})}}]},
            {"role": "tool", "tool_call_id": f"call_{k}", "content": _RESULTS[k % TURNS]},
        ]  # fmt: skip
    return {"model": "chaoseval-sim", "messages": messages, "tools": _TOOLS}


# Every kind's request bodies, made before the trials (main): the bench's own data is then part
# of the startup heap the run's loop freezes out of the collector's full passes
# (engine/loops.run_loop), not ~100k objects each full pass walks on the servers' time.
BODIES: dict[str, list[Any]] = {}


def _bodies() -> None:
    turns = [_turn(i) for i in range(N)]  # the agent kinds' (the proxy's and forwarding's)
    BODIES.update(
        calls=[{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                "params": {"name": "ping", "arguments": {}}} for i in range(N)],
        chats=[_chat(i) for i in range(N)],
        bare=[{"q": i} for i in range(N)],
        direct=[_chat(i) for i in range(N)],
        forward=[_chat(N + i) for i in range(N)],
        proxy=[_chat(2 * N + i) for i in range(N)],
        alone=[_chat(3 * N + i) for i in range(N // 6)],
        forward_big=turns,
        proxy_big=turns,
    )  # fmt: skip


def _kind(name: str, url: str, bodies: list[Any], **extra: Any) -> dict[str, Any]:
    return {"name": name, "url": url, "method": "POST", "bodies": bodies, **extra}


@asynccontextmanager
async def _upstream() -> AsyncIterator[str]:
    """The trivial upstream in a process of its own: its work does not share the channel's
    event loop (a real model server runs elsewhere too)."""
    upstream = [sys.executable, str(HERE / "wire_peers.py"), "upstream"]
    async with await anyio.open_process(upstream) as p:
        assert p.stdout is not None and p.stdin is not None
        line = b""
        while not line.endswith(b"\n"):
            line += await p.stdout.receive(1)
        try:
            yield line.decode().strip()
        finally:
            await p.stdin.aclose()


@asynccontextmanager
async def _channels(episode: Episode, n: int) -> AsyncIterator[list[ModelEndpoint]]:
    """A trial's model channel for each client thread (the run's upstream: chaoseval-sim, or
    forwarding), each its own trial's conversation, one request at a time as an agent sends
    it: -j 8 is eight trials. Eight threads in one sim's conversation queued behind each
    other's turns (its lock), and eight conversations on one forwarding channel took turns in
    its reader (resent.ConversationReader), which no trial does. Each is made with an
    artifact store bound, as a run with a journal binds one to each trial: its channel keeps
    each request's messages and answer for the trial's model.jsonl (channels/model/transcript),
    so that per-request work is in what the kinds measure."""
    async with AsyncExitStack() as stack:
        folder = stack.enter_context(tempfile.TemporaryDirectory())
        store = ArtifactStore(Path(folder) / "bench.jsonl.d")
        endpoints = []
        for i in range(n):
            with binding(store, f"bench/wire/{len(_MADE)}"):
                _MADE.append(i)
                endpoints.append(await stack.enter_async_context(trial_endpoint(episode)))
        yield endpoints


_MADE: list[int] = []  # the channels made so far: each its own trial's directory


async def _tools_and_models(episode: Episode, seen: dict[str, list[float]]) -> None:
    async with (
        serve_asgi(bare) as local,
        _upstream() as upstream,
        ToolHub.serving() as hub,
        hub.trial(episode.tools) as urls,  # type: ignore[arg-type]
        _channels(episode, J) as sims,
        run_channels(UpstreamConfig(endpoint=f"{upstream}/v1")),
        _channels(episode, J) as forwards,
        bare_proxy(upstream) as proxy_app,
        serve_asgi(proxy_app) as proxy,
        bare_mcp() as sdk_app,
        serve_asgi(sdk_app) as sdk,
    ):
        auths = [{"Authorization": f"Bearer {sim.api_key}"} for sim in sims]
        sim, auth = sims[0], auths[0]
        forward_auths = [{"Authorization": f"Bearer {f.api_key}"} for f in forwards]
        forward = forwards[0]  # (the same server: the key picks the trial's channel)
        # The sim's own compute a request, alone: one request at a time. Its kind's baseline
        # spends as much (wire_peers.computing), so that at -j 8 the wait for the others'
        # compute is in both, as the upstream's exchange is in forwarding's and its proxy's.
        await _load([_kind(SIM_ALONE, f"{sim.base_url}/chat/completions", BODIES["alone"],
                           headers=auth)], j=1)  # fmt: skip
        upstream_ms = {
            s.args["request_hash"]: s.result["upstream_latency"] * 1e3
            for s in episode.link.state.trajectory.steps  # type: ignore[union-attr]
            if s.kind == "model" and s.args and isinstance(s.result, dict)
        }
        sent = (json.dumps(body).encode() for body in BODIES["alone"])  # as the client sends them
        SIM_COMPUTE_MS.append(statistics.median(upstream_ms[fingerprint(raw)] for raw in sent))
        calls, chats = BODIES["calls"], BODIES["chats"]
        async with serve_asgi(computing(SIM_COMPUTE_MS[0] / 1e3)) as spending:
            timed = await _load([
                _kind(BARE, f"{local}/x", BODIES["bare"]),
                _kind("tool hub, HTTP tools", f"{urls.tools}/tools/ping", [{}] * N),
                _kind(BARE_MCP, f"{sdk}/mcp", calls, mcp=True),
                _kind(MCP, urls.mcp, calls, mcp=True),
                _kind(BARE_SIM, f"{spending}/x", BODIES["bare"]),
                _kind(SIM, f"{sim.base_url}/chat/completions", chats, headers=auths),
                _kind(DIRECT, f"{upstream}/v1/chat/completions", BODIES["direct"]),
                _kind(PROXY, f"{proxy}/v1/chat/completions", BODIES["proxy"]),
                _kind(FORWARD, f"{forward.base_url}/chat/completions",
                      BODIES["forward"], headers=forward_auths),
                _kind(PROXY_BIG, f"{proxy}/v1/chat/completions", BODIES["proxy_big"]),
                _kind(FORWARD_BIG, f"{forward.base_url}/chat/completions",
                      BODIES["forward_big"], headers=forward_auths),
                _kind(PROXY_AGAIN, f"{proxy}/v1/chat/completions", BODIES["proxy_big"]),
            ])  # fmt: skip
    seen.update({name: [ms for _, ms in rows] for name, rows in timed.items()})


async def _pages(episode: Episode, seen: dict[str, list[float]]) -> None:
    async with serve_asgi(bare) as local, serve_pages(episode) as page:
        timed = await _load([
            _kind(BARE_PAGES, f"{local}/x", BODIES["bare"]),
            {"name": PAGES, "url": page, "method": "GET", "bodies": [None] * N},
        ])  # fmt: skip
    seen.update({name: [ms for _, ms in rows] for name, rows in timed.items()})


class _Probe:
    # The clock an exec: agent's trial has (agents.process.ProcessAgent), as the servers' users
    # do: the tool hub's calls read it and set their deadlines on it.
    clock = "real"

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


def _verdict(p50: float, p99: float) -> str:
    missed = [f"{what} {got:.2f} ms" for what, got, most in
              (("p50", p50, TARGET_P50), ("p99", p99, TARGET_P99)) if got >= most]  # fmt: skip
    return "met" if not missed else "NOT met: " + ", ".join(missed)


def _table(seen: dict[str, list[float]]) -> None:
    print(f"    {'':<36}{'p50':>9}{'p99':>9}{'x bare':>7}{'added p50':>11}{'added p99':>11}"
          f"{'CPU/req':>10}{'added CPU':>11}  target")  # fmt: skip
    for name, values in seen.items():
        against = BASELINE.get(name, BARE)
        base = seen[against]
        b50, b99 = _pct(base, 0.5), _pct(base, 0.99)
        p50, p99 = _pct(values, 0.5), _pct(values, 0.99)
        cpu, base_cpu = CPU_MS.get(name, 0.0), CPU_MS.get(against, 0.0)
        compared = name not in UNCOMPARED
        print(
            f"    {name:<36}{p50:7.2f}ms{p99:7.2f}ms{p50 / b50:6.1f}x"
            + (f"{p50 - b50:9.2f}ms{p99 - b99:9.2f}ms" if compared else " " * 22)
            + f"{cpu:7.3f}ms"
            + (f"{cpu - base_cpu:8.3f}ms  {_verdict(p50 - b50, p99 - b99)}" if compared else "")
        )
    for name, (other, label) in BESIDE.items():
        if name in seen and other in seen:
            one, two = seen[name], seen[other]
            print(
                f"    {label}: p50 {_pct(one, 0.5) - _pct(two, 0.5):.2f} ms, p99"
                f" {_pct(one, 0.99) - _pct(two, 0.99):.2f} ms, CPU"
                f" {CPU_MS.get(name, 0.0) - CPU_MS.get(other, 0.0):.3f} ms a request"
            )
    if SIM_COMPUTE_MS:
        print(f"    the sim's compute, which its baseline spends too: {SIM_COMPUTE_MS[0]:.2f} ms"
              " a request (the median of its requests served alone, at -j 1)")  # fmt: skip


# --- reading a conversation's requests, in process ----------------------------------------

PASSES = 3


def _per_request(bodies: list[bytes], read: Callable[[], Callable[[bytes], object]]) -> float:
    """Microseconds a request, the best of PASSES passes (``read()``: a fresh reader each)."""
    best = float("inf")
    for _ in range(PASSES):
        each = read()
        started = time.perf_counter()
        for raw in bodies:
            each(raw)
        best = min(best, time.perf_counter() - started)
    return best / len(bodies) * 1e6


def conversation_reads(turns: tuple[int, ...] = (10, 30, 60)) -> None:
    """The model channel's reader (resent.ConversationReader), which goes on from the request
    each one repeats, against the whole read every request had before (resent.read_whole: the
    escape scan, wire.read_top and the fingerprint over the whole body), in process: eight
    conversations taking turns (_turn) over their first 10, 30 and 60 turns, the best of
    PASSES passes each, both ways side by side; the reader starts empty each pass."""
    print("  reading a conversation's requests, in process (8 conversations taking turns):")
    for n in turns:
        bodies = [json.dumps(_turn(i, n)).encode() for i in range(J * n)]
        size = sum(map(len, bodies)) / len(bodies) / 1e3
        reader = _per_request(bodies, lambda: ConversationReader().read)
        whole = _per_request(bodies, lambda: read_whole)
        print(
            f"    turns 1-{n:<3} {size:5.1f} kB a request on average: the reader"
            f" {reader:6.1f} us, the whole read {whole:6.1f} us ({whole / reader:.1f}x)"
        )


def main(concurrency: int = J) -> None:
    global J
    J = concurrency
    load = os.getloadavg()
    seen: dict[str, list[float]] = {}
    _bodies()
    _trial(trivial_scenario(), _tools_and_models, seen)
    _trial(select(installed(), ["ui-checkout"])[0], _pages, seen)
    after = os.getloadavg()
    print(f"wire overhead per request, -j {J}, {N} requests a kind, client in its own process,"
          f" the kinds side by side in {ROUNDS} rounds")  # fmt: skip
    print(
        f"  load average (1 min) {load[0]:.1f} before, {after[0]:.1f} after, on"
        f" {os.cpu_count()} CPUs shared with others' work: the targets are for an idle one"
    )
    _table(seen)
    print("    added: the channel's percentile less the bare app's in the same rounds (the sim")
    print("    less a bare app spending its compute; forwarding less a bare proxy to the same")
    print("    upstream; MCP less the mcp SDK alone serving the same call, both stateful")
    print("    streamable HTTP with JSON responses; the pages less a bare app beside them; an")
    print(f"    agent's turns: {TURNS} a conversation, each resending the last, 3.5-20 kB); target")
    print(f"    on an idle machine: added p50 < {TARGET_P50} ms, added p99 < {TARGET_P99:g} ms."
          " CPU/req: the servers' process")  # fmt: skip
    print("    time per request (the sim's compute in both, the upstream's and the client's")
    print(f"    out); at -j {J} on a busy server a request waits for the others', so added latency")
    print(f"    is about {J} x added CPU. The sim and forwarding: each client thread is a trial")
    print(f"    of its own, its conversation on its own channel (-j {J} is {J} trials).")
    conversation_reads()
    _held_out()


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="The wire part of make bench alone.")
    parser.add_argument("-j", type=int, default=J, help="concurrent clients (default 8)")
    main(parser.parse_args().j)
