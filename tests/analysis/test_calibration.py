"""What a user reads is calibrated: under the null the verdicts rarely claim anything, and a
harness with nothing to lose is never called more resilient (issue 20). A short version of
benchmarks/calibration_sim.py, through compare's own verdict code (compare_cells)."""

from __future__ import annotations

import numpy as np
import pytest

from chaoseval.analysis.calibration import floor_case, null_case, simulate

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
