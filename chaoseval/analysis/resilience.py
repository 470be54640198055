"""Resilience only where there is something to lose, on two scales, and how big a suite must be.

"B is more resilient than A under X" is read from the primary metric on two scales:

- the difference of drops (DiD), per task ``(B_X - B_clean) - (A_X - A_clean)``, tested paired
  (chaoseval.analysis.degradation.compare_drops);
- relative retention per harness, ``mean(cell) / mean(clean)`` over the same tasks, with a
  seeded paired bootstrap interval (tasks resampled once for all four arms).

A task where either harness has no clean success has nothing to lose there: its "drop" of 0
says nothing about resilience, so it is listed and left out of both. Which tasks those are is
decided on clean trials held out of the estimate (:func:`clean_split`), so the choice does not
bias the difference of drops (issue 41). "More resilient" is said only when the DiD is
significant and retention points the same way, and never of a harness whose clean primary
score is at the floor (chaoseval.analysis.primary.at_floor); when the two scales disagree the
verdict says the answer depends on the scale.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

# scipy.special's ndtri is what scipy.stats.norm.ppf computes (the same floats), without
# importing scipy.stats (~50 MB and ~0.5 s for every command that analyses a journal).
from scipy.special import ndtri  # type: ignore[import-untyped]  # scipy ships no stubs

from chaoseval.analysis.degradation import Comparison
from chaoseval.analysis.exact import exact_values
from chaoseval.analysis.inference import (
    RATIO_BOOTSTRAP_MAX_N,
    p_floor,
    paired_inference,
    ratio_bounds,
)
from chaoseval.analysis.primary import FLOOR, Primary, at_floor
from chaoseval.analysis.stats import Interval, _percentiles, _resampled_means
from chaoseval.store.columns import Group

__all__ = [
    "Retention",
    "Split",
    "choosing",
    "clean_split",
    "count_split",
    "floor_by_choosing",
    "macro",
    "resilience_call",
    "retention",
    "sizing",
    "tasks_needed",
]

TaskCountMap = dict[str, tuple[int, int]]


# Each harness's clean counts split in two: (choosing, estimating) per task.
Split = tuple[TaskCountMap, TaskCountMap]


def choosing(n: int, kk: int) -> int:
    """How many of a task's ``n`` scored clean trials choose: half, and none when the estimate
    would be left with fewer than ``kk``."""
    return max(0, min(n // 2, n - kk))


def clean_split(g: Group, kk: int) -> Split:
    """A clean cell's scored trials per task split by index: every other one (the 2nd, 4th,
    ... in index order, :func:`choosing` of them) chooses the floor tasks, the others estimate
    the drop. Alternating rather than the first half: a run whose later trials fare worse (a
    rate limit, a warming cache) splits evenly."""
    st = g["status"]
    keep = st != 2
    sc, idx, ok = g["scenario"][keep], g["index"][keep], st[keep] == 0
    order = np.lexsort((idx, sc))
    sc, ok = sc[order], ok[order]
    codes, first, n = np.unique(sc, return_index=True, return_counts=True)
    rank = np.arange(len(sc)) - np.repeat(first, n)
    m = np.maximum(0, np.minimum(n // 2, n - kk))
    task = np.repeat(np.arange(len(codes)), n)
    c_all = np.bincount(task, weights=ok, minlength=len(codes)).astype(int)
    chooses = (rank % 2 == 1) & (rank // 2 < m[task])
    c_m = np.bincount(task, weights=ok & chooses, minlength=len(codes)).astype(int)
    names = g.t.vocab["scenario"]
    choose: TaskCountMap = {}
    estimate: TaskCountMap = {}
    for i, code in enumerate(codes.tolist()):
        t = names[code]
        choose[t] = (int(m[i]), int(c_m[i]))
        estimate[t] = (int(n[i] - m[i]), int(c_all[i] - c_m[i]))
    return choose, estimate


def count_split(counts: TaskCountMap, kk: int, seed: int) -> Split:
    """For counts without trial indices: the choosing trials' successes a seeded
    hypergeometric draw (a random subset). Independent of the estimate only over fresh seeds;
    a journal is split by index (:func:`clean_split`)."""
    rng = np.random.default_rng(seed)
    choose: TaskCountMap = {}
    estimate: TaskCountMap = {}
    for t in sorted(counts):
        n, c = counts[t]
        m = choosing(n, kk)
        k = int(rng.hypergeometric(c, n - c, m)) if m and 0 < c < n else (m if c == n else 0)
        choose[t], estimate[t] = (m, k), (n - m, c - k)
    return choose, estimate


def floor_by_choosing(choose: Mapping[str, Split], tasks: Sequence[str]) -> dict[str, str]:
    """Tasks where a harness had no success among its choosing trials: nothing to lose."""
    out: dict[str, str] = {}
    for label, (ch, _) in choose.items():
        for t in tasks:
            m, k = ch[t]
            if m and not k:
                out[t] = (
                    f"no clean success in {label}'s {m} choosing trial(s): nothing to lose"
                    if t not in out
                    else "no clean success in either run's choosing trials: nothing to lose"
                )
    return out


def macro(counts: TaskCountMap, tasks: Sequence[str], p: Primary) -> float | None:
    """The primary metric's macro mean over the ``tasks`` with at least k scored trials."""
    ok = [t for t in tasks if counts[t][0] >= p.kk]
    if not ok:
        return None
    arms = [(np.array([counts[t][0] for t in ok]), np.array([counts[t][1] for t in ok]))]
    (num,), den = exact_values(arms, p.metric, p.kk)
    return float(Fraction(int(num.sum()), len(ok) * den))


