"""run --sequential (issue 44): rounds through the real executors into one journal, decisions
replayed from it; the same seed gives the same trials; a budget stop in the middle and a
resume give the decisions an uninterrupted run gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chaoseval.analysis.sequential import Outcomes, replay
from chaoseval.engine import sequential
from chaoseval.engine.runner import RunConfig
from chaoseval.errors import ConfigError
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import SequentialDesign
from chaoseval.seams.agent import load_agent
from chaoseval.store.columns import read_trials
from tests.e2e.golden_journal import normalize

# timeout breaks the naive agent on most tasks; sampling leaves it nearly as it is.
CELLS = ["timeout", "sampling"]
TASKS = ["orders-*", "memory-*"]


def _config(journal: Path, **kw: Any) -> RunConfig:
    design = SequentialDesign(
        first=2, round_size=2, max_trials=kw.pop("max_trials", 8),
        budget_trials=kw.get("budget_trials"),
    )  # fmt: skip
    return RunConfig(
        scenarios=select(installed(), TASKS),
        agent=load_agent("naive"),
        agent_name="naive",
        cells=parse_cells(kw.pop("cells", CELLS)),
        trials=design.first,
        seed=7,
        journal=journal,
        references=False,
        keep_records=False,
        sequential=design,
        # The runs compared must not differ by the machine's load: a virtual-clock trial's
        # wall guard is 30 s by default, and at load 19 a trial on Ray ran past it
        # (tests/engine/test_ray.py). 600 s only bound a hang.
        wall_timeout=kw.pop("wall_timeout", 600.0),
        **kw,
    )


def _decisions(result: sequential.SequentialResult) -> dict[str, tuple[Any, ...]]:
    assert result.progress is not None
    return {
        c: (d.status, d.round, d.trials, d.steps, d.rule)
        for c, d in result.progress.decisions.items()
    }


def _trial_lines(journal: Path) -> list[str]:
    return [line for line in normalize(journal) if '"type": "manifest"' not in line]


@pytest.mark.parametrize("executor", ["inprocess", "process"])
def test_rounds_decide_cells_and_stop_them(tmp_path: Path, executor: str) -> None:
    """The broken cell stops after its first round; the other cells go on; each round's
    trials are paired with clean's (the same tasks and indices); the journal's manifest
    records the design and, in a later line, the rule that stopped each cell."""
    journal = tmp_path / "s.jsonl"
    result = sequential.run(_config(journal, executor=executor))
    got = _decisions(result)
    assert got["timeout"][0] == "broken" and got["timeout"][1] == 1
    t = read_trials(journal)
    assert t.manifest.sequential is not None and t.manifest.trials == 8
    per_cell: dict[str, set[tuple[str, int]]] = {}
    for task, cell, index in zip(
        t.names("scenario"), t.names("cell"), t.col["index"].tolist(), strict=True
    ):
        per_cell.setdefault(cell, set()).add((task, index))
    assert max(i for _, i in per_cell["timeout"]) == 1  # stopped after round 1
    for cell in CELLS:
        assert per_cell[cell] <= per_cell["clean"]  # every perturbed trial has its clean twin
    lines = [json.loads(x) for x in journal.read_text().splitlines()]
    last = [x for x in lines if x.get("type") == "manifest"][-1]
    assert last["sequential"]["decided"]["timeout"]["status"] == "broken"
    assert "drop e-value" in last["sequential"]["decided"]["timeout"]["rule"]
    # The decisions are a function of the journal: replayed from it, the same.
    again = replay(Outcomes.of_trials(t), t.manifest.sequential, [c.name for c in t.manifest.cells])
    assert {c: d.status for c, d in again.decisions.items()} == {c: v[0] for c, v in got.items()}


@pytest.mark.slow
def test_ray_runs_rounds_with_the_same_trials(tmp_path: Path) -> None:
    """Each round through a local Ray (started and shut down by the executor each round):
    the same decisions and trials as in process."""
    pytest.importorskip("ray")
    here, there = tmp_path / "here.jsonl", tmp_path / "ray.jsonl"
    want = _decisions(sequential.run(_config(here)))
    got = _decisions(sequential.run(_config(there, executor="ray", concurrency=2)))
    assert got == want
    assert _trial_lines(there) == _trial_lines(here)


def test_the_same_seed_gives_the_same_journal(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    sequential.run(_config(a))
    sequential.run(_config(b, concurrency=1))
    assert _trial_lines(a) == _trial_lines(b)


def test_a_budget_stop_then_resume_gives_the_same_decisions(tmp_path: Path) -> None:
    """Stopped by --budget-trials in the middle of the sequence, the undecided cells are
    inconclusive with the trials they would still need; resumed with a larger budget, the
    run ends with the decisions and trials of a run never stopped."""
    whole = tmp_path / "whole.jsonl"
    cells = [*CELLS, "latency"]  # latency is decided in round 3: the budget stops round 2
    want = _decisions(sequential.run(_config(whole, cells=cells)))
    cut = tmp_path / "cut.jsonl"
    stopped = sequential.run(_config(cut, budget_trials=150, concurrency=1, cells=cells))
    assert stopped.progress is not None
    undecided = [d for d in stopped.progress.decisions.values() if d.status == "inconclusive"]
    assert undecided and all("budget ran out" in d.rule for d in undecided)
    assert all(d.more_trials or d.why for d in undecided)
    resumed = sequential.run(_config(cut, resume=True, cells=cells))
    assert _decisions(resumed) == want
    assert _trial_lines(cut) == _trial_lines(whole)


def test_a_sequential_run_needs_a_journal() -> None:
    config = _config(Path("unused.jsonl"))
    config.journal = None
    with pytest.raises(ConfigError, match="--journal"):
        sequential.run(config)


def test_budget_trials_stops_a_fixed_run_too(tmp_path: Path) -> None:
    """--budget-trials is a run total like the others: no trial starts once it is reached;
    every recorded trial is kept and the budget says what was reached."""
    from chaoseval.engine.runner import run

    config = _config(tmp_path / "fixed.jsonl", budget_trials=10, concurrency=1)
    config.sequential = None
    result = run(config)
    assert result.written == 10
    assert result.budget is not None and result.budget.skipped > 0
    assert result.budget.reached == "--budget-trials 10 (recorded 10)"
    assert len(read_trials(tmp_path / "fixed.jsonl")) == 10


def test_a_journal_decided_by_e_holm_resumes_by_e_holm(tmp_path: Path) -> None:
    """A journal written before the closed test by cell recorded method e-holm: resumed after
    a budget stop, it is not refused and goes on deciding by the method it recorded, as a run
    never stopped with that method."""
    cells = [*CELLS, "latency"]

    def config(journal: Path, **kw: Any) -> RunConfig:
        c = _config(journal, cells=cells, **kw)
        assert c.sequential is not None
        c.sequential = c.sequential.model_copy(update={"method": "e-holm"})
        return c

    whole = tmp_path / "whole.jsonl"
    want = _decisions(sequential.run(config(whole)))
    cut = tmp_path / "cut.jsonl"
    sequential.run(config(cut, budget_trials=150, concurrency=1))
    resumed = sequential.run(_config(cut, resume=True, cells=cells))  # today's default design
    assert _decisions(resumed) == want
    t = read_trials(cut)
    assert t.manifest.sequential is not None and t.manifest.sequential.method == "e-holm"
