"""The sequential decisions replayed from outcomes alone (issue 44): what each round decides,
what the next round runs, and what an undecided cell would still need."""

from __future__ import annotations

import numpy as np

from chaoseval.analysis.anytime import e_holm
from chaoseval.analysis.sequential import Outcomes, by_cells, replay, stop_early
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


def test_closed_testing_by_cell_on_known_values() -> None:
    """Each cell is one term of the mean, at its smallest intersection of nulls that can be
    true together: 20 cells held at e = 500 with drop and gain at e = 1 are all held at
    alpha 0.05 (500 and 19 ones: a mean of 25.95 >= 20), where e-Holm, one term per claim,
    averages 500 with the 40 ones (13.2 < 20): none held."""
    cells = {f"c{i}": {"drop": 0.0, "gain": 0.0, "held": float(np.log(500))} for i in range(20)}
    got = by_cells(cells, 0.05)
    assert all(got[c, "held"] for c in cells) and not any(got[c, "drop"] for c in cells)
    flat = [v for e in cells.values() for v in e.values()]
    assert not e_holm(flat, 0.05).any()
    # drop and held cannot both be true nulls: a drop found does not make its own cell's held
    # claim pay for it, and a claim is never made on e-values of 1.
    one = by_cells({"a": {"drop": float(np.log(40)), "gain": -3.0, "held": -3.0}}, 0.05)
    assert one == {("a", "drop"): True, ("a", "gain"): False, ("a", "held"): False}


def test_closed_testing_by_cell_keeps_false_claims_under_alpha() -> None:
    """Under the global null (every D = 0: drop and gain true, held false) with independent
    e-values of mean one, the rate of any false claim stays under alpha."""
    rng = np.random.default_rng(3)
    runs, false = 4000, 0
    for _ in range(runs):
        # e-values with mean one: exp(N(-s^2/2, s^2)), s = 1.5
        e = rng.normal(-1.125, 1.5, size=(8, 2))
        cells = {f"c{i}": {"drop": e[i, 0], "gain": e[i, 1], "held": 30.0} for i in range(8)}
        got = by_cells(cells, 0.05)
        false += any(got[c, t] for c in cells for t in ("drop", "gain"))
    assert false / runs <= 0.05
