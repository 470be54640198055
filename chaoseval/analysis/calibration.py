"""Verdict-level calibration by simulation: journals' counts drawn from known per-task success
probabilities, judged by :func:`chaoseval.analysis.compare.compare_cells` (compare's own
verdict code, without the journal files), so the error rates of what a user reads are measured.

Used by tests/analysis/test_calibration.py (a few hundred replications, seconds) and by
benchmarks/calibration_sim.py (the long version, with figures).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from chaoseval.analysis.aggregate import CLEAN
from chaoseval.analysis.compare import CellComparison, CellCounts, compare_cells
from chaoseval.analysis.primary import parse_primary

__all__ = ["Rates", "floor_case", "null_case", "simulate"]

TRIALS = 5
# A suite with a spread of difficulties, some tasks near 0 and near 1 (U-shaped), each
# perturbation taking a random share of a task's success probability.
CLEAN_BETA = (0.7, 0.4)
LOSS_BETA = (2.0, 5.0)

Pair = tuple[dict[str, CellCounts], dict[str, CellCounts]]  # harness A's cells, B's
Case = Callable[[np.random.Generator, int, int], Pair]


def _counts(rng: np.random.Generator, p: np.ndarray) -> dict[str, tuple[int, int]]:
    return {f"t{i}": (TRIALS, int(c)) for i, c in enumerate(rng.binomial(TRIALS, p))}


def null_case(rng: np.random.Generator, tasks: int, cells: int) -> Pair:
    """Two identical harnesses: the same per-task probability in every cell for both."""
    p = rng.beta(*CLEAN_BETA, size=tasks)
    probs = {CLEAN: p} | {f"x{j}": p * (1 - rng.beta(*LOSS_BETA, size=tasks)) for j in range(cells)}
    a = {cell: (_counts(rng, q), set[str]()) for cell, q in probs.items()}
    b = {cell: (_counts(rng, q), set[str]()) for cell, q in probs.items()}
    return a, b


def floor_case(rng: np.random.Generator, tasks: int, cells: int) -> Pair:
    """Issue 20's floor case: A succeeds 1 time in 5 and loses it all under the perturbation,
    B succeeds always and keeps 4 in 5; both lose 0.2 in pass^1 per trial."""
    ones = np.ones(tasks)
    a = {CLEAN: 0.2 * ones} | {f"x{j}": 0.0 * ones for j in range(cells)}
    b = {CLEAN: ones} | {f"x{j}": 0.8 * ones for j in range(cells)}
    return (
        {cell: (_counts(rng, q), set[str]()) for cell, q in a.items()},
        {cell: (_counts(rng, q), set[str]()) for cell, q in b.items()},
    )


@dataclass(frozen=True)
class Rates:
    """Share of replications with at least one claim of each kind, and the Monte Carlo se."""

    reps: int
    better: dict[str, float]  # "A" / "B" / "any" -> share of runs with such a claim
    more_resilient: dict[str, float]

    def se(self, rate: float) -> float:
        return float(np.sqrt(max(rate * (1 - rate), 0.05 * 0.95) / self.reps))


def _any(cells: list[CellComparison], attr: str, side: str | None) -> bool:
    return any(getattr(c, attr) is not None and side in (None, getattr(c, attr)) for c in cells)


def simulate(
    case: Case,
    tasks: int,
    reps: int,
    *,
    cells: int = 3,
    ks: tuple[int, ...] = (1, 2, TRIALS),
    primary: str = "pass^1",
    seed: int = 0,
    n_resamples: int = 100,
) -> Rates:
    """Claims made over ``reps`` simulated comparisons (fixed ``seed``): every metric of
    ``ks`` is computed and shown, the verdict is the primary's."""
    rng = np.random.default_rng(seed)
    main = parse_primary(primary, TRIALS)
    counts: dict[str, dict[str, int]] = {q: {"A": 0, "B": 0, "any": 0} for q in ("b", "r")}
    for _ in range(reps):
        a, b = case(rng, tasks, cells)
        out = compare_cells(
            a, b, ks, main, n_resamples=n_resamples, seed=int(rng.integers(1 << 30))
        )
        for q, attr in (("b", "better"), ("r", "more_resilient")):
            for side in ("A", "B"):
                counts[q][side] += _any(out, attr, side)
            counts[q]["any"] += _any(out, attr, None)
    return Rates(
        reps,
        {k: v / reps for k, v in counts["b"].items()},
        {k: v / reps for k, v in counts["r"].items()},
    )