@dataclass(frozen=True)
class Retention:
    """Relative retention ``mean(cell) / mean(clean)`` of each harness over the same tasks, and
    B's minus A's, each with a paired percentile bootstrap interval; ``clean_a`` / ``clean_b``
    are the clean means, ``note`` says why an interval is missing."""

    a: Interval | None
    b: Interval | None
    difference: Interval | None
    clean_a: float
    clean_b: float
    tasks: int
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        def iv(x: Interval | None) -> dict[str, float] | None:
            return None if x is None else {"estimate": x.estimate, "low": x.low, "high": x.high}

        return {
            "a": iv(self.a),
            "b": iv(self.b),
            "b_minus_a": iv(self.difference),
            "clean_a": self.clean_a,
            "clean_b": self.clean_b,
            "tasks": self.tasks,
            "note": self.note,
        }


def retention(
    a: tuple[TaskCountMap, TaskCountMap],
    b: tuple[TaskCountMap, TaskCountMap],
    tasks: Sequence[str],
    p: Primary,
    *,
    n_resamples: int,
    ci: float,
    seed: int,
) -> Retention | None:
    """Retention of each harness (``a`` and ``b`` each ``(cell counts, clean counts)``) on the
    primary metric over ``tasks``; None without tasks."""
    if not tasks:
        return None
    arms = [
        (np.array([m[t][0] for t in tasks]), np.array([m[t][1] for t in tasks])) for m in (*a, *b)
    ]
    nums, den = exact_values(arms, p.metric, p.kk)
    v = [np.asarray(x, dtype=np.float64) / den for x in nums]
    means = [float(x.mean()) for x in v]
    clean_a, clean_b = means[1], means[3]
    if clean_a == 0 or clean_b == 0:
        why = "a clean mean is 0: retention is undefined"
        return Retention(None, None, None, clean_a, clean_b, len(tasks), why)
    ra, rb = means[0] / clean_a, means[2] / clean_b
    if len(tasks) > RATIO_BOOTSTRAP_MAX_N:
        return _delta_retention(v, nums, den, means, len(tasks), ci)
    boot = _resampled_means(v, n_resamples, np.random.default_rng(seed))
    ok = (boot[:, 1] > 0) & (boot[:, 3] > 0)
    boot = boot[ok]
    sa, sb = boot[:, 0] / boot[:, 1], boot[:, 2] / boot[:, 3]
    note = None if ok.all() else f"{int((~ok).sum())} resamples with a clean mean of 0 left out"

    def iv(est: float, s: np.ndarray, cell: np.ndarray, clean: np.ndarray, mean: float) -> Interval:
        low, high = _percentiles(s, ci)
        if low == high:
            # Every resample agrees (a deterministic agent): no narrower than what the tasks
            # show, the paired interval of cell - clean over the clean mean.
            d = paired_inference(cell - clean, ci=ci, den=den).interval
            low, high = ratio_bounds(mean, d)
        return Interval(est, max(0.0, low), high, n_resamples, ci, len(tasks))

    ia, ib = iv(ra, sa, nums[0], nums[1], clean_a), iv(rb, sb, nums[2], nums[3], clean_b)
    low, high = _percentiles(sb - sa, ci)
    if low == high:
        low, high = ib.low - ia.high, ib.high - ia.low
    diff = Interval(rb - ra, low, high, n_resamples, ci, len(tasks))
    return Retention(ia, ib, diff, clean_a, clean_b, len(tasks), note)


