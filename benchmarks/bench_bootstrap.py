"""Paired task-level bootstrap benchmark: vectorised chaoseval.analysis.stats against naive loops.

The workload mirrors a real matrix run: T tasks x n trials, a clean arm and P perturbed arms,
per-task pass^k for each arm, and one paired bootstrap of each perturbed arm against clean.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from chaoseval.analysis.inference import paired_compare
from chaoseval.analysis.metrics import per_task_metric


@dataclass(frozen=True)
class Workload:
    clean: np.ndarray  # per-task pass^k, shape (T,)
    perturbed: list[np.ndarray]  # one per perturbation, each shape (T,)
    tasks: int
    trials: int
    k: int


def make_workload(
    tasks: int = 1_000, trials: int = 20, perturbations: int = 10, k: int = 5, seed: int = 0
) -> Workload:
    """Synthetic per-task counts: task difficulty ~ Beta(4, 2); each perturbation lowers it."""
    rng = np.random.default_rng(seed)
    p_clean = rng.beta(4, 2, tasks)
    n = np.full(tasks, trials)
    clean = per_task_metric(n, rng.binomial(n, p_clean), "pass^k", k)
    perturbed = []
    for _ in range(perturbations):
        drop = rng.uniform(0.0, 0.2) * rng.random(tasks)
        c = rng.binomial(n, np.clip(p_clean - drop, 0, 1))
        perturbed.append(per_task_metric(n, c, "pass^k", k))
    return Workload(clean, perturbed, tasks, trials, k)


def run_vectorised(w: Workload, n_resamples: int, seed: int = 0) -> None:
    for arm in w.perturbed:
        paired_compare(arm, w.clean, n_resamples=n_resamples, seed=seed)


def vectorised_one(a: np.ndarray, b: np.ndarray, n_resamples: int, seed: int = 0) -> None:
    paired_compare(a, b, n_resamples=n_resamples, seed=seed)


def naive_numpy_loop(a: np.ndarray, b: np.ndarray, n_resamples: int, seed: int = 0) -> None:
    """One Python iteration per resample, numpy inside: the usual first implementation."""
    rng = np.random.default_rng(seed)
    t = a.size
    diffs = np.empty(n_resamples)
    ratios = np.empty(n_resamples)
    for i in range(n_resamples):
        idx = rng.integers(0, t, t)
        ma, mb = a[idx].mean(), b[idx].mean()
        diffs[i] = ma - mb
        ratios[i] = ma / mb if mb else np.nan
    np.quantile(diffs, [0.025, 0.975])
    np.nanquantile(ratios, [0.025, 0.975])


def naive_pure_python(a: list[float], b: list[float], n_resamples: int, seed: int = 0) -> None:
    """One Python iteration per resample and per task: no numpy at all."""
    rng = random.Random(seed)
    t = len(a)
    diffs: list[float] = []
    for _ in range(n_resamples):
        idx = [rng.randrange(t) for _ in range(t)]
        diffs.append(sum(a[i] for i in idx) / t - sum(b[i] for i in idx) / t)
    diffs.sort()


def best_of(fn: Callable[[], None], repeat: int) -> float:
    """Fastest of ``repeat`` runs, in seconds: the least disturbed by other processes."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best
