"""TrialRecord.channel_overhead: chaoseval's own time on the wire, apart from agent latency."""

from __future__ import annotations

import pytest
from mcp_support import run_over_mcp
from model_support import run_agent

from chaoseval.agents.openai_agents import OpenAIAgent
from chaoseval.agents.simulated import naive
from chaoseval.analysis.process import process_metrics
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import ModelSettings, TrialRecord

DELAY = 0.15  # injected before every model answer: must not count as overhead
SLOW = f"model_latency:seconds={DELAY},jitter=0,probability=1,modes=[latency,first_token]"

pytestmark = pytest.mark.slow


def _injected(record: TrialRecord) -> float:
    return sum(
        float(f.detail["seconds"])  # type: ignore[arg-type]
        for f in record.trajectory.faults
        if f.kind == "latency" and f.delivered
    )


def test_an_agent_over_the_model_channel_records_the_channels_own_time() -> None:
    records = run_agent(OpenAIAgent(resilient=False), cells=[SLOW], trials=1)
    assert {r.cell for r in records} == {"clean", records[-1].cell} and len(records) == 2
    for r in records:
        assert r.channel_overhead is not None
        assert 0 <= r.channel_overhead < r.wall_seconds
        assert "channel_overhead" in r.model_dump(mode="json")
    slow = next(r for r in records if r.cell != "clean")
    injected = _injected(slow)
    assert injected >= DELAY  # the delays happened, within the trial's wall time
    # Neither the injected delays nor the upstream's time are the channel's.
    assert slow.channel_overhead is not None
    assert slow.channel_overhead < slow.wall_seconds - injected
    metrics = process_metrics(slow.cell, [slow])
    assert metrics.channel_overhead_mean == slow.channel_overhead
    assert "channel_overhead_mean" in metrics.to_json()


def test_an_agent_over_mcp_records_it() -> None:
    records = run_over_mcp("timeout:probability=0.5,modes=429", 1)
    for r in records:
        assert r.channel_overhead is not None
        assert 0 < r.channel_overhead < r.wall_seconds


def test_an_in_process_agent_records_none() -> None:
    records = run(
        RunConfig(
            scenarios=select(installed(), ["vending-refund-not-dispensed"]),
            agent=naive(),
            agent_name="naive",
            cells=parse_cells([]),
            trials=1,
            seed=1,
            model=ModelSettings(),
            journal=None,
        )
    ).records
    assert records and all(r.channel_overhead is None for r in records)
    assert all("channel_overhead" not in r.model_dump(mode="json") for r in records)
    assert "channel_overhead_mean" not in process_metrics("clean", records).to_json()
