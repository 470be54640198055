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
from chaoseval.analysis.degradation import adjust_by_metric, compare_metrics
from chaoseval.analysis.primary import parse_primary
from chaoseval.analysis.status import cell_statuses

__all__ = [
    "POPULATIONS",
    "Rates",
    "equal_drops",
    "equal_drops_case",
    "false_drops",
    "floor_case",
    "null_case",
    "simulate",
]

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


# Per-task clean success rates (issue 41's held-out simulation): skewed towards failure, and
# U-shaped (many tasks near 0 and near 1, where a floor is chosen).
POPULATIONS = {"skewed": (0.5, 2.0), "u-shaped": (0.4, 0.4)}
# The share of the smaller clean rate both harnesses lose: large, so that a task chosen for a
# lucky clean success shows a drop it does not have (the bias of choosing on the estimate).
DROP_BETA = (5.0, 2.0)


def equal_drops_case(population: str) -> Case:
    """A null of equal true drops: A's clean rate per task drawn from the population, B better
    on every task (half of A's failures fixed), and both losing the same amount on each task
    (a share of A's rate), so every task's true difference of drops is 0. A has the tasks near
    the floor: choosing them on the clean counts the drops are estimated from favours B."""
    shape = POPULATIONS[population]

    def case(rng: np.random.Generator, tasks: int, cells: int) -> Pair:
        p = rng.beta(*shape, size=tasks)
        q = 1 - (1 - p) / 2
        losses = [p * rng.beta(*DROP_BETA, size=tasks) for _ in range(cells)]
        a = {CLEAN: p} | {f"x{j}": p - d for j, d in enumerate(losses)}
        b = {CLEAN: q} | {f"x{j}": q - d for j, d in enumerate(losses)}
        return (
            {cell: (_counts(rng, r), set[str]()) for cell, r in a.items()},
            {cell: (_counts(rng, r), set[str]()) for cell, r in b.items()},
        )

    return case


@dataclass(frozen=True)
class DropRates:
    """Under equal true drops: the share of runs claiming "more resilient" for either side,
    and the share whose difference-of-drops interval (the primary's) covers 0."""

    reps: int
    claimed: float
    covered: float
    measured: int  # runs with an interval (some task left to compare)


def equal_drops(
    population: str, tasks: int, reps: int, *, seed: int = 0, primary: str = "pass^1"
) -> DropRates:
    """One perturbed cell, compared ``reps`` times under :func:`equal_drops_case`."""
    rng = np.random.default_rng(seed)
    main = parse_primary(primary, TRIALS)
    case = equal_drops_case(population)
    claimed = covered = measured = 0
    for _ in range(reps):
        a, b = case(rng, tasks, 1)
        cell = compare_cells(
            a, b, (main.kk,), main, n_resamples=20, seed=int(rng.integers(1 << 30))
        )[-1]
        claimed += cell.more_resilient is not None
        did = cell.get_resilience(main.label)
        if did is not None and did.difference is not None:
            measured += 1
            covered += did.difference.contains(0.0)
    return DropRates(reps, claimed / reps, covered / max(1, measured), measured)


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


def _draw(rng: np.random.Generator, p: np.ndarray, n: int) -> dict[str, tuple[int, int]]:
    return {f"t{i}": (n, int(c)) for i, c in enumerate(rng.binomial(n, p))}


def false_drops(
    tasks: int, reps: int, *, cells: int = 3, trials: int = 3, seed: int = 0,
    population: str = "u-shaped",
) -> float:
    """Under the null (each perturbed cell the same agent as clean: the same per-task success
    probability), the share of ``reps`` runs in which some cell is called broken or degraded
    (chaoseval.analysis.status, pass^1, Holm across the ``cells``): the family-wise rate."""
    rng = np.random.default_rng(seed)
    shape = POPULATIONS[population]
    hits = 0
    for _ in range(reps):
        p = rng.beta(*shape, size=tasks)

        clean = _draw(rng, p, trials)
        counts = {f"x{j}": _draw(rng, p, trials) for j in range(cells)}
        comps = {
            c: compare_metrics(
                n, clean, [("pass^k", 1)], {}, arms=(c, CLEAN), key=c, n_resamples=100,
                ci=0.95, seed=0,
            )
            for c, n in counts.items()
        }  # fmt: skip
        adjust_by_metric(comps.values())
        statuses = cell_statuses(
            counts, clean, {c: x[0] for c, x in comps.items()}, dict.fromkeys(counts, True),
            "pass^1",
        )  # fmt: skip
        hits += any(st.status in ("broken", "degraded") for st in statuses.values())
    return hits / reps
