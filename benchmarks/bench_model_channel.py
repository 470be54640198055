"""The model channel's cost: the same trials in process (``naive``) and over the wire
(``openai-naive``: the openai SDK, uvicorn, chaoseval-sim), and each request's overhead (its
latency minus the upstream's share)."""

from __future__ import annotations

import statistics
import time

from chaoseval.agents.openai_agents import OpenAIAgent
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed
from chaoseval.model.records import ModelSettings, TrialRecord
from chaoseval.seams.agent import AgentAdapter, load_agent


def _timed(
    agent: AgentAdapter, name: str, scenarios: int, trials: int
) -> tuple[float, list[TrialRecord]]:
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


def main(scenarios: int = 6, trials: int = 4) -> None:
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


if __name__ == "__main__":
    main()
