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
exactly (as fractions) while the support is small, in floating point (from log-gamma) up
to :data:`FLOAT_MAX_SUPPORT`, and above that by the continuity-corrected CMH normal
approximation (where the supports are thousands wide and it is accurate). The path is chosen from
the margins alone: the exact weights are integers of thousands of digits at 10k trials a task
(1M records over 100 tasks spent minutes on them before any path used them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
from scipy.special import gammaln, ndtr, ndtri  # type: ignore[import-untyped]  # no stubs

__all__ = ["Table", "stratified_exact", "trials_needed"]

# (perturbed scored, perturbed passed, clean scored, clean passed) of one task.
Table = tuple[int, int, int, int]

EXACT_MAX_SUPPORT = 400  # summed widths of the informative tasks' supports: integers
# Above this, the CMH normal approximation: the float convolution costs about the square of
# the summed widths (10k: well under a second a cell).
FLOAT_MAX_SUPPORT = 10_000


def _bounds(t: Table) -> tuple[int, int]:
    """The lowest and highest number of the perturbed arm's successes its margins allow."""
    n1, c1, n0, c0 = t
    m = c1 + c0
    return max(0, m - n0), min(n1, m)


def _weights(t: Table) -> list[int]:
    """The integer weights ``C(n1, x) C(n0, m - x)`` of each allowed value, lowest first."""
    n1, c1, n0, c0 = t
    lo, hi = _bounds(t)
    return [math.comb(n1, x) * math.comb(n0, c1 + c0 - x) for x in range(lo, hi + 1)]


def _log_comb(n: int, k: np.ndarray) -> np.ndarray:
    return np.asarray(gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1), dtype=float)


def _probabilities(t: Table) -> np.ndarray:
    """The same law in floating point (normalised), lowest value first: from log-gamma, as
    scipy.stats.hypergeom does (scipy.stats itself stays unimported: ~0.7 s a command)."""
    n1, c1, n0, c0 = t
    lo, hi = _bounds(t)
    x = np.arange(lo, hi + 1)
    logs = _log_comb(n1, x) + _log_comb(n0, c1 + c0 - x)
    w = np.exp(logs - logs.max())
    return np.asarray(w / w.sum(), dtype=float)


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
    spans = [(t, lo, hi) for t in tables for lo, hi in [_bounds(t)] if hi > lo]
    if not spans:
        return 1.0
    informative = [t for t, _, _ in spans]
    flip = alternative == "greater"
    width = sum(hi - lo for _, lo, hi in spans)
    if width > FLOAT_MAX_SUPPORT:
        return _cmh_normal(informative, flip)
    # The total offset by each table's lowest value; "greater" reads the supports reversed.
    observed = sum(t[1] - lo for t, lo, _ in spans)
    if flip:
        observed = width - observed
    if width <= EXACT_MAX_SUPPORT:
        dist: list[int] = [1]
        for t in informative:
            w = _weights(t)[::-1] if flip else _weights(t)
            dist = [
                sum(dist[i - j] * w[j] for j in range(len(w)) if 0 <= i - j < len(dist))
                for i in range(len(dist) + len(w) - 1)
            ]
        return float(Fraction(sum(dist[: observed + 1]), sum(dist)))
    acc = np.ones(1)
    for t in informative:
        acc = np.convolve(acc, _probabilities(t)[::-1] if flip else _probabilities(t))
    return float(min(1.0, acc[: observed + 1].sum()))


def _cmh_normal(informative: Sequence[Table], greater: bool) -> float:
    """Continuity-corrected normal tail of the perturbed total (the CMH statistic, one-sided):
    at most the observed one, or at least it when ``greater``."""
    mean = var = 0.0
    for n1, c1, n0, c0 in informative:
        n, m = n1 + n0, c1 + c0
        mean += n1 * m / n
        var += n1 * n0 * m * (n - m) / (n * n * (n - 1))
    gap = sum(t[1] for t in informative) - mean
    z = ((-gap if greater else gap) + 0.5) / math.sqrt(var)
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
