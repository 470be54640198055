"""Within-cell allocation's evidence (chaoseval.analysis.allocation): predictable plans, the
importance-weighted values unbiased for each task's mean, every bettor's one-step factor a
supermartingale factor under the null (computed exactly over every draw and outcome), and
with no settled task the evidence of a run without allocation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from chaoseval.analysis.allocation import Allocation
from chaoseval.analysis.anytime import STAKES, Bounds, log_eprocess, paired_steps
from chaoseval.analysis.sequential import Outcomes, replay
from chaoseval.model.records import CLEAN, SequentialDesign

N = 8


def _outcomes(clean: np.ndarray, cell: np.ndarray) -> Outcomes:
    """(tasks x N) statuses, 0 passed, 1 failed, in clean and cell x."""
    tasks = [f"t{i}" for i in range(len(clean))]
    rows = [
        (tasks[i], name, j, int(a[i, j]), 1)
        for name, a in ((CLEAN, clean), ("x", cell))
        for i in range(len(tasks))
        for j in range(N)
    ]
    return Outcomes.of(tasks, [CLEAN, "x"], N, rows)


def test_settled_tasks_get_the_rate_the_others_every_trial() -> None:
    clean = np.zeros((3, N), int)
    cell = np.zeros((3, N), int)
    cell[1, 1] = 1  # task 1's paired differences disagree in the first round
    a = Allocation(_outcomes(clean, cell), 0.25, seed=3, first=2)
    a.plan("x", [0, 1, 2], 2)
    a.plan("x", [0, 1, 2], 4)
    p = a.of("x")
    assert p.include[:, :2].all() and (p.prob[:, :2] == 1).all()
    assert (p.prob[[0, 2], 2:4] == 0.25).all() and (p.prob[1, 2:4] == 1).all()
    assert p.include[1, 2:4].all()


def test_the_plan_depends_only_on_trials_before_its_round() -> None:
    rng = np.random.default_rng(1)
    clean, cell = rng.integers(0, 2, (6, N)), rng.integers(0, 2, (6, N))
    clean[:3], cell[:3] = 0, 0  # three settled tasks
    later = cell.copy()
    later[:, 4:] = 1 - later[:, 4:]  # outcomes from index 4 on, unknown when 2..4 is planned
    plans = []
    for c in (cell, later):
        a = Allocation(_outcomes(clean, c), 0.5, seed=9, first=2)
        for n in (2, 4):
            a.plan("x", list(range(6)), n)
        plans.append(a.of("x").include[:, :4].copy())
    assert (plans[0] == plans[1]).all()
    again = Allocation(_outcomes(clean, cell), 0.5, seed=9, first=2)
    for n in (2, 4):
        again.plan("x", list(range(6)), n)
    assert (again.of("x").include[:, :4] == plans[0]).all()  # same seed, same draws


@pytest.mark.parametrize("guess", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("pi", [0.25, 0.5])
def test_a_weighted_value_is_unbiased_and_every_factor_nonnegative(
    guess: float, pi: float
) -> None:
    """E[Y] = mu for any law of y on {0, 1/2, 1}; with the step's bounds the largest stake
    keeps the least factor at 1 - 0.9 for both sides."""
    lo, hi = min(0.0, guess * (1 - 1 / pi)), max(1.0, guess + (1 - guess) / pi)
    for law in ([0.2, 0.3, 0.5], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]):
        ys = np.array([0.0, 0.5, 1.0])
        mean_y = sum(w * (guess + (y - guess) / pi) * pi for w, y in zip(law, ys, strict=True))
        mean_y += (1 - pi) * guess
        assert mean_y == pytest.approx(float(np.dot(law, ys)))
    for m in (0.45, 0.5):
        for side, worst in (("above", lo), ("below", hi)):
            x = np.array([[worst]])
            factor = math.exp(log_eprocess(x, m, side, Bounds(np.array([lo]), np.array([hi])))[0])
            assert factor >= 1 - STAKES.max() - 1e-9  # the mixture: every stake at least 0.1


def _step_expectation(mus: list[float], pis: list[float], guesses: list[float], m: float,
                      side: str, stake: float) -> float:  # fmt: skip
    """E[prod_i (1 + lam (Y_i - m))] exactly over every task's draw and Bernoulli outcome."""
    lo = min(0.0, *(g * (1 - 1 / p) for g, p in zip(guesses, pis, strict=True)))
    hi = max(1.0, *(g + (1 - g) / p for g, p in zip(guesses, pis, strict=True)))
    # As anytime._log_factors stakes: the stake on [0, 1], capped where the bounds need it.
    top = float(STAKES.max())
    if side == "above":
        lam = min(stake / m, top / (m - lo))
    else:
        lam = min(stake / (1 - m), top / (hi - m))
    sign = 1.0 if side == "above" else -1.0
    total = 0.0
    for combo in itertools.product((0, 1), (0.0, 1.0), repeat=len(mus)):
        prob, factor = 1.0, 1.0
        for i, (mu, pi, g) in enumerate(zip(mus, pis, guesses, strict=True)):
            inc, y = combo[2 * i], combo[2 * i + 1]
            prob *= (pi if inc else 1 - pi) * (mu if y else 1 - mu)
            value = g + (y - g) / pi if inc else g
            factor *= 1 + sign * lam * (value - m)
        total += prob * factor
    return total


@pytest.mark.parametrize("side", ["above", "below"])
def test_a_step_is_a_supermartingale_factor_under_the_null(side: str) -> None:
    """Task means with their mean exactly at the null's m (the worst case), one task settled
    at a wrong guess and run a quarter of the time: no stake's expected factor passes 1."""
    m = 0.5
    mus = [0.9, 0.1, 0.5] if side == "above" else [0.2, 0.8, 0.5]
    for stake in STAKES:
        for guesses in ([0.5, 0.5, 0.0], [0.5, 0.5, 1.0], [0.5, 0.5, 0.5]):
            e = _step_expectation(mus, [1.0, 1.0, 0.25], guesses, m, side, float(stake))
            assert e <= 1 + 1e-12


def test_without_settled_tasks_the_evidence_is_the_plain_one() -> None:
    """Every task disagreeing in the first round: allocation runs everything and decides as a
    run without it, e-values and all."""
    rng = np.random.default_rng(5)
    clean, cell = rng.integers(0, 2, (5, N)), rng.integers(0, 2, (5, N))
    clean[:, 0], cell[:, 0] = 0, 1  # a difference of -1 first
    clean[:, 1], cell[:, 1] = 0, 0  # then 0: no task settled
    o = _outcomes(clean, cell)
    plain = SequentialDesign(first=2, round_size=2, max_trials=N)
    alloc = plain.model_copy(update={"settled_rate": 0.25, "allocation_seed": 1})
    a, b = replay(o, plain, [CLEAN, "x"]), replay(o, alloc, [CLEAN, "x"])
    assert a.decisions["x"].status == b.decisions["x"].status
    assert a.decisions["x"].log_e == pytest.approx(b.decisions["x"].log_e)


def test_bounds_of_zero_and_one_change_nothing() -> None:
    x = paired_steps(np.array([[0, -1, 1], [0, 0, -1]]))
    b = Bounds(np.zeros(2), np.ones(2))
    for side in ("above", "below"):
        assert (log_eprocess(x, 0.45, side) == log_eprocess(x, 0.45, side, b)).all()
    with pytest.raises(ValueError, match="bounds"):
        log_eprocess(x + 1, 0.5, "above", b)
