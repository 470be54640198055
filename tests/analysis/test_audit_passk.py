"""pass^k (k > 1) corrected for the judge's error (chaoseval.analysis.audit_passk), against
known truth: synthetic cells whose true labels are known and whose judge flips some of them,
at known rates, independently or a whole task at a time (seeded simulations)."""

from __future__ import annotations

import numpy as np
import pytest

from chaoseval.analysis.audit_passk import corrected_pass_hat
from chaoseval.analysis.metrics import pass_hat_k

KS = (2, 3)


def _cell(
    truth: np.ndarray, judge: np.ndarray, labelled: np.ndarray
) -> tuple[dict[str, tuple[int, int]], dict[tuple[str, str], int]]:
    """A cell's counts as chaoseval.analysis.audit hands them over: per task (n, the judge's
    passes), and per (task, verdict) the labelled trials and those overturned."""
    tasks = {f"t{i}": (truth.shape[1], int(judge[i].sum())) for i in range(len(truth))}
    reviewed: dict[tuple[str, str], int] = {}
    for i, j in zip(*np.nonzero(labelled), strict=True):
        verdict = "passed" if judge[i, j] else "failed"
        reviewed[(f"t{i}", verdict)] = reviewed.get((f"t{i}", verdict), 0) + 1
        if truth[i, j] != judge[i, j]:
            over = (f"t{i}", "over:" + verdict)
            reviewed[over] = reviewed.get(over, 0) + 1
    return tasks, reviewed


def _true_pass_hat(truth: np.ndarray, k: int) -> float:
    n = truth.shape[1]
    return float(np.mean([pass_hat_k(n, int(row.sum()), k) for row in truth]))


def _simulate(
    rng: np.random.Generator, clustered: bool
) -> list[tuple[float, float, float, float, float]]:
    """One simulated run: (truth, judge's, corrected estimate, low, high) for each k."""
    tasks, n = int(rng.integers(3, 12)), int(rng.integers(3, 8))
    truth = rng.random(tasks)[:, None] > rng.random((tasks, n))
    wrong_pass, wrong_fail = rng.uniform(0, 0.4), rng.uniform(0, 0.4)
    if clustered:  # a check with a gap: on some tasks the judge passes every true failure
        gap = rng.random(tasks) < 2 * wrong_pass
        judge = np.where(truth, rng.random(truth.shape) > wrong_fail, gap[:, None])
    else:
        judge = np.where(truth, rng.random(truth.shape) > wrong_fail,
                         rng.random(truth.shape) < wrong_pass)  # fmt: skip
    labelled = np.zeros(truth.shape, dtype=bool)
    for verdict in (True, False):  # sample's draw: each verdict's stratum at random
        idx = np.flatnonzero(judge.ravel() == verdict)
        m = min(len(idx), int(rng.integers(1, 15)))
        labelled.ravel()[rng.choice(idx, m, replace=False)] = True
    counts, reviewed = _cell(truth, judge, labelled)
    seed = str(rng.integers(1 << 30))
    fixed = corrected_pass_hat(counts, reviewed, KS, 0.95, seed=seed, draws=1000)
    out = []
    for p in fixed.results:
        assert p.corrected is not None and p.judge is not None
        out.append((_true_pass_hat(truth, p.k), p.judge, *p.corrected))
    return out


@pytest.mark.parametrize(("clustered", "runs"), [(False, 300), (True, 200)])
def test_corrected_pass_hat_is_nearer_the_truth_and_covers_it(clustered: bool, runs: int) -> None:
    rng = np.random.default_rng(4300 + clustered)
    rows = np.array([r for _ in range(runs) for r in _simulate(rng, clustered)])
    truth, judge, est, low, high = rows.T
    covered = float(np.mean((low - 1e-9 <= truth) & (truth <= high + 1e-9)))
    # Nominal 95%: about it, and on the safe side (the labels seldom tell clustering, and the
    # interval then spans both readings).
    assert 0.93 <= covered <= 0.995, covered
    judge_off, fixed_off = np.abs(judge - truth), np.abs(est - truth)
    assert fixed_off.mean() < 0.8 * judge_off.mean()
    # Where the judge's error matters, the corrected figure is nearer the truth in most runs.
    big = judge_off > 0.1
    assert big.sum() > 50 and np.mean(fixed_off[big] < judge_off[big]) >= 0.8


def test_every_trial_labelled_gives_the_truth_exactly() -> None:
    rng = np.random.default_rng(7)
    truth = rng.random((6, 5)) < 0.6
    judge = truth | (rng.random(truth.shape) < 0.3)
    counts, reviewed = _cell(truth, judge, np.ones(truth.shape, dtype=bool))
    for p in corrected_pass_hat(counts, reviewed, (2, 5), 0.95, draws=200).results:
        want = _true_pass_hat(truth, p.k)
        assert p.corrected == pytest.approx((want, want, want))


def test_one_known_wrong_pass_makes_pass_hat_n_zero_on_that_task() -> None:
    # One task, six judge-passes, two labelled: one of them truly failed, so no k = 6 draw of
    # its trials can all pass, whatever the others are.
    fixed = corrected_pass_hat({"t": (6, 6)}, {("t", "passed"): 2, ("t", "over:passed"): 1},
                               (2, 6), 0.95)  # fmt: skip
    by_k = {p.k: p for p in fixed.results}
    assert by_k[6].corrected == (0.0, 0.0, 0.0) and by_k[6].judge == 1.0
    est, low, high = by_k[2].corrected or (0, 0, 0)
    assert 0 < est < 1 and low == 0 and high < 1


def test_a_k_no_task_reaches_is_said_not_computed_and_k1_is_left_to_pass1() -> None:
    fixed = corrected_pass_hat({"t": (3, 3)}, {("t", "passed"): 1}, (1, 2, 4), 0.95)
    assert [p.k for p in fixed.results] == [2, 4]
    four = fixed.results[1]
    assert four.corrected is None and four.why_not == "no task has 4 trials"


def test_single_labels_per_task_are_said_to_leave_clustering_open() -> None:
    tasks = {f"t{i}": (4, 4) for i in range(5)}
    reviewed = {(f"t{i}", "passed"): 1 for i in range(3)}
    fixed = corrected_pass_hat(tasks, reviewed, (2,), 0.95)
    assert any("cannot tell whether the judge's errors cluster" in x for x in fixed.notes)
    again = corrected_pass_hat(tasks, reviewed, (2,), 0.95)
    assert again == fixed  # seeded: the same report twice