def _delta_retention(
    v: list[np.ndarray], nums: list[np.ndarray], den: int, m: list[float], n: int, ci: float
) -> Retention:
    """Retention's intervals by the delta method (normal approximation, paired) for more tasks
    than a bootstrap is run on, as the degradation ratio's (inference.RATIO_BOOTSTRAP_MAX_N):
    10,000 resamples of 100k tasks were ~20 s a cell, and there the bootstrap's distribution is
    this normal one within its own resampling noise. The variance is that of each task's
    linearised value, ``(cell - r clean) / mean(clean)``: taken task by task, a harness whose
    cell differs from clean on a few tasks keeps that width (the covariance form cancels it)."""
    q = float(ndtri(1 - (1 - ci) / 2))

    def linear(cell: int, clean: int) -> np.ndarray:
        out: np.ndarray = (v[cell] - (m[cell] / m[clean]) * v[clean]) / m[clean]
        return out

    def half(z: np.ndarray) -> float:
        return q * math.sqrt(float(np.var(z, ddof=1)) / n)

    def arm(cell: int, clean: int) -> Interval:
        r = m[cell] / m[clean]
        h = half(linear(cell, clean))
        low, high = r - h, r + h
        if h == 0:  # every task agrees: the paired interval of cell - clean over the clean mean
            d = paired_inference(nums[cell] - nums[clean], ci=ci, den=den).interval
            low, high = ratio_bounds(m[clean], d)
        return Interval(r, max(0.0, low), high, 0, ci, n, (), DELTA)

    ia, ib = arm(0, 1), arm(2, 3)
    est = ib.estimate - ia.estimate
    h = half(linear(2, 3) - linear(0, 1))
    low, high = (est - h, est + h) if h > 0 else (ib.low - ia.high, ib.high - ia.low)
    note = (
        f"retention intervals by the delta method (normal approximation) over {n} tasks: "
        f"above {RATIO_BOOTSTRAP_MAX_N} tasks no bootstrap is run"
    )
    diff = Interval(est, low, high, 0, ci, n, (), DELTA)
    return Retention(ia, ib, diff, m[1], m[3], n, note)


DELTA = "delta method"


def resilience_call(
    significant: bool,
    did: float | None,
    ret: Retention | None,
    clean: tuple[float | None, float | None],
) -> tuple[str | None, str | None]:
    """``(side, why not)``: "A" / "B" when the DiD is significant, retention agrees in direction
    and the favoured harness's clean primary score is above the floor; else None and, when a
    claim was withheld, the reason."""
    if not significant or did is None or did == 0:
        return None, None
    side = "B" if did > 0 else "A"
    own = clean[1] if side == "B" else clean[0]
    if at_floor(own):
        return None, (
            f"{side}'s clean score is at the floor ({own:.3f} <= {FLOOR}): it had nothing to "
            "lose, so it is not called more resilient"
        )
    r = ret.difference.estimate if ret is not None and ret.difference is not None else None
    if r is None or r == 0 or (r > 0) != (did > 0):
        return None, (
            "depends on the scale: the difference of drops favours "
            f"{side} but relative retention does not"
        )
    return side, None


def tasks_needed(
    interval: Interval | None, tasks: int, family: int, alpha: float = 0.05
) -> int | None:
    """About how many tasks a comparison needs for a significant call at its observed effect,
    with ``family`` Holm-adjusted comparisons (the first one tested at alpha / family): the
    larger of what the exact sign-flip can reach (``family * 2^(1-T) < alpha``) and
    ``(z sd / effect)^2`` with sd read off the interval. None when the effect is 0."""
    if interval is None or interval.estimate == 0 or tasks < 1:
        return None
    m = max(1, family)
    reach = math.floor(math.log2(2 * m / alpha)) + 1
    q = float(ndtri(1 - (1 - interval.ci) / 2))
    sd = (interval.high - interval.low) / (2 * q) * math.sqrt(tasks)
    z = float(ndtri(1 - alpha / (2 * m)))
    needed = math.ceil((z * sd / abs(interval.estimate)) ** 2)
    return max(reach, needed, 2)


def sizing(
    question: str, found: Sequence[tuple[str, Comparison | None]], primary: str, alpha: float = 0.05
) -> list[str]:
    """What a suite can show for one question, said before any table: the smallest p the exact
    test reaches with the tasks it has (and after Holm across the cells), and about how many
    tasks each cell that is not significant needs at its observed effect."""
    cmps = [(cell, x) for cell, x in found if x is not None and x.difference is not None]
    if not cmps:
        return []
    m = len(cmps)
    most = max(x.tasks for _, x in cmps)
    best = m * p_floor(most)
    can = "" if best < alpha else ": no cell can be significant"
    lines = [
        f"{question} ({primary}, Holm across {m} cell(s)): with {most} paired tasks the smallest "
        f"p the exact test can reach is 2^(1-{most}) = {p_floor(most):.3g}, {best:.3g} after "
        f"Holm{can}"
    ]
    need = []
    for cell, x in cmps:
        if not x.significant:
            n = tasks_needed(x.difference, x.tasks, m, alpha)
            need.append(f"{cell} {'no effect seen' if n is None else f'about {n}'}")
    if need:
        lines.append(
            f"  tasks a cell needs for a significant '{question}' at its observed effect: "
            + "; ".join(need)
        )
    return lines
