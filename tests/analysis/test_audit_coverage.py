"""The corrected pass^1's interval covers the true pass^1 of the trials at least at its level,
over a few hundred simulated judges (seeded), and the exact count interval closes when every
trial of a stratum is reviewed."""

from __future__ import annotations

import numpy as np

from chaoseval.analysis.audit import Stratum, corrected_interval, count_interval, kappa


def test_count_interval_is_exact_when_all_are_reviewed() -> None:
    assert count_interval(10, 10, 7, 0.05) == (7, 7)
    assert count_interval(10, 0, 0, 0.05) == (0, 10)
    lo, hi = count_interval(100, 10, 10, 0.05)
    assert lo >= 10 and hi == 100


def test_corrected_interval_coverage_over_simulated_judges() -> None:
    rng = np.random.default_rng(43)
    sims, covered = 400, 0
    for _ in range(sims):
        tasks, n = int(rng.integers(3, 12)), int(rng.integers(3, 8))
        truth = rng.random(tasks)[:, None] > rng.random((tasks, n))  # true passes
        wrong_pass, wrong_fail = rng.uniform(0, 0.4), rng.uniform(0, 0.4)
        judge = np.where(truth, rng.random(truth.shape) > wrong_fail,
                         rng.random(truth.shape) < wrong_pass)  # fmt: skip
        strata = []
        j = float(judge.mean())
        for verdict, share in ((True, j), (False, 1 - j)):
            idx = np.flatnonzero(judge.ravel() == verdict)
            m = min(len(idx), int(rng.integers(1, 15)))
            seen = rng.choice(idx, m, replace=False) if m else idx[:0]
            passed = int(truth.ravel()[seen].sum())
            over = m - passed if verdict else passed
            strata.append(Stratum("passed" if verdict else "failed", len(idx), m, over, share))
        _, lo, hi = corrected_interval(strata, 0.95)
        covered += lo - 1e-12 <= float(truth.mean()) <= hi + 1e-12
    assert covered / sims >= 0.95 - 0.02


def test_kappa() -> None:
    assert kappa(["passed", "failed"], ["passed", "failed"]) == 1.0
    assert kappa(["passed", "passed"], ["passed", "passed"]) is None
    assert kappa(["passed", "failed"], ["passed", "passed"]) == 0.0
