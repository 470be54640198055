"""What a user reads is calibrated: under the null the verdicts rarely claim anything, and a
harness with nothing to lose is never called more resilient (issue 20). A short version of
benchmarks/calibration_sim.py, through compare's own verdict code (compare_cells)."""

from __future__ import annotations

import numpy as np
import pytest

from chaoseval.analysis.calibration import equal_drops, false_drops, floor_case, null_case, simulate

ALPHA = 0.05


@pytest.mark.parametrize("tasks", [10, 30])
def test_false_claims_under_the_null_stay_at_alpha(tasks: int) -> None:
    # Two identical harnesses, three perturbed cells, pass^1, pass^5 and the mean all shown:
    # the chance of some false "better" (or "more resilient") anywhere is at most alpha, within
    # three Monte Carlo standard errors.
    reps = 150
    r = simulate(null_case, tasks, reps, ks=(1, 5), n_resamples=20, seed=tasks)
    bound = ALPHA + 3 * np.sqrt(ALPHA * (1 - ALPHA) / reps)
    assert r.better["any"] <= bound, r
    assert r.more_resilient["any"] <= bound, r


def test_nothing_to_lose_is_never_more_resilient() -> None:
    # A passes 1 in 5 and loses it under every perturbation; B passes always and keeps 4 in 5.
    # Both lose 0.2 of pass^1, so resilience is no reason to prefer A; on the relative scale B
    # keeps more. pass^5 (shown) would call A more resilient on its floor.
    r = simulate(floor_case, 30, 30, ks=(1, 5), n_resamples=20)
    assert r.more_resilient["A"] == 0.0, r
    r = simulate(floor_case, 30, 20, ks=(1, 5), primary="pass^5", n_resamples=20)
    assert r.more_resilient["A"] == 0.0, r


@pytest.mark.parametrize("population", ["skewed", "u-shaped"])
def test_equal_drops_are_not_more_resilient(population: str) -> None:
    """Issue 41: B better than A everywhere, both losing the same on every task. With the floor
    tasks chosen on the clean counts the drops were estimated from, "B more resilient" came out
    in ~15% of 67-task runs (skewed) and the interval missed 0 as often; chosen on held-out
    clean trials, the claims stay under 5% and the interval covers 0 in at least 93%."""
    r = equal_drops(population, 67, 1000, seed=67)
    assert r.measured == r.reps
    assert r.claimed <= 0.05, r
    assert r.covered >= 0.93, r


def test_the_broken_call_keeps_its_family_wise_rate() -> None:
    """Under the null (perturbed = clean, three cells, 3 trials a task), some cell is called
    broken or degraded in at most 5% of runs, at one task as at thirty."""
    for tasks, trials in ((1, 3), (30, 5)):
        rate = false_drops(tasks, 300, trials=trials, seed=tasks)
        assert rate <= ALPHA, (tasks, rate)
