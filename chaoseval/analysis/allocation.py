"""Within-cell allocation for ``run --sequential`` (``SequentialDesign.settled_rate``): later
rounds run every trial of a task whose paired differences so far disagree, and only a random
share of the trials of a *settled* task (every paired difference so far the same), with
importance weights so the evidence still bears on the same quantity.

The quantity is D, the equal-weight mean over the cell's tasks of mu_i, task i's expected paired
difference (perturbed minus clean, pass^1), rescaled to [0, 1] as y = (d + 1) / 2. Before a round
starts, for each task and trial index j of the round, from the trials recorded before the round
alone (so the choice is predictable): the inclusion probability pi_ij (1, or ``settled_rate``
for a settled task) and a guess g_ij (the settled task's constant value; unused when pi = 1).
Trial j of the task runs, in the cell and in clean (the same seed, so still paired), when a
uniform draw from its own stream, ``derive_seed(seed, "allocation", cell, task, j)``, falls
below pi_ij: independent of the outcomes and of every other draw. Its value in step j is the
doubly robust importance-weighted one

    Y_ij = g_ij + (I_ij / pi_ij) (y_ij - g_ij),

so E[Y_ij | past] = mu_i whatever the guess (Horvitz & Thompson 1952; as a bet, the
importance-weighted betting of Waudby-Smith, Wu, Ramdas, Karampatziakis & Mineiro, "Anytime-valid
off-policy inference for contextual bandits", ACM/IMS J. Data Science 2024, and their doubly
robust form). A task not run in step j contributes its guess; a settled task that stays settled
contributes exactly what it would have run, and one that changes contributes its change times
1 / pi.

Why the guarantee stands: each bettor stakes one predictable lambda on every task of a step
(chaoseval.analysis.anytime). Given the past, the tasks' Y are independent (separate trials and
draws) with means mu_i, so E[prod_i (1 + lambda (Y_ij - m))] = prod_i (1 + lambda (mu_i - m))
<= (1 + lambda (D - m))^b <= 1 under D <= m (arithmetic and geometric means; every factor is
nonnegative), the same supermartingale as without allocation and Ville's inequality as before.
Unequal counts do not bias D: each task keeps weight 1 / b in every step, run or not. The
price: Y may leave [0, 1] (to g (1 - 1 / pi) and g + (1 - g) / pi), so each step's larger
stakes are capped at the one that keeps every possible factor of the step at least 0.1
(``anytime.Bounds``), known before the step: a mixture of predictable stakes, as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chaoseval.analysis.anytime import Bounds
from chaoseval.model.records import CLEAN
from chaoseval.model.seeding import derive_seed

__all__ = ["Allocation", "CellPlan"]

MISSING, PASSED, FAILED = -1, 0, 1


@dataclass
class CellPlan:
    """One cell's allocation so far over (task x index) of the run: whether the design runs
    each trial, with what probability, and the guess its weight is taken around."""

    include: np.ndarray
    prob: np.ndarray
    guess: np.ndarray
    planned: int = 0  # indices below this are allocated


@dataclass
class Allocation:
    """Every cell's plan, made round by round from the trials recorded before each round."""

    outcomes: Any  # chaoseval.analysis.sequential.Outcomes (which imports this module)
    rate: float  # the inclusion probability of a settled task's trial
    seed: int
    first: int  # the first round's trials per task: every task runs them
    cells: dict[str, CellPlan] = field(default_factory=dict)

    def of(self, cell: str) -> CellPlan:
        """The cell's plan (empty until its first round is in)."""
        if cell not in self.cells:
            shape = (len(self.outcomes.tasks), self.outcomes.trials)
            self.cells[cell] = CellPlan(
                np.zeros(shape, bool), np.ones(shape), np.full(shape, 0.5)
            )
        return self.cells[cell]

    def plan(self, cell: str, rows: list[int], n: int) -> None:
        """Allocate the cell's trials below ``n`` on its tasks (``rows``) not yet allocated,
        from the trials below the last allocated index alone."""
        p = self.of(cell)
        start = p.planned
        if n <= start:
            return
        values, known = self._past(cell, p, start)
        for r in rows:
            seen = values[r][known[r]]
            settled = start >= self.first and seen.size > 0 and bool((seen == seen[0]).all())
            pi = self.rate if settled else 1.0
            p.prob[r, start:n] = pi
            p.guess[r, start:n] = float(seen[0]) if settled else 0.5
            task = self.outcomes.tasks[r]
            for j in range(start, n):
                p.include[r, j] = pi >= 1.0 or self._draw(cell, task, j) < pi
        p.planned = n

    def _past(self, cell: str, p: CellPlan, upto: int) -> tuple[np.ndarray, np.ndarray]:
        """The rescaled paired values of the trials the plan ran below ``upto``, and which
        of them are scored in both arms."""
        o = self.outcomes
        a, b = o.status[cell][:, :upto], o.status[CLEAN][:, :upto]
        scored = np.isin(a, (PASSED, FAILED)) & np.isin(b, (PASSED, FAILED))
        y = ((a == PASSED).astype(float) - (b == PASSED).astype(float) + 1) / 2
        return y, scored & p.include[:, :upto]

    def _draw(self, cell: str, task: str, index: int) -> float:
        return derive_seed(self.seed, "allocation", cell, task, index) / 2.0**63

    def complete(self, cell: str, rows: list[int], n: int) -> bool:
        """Every trial the plan runs below ``n`` is recorded, in the cell and in clean."""
        o, p = self.outcomes, self.of(cell)
        want = p.include[rows, :n]
        return bool(
            (o.status[cell][rows, :n][want] != MISSING).all()
            and (o.status[CLEAN][rows, :n][want] != MISSING).all()
        )

    def wanted(self, cell: str, rows: list[int], n: int) -> dict[str, set[int]]:
        """Each task's trial indices below ``n`` the plan runs."""
        p = self.of(cell)
        return {
            self.outcomes.tasks[r]: {int(j) for j in np.flatnonzero(p.include[r, :n])}
            for r in rows
        }

    def steps(self, cell: str, rows: list[int], n: int) -> tuple[np.ndarray, Bounds, float]:
        """The weighted values (steps x tasks) below ``n``, each step's bounds, and the
        estimate of D; a step with a run trial not scored in either arm is left out whole."""
        o, p = self.outcomes, self.of(cell)
        a, b = o.status[cell][rows, :n], o.status[CLEAN][rows, :n]
        inc, pi, g = p.include[rows, :n], p.prob[rows, :n], p.guess[rows, :n]
        scored = np.isin(a, (PASSED, FAILED)) & np.isin(b, (PASSED, FAILED))
        keep = (scored | ~inc).all(axis=0)
        y = ((a == PASSED).astype(float) - (b == PASSED).astype(float) + 1) / 2
        weighted = np.where(inc, g + (y - g) / pi, g)
        x = np.where(pi >= 1.0, y, weighted)[:, keep].T
        lo = np.minimum(0.0, (g * (1 - 1 / pi)).min(axis=0))[keep] if rows else np.zeros(0)
        hi = np.maximum(1.0, (g + (1 - g) / pi).max(axis=0))[keep] if rows else np.zeros(0)
        estimate = float(2 * x.mean() - 1) if x.size else 0.0
        return x, Bounds(lo, hi), estimate
