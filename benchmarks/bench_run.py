"""The run's own cost per trial (issue 12): every figure measured in this run, printed with its
target; and the model channel's cost per trial (``model_channel``: the same trials in process
and over the wire).

The workload of the run's figures is trivial (``scenario``, ``TrivialAgent``): one scenario,
one tool, an agent that calls it once and answers; what is left is the harness's own cost.
Each part runs in its own process (``python benchmarks/bench_run.py PART``), under a time cap,
while this process samples the memory of the part's whole process tree (worker processes
included, summed by PSS so pages a fork shares count once); the part reports its own peak
(VmHWM) and timings as one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chaoseval.model.records import AgentOutput
from chaoseval.model.scenario import Check, Scenario, tool
from chaoseval.seams.agent import Episode

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BIN = Path(sys.executable).parent
PART_CAP = 300.0  # seconds one part may take before it is stopped and reported as such


# --- the trivial workload -----------------------------------------------------------------


@tool()
def ping(world: Any) -> dict[str, bool]:
    """Answer ok."""
    return {"ok": True}


async def _solution(actor: Any) -> AgentOutput:
    await actor.call("ping")
    return AgentOutput(answer="ok")


def scenario(sid: str = "bench-ping") -> Scenario:
    return Scenario(
        id=sid,
        description="one tool, one call",
        domain="bench",
        instruction="Call ping.",
        tools=[ping],
        checks=[Check(name="answered", fn=lambda world, output, trajectory: output.answer == "ok")],
        solution=_solution,
        reference_steps=1,
    )


class TrivialAgent:
    """Calls the one tool and answers; virtual clock unless told otherwise."""

    def __init__(self, clock: str = "virtual", sleep: float = 0.0):
        self.clock = clock
        self.sleep = sleep

    async def run(self, episode: Episode) -> AgentOutput:
        if self.sleep:
            await episode.clock.sleep(self.sleep)
        await episode.tools.call("ping")
        return AgentOutput(answer="ok")


class _BareTools:
    def __init__(self, world: dict[str, Any]):
        self.world = world

    async def call(self, name: str, /, **args: Any) -> Any:
        return ping.fn(self.world, **args)


class _BareEpisode:
    def __init__(self) -> None:
        self.tools = _BareTools({})


def bare_loop(trials: int, concurrency: int) -> float:
    """The same agent and tool on a plain asyncio loop: the floor any harness sits on."""
    agent = TrivialAgent()

    async def main() -> None:
        gate = asyncio.Semaphore(concurrency)

        async def one() -> None:
            async with gate:
                await agent.run(_BareEpisode())  # type: ignore[arg-type]

        await asyncio.gather(*(one() for _ in range(trials)))

    started = time.perf_counter()
    asyncio.run(main())
    return time.perf_counter() - started


# --- parts (run in a child process) -------------------------------------------------------


def _run(
    trials: int,
    *,
    executor: str | None = None,
    cells: list[str] | None = None,
    agent: Any = None,
    concurrency: int = 4,
    where: Path | None = None,
) -> float:
    from chaoseval.engine.runner import RunConfig, run
    from chaoseval.model.cells import parse_cells

    where = where or Path(tempfile.mkdtemp(prefix="chaoseval-bench-"))
    started = time.perf_counter()
    result = run(
        RunConfig(
            scenarios=[scenario()],
            agent=agent or TrivialAgent(),
            agent_name="trivial",
            cells=parse_cells(cells or []),
            trials=trials,
            seed=1,
            concurrency=concurrency,
            journal=where / "bench.jsonl",
            references=False,
            executor=executor,
            keep_records=False,  # as `chaoseval run` does
        )
    )
    elapsed = time.perf_counter() - started
    assert result.written == trials * (1 + len(cells or [])), result.written
    return elapsed


def part_overhead(trials: int = 10_000, repeat: int = 3) -> dict[str, Any]:
    """Best of ``repeat`` each, alternating, so a burst of load on a shared machine hits both."""
    _run(200)  # imports and the scenario's world: paid once per process, not per trial
    best = {"bare": math.inf, "run": math.inf, "bare_cpu": math.inf, "run_cpu": math.inf}
    for _ in range(repeat):
        for name, work in (("bare", lambda: bare_loop(trials, 4)), ("run", lambda: _run(trials))):
            cpu = time.process_time()
            wall = work()
            best[name] = min(best[name], wall)
            best[name + "_cpu"] = min(best[name + "_cpu"], time.process_time() - cpu)
    return best


def part_latency(trials: int = 10_000) -> dict[str, Any]:
    """10k clean + 10k with an 8 s injected latency, virtual clock; TMPDIR and the journal
    where the caller's TMPDIR points (tmpfs or disk)."""
    cell = "latency:mean=8,jitter=0,distribution=uniform"
    return {"seconds": _run(trials, cells=[cell], where=Path(tempfile.mkdtemp()))}


