"""Anytime-valid inference for a bounded mean: e-processes and confidence sequences by betting
(Waudby-Smith & Ramdas 2023, "Estimating means of bounded random variables by betting"), and
their combination across many hypotheses by closed testing with mean-merged e-values (e-Holm)
or e-BH (Wang & Ramdas 2022), valid however often the evidence is looked at and whenever one
stops.

Observations arrive in *steps*: a step is a row of ``b`` values in [0, 1] (a round of one trial
per task, each task's paired difference against clean rescaled), its values independent given
the past, and the question is about the mean over a row's columns, equal weight per column (the
macro mean over tasks). Each bettor stakes the same fraction on every value of a step; by the
inequality of arithmetic and geometric means the product of a step's factors then has
expectation at most ``1 + lam (mean_i mu_i - m)`` <= 1 under the null, so the running product is
a nonnegative supermartingale and Ville's inequality bounds the chance it ever reaches 1/alpha
by alpha. A 1-D array is one value per step.

The bettors are a fixed grid of stakes, mixed with equal weight (diversified Kelly): a mixture
of e-processes is one, no stake is chosen from the data, and the mixture grows at nearly the
rate of the best stake in hindsight (it loses log of the grid's size). Everything is computed
in logs: an e-value of a thousand observations can pass 1e300.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "STAKES",
    "Bounds",
    "ConfidenceSequence",
    "as_steps",
    "confidence_sequence",
    "e_bh",
    "e_holm",
    "growth_rate",
    "log_eprocess",
    "paired_steps",
]

# Fractions of the largest stake that keeps every factor nonnegative. The largest is below 1, so
# no single value can take the wealth to zero.
STAKES = np.array([0.02, 0.05, 0.1, 0.2, 0.3, 0.45, 0.6, 0.75, 0.9])
GRID = 801  # candidate means a confidence sequence is computed on (spacing 1/800)


@dataclass(frozen=True)
class Bounds:
    """Each step's least and greatest possible value (``lower`` <= 0 < 1 <= ``upper``), fixed
    before the step: the range importance-weighted values can take."""

    lower: np.ndarray
    upper: np.ndarray


def _checked(x: np.ndarray | Sequence[float], bounds: Bounds | None) -> np.ndarray:
    if bounds is None:
        return as_steps(x)
    a = np.asarray(x, dtype=float)
    a = a[:, None] if a.ndim == 1 else a
    lo, hi = np.asarray(bounds.lower, float), np.asarray(bounds.upper, float)
    if a.ndim != 2 or lo.shape != (len(a),) or hi.shape != (len(a),):
        raise ValueError(f"bounds need one (lower, upper) per step: {len(a)} step(s)")
    if a.size and (
        np.isnan(a).any() or (lo > 0).any() or (hi < 1).any()
        or (a < lo[:, None] - 1e-12).any() or (a > hi[:, None] + 1e-12).any()
    ):  # fmt: skip
        raise ValueError("each step's values must lie within its bounds, which hold [0, 1]")
    return a


def as_steps(x: np.ndarray | Sequence[float]) -> np.ndarray:
    """``x`` as a 2-D array of steps (a 1-D array: one value a step), checked to be in [0, 1]."""
    a = np.asarray(x, dtype=float)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2:
        raise ValueError(f"observations must be a 1-D or 2-D array, got shape {a.shape}")
    if a.size and (np.isnan(a).any() or a.min() < 0 or a.max() > 1):
        raise ValueError("observations must lie in [0, 1]: rescale them first")
    return a


def paired_steps(diff: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    """Paired differences in [-1, 1] (perturbed minus clean, per step and task) rescaled to
    [0, 1]: a difference d is (d + 1) / 2, so a mean difference D is the mean (D + 1) / 2."""
    d = np.asarray(diff, dtype=float)
    if d.size and (np.isnan(d).any() or d.min() < -1 or d.max() > 1):
        raise ValueError("paired differences must lie in [-1, 1]")
    return as_steps((d + 1.0) / 2.0)


def _log_factors(
    x: np.ndarray, m: np.ndarray, side: str, bounds: Bounds | None = None
) -> np.ndarray:
    """Log of each stake's wealth after each step, for the null ``mean <= m`` (``side``
    "above": the bettor gains when values exceed m) or ``mean >= m`` ("below"). Shape
    (steps, len(m), stakes); m inside (0, 1). ``bounds``: each step's least and greatest
    possible value when they are not 0 and 1 (importance-weighted values, which may leave
    [0, 1]); each stake is then the one it is on [0, 1], capped at the largest fraction of
    the grid of the largest stake that keeps the step's every possible factor nonnegative:
    known before the step (chaoseval.analysis.allocation). Capped rather than scaled, the
    small and middling stakes, which a close call grows on, stay as they are."""
    m = m[:, None]
    if side not in ("above", "below"):
        raise ValueError(f"side must be 'above' or 'below', got {side!r}")
    sign = 1.0 if side == "above" else -1.0
    # 1 + lam (x - m) >= 1 - stake at the least value; 1 + lam (m - x) at the greatest.
    lam = base = STAKES[None, :] / m if side == "above" else STAKES[None, :] / (1 - m)
    out = np.zeros((x.shape[0], m.shape[0], STAKES.size))
    for i, row in enumerate(x):
        if bounds is not None:
            lo, hi = bounds.lower[i], bounds.upper[i]
            top = STAKES.max() / (m - lo) if side == "above" else STAKES.max() / (hi - m)
            lam = np.minimum(base, top)
        # The row's distinct values with their counts: trial outcomes take three values.
        values, counts = np.unique(row, return_counts=True)
        step = np.zeros((m.shape[0], STAKES.size))
        for v, c in zip(values, counts, strict=True):
            step += c * np.log1p(sign * lam * (v - m))
        out[i] = step
    return np.cumsum(out, axis=0)


def _mix(log_wealth: np.ndarray) -> np.ndarray:
    """The equal-weight mixture over stakes (last axis), in logs."""
    top = log_wealth.max(axis=-1)
    out: np.ndarray = top + np.log(np.exp(log_wealth - top[..., None]).mean(axis=-1))
    return out


def log_eprocess(
    x: np.ndarray | Sequence[float], m: float, side: str, bounds: Bounds | None = None
) -> np.ndarray:
    """The log e-process after each step against the null ``mean <= m`` (``side`` "above":
    evidence the mean is above m) or ``mean >= m`` ("below"). Reject once it reaches
    log(1/alpha): at most alpha of the time under the null, at any stopping time."""
    if not 0 < m < 1:
        raise ValueError(f"the null's mean must lie strictly inside (0, 1), got {m}")
    steps = _checked(x, bounds)
    if not len(steps):
        return np.zeros(0)
    return _mix(_log_factors(steps, np.array([m]), side, bounds))[:, 0]


def growth_rate(
    x: np.ndarray | Sequence[float], m: float, side: str, bounds: Bounds | None = None
) -> float:
    """The best stake's mean log growth per value on ``x`` against ``m``: what each further
    value would add to the log e-process were the data to go on as they went (0 or below: the
    evidence is not growing)."""
    steps = _checked(x, bounds)
    if not steps.size:
        return 0.0
    final = _log_factors(steps, np.array([m]), side, bounds)[-1, 0]
    return float(final.max() / steps.size)


@dataclass(frozen=True)
class ConfidenceSequence:
    """A confidence sequence: after step t, the mean lies in [lower[t], upper[t]] for every t
    at once with probability at least 1 - alpha (the running intersection)."""

    lower: np.ndarray
    upper: np.ndarray


def confidence_sequence(
    x: np.ndarray | Sequence[float], alpha: float = 0.05, bounds: Bounds | None = None
) -> ConfidenceSequence:
    """The mean's confidence sequence on [0, 1]: the candidate means m at which the hedged
    e-process (half the stake on "above m", half on "below m") is still under 1/alpha."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie strictly inside (0, 1), got {alpha}")
    steps = _checked(x, bounds)
    if not len(steps):
        return ConfidenceSequence(np.zeros(0), np.zeros(0))
    grid = np.linspace(0, 1, GRID)[1:-1]  # the ends: a mean of 0 or 1 is never excluded by one
    above = _mix(_log_factors(steps, grid, "above", bounds))
    below = _mix(_log_factors(steps, grid, "below", bounds))
    hedged = np.logaddexp(above, below) - np.log(2)
    inside = hedged < np.log(1 / alpha)  # (steps, grid)
    inside = _running_and(inside)
    lower = np.ones(len(steps))
    upper = np.zeros(len(steps))
    for t, row in enumerate(inside):
        idx = np.flatnonzero(row)
        if idx.size:
            # The grid's neighbours outside the set bound it: the set lies between them.
            lower[t] = grid[idx[0] - 1] if idx[0] > 0 else 0.0
            upper[t] = grid[idx[-1] + 1] if idx[-1] < grid.size - 1 else 1.0
        else:  # empty (possible only with probability alpha): the running bounds collapse
            lower[t] = upper[t] = lower[t - 1] if t else 0.5
    return ConfidenceSequence(lower, upper)


