"""The sequential decisions replayed from outcomes alone (issue 44): what each round decides,
what the next round runs, and what an undecided cell would still need."""

from __future__ import annotations

import numpy as np

from chaoseval.analysis.sequential import Outcomes, replay, stop_early
from chaoseval.model.records import CLEAN, SequentialDesign

TASKS = [f"t{i}" for i in range(12)]
DESIGN = SequentialDesign(first=2, round_size=2, max_trials=8)


def _outcomes(cells: dict[str, np.ndarray], landed: dict[str, bool], upto: int = 8) -> Outcomes:
    """``cells``: per cell a (tasks x 8) array of 1 passed / 0 failed; trials from index
    ``upto`` on not run yet."""
    rows = [
        (t, cell, j, 0 if passed[i, j] else 1, int(landed.get(cell, True)))
        for cell, passed in cells.items()
        for i, t in enumerate(TASKS)
        for j in range(upto)
    ]
    return Outcomes.of(TASKS, list(cells), 8, rows)


def _arms() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    clean = (rng.random((len(TASKS), 8)) < 0.8).astype(int)
    return {
        CLEAN: clean,
        "broken": np.zeros_like(clean),
        "same": clean.copy(),  # common random numbers: identical outcomes
        "missed": clean.copy(),
    }


def test_each_round_decides_and_the_rest_go_on() -> None:
    o = _outcomes(_arms(), {"missed": False})
    p = replay(o, DESIGN, [CLEAN, "broken", "same", "missed"])
    d = p.decisions
    assert (d["broken"].status, d["broken"].round, d["broken"].trials) == ("broken", 1, 2)
    assert d["same"].status == "held" and d["same"].estimate == 0.0
    assert d["missed"].status == "did not land"
    assert p.next_trials is None and p.rounds_done >= 1
    assert d["broken"].upper is not None and d["broken"].upper < 0


def test_a_journal_cut_mid_sequence_names_the_next_round() -> None:
    """Only the first round recorded: round 1 is decided and round 2's count and cells are
    what the runner runs next; stopped there, the undecided cells are inconclusive."""
    arms = _arms()
    rng = np.random.default_rng(1)
    arms["close"] = arms[CLEAN] * (rng.random(arms[CLEAN].shape) > 0.1)  # a drop near 0.08
    o = _outcomes(arms, {"missed": False}, upto=2)
    p = replay(o, DESIGN, list(arms))
    assert p.next_trials == 4
    assert "close" in p.next_cells and "broken" not in p.next_cells
    stop_early(p, o, "the budget ran out")
    close = p.decisions["close"]
    assert close.status == "inconclusive" and close.rule == "the budget ran out"
    assert close.why  # what it would need, or why no number of trials would do
