"""Coverage of the paired interval (chaoseval.analysis.inference) by simulation with known truth.

A population of tasks: each task's clean success probability p ~ Beta(a, b); the perturbation
keeps a share (1 - u) of it, u ~ Beta(c, d), so the perturbed probability is p (1 - u). A run
draws T tasks and n = 5 trials per task in each arm; the per-task unbiased pass^k of each arm
gives per-task differences (perturbed - clean), and the 95% interval of their mean is checked
against the population difference E[(p (1 - u))^k] - E[p^k] (Beta moments, exact). Every run uses
a fixed seed, so the figures are reproducible. The old percentile bootstrap is shown beside it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from chaoseval.analysis.inference import paired_inference
from chaoseval.analysis.metrics import per_task_metric

TRIALS = 5


@dataclass(frozen=True)
class Population:
    name: str
    clean: tuple[float, float]  # Beta(a, b) of the clean success probability
    loss: tuple[float, float] | None  # Beta(c, d) of the share u it takes; None: u = 0

    def truth(self, k: int) -> float:
        """Population difference in pass^k: E[(p (1 - u))^k] - E[p^k], p and u independent."""
        if self.loss is None:
            return 0.0
        clean_k = _beta_moment(*self.clean, k)
        kept_k = _beta_moment(self.loss[1], self.loss[0], k)  # 1 - u ~ Beta(d, c)
        return clean_k * kept_k - clean_k


POPULATIONS = (
    Population("drop", clean=(4.0, 2.0), loss=(2.0, 8.0)),  # mean 0.67, loses a fifth
    Population("reliable", clean=(8.0, 1.0), loss=(1.0, 9.0)),  # mean 0.89, loses a tenth
    Population("no effect", clean=(4.0, 2.0), loss=None),  # the null: same probability
)


def _beta_moment(a: float, b: float, k: int) -> float:
    return math.prod((a + j) / (a + b + j) for j in range(k))


@dataclass(frozen=True)
class Coverage:
    population: str
    tasks: int
    k: int
    reps: int
    truth: float
    covered: float  # share of intervals that contain the truth
    mean_width: float
    rejected: float  # share of intervals that exclude 0
    bootstrap_covered: float | None = None  # the percentile bootstrap on the same samples


def _percentile_bootstrap(d: np.ndarray, rng: np.random.Generator, n_resamples: int) -> np.ndarray:
    """The task-level bootstrap means of ``d`` (the old percentile interval, for contrast)."""
    idx = rng.integers(0, d.size, size=(n_resamples, d.size))
    return d[idx].mean(axis=1)


def simulate(
    population: Population,
    tasks: int,
    k: int,
    reps: int,
    seed: int = 0,
    bootstrap_resamples: int = 0,
) -> Coverage:
    """Coverage of the 95% interval over ``reps`` simulated runs (fixed ``seed``)."""
    rng = np.random.default_rng(seed)
    truth = population.truth(k)
    n = np.full(tasks, TRIALS)
    covered = rejected = boot = 0
    width = 0.0
    for _ in range(reps):
        p = rng.beta(*population.clean, tasks)
        u = rng.beta(*population.loss, tasks) if population.loss else np.zeros(tasks)
        clean = per_task_metric(n, rng.binomial(TRIALS, p), "pass^k", k)
        hurt = per_task_metric(n, rng.binomial(TRIALS, p * (1 - u)), "pass^k", k)
        iv = paired_inference(hurt - clean).interval
        covered += iv.contains(truth)
        rejected += not iv.contains(0.0)
        width += iv.high - iv.low
        if bootstrap_resamples:
            means = _percentile_bootstrap(hurt - clean, rng, bootstrap_resamples)
            low, high = np.quantile(means, [0.025, 0.975])
            boot += bool(low <= truth <= high)
    return Coverage(
        population.name,
        tasks,
        k,
        reps,
        truth,
        covered / reps,
        width / reps,
        rejected / reps,
        boot / reps if bootstrap_resamples else None,
    )


def timing(comparisons: int = 1_000) -> None:
    """Interval and test per comparison, for each method, as a report with many cells pays."""
    rng = np.random.default_rng(0)
    cases = {
        "0/1 values, 30 tasks (adjusted Wald)": rng.integers(-1, 2, 30).astype(float),
        "16 tasks (exact sign-flip, 2^16 subsets)": rng.integers(-5, 6, 16) / 5 + 0.01,
        "200 tasks (paired t)": rng.random(200) - 0.4,
    }
    print(f"  interval + test, {comparisons:,} comparisons each (wall, and CPU of this process):")
    for label, d in cases.items():
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(comparisons):
            paired_inference(d)
        took, cpu = time.perf_counter() - start, time.process_time() - cpu
        print(
            f"    {label:<44}{took:7.3f} s wall, {cpu:7.3f} s CPU "
            f"({cpu / comparisons * 1e3:.2f} ms CPU each)"
        )


def main(reps: int = 2_000) -> None:
    print(
        f"coverage of the 95% paired interval (perturbed - clean), {TRIALS} trials per task, "
        f"{reps:,} simulated runs each, fixed seeds (target >= 0.93):"
    )
    start = time.perf_counter()
    for population in POPULATIONS:
        for tasks in (10, 30):
            for k in (1, 5):
                c = simulate(
                    population, tasks, k, reps, seed=tasks * 10 + k, bootstrap_resamples=500
                )
                verdict = "ok" if c.covered >= 0.93 else "UNDER"
                print(
                    f"    {population.name:<10} {tasks:>3} tasks  pass^{k}  truth {c.truth:+.3f}  "
                    f"covered {c.covered:.3f} ({verdict}; percentile bootstrap "
                    f"{c.bootstrap_covered:.3f})  mean width {c.mean_width:.3f}  "
                    f"excludes 0 in {c.rejected:.3f}"
                )
    print(f"    ({time.perf_counter() - start:.1f} s)")
    timing()


if __name__ == "__main__":
    main()
