"""Run budgets: no new trial once reached, trials kept, cumulative across --resume."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaoseval.engine.budget import Budget
from chaoseval.engine.runner import RunConfig, run
from chaoseval.errors import ConfigError
from chaoseval.loading.files import installed, select
from chaoseval.seams.agent import load_agent
from chaoseval.store.journal import read_journal


def _run(journal: Path, **kw):
    return run(
        RunConfig(
            scenarios=select(installed(), ["vending-*"]),
            agent=load_agent("naive"),
            agent_name="naive",
            trials=2,
            seed=1,
            concurrency=1,
            journal=journal,
            **kw,
        )
    )


def test_a_token_budget_stops_new_trials_and_resume_carries_on(tmp_path):
    journal = tmp_path / "j.jsonl"
    full = _run(tmp_path / "full.jsonl")
    per_trial = full.records[0].usage.input_tokens + full.records[0].usage.output_tokens
    assert per_trial > 0
    first = _run(journal, budget_tokens=per_trial)  # reached after the first trial or so
    assert first.budget is not None and first.budget.skipped > 0
    kept = read_journal(journal).records
    assert 1 <= len(kept) < len(full.records)
    assert len(kept) + first.budget.skipped == len(full.records)
    # The same budget again: what the kept trials spent counts, nothing new starts.
    again = _run(journal, budget_tokens=per_trial, resume=True)
    assert again.budget is not None and again.budget.skipped == len(full.records) - len(kept)
    done = _run(journal, resume=True, budget_tokens=10**9)
    assert done.budget is not None and done.budget.skipped == 0
    assert len(read_journal(journal).records) == len(full.records)


def test_budgets_must_be_positive():
    with pytest.raises(ConfigError):
        Budget(tokens=0)
    assert Budget(cost=1.0).reached is None
