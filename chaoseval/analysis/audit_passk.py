"""pass^k (k > 1) corrected for the judge's measured error: the judge's audit, continued.

pass^1 is linear in the trials, so the stratified estimator of chaoseval.analysis.audit
corrects it whatever the judge's errors look like. pass^k is not: a task's ``C(c, k) / C(n, k)``
depends on how the true passes fall among its trials, so it depends on whether the judge's
errors on one task's trials go together (a check with a gap misses the same thing every
time) or fall independently. Treating them as independent when they cluster (or the other way
round) moves the estimate a long way: five wrong passes among two tasks' ten cost pass^5 half
when they are one task's trials, and all of it when they fall on both.

The method: the true labels of the trials nobody reviewed are imputed from a hierarchical
model, and the relabelled journal's pass^k taken for every draw (Bayesian multiple imputation
of the relabelling, on these trials):

- per cell and judge's verdict (a stratum), task ``i``'s trials the judge gave that verdict
  truly passed each with probability ``q_i``, drawn for the task from Beta with mean ``mu``
  and intra-task correlation ``rho`` (``rho`` 0: the judge's errors fall independently at one
  rate; ``rho`` 1: it is right or wrong on a whole task's trials at once);
- ``mu`` and ``rho`` uniform a priori; their posterior is read on a grid from the labels,
  task by task (beta-binomial likelihood), so a task with two or more labelled trials of one
  verdict tells ``rho`` and a single label per task does not: then the posterior keeps
  ``rho``'s prior, and the interval spans both readings, as it must (the report says so);
- each draw of (``mu``, ``rho``) gives each task's unlabelled trials a number of true passes
  (beta-binomial, given that task's own labels), the labelled ones keep their label, and the
  relabelled counts give each task's pass^k, macro-averaged over the tasks with ``n >= k``;
- the estimate is the draws' mean, the interval their equal-tailed quantiles at the report's
  level. A stratum nobody reviewed keeps the judge's verdicts, as for pass^1.

Assumptions beyond pass^1's: a task's errors in one stratum are exchangeable (any of its
judge-passes as likely wrong as another), and so are the tasks' rates (nothing known of a task,
its counts included, says its rate is higher), the two strata of a task independent given
their rates, and the priors' say where the labels are silent. The interval is Bayesian: its coverage
is checked by simulation (tests/analysis/test_audit_passk.py), not guaranteed.
"""

from __future__ import annotations

import functools
import math
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from chaoseval.analysis.metrics import pass_hat_k, per_task_metric

__all__ = ["PASSK_METHOD", "PassK", "PassKAudit", "corrected_pass_hat"]

PASSK_METHOD = (
    "pass^k: the unreviewed trials relabelled by draws from a beta-binomial model per stratum "
    "(mean and intra-task correlation from the labels, uniform priors)"
)
# Relabellings: the interval's ends move by a standard deviation of about 0.005 from one seed
# to another (measured on a ten-task cell), the estimate's by 0.002.
DRAWS = 4000
_MU, _RHO = 200, 100  # the posterior's grid: mean x intra-task correlation, cell midpoints


@dataclass(frozen=True)
class PassK:
    """pass^k of one cell as the judge gave it and corrected, or why it is not."""

    k: int
    tasks: int  # the tasks with n >= k
    judge: float | None
    corrected: tuple[float, float, float] | None  # estimate, low, high
    why_not: str | None = None

    def to_json(self) -> dict[str, Any]:
        fix = self.corrected
        return {
            "k": self.k,
            "tasks": self.tasks,
            "judge": self.judge,
            "corrected": None
            if fix is None
            else dict(zip(("estimate", "low", "high"), fix, strict=True)),
            "why_not": self.why_not,
        }


@dataclass(frozen=True)
class PassKAudit:
    results: list[PassK]
    notes: list[str]


@dataclass(frozen=True)
class _Stratum:
    """One judge's verdict in a cell: per task, its trials, labelled ones, true passes among
    those, and the (a, b) of each draw's Beta (None: nobody reviewed it, judge's verdict kept)."""

    judge: str
    trials: np.ndarray
    labelled: np.ndarray
    passed: np.ndarray
    ab: tuple[np.ndarray, np.ndarray] | None