def part_hiding(trials: int = 640, sleep: float = 0.5, jobs: int = 64) -> dict[str, Any]:
    out = {}
    for executor in ("process", "inprocess"):
        agent = TrivialAgent(clock="real", sleep=sleep)
        out[executor] = _run(trials, executor=executor, agent=agent, concurrency=jobs)
    out["ideal"] = trials * sleep / jobs
    return out


def part_memory(trials: int = 100_000) -> dict[str, Any]:
    return {"seconds": _run(trials), "trials": trials}


PARTS: dict[str, Callable[..., dict[str, Any]]] = {
    "overhead": part_overhead,
    "latency": part_latency,
    "hiding": part_hiding,
    "memory": part_memory,
}


def peak_rss() -> int:
    """This process's own peak RSS (VmHWM). Not ``ru_maxrss``: Linux carries a parent's peak
    over fork and exec into it, so every part reported the orchestrator's peak."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # not Linux


def _child(name: str, args: list[str]) -> None:
    sys.path[:0] = [str(HERE), str(ROOT)]
    result = PARTS[name](*[int(a) for a in args])
    result["peak_rss"] = peak_rss()
    print(json.dumps(result))


# --- the orchestrator ---------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                found += [int(c) for c in fh.read().split()]
    except OSError:
        pass
    return found


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _pss(pid: int) -> int:
    """A process's proportional set size: its private pages and its share of the pages it
    shares. A forked reader shares its parent's heap copy-on-write, so summing the tree's RSS
    counts those pages twice (at 100k tasks report's tree read 554 MB by RSS, 492 MB by PSS);
    PSS summed over the tree is the memory the command holds. RSS where smaps_rollup is not
    readable (Linux before 4.14, or another user's process)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return _rss(pid)


class TreeSampler(threading.Thread):
    """The peak of the summed PSS of a process and all its descendants, every 50 ms."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.peak, self.stopped = pid, 0, threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.05):
            pids, todo = [], [self.pid]
            while todo:
                p = todo.pop()
                pids.append(p)
                todo += _children(p)
            self.peak = max(self.peak, sum(_pss(p) for p in pids))


def measure(
    part: str,
    *args: int | str,
    env: dict[str, str] | None = None,
    script: str = __file__,
    cap: float = PART_CAP,
) -> dict[str, Any] | None:
    """Run one part of ``script`` (this file, or another bench that runs its parts the same
    way) in a child process under ``cap`` seconds; its result and tree peak."""
    cmd = [sys.executable, script, part, *map(str, args)]
    env = {**os.environ, **(env or {})}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    sampler = TreeSampler(proc.pid)
    sampler.start()
    try:
        out, _ = proc.communicate(timeout=cap)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        print(f"    {part}: stopped after the {cap:.0f} s cap")
        return None
    finally:
        sampler.stopped.set()
        sampler.join()
    if proc.returncode != 0:
        print(f"    {part}: failed (exit {proc.returncode})")
        return None
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result["tree_peak"] = sampler.peak
    PEAKS["main"] = max(PEAKS["main"], result["peak_rss"])
    PEAKS["tree"] = max(PEAKS["tree"], sampler.peak)
    return result


PEAKS = {"main": 0, "tree": 0}  # over every part: the largest part process, the largest tree


def _mb(n: float) -> str:
    return f"{n / 2**20:.0f} MB"


def _mem(r: dict[str, Any]) -> str:
    return f"peak RSS {_mb(r['peak_rss'])} main, {_mb(r['tree_peak'])} process tree (PSS)"


def _verdict(ok: bool) -> str:
    return "meets" if ok else "MISSES"


def help_seconds(repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([str(BIN / "chaoseval"), "--help"], capture_output=True, check=True)
        best = min(best, time.perf_counter() - started)
    return best


def report_overhead() -> None:
    r = measure("overhead", 10_000)
    if r:
        wall, cpu = r["run"] / r["bare"], r["run_cpu"] / r["bare_cpu"]
        print(
            f"  10k trivial trials, best of 3: run {r['run']:.2f} s vs a bare asyncio loop "
            f"{r['bare']:.3f} s = {wall:.1f}x wall ({_verdict(wall <= 10)} the <= 10x target; "
            f"{cpu:.1f}x in CPU time); " + _mem(r)
        )


def report_latency() -> None:
    disk = Path(tempfile.mkdtemp(prefix="chaoseval-bench-", dir=ROOT.parent))
    places = [("tmpfs", "/dev/shm")] if os.path.isdir("/dev/shm") else []
    for label, tmp in [*places, ("disk", str(disk))]:
        r = measure("latency", 10_000, env={"TMPDIR": tmp})
        if r:
            print(
                f"  10k virtual-clock trials with 8 s latency + 10k clean, TMPDIR on {label}: "
                f"{r['seconds']:.2f} s ({_verdict(r['seconds'] < 5)} the < 5 s target); " + _mem(r)
            )


def report_hiding() -> None:
    r = measure("hiding")
    if r:
        for executor in ("process", "inprocess"):
            eff = r["ideal"] / r[executor]
            print(
                f"  real clock, 0.5 s x 640 trials at -j 64, {executor} executor: "
                f"{r[executor]:.2f} s = {eff:.2f} of ideal ({_verdict(eff >= 0.9)} >= 0.9)"
            )
        print(f"    {_mem(r)}")


def report_memory() -> None:
    small, large = measure("memory", 10_000), measure("memory", 100_000)
    if small and large:
        growth = (large["peak_rss"] - small["peak_rss"]) / 90_000
        flat = large["peak_rss"] < 200 * 2**20 and growth < 100  # bytes per trial
        print(
            f"  run peak memory: {_mb(small['peak_rss'])} at 10k trials, "
            f"{_mb(large['peak_rss'])} at 100k, {growth:+.0f} bytes per trial "
            f"({_verdict(flat)} the flat < 200 MB target; 100k took {large['seconds']:.1f} s); "
            f"process tree {_mb(large['tree_peak'])} (PSS)"
        )


# --- the model channel's cost per trial --------------------------------------------------


def _timed(agent: Any, name: str, scenarios: int, trials: int) -> tuple[float, list[Any]]:
    """Seconds and records of ``trials`` trials of the first ``scenarios`` bundled scenarios
    (no UI) of ``agent``: in process (``naive``) or over the wire (``openai-naive``: the
    openai SDK, uvicorn, chaoseval-sim; a request's overhead is its latency less the
    upstream's share)."""
    from chaoseval.engine.runner import RunConfig, run
    from chaoseval.loading.files import installed
    from chaoseval.model.records import ModelSettings

    chosen = [s for s in installed() if s.ui is None][:scenarios]
    started = time.perf_counter()
    records = run(
        RunConfig(
            scenarios=chosen,
            agent=agent,
            agent_name=name,
            trials=trials,
            seed=1,
            model=ModelSettings(temperature=0.7),
        )
    ).records
    return time.perf_counter() - started, records


def model_channel(scenarios: int = 6, trials: int = 4) -> None:
    from chaoseval.agents.openai_agents import OpenAIAgent
    from chaoseval.seams.agent import load_agent

    in_process, _ = _timed(load_agent("naive"), "naive", scenarios, trials)
    wire, records = _timed(OpenAIAgent(resilient=False), "openai-naive", scenarios, trials)
    steps = [s for r in records for s in r.trajectory.steps if s.kind == "model"]
    overhead = sorted((s.latency - s.result["upstream_latency"]) * 1e3 for s in steps)
    n = len(records)
    print(f"model channel: {scenarios} scenarios x {trials} trials, {len(steps)} model requests")
    print(f"    in process (naive)          {in_process / n * 1e3:9.1f} ms per trial")
    print(f"    over the wire (openai-naive) {wire / n * 1e3:8.1f} ms per trial")
    median, p95 = statistics.median(overhead), overhead[int(0.95 * (len(overhead) - 1))]
    print(f"    handler overhead per request (no HTTP): median {median:.2f} ms, p95 {p95:.2f} ms")


def main() -> None:
    started = time.perf_counter()
    print(f"run cost (issue 12), {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}:")
    h = help_seconds()
    print(f"  chaoseval --help: {h:.3f} s best of 5 ({_verdict(h < 0.3)} the < 0.3 s target)")
    report_overhead()
    report_latency()
    report_hiding()
    report_memory()
    print(
        f"  these figures took {time.perf_counter() - started:.0f} s (each part capped at "
        f"{PART_CAP:.0f} s); peak RSS {_mb(peak_rss())} (this process), {_mb(PEAKS['main'])} "
        f"(largest part's main process), {_mb(PEAKS['tree'])} (largest part's process tree, PSS)"
    )


REPORTS: dict[str, Callable[[], None]] = {
    "overhead": report_overhead,
    "latency": report_latency,
    "hiding": report_hiding,
    "memory": report_memory,
}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--only"]:  # `--only overhead latency`: those figures alone
        print(f"run cost, {os.cpu_count()} CPUs, load {Path('/proc/loadavg').read_text().strip()}")
        for name in sys.argv[2:]:
            REPORTS[name]()
        print(f"  load after: {Path('/proc/loadavg').read_text().strip()}")
    elif len(sys.argv) > 1:
        _child(sys.argv[1], sys.argv[2:])
    else:
        model_channel()
        main()
