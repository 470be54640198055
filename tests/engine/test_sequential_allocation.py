"""run --sequential --allocate (issue 44): within a cell, later rounds run a settled task's
trials (every paired difference so far the same) only with the design's probability, drawn
from the run seed's streams. Through the real in-process and process executors: every
perturbed trial still has its clean twin, fewer trials run than without allocation, the same
seed writes the same journal, and a budget stop then --resume ends as a run never stopped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chaoseval.analysis.sequential import Outcomes, replay
from chaoseval.engine import sequential
from chaoseval.engine.runner import RunConfig
from chaoseval.errors import ConfigError
from chaoseval.store.columns import read_trials
from tests.engine.test_sequential import CELLS, _config, _decisions, _trial_lines

RATE = 0.25


def _allocated(journal: Path, **kw: Any) -> RunConfig:
    c = _config(journal, **kw)
    assert c.sequential is not None
    c.sequential = c.sequential.model_copy(
        update={"settled_rate": RATE, "allocation_seed": c.seed}
    )
    return c


def _pairs(journal: Path) -> dict[str, set[tuple[str, int]]]:
    t = read_trials(journal)
    out: dict[str, set[tuple[str, int]]] = {}
    for task, cell, index in zip(
        t.names("scenario"), t.names("cell"), t.col["index"].tolist(), strict=True
    ):
        out.setdefault(cell, set()).add((task, index))
    return out


def test_allocation_runs_fewer_trials_each_paired_with_clean(tmp_path: Path) -> None:
    cells = [*CELLS, "latency"]
    plain, alloc = tmp_path / "plain.jsonl", tmp_path / "alloc.jsonl"
    sequential.run(_config(plain, cells=cells))
    result = sequential.run(_allocated(alloc, cells=cells, executor="process"))
    got = _pairs(alloc)
    for cell in cells:
        assert got.get(cell, set()) <= got["clean"]  # every perturbed trial has its twin
    assert sum(map(len, got.values())) < sum(map(len, _pairs(plain).values()))
    first = {(task, i) for task, i in got["sampling"] if i < 2}
    later = {(task, i) for task, i in got["sampling"] if i >= 2}
    assert later and len({t for t, _ in later}) <= len({t for t, _ in first})
    t = read_trials(alloc)
    design = t.manifest.sequential
    assert design is not None and design.settled_rate == RATE and design.allocation_seed == 7
    again = replay(Outcomes.of_trials(t), design, [c.name for c in t.manifest.cells])
    assert result.progress is not None
    assert {c: d.status for c, d in again.decisions.items()} == {
        c: d.status for c, d in result.progress.decisions.items()
    }


def test_allocation_the_same_seed_gives_the_same_journal(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    sequential.run(_allocated(a))
    sequential.run(_allocated(b, concurrency=1))
    assert _trial_lines(a) == _trial_lines(b)


def test_allocation_budget_stop_then_resume_gives_the_same_decisions(tmp_path: Path) -> None:
    cells = [*CELLS, "latency"]
    whole = tmp_path / "whole.jsonl"
    want = _decisions(sequential.run(_allocated(whole, cells=cells)))
    cut = tmp_path / "cut.jsonl"
    sequential.run(_allocated(cut, budget_trials=150, concurrency=1, cells=cells))
    resumed = sequential.run(_allocated(cut, resume=True, cells=cells))
    assert _decisions(resumed) == want
    assert _trial_lines(cut) == _trial_lines(whole)


def test_resuming_without_the_recorded_allocation_is_refused(tmp_path: Path) -> None:
    """The allocation is part of the design: a resume without it would decide otherwise."""
    cut = tmp_path / "cut.jsonl"
    sequential.run(_allocated(cut, budget_trials=60, concurrency=1))
    with pytest.raises(ConfigError, match="--allocate"):
        sequential.run(_config(cut, resume=True))