def _running_and(inside: np.ndarray) -> np.ndarray:
    """Each step's set intersected with every earlier step's: a candidate excluded once stays
    excluded (the sequence's intervals only shrink)."""
    return np.logical_and.accumulate(inside, axis=0)


def e_holm(log_e: Sequence[float] | np.ndarray, alpha: float) -> np.ndarray:
    """Which hypotheses closed testing rejects at family-wise level ``alpha``, each intersection
    tested by the mean of its e-values (e-Holm; Vovk & Wang 2021). With e-processes (each stopped
    when its hypothesis is decided) the rejections hold at every time at once: a true null is
    rejected only if the mean of the true nulls' e-processes, itself one, reaches 1/alpha.

    Hypothesis j is rejected when every set of hypotheses holding j has a mean e-value of at
    least 1/alpha; the smallest mean among sets of size s is j's with the s - 1 smallest
    others'."""
    e = np.asarray(log_e, dtype=float)
    k = e.size
    out = np.zeros(k, bool)
    if not k:
        return out
    threshold = np.log(1 / alpha)
    order = np.argsort(e)
    for j in range(k):
        others = e[order[order != j]]  # ascending
        # log of sum of j's e-value and the s - 1 smallest others, s = 1..k
        with np.errstate(divide="ignore"):
            cums = np.logaddexp.accumulate(np.concatenate([[e[j]], others]))
        means = cums - np.log(np.arange(1, k + 1))
        out[j] = bool(means.min() >= threshold)
    return out


def e_bh(log_e: Sequence[float] | np.ndarray, alpha: float) -> np.ndarray:
    """e-BH at false discovery rate ``alpha`` (Wang & Ramdas 2022): reject the k largest
    e-values, k the largest with the k-th largest at least K / (alpha k). Valid under any
    dependence; a set rejected at one time stays self-consistent later (the bar falls as k
    grows), so rejections made along the way keep the rate."""
    e = np.asarray(log_e, dtype=float)
    k = e.size
    out = np.zeros(k, bool)
    if not k:
        return out
    order = np.argsort(-e)
    bars = np.log(k / (alpha * np.arange(1, k + 1)))
    ok = np.flatnonzero(e[order] >= bars)
    if ok.size:
        out[order[: ok.max() + 1]] = True
    return out