@functools.cache
def _grid() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The grid's Beta(a, b) for each (mu, rho), and log B(a, b): made once a process."""
    from scipy.special import betaln  # type: ignore[import-untyped]  # scipy ships no stubs

    mu = (np.arange(_MU)[:, None] + 0.5) / _MU
    size = 1 / ((np.arange(_RHO)[None, :] + 0.5) / _RHO) - 1
    a, b = mu * size, (1 - mu) * size
    return a, b, betaln(a, b)


def _draw_ab(
    labelled: np.ndarray, passed: np.ndarray, rng: np.random.Generator, draws: int
) -> tuple[np.ndarray, np.ndarray]:
    """Draws of the stratum's Beta(a, b) from the grid posterior of (mu, rho) given each
    task's labels (beta-binomial likelihood; a task without labels says nothing)."""
    from scipy.special import betaln

    a, b, norm = _grid()
    loglik = np.zeros((_MU, _RHO))
    seen = Counter(zip(labelled.tolist(), passed.tolist(), strict=True))
    for (m, y), times in seen.items():
        if m:
            loglik += times * (betaln(y + a, m - y + b) - norm)
    weight = np.exp(loglik - loglik.max()).ravel()
    cell = rng.choice(weight.size, draws, p=weight / weight.sum())
    # A uniform point within the drawn grid cell: no draw sits on the grid's lattice.
    mu_d = (cell // _RHO + rng.random(draws)) / _MU
    rho_d = (cell % _RHO + rng.random(draws)) / _RHO
    size_d = 1 / rho_d - 1
    return mu_d * size_d, (1 - mu_d) * size_d


def _imputed(s: _Stratum, task: int) -> np.ndarray:
    """Per draw, the law of the true passes among task ``task``'s trials of stratum ``s``:
    (draws or 1, trials + 1), its labelled ones as labelled, the rest beta-binomial given the
    task's labels."""
    from scipy.special import betaln, gammaln

    n, m, y = int(s.trials[task]), int(s.labelled[task]), int(s.passed[task])
    u = n - m
    out_shape = (1 if s.ab is None else len(s.ab[0]), n + 1)
    law = np.zeros(out_shape)
    if s.ab is None:  # nobody reviewed this stratum: the judge's verdicts stand
        law[:, y + (u if s.judge == "passed" else 0)] = 1.0
        return law
    a, b = s.ab[0][:, None] + y, s.ab[1][:, None] + (m - y)
    z = np.arange(u + 1)[None, :]
    logp = gammaln(u + 1) - gammaln(z + 1) - gammaln(u - z + 1)
    logp = logp + betaln(z + a, u - z + b) - betaln(a, b)
    # Scaled by each row's largest term before exp (the caller normalises): a row whose every
    # term is tiny (a, b near 0, many trials) never underflows to all zeros.
    law[:, y : y + u + 1] = np.exp(logp - logp.max(axis=1, keepdims=True))
    return law


def _convolve(p: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Row by row, the law of the sum of two independent counts."""
    rows = max(len(p), len(f))
    out = np.zeros((rows, p.shape[1] + f.shape[1] - 1))
    for j in range(f.shape[1]):
        out[:, j : j + p.shape[1]] += p * f[:, j : j + 1]
    return out


def _strata(
    names: Sequence[str],
    n: np.ndarray,
    c: np.ndarray,
    reviewed: Mapping[tuple[str, str], int],
    rng: np.random.Generator,
    draws: int,
) -> tuple[list[_Stratum], list[str]]:
    """The cell's two strata with their posterior draws, and a note for each whose labels
    cannot tell clustered errors from independent ones."""
    strata: list[_Stratum] = []
    notes: list[str] = []
    where = {t: i for i, t in enumerate(names)}
    for judge, trials in (("passed", c), ("failed", n - c)):
        m, over = np.zeros(len(names), np.int64), np.zeros(len(names), np.int64)
        for (task, key), count in reviewed.items():  # the labelled tasks only
            if task in where and key in (judge, "over:" + judge):
                (m if key == judge else over)[where[task]] = count
        passed = m - over if judge == "passed" else over
        ab = _draw_ab(m, passed, rng, draws) if m.sum() else None
        strata.append(_Stratum(judge, trials, m, passed, ab))
        if m.sum() and not (m >= 2).any():
            notes.append(
                f"no task has two labelled judge-{judge} trials: the labels cannot tell "
                "whether the judge's errors cluster on tasks, and the corrected pass^k spans "
                "both readings (label more trials per task to narrow it)"
            )
    return strata, notes


def _relabelled_sums(
    n: np.ndarray, strata: Sequence[_Stratum], ks: Sequence[int], rng: np.random.Generator
) -> dict[int, np.ndarray]:
    """Per k, each draw's sum over the tasks with n >= k of their relabelled pass^k. Tasks
    alike (same trials and labels) share one law of their true passes, and how many of them
    have each count is one multinomial draw: a task's pass^k depends on nothing else."""
    rows = max((len(s.ab[0]) for s in strata if s.ab is not None), default=1)
    sums = {k: np.zeros(rows) for k in ks}
    for size, first, alike in _profiles(n, strata):
        law = np.maximum(_convolve(_imputed(strata[0], first), _imputed(strata[1], first)), 0)
        law /= law.sum(axis=1, keepdims=True)
        counts = rng.multinomial(alike, law)  # the tasks, by their true passes
        for k in ks:
            if size >= k:
                value = np.array([pass_hat_k(size, v, k) for v in range(size + 1)])
                sums[k] = sums[k] + counts @ value
    return sums


def corrected_pass_hat(
    tasks: Mapping[str, tuple[int, int]],
    reviewed: Mapping[tuple[str, str], int],
    ks: Sequence[int],
    ci: float,
    *,
    seed: str = "",
    draws: int = DRAWS,
) -> PassKAudit:
    """The cell's pass^k for each k > 1 of ``ks``, as the judge gave it and corrected for its
    measured error (``tasks``: task -> (n, c) as the metrics count them; ``reviewed``: (task,
    verdict) -> labelled trials and (task, "over:" + verdict) -> those overturned, as
    chaoseval.analysis.audit counts them). ``seed`` (the cell's name) makes it reproducible."""
    todo = [k for k in sorted(set(ks)) if k > 1]
    if not todo:
        return PassKAudit([], [])
    names = list(tasks)
    n = np.array([tasks[t][0] for t in names], dtype=np.int64)
    c = np.array([tasks[t][1] for t in names], dtype=np.int64)
    rng = np.random.default_rng(zlib.crc32(f"chaoseval-audit:{seed}".encode()))
    strata, notes = _strata(names, n, c, reviewed, rng, draws)
    sums = _relabelled_sums(n, strata, todo, rng)
    results = []
    for k in todo:
        eligible = int((n >= k).sum())
        if not eligible:  # as the metrics refuse such a k: said, never a number
            results.append(PassK(k, 0, None, None, f"no task has {k} trials"))
            continue
        per_task = per_task_metric(n, c, "pass^k", k)
        judged = math.fsum(per_task[n >= k].tolist())
        draws_k = sums[k] / eligible
        lo, hi = np.quantile(draws_k, [(1 - ci) / 2, (1 + ci) / 2]).tolist()
        est = float(draws_k.mean())
        results.append(PassK(k, eligible, judged / eligible, (est, min(lo, est), max(hi, est))))
    return PassKAudit(results, notes)


def _profiles(n: np.ndarray, strata: Sequence[_Stratum]) -> list[tuple[int, int, int]]:
    """Tasks alike for the imputation (trials, and per stratum trials, labelled, passed), one
    law for each: (their trials, one of them, how many), in one pass of numpy however many
    tasks a cell has."""
    if not len(n):
        return []
    keys = np.stack([n, *(x for s in strata for x in (s.trials, s.labelled, s.passed))], axis=1)
    # Sorted by every column (lexsort: np.unique's row sort is ten times slower), then cut
    # where a row differs from the one before.
    order = np.lexsort(keys.T[::-1])
    rows = keys[order]
    starts = np.flatnonzero(np.r_[True, (rows[1:] != rows[:-1]).any(axis=1)])
    count = np.diff(np.r_[starts, len(rows)])
    return [(int(n[i]), int(i), int(c)) for i, c in zip(order[starts], count, strict=True)]
