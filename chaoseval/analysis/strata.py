"""On these tasks: trials within each task are the units, tasks are strata.

The question is conditional on the suite: did the agent get worse on the tasks it was given?
Each task is a 2x2 table (perturbed / clean x passed / failed). The one-sided exact test of "the
perturbed arm succeeds less often than clean on these tasks" conditions on each table's margins:
under the null (the same success probability in both arms of a task, whatever it is for each
task) the perturbed arm's successes in a task follow a hypergeometric law, and their total over
the tasks follows the convolution of those laws (the exact conditional test of a common odds
ratio of 1, the exact form of Cochran-Mantel-Haenszel; Cox 1970, Zelen 1971). On one task it is
Fisher's exact test (tests/analysis/test_strata.py checks it against scipy.stats.fisher_exact).

scipy has Fisher's and Boschloo's tests of one table, not a stratified exact test; Boschloo's,
an unconditional test, has no exact combination across strata (each task brings its own
nuisance rate). The conditional test has one, is exact at any number of tasks, and answers on
one task: clean 3/3 against 0/3 gives p = 1/20. Its p-values are computed from integer counts:
exactly (as fractions) while the support is small, in floating point up to
:data:`FLOAT_MAX_SUPPORT`, and above that by the continuity-corrected CMH normal approximation
(thousands of informative tasks, where it is accurate).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
from scipy.special import ndtr, ndtri  # type: ignore[import-untyped]  # scipy ships no stubs

__all__ = ["Table", "stratified_exact", "trials_needed"]

# (perturbed scored, perturbed passed, clean scored, clean passed) of one task.
Table = tuple[int, int, int, int]

EXACT_MAX_SUPPORT = 400  # summed widths of the informative tasks' supports: integers
FLOAT_MAX_SUPPORT = 200_000  # above this, the CMH normal approximation


def _support(t: Table) -> tuple[int, list[int]] | None:
    """The lowest value and the integer weights ``C(n1, x) C(n0, m - x)`` of the perturbed
    arm's successes given the margins; None when the margins leave one value (uninformative)."""
    n1, c1, n0, c0 = t
    m = c1 + c0
    lo, hi = max(0, m - n0), min(n1, m)
    if hi <= lo:
        return None
    return lo, [math.comb(n1, x) * math.comb(n0, m - x) for x in range(lo, hi + 1)]


def _check(t: Table) -> None:
    n1, c1, n0, c0 = t
    if n1 < 0 or n0 < 0 or not 0 <= c1 <= n1 or not 0 <= c0 <= n0:
        raise ValueError(f"not a 2x2 table of counts: {t} (need 0 <= passed <= scored)")


def stratified_exact(tables: Sequence[Table], alternative: str = "less") -> float:
    """One-sided p of the perturbed arm's total successes over ``tables`` given every table's
    margins: ``less`` (perturbed worse: the broken question) or ``greater`` (improved)."""
    if alternative not in ("less", "greater"):
        raise ValueError(f"alternative must be 'less' or 'greater', got {alternative!r}")
    for t in tables:
        _check(t)
    informative = [(t, s) for t in tables if (s := _support(t)) is not None]
    if not informative:
        return 1.0
    observed = sum(t[1] - s[0] for t, s in informative)  # offset by each table's lowest value
    width = sum(len(s[1]) - 1 for _, s in informative)
    if alternative == "greater":
        observed = width - observed
        informative = [(t, (s[0], s[1][::-1])) for t, s in informative]
    if width <= EXACT_MAX_SUPPORT:
        dist: list[int] = [1]
        for _, (_, w) in informative:
            dist = [
                sum(dist[i - j] * w[j] for j in range(len(w)) if 0 <= i - j < len(dist))
                for i in range(len(dist) + len(w) - 1)
            ]
        return float(Fraction(sum(dist[: observed + 1]), sum(dist)))
    if width <= FLOAT_MAX_SUPPORT:
        acc = np.ones(1)
        for _, (_, w) in informative:
            total = sum(w)
            acc = np.convolve(acc, np.array([float(Fraction(x, total)) for x in w]))
        return float(min(1.0, acc[: observed + 1].sum()))
    return _cmh_normal(informative, observed)


def _cmh_normal(informative: list[tuple[Table, tuple[int, list[int]]]], observed: int) -> float:
    """Continuity-corrected normal tail of the total (the CMH statistic, one-sided)."""
    mean = var = 0.0
    for (n1, c1, n0, c0), _ in informative:
        n, m = n1 + n0, c1 + c0
        mean += n1 * m / n
        var += n1 * n0 * m * (n - m) / (n * n * (n - 1))
    lows = sum(s[0] for _, s in informative)
    z = (observed + lows + 0.5 - mean) / math.sqrt(var)
    return float(ndtr(z))


def trials_needed(clean_rate: float, delta: float, alpha: float, power: float = 0.8) -> int:
    """Trials per arm for a one-sided test at ``alpha`` to detect a drop of ``delta`` from
    ``clean_rate`` with ``power`` (two proportions, normal approximation): a guide to how many
    more trials would decide, not a promise."""
    p1 = min(1.0, max(clean_rate, delta))
    p2 = p1 - delta
    bar = (p1 + p2) / 2
    za, zb = float(ndtri(1 - alpha)), float(ndtri(power))
    spread = za * math.sqrt(2 * bar * (1 - bar)) + zb * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
    return max(2, math.ceil((spread / delta) ** 2))
