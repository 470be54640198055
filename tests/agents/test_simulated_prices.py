"""The simulated agents price their model calls from the run's table (--prices), as the channel."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chaoseval.channels.model import prices
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.records import ModelSettings, TrialRecord
from chaoseval.seams.agent import load_agent


@pytest.fixture
def table() -> Iterator[None]:
    prices.configure({"sim-1": (1000.0, 2000.0)})
    try:
        yield
    finally:
        prices.configure(None)  # the next test's run gets the built-in table back


def _records(tmp_path: Path, agent: str, model: str = "sim-1") -> list[TrialRecord]:
    config = RunConfig(
        scenarios=select(installed(), ["vending-*"]),
        agent=load_agent(agent),
        agent_name=agent,
        trials=1,
        seed=1,
        concurrency=1,
        journal=tmp_path / f"{agent}-{model}.jsonl",
        model=ModelSettings(model=model),
    )
    return run(config).records


@pytest.mark.parametrize("agent", ["naive", "resilient"])
def test_model_calls_cost_what_the_runs_table_says(
    tmp_path: Path, agent: str, table: None
) -> None:
    records = _records(tmp_path, agent)
    steps = [s for r in records for s in r.trajectory.steps if s.kind == "model"]
    assert steps
    for step in steps:
        expected = (step.data.input_tokens * 1000 + step.data.output_tokens * 2000) / 1e6
        assert step.data.cost == pytest.approx(expected)
    for record in records:
        assert record.usage.cost == pytest.approx(
            (record.usage.input_tokens * 1000 + record.usage.output_tokens * 2000) / 1e6
        )


def test_a_model_the_table_does_not_name_costs_nothing(tmp_path: Path, table: None) -> None:
    records = _records(tmp_path, "naive", model="unpriced-model")
    assert all(r.usage.input_tokens > 0 and r.usage.cost == 0.0 for r in records)
