"""Unbiased per-task reliability metrics and their macro (equal weight per task) aggregation.

For a task with ``n`` scored trials and ``c`` successes:

- ``mean = c / n``
- ``pass@k = 1 - C(n - c, k) / C(n, k)``  -- at least one of k draws succeeds
- ``pass^k = C(c, k) / C(n, k)``          -- all k draws succeed

Both are the unbiased estimators of drawing k trials without replacement from the n observed.
They are evaluated in product form, ``pass^k = prod_{j<k} (c - j) / (n - j)`` and
``pass@k = 1 - prod_{j<k} (n - c - j) / (n - j)``, so nothing ever builds a huge binomial.

Aggregation is per task first, then an equal-weight mean over tasks. Pooling all trials would
let tasks with more trials weigh more, and ``mean ** k`` is not pass^k (two tasks at p = 1 and
p = 0 have pass^2 = 0.5, not 0.25). A task with fewer than k scored trials cannot give an
unbiased pass@k / pass^k: it is listed as excluded for that k, never dropped silently and never
counted as a failure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Integral
from typing import Literal

import numpy as np

from chaoseval.errors import ChaosevalError

__all__ = [
    "METRICS",
    "Delta",
    "InvalidCountsError",
    "Summary",
    "TaskCounts",
    "delta",
    "mean_rate",
    "mean_rate_exact",
    "pass_at_k",
    "pass_at_k_exact",
    "pass_hat_k",
    "pass_hat_k_exact",
    "per_task_metric",
    "summarize",
]

Metric = Literal["mean", "pass@k", "pass^k"]
METRICS: tuple[str, ...] = ("mean", "pass@k", "pass^k")


class InvalidCountsError(ChaosevalError, ValueError):
    """n, c or k is out of range or not an integer. A ValueError, so callers may catch either."""


# --- validation ------------------------------------------------------------------------------


def _as_int(name: str, value: object) -> int:
    if type(value) is int:  # the common case, without the ABC check below (once per task)
        return value
    # bool is an int subclass; True trials is almost certainly a bug upstream, so refuse it.
    if isinstance(value, bool | np.bool_) or not isinstance(value, Integral):
        raise InvalidCountsError(
            f"{name} must be an integer, got {value!r} ({type(value).__name__})"
        )
    return int(value)


def _check(n: object, c: object, k: object | None = None) -> tuple[int, int, int]:
    n_, c_ = _as_int("n", n), _as_int("c", c)
    if n_ < 1:
        raise InvalidCountsError(f"n (scored trials) must be >= 1, got n={n_}")
    if not 0 <= c_ <= n_:
        raise InvalidCountsError(f"c (successes) must satisfy 0 <= c <= n={n_}, got c={c_}")
    if k is None:
        return n_, c_, 1
    k_ = _as_int("k", k)
    if not 1 <= k_ <= n_:
        raise InvalidCountsError(f"k must satisfy 1 <= k <= n={n_}, got k={k_}")
    return n_, c_, k_


# --- scalar estimators -----------------------------------------------------------------------


def _all_succeed(n: int, c: int, k: int) -> float:
    prod = 1.0
    for j in range(k):
        if c - j <= 0:
            return 0.0
        prod *= (c - j) / (n - j)
    return prod


def _prefixes(top: np.ndarray, n: np.ndarray, ks: Sequence[int]) -> dict[int, np.ndarray]:
    """Per task, ``_all_succeed(n, top, k)`` for each k in ``ks``, all tasks at once: the same
    products term by term (so the same floats); read only where n >= k."""
    out: dict[int, np.ndarray] = {}
    wanted = set(ks)
    prod = np.ones(len(n))
    for j in range(max(ks, default=0)):
        below = np.maximum(n - j, 1).astype(np.float64)  # n - j where read; no 0 division
        prod = np.where((top - j <= 0) | (prod == 0.0), 0.0, prod * ((top - j) / below))
        if j + 1 in wanted:
            out[j + 1] = prod
    return out


def _all_succeed_exact(n: int, c: int, k: int) -> Fraction:
    prod = Fraction(1)
    for j in range(k):
        if c - j <= 0:
            return Fraction(0)
        prod *= Fraction(c - j, n - j)
    return prod


def mean_rate(n: int, c: int) -> float:
    """Per-task success rate ``c / n``. Requires ``n >= 1`` and ``0 <= c <= n``."""
    n, c, _ = _check(n, c)
    return c / n


def mean_rate_exact(n: int, c: int) -> Fraction:
    """``c / n`` as an exact Fraction."""
    n, c, _ = _check(n, c)
    return Fraction(c, n)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k (all k succeed): ``C(c, k) / C(n, k) = prod_{j<k} (c - j) / (n - j)``."""
    n, c, k = _check(n, c, k)
    return _all_succeed(n, c, k)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (at least one of k succeeds): ``1 - prod_{j<k} (n - c - j) / (n - j)``."""
    n, c, k = _check(n, c, k)
    return 1.0 - _all_succeed(n, n - c, k)


def pass_hat_k_exact(n: int, c: int, k: int) -> Fraction:
    """pass^k as an exact Fraction (same product form)."""
    n, c, k = _check(n, c, k)
    return _all_succeed_exact(n, c, k)


def pass_at_k_exact(n: int, c: int, k: int) -> Fraction:
    """pass@k as an exact Fraction (same product form)."""
    n, c, k = _check(n, c, k)
    return 1 - _all_succeed_exact(n, n - c, k)


# --- vectorised per-task values --------------------------------------------------------------


def per_task_metric(n: np.ndarray, c: np.ndarray, metric: str, k: int = 1) -> np.ndarray:
    """Per-task ``metric`` for aligned count arrays, as float64 with NaN where undefined.

    ``metric`` is ``"mean"`` (``c / n``; NaN where ``n == 0``; ``k`` ignored), ``"pass@k"`` or
    ``"pass^k"`` (NaN where ``n < k``: too few scored trials for an unbiased estimate). The NaNs
    are deliberate: the paired statistics drop them and say how many they dropped.
    """
    if metric not in METRICS:
        raise InvalidCountsError(f"metric must be one of {METRICS}, got {metric!r}")
    k = _as_int("k", k)
    if k < 1:
        raise InvalidCountsError(f"k must be >= 1, got k={k}")
    n_arr, c_arr = np.asarray(n), np.asarray(c)
    if n_arr.shape != c_arr.shape or n_arr.ndim != 1:
        raise InvalidCountsError(
            f"n and c must be 1-D arrays of the same length, got shapes {n_arr.shape} and "
            f"{c_arr.shape}"
        )
    for name, arr in (("n", n_arr), ("c", c_arr)):
        if arr.size and not (
            np.issubdtype(arr.dtype, np.integer)
            or (np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr)))
        ):
            raise InvalidCountsError(f"{name} must hold integers, got dtype {arr.dtype}")
    n_f, c_f = n_arr.astype(np.float64), c_arr.astype(np.float64)
    bad = (n_f < 0) | (c_f < 0) | (c_f > n_f)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise InvalidCountsError(
            f"counts must satisfy 0 <= c <= n; task index {i} has n={n_arr[i]}, c={c_arr[i]}"
        )

    if metric == "mean":
        out = np.full(n_f.shape, np.nan)
        np.divide(c_f, n_f, out=out, where=n_f >= 1)
        return out

    ok = n_f >= k
    # Masked tasks get a harmless denominator so no division warning fires; they end up NaN.
    n_safe = np.where(ok, n_f, float(k))
    top = c_f if metric == "pass^k" else n_f - c_f
    prod = np.ones_like(n_f)
    for j in range(k):
        prod *= np.maximum(top - j, 0.0) / (n_safe - j)
    value = prod if metric == "pass^k" else 1.0 - prod
    return np.where(ok, value, np.nan)


# --- macro aggregation -----------------------------------------------------------------------


@dataclass(frozen=True)
class TaskCounts:
    """One task's scored trials ``n`` and successes ``c``.

    ``n == 0`` is allowed: every trial of the task was not evaluable (harness error). Such a
    task is reported as unscored by :func:`summarize`, not scored as zero.
    """

    task: str
    n: int
    c: int

    def __post_init__(self) -> None:
        n, c = _as_int("n", self.n), _as_int("c", self.c)
        if n < 0 or not 0 <= c <= n:
            raise InvalidCountsError(
                f"task {self.task!r}: need n >= 0 and 0 <= c <= n, got n={n}, c={c}"
            )


@dataclass(frozen=True)
class Summary:
    """Macro (equal weight per task) aggregate of per-task metrics.

    ``pass_at[k]`` / ``pass_hat[k]`` average only the tasks with ``n >= k``; the others are in
    ``excluded[k]`` (ids, input order) and ``included[k]`` counts the averaged ones. A value is
    None when no task qualifies. ``unscored`` lists tasks with no scored trial at all; they are
    in no average and in no ``excluded`` list.
    """

    tasks: int
    trials: int
    mean: float | None
    pass_at: dict[int, float | None]
    pass_hat: dict[int, float | None]
    excluded: dict[int, list[str]]
    included: dict[int, int]
    unscored: list[str] = field(default_factory=list)
    task_ids: tuple[str, ...] = ()

    @property
    def ks(self) -> tuple[int, ...]:
        return tuple(self.pass_at)


def _ks(ks: Sequence[int]) -> list[int]:
    k_list: list[int] = []
    for k in ks:
        k_ = _as_int("k", k)
        if k_ < 1:
            raise InvalidCountsError(f"k must be >= 1, got k={k_}")
        if k_ not in k_list:
            k_list.append(k_)
    return k_list


def summarize(tasks: Iterable[TaskCounts], ks: Sequence[int]) -> Summary:
    """Per-task mean, pass@k and pass^k for every k in ``ks``, macro-averaged over tasks.

    Raises InvalidCountsError on a duplicate task id or a k that is not an integer >= 1.
    """
    k_list = _ks(ks)
    ids: list[str] = []
    seen: set[str] = set()
    ns: list[int] = []
    cs: list[int] = []
    for t in tasks:
        if t.task in seen:
            raise InvalidCountsError(f"duplicate task id {t.task!r}")
        seen.add(t.task)
        ids.append(t.task)
        ns.append(t.n)
        cs.append(t.c)
    return _summary(ids, np.array(ns, dtype=np.int64), np.array(cs, dtype=np.int64), k_list)


def summarize_counts(counts: Mapping[str, tuple[int, int]], ks: Sequence[int]) -> Summary:
    """:func:`summarize` of ``TaskCounts(task, n, c)`` for ``counts`` in task order (the same
    floats), the counts checked all at once: no object per task (100k tasks are asked for a
    summary a dozen times in a report)."""
    ids = sorted(counts)
    size = len(ids)
    n = np.fromiter((counts[t][0] for t in ids), np.int64, size)
    c = np.fromiter((counts[t][1] for t in ids), np.int64, size)
    return summarize_sorted(ids, n, c, ks)


def summarize_sorted(ids: list[str], n: np.ndarray, c: np.ndarray, ks: Sequence[int]) -> Summary:
    """:func:`summarize_counts` of counts given as arrays, task ``ids[i]`` with ``n[i]`` scored
    trials and ``c[i]`` passed, ``ids`` sorted."""
    k_list = _ks(ks)
    bad = np.flatnonzero((n < 0) | (c < 0) | (c > n))
    if len(bad):
        TaskCounts(ids[bad[0]], int(n[bad[0]]), int(c[bad[0]]))  # raises InvalidCountsError
    return _summary(ids, n, c, k_list)


def _summary(ids: list[str], n_all: np.ndarray, c_all: np.ndarray, k_list: list[int]) -> Summary:
    """The Summary of tasks ``ids`` with scored trials ``n_all`` and successes ``c_all``."""
    is_scored = n_all >= 1
    where = np.flatnonzero(is_scored)
    scored = [ids[i] for i in where.tolist()]
    n, c = n_all[where], c_all[where]
    mean = math.fsum((c / n).tolist()) / len(scored) if scored else None
    pass_at: dict[int, float | None] = {}
    pass_hat: dict[int, float | None] = {}
    excluded: dict[int, list[str]] = {}
    included: dict[int, int] = {}
    # Each task's products for k = 0 .. the largest k, once, for all tasks at a time (a pass^k
    # curve asks for every k up to n): the same products term by term as pass_hat_k, so the
    # same floats, and fsum of the same floats is the same sum.
    hats, ats = _prefixes(c, n, k_list), _prefixes(n - c, n, k_list)
    for k in k_list:
        ok = n >= k
        eligible = int(ok.sum())
        excluded[k] = [scored[i] for i in np.flatnonzero(~ok).tolist()]
        included[k] = eligible
        if eligible:
            pass_at[k] = math.fsum((1.0 - ats[k][ok]).tolist()) / eligible
            pass_hat[k] = math.fsum(hats[k][ok].tolist()) / eligible
        else:
            pass_at[k] = pass_hat[k] = None
    return Summary(
        tasks=len(scored),
        trials=int(n.sum()),
        mean=mean,
        pass_at=pass_at,
        pass_hat=pass_hat,
        excluded=excluded,
        included=included,
        unscored=[ids[i] for i in np.flatnonzero(~is_scored).tolist()],
        task_ids=tuple(scored),
    )


# --- degradation -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Delta:
    """``perturbed - clean`` per metric and k; None where either side is None.

    ``same_tasks`` is False when the two summaries averaged different task sets for some metric
    (different scored tasks or different exclusions): the difference then mixes a task-mix
    change into the degradation, and a paired analysis
    (chaoseval.analysis.stats) is the honest tool.
    """

    mean: float | None
    pass_at: dict[int, float | None]
    pass_hat: dict[int, float | None]
    same_tasks: bool


def _sub(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def delta(perturbed: Summary, clean: Summary) -> Delta:
    """Degradation of ``perturbed`` against ``clean`` for every k present in both."""
    ks = [k for k in perturbed.pass_at if k in clean.pass_at]
    same = set(perturbed.task_ids) == set(clean.task_ids) and all(
        set(perturbed.excluded[k]) == set(clean.excluded[k]) for k in ks
    )
    return Delta(
        mean=_sub(perturbed.mean, clean.mean),
        pass_at={k: _sub(perturbed.pass_at[k], clean.pass_at[k]) for k in ks},
        pass_hat={k: _sub(perturbed.pass_hat[k], clean.pass_hat[k]) for k in ks},
        same_tasks=same,
    )
