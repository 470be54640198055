"""Anytime-valid primitives (issue 44): seeded simulations of the time-uniform guarantees, and
of what goes wrong when a fixed-n test is looked at after every round instead."""

from __future__ import annotations

import math

import numpy as np
import pytest

from chaoseval.analysis.anytime import (
    as_steps,
    confidence_sequence,
    e_bh,
    e_holm,
    growth_rate,
    log_eprocess,
    paired_steps,
)
from chaoseval.analysis.strata import stratified_exact

ALPHA = 0.05
RUNS = 500
ROUNDS = 20
TASKS = 5
# Three standard errors of a rate of alpha over RUNS runs: the sampling noise a simulated
# miscoverage may show above alpha.
TOLERANCE = 3 * math.sqrt(ALPHA * (1 - ALPHA) / RUNS)


def _paired_null(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """ROUNDS x TASKS outcomes of two arms with the same per-task success probabilities."""
    p = rng.uniform(0.1, 0.9, TASKS)
    return (
        (rng.random((ROUNDS, TASKS)) < p).astype(int),
        (rng.random((ROUNDS, TASKS)) < p).astype(int),
    )


def test_confidence_sequence_covers_at_every_round_at_once() -> None:
    """The macro mean of tasks with different success probabilities is in the sequence at
    every round of a run, in all but at most alpha of the runs (peeking every round)."""
    rng = np.random.default_rng(44)
    missed = 0
    for _ in range(RUNS):
        p = rng.uniform(0.05, 0.95, TASKS)
        x = (rng.random((ROUNDS, TASKS)) < p).astype(float)
        cs = confidence_sequence(x, ALPHA)
        missed += bool(((cs.lower > p.mean()) | (cs.upper < p.mean())).any())
    assert missed / RUNS <= ALPHA + TOLERANCE
    assert np.all(np.diff(cs.lower) >= 0) and np.all(np.diff(cs.upper) <= 0)  # only shrinks


def test_paired_difference_sequence_covers_and_narrows() -> None:
    """The paired difference (in [-1, 1], rescaled) is covered; a real drop is excluded from 0
    once the evidence is in."""
    rng = np.random.default_rng(7)
    missed = 0
    for _ in range(RUNS // 2):
        clean, pert = _paired_null(rng)
        cs = confidence_sequence(paired_steps(pert - clean), ALPHA)
        missed += bool(((cs.lower > 0.5) | (cs.upper < 0.5)).any())
    assert missed / (RUNS // 2) <= ALPHA + 2 * TOLERANCE
    broken = paired_steps(-np.ones((ROUNDS, TASKS)))
    assert 2 * confidence_sequence(broken, ALPHA).upper[-1] - 1 < -0.5


def test_eprocess_false_claims_under_the_null_stay_under_alpha_when_peeked() -> None:
    """ "Perturbed worse than clean" under the null (equal arms), rejected once the e-process
    reaches 1/alpha at any round: at most alpha of the runs. And "held within 0.1" is not
    claimed when the true drop is 0.1."""
    rng = np.random.default_rng(2)
    drops = helds = 0
    for _ in range(RUNS):
        clean, pert = _paired_null(rng)
        x = paired_steps(pert - clean)
        drops += bool((log_eprocess(x, 0.5, "below") >= math.log(1 / ALPHA)).any())
        # A drop of exactly the margin: the held null (D <= -0.1) is true.
        p = np.full(TASKS, 0.6)
        c = (rng.random((ROUNDS, TASKS)) < p).astype(int)
        q = (rng.random((ROUNDS, TASKS)) < p - 0.1).astype(int)
        held = log_eprocess(paired_steps(q - c), 0.45, "above")
        helds += bool((held >= math.log(1 / ALPHA)).any())
    assert drops / RUNS <= ALPHA + TOLERANCE
    assert helds / RUNS <= ALPHA + TOLERANCE


def test_a_fixed_n_test_peeked_every_round_exceeds_alpha() -> None:
    """Why the e-processes: the same null data through the exact stratified test (what a
    fixed-n run judges once), looked at after every round and stopped at its first p <= alpha,
    claims a drop far more often than alpha."""
    rng = np.random.default_rng(3)
    runs, claims = 300, 0
    for _ in range(runs):
        clean, pert = _paired_null(rng)
        for n in range(1, ROUNDS + 1):
            tables = [(n, int(pert[:n, t].sum()), n, int(clean[:n, t].sum())) for t in range(TASKS)]
            if stratified_exact(tables, "less") <= ALPHA:
                claims += 1
                break
    assert claims / runs > ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / runs)


def test_a_real_drop_is_found_and_identical_arms_are_held() -> None:
    broken = paired_steps(-np.ones((2, 10)))
    assert log_eprocess(broken, 0.5, "below")[-1] > math.log(1 / ALPHA)
    same = paired_steps(np.zeros((4, 30)))
    assert log_eprocess(same, 0.45, "above")[-1] > math.log(1 / ALPHA)
    assert log_eprocess(same, 0.5, "below")[-1] <= 0  # no evidence of a drop at all
    assert growth_rate(same, 0.45, "above") > 0
    assert growth_rate(same, 0.5, "below") <= 0


def test_e_holm_controls_family_wise_errors_under_the_global_null() -> None:
    """Ten true nulls, each an e-process looked at every round, rejected by the closed test
    at any round: some rejection in at most alpha of the runs."""
    rng = np.random.default_rng(4)
    wrong = 0
    for _ in range(RUNS):
        paths = []
        for _ in range(10):
            clean, pert = _paired_null(rng)
            paths.append(log_eprocess(paired_steps(pert - clean), 0.5, "below"))
        logs = np.array(paths)  # (hypotheses, rounds)
        wrong += any(e_holm(logs[:, t], ALPHA).any() for t in range(ROUNDS))
    assert wrong / RUNS <= ALPHA + TOLERANCE


def test_e_holm_and_e_bh_on_known_values() -> None:
    big, none = math.log(1e6), 0.0
    assert e_holm([big, none, none], ALPHA).tolist() == [True, False, False]
    # Two e-values of 40 among three: the closed test needs each pair's mean >= 20 (40 + 1)/2
    # and the triple's (81/3 = 27): both rejected; e-BH needs 3/(0.05*2) = 30 for two.
    forty = math.log(40)
    assert e_holm([forty, forty, none], ALPHA).tolist() == [True, True, False]
    assert e_bh([forty, forty, none], ALPHA).tolist() == [True, True, False]
    assert not e_holm([math.log(19)], ALPHA).any()
    assert e_holm([math.log(20)], ALPHA).all()
    assert e_bh([], ALPHA).size == 0 and e_holm([], ALPHA).size == 0


def test_bad_observations_are_refused() -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        as_steps([0.5, 1.5])
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        paired_steps([[2, 0]])
    with pytest.raises(ValueError, match="strictly inside"):
        log_eprocess([0.5], 1.0, "above")
    with pytest.raises(ValueError, match="side"):
        log_eprocess([0.5], 0.5, "up")
