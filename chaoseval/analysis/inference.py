"""Paired inference: one interval and one test of a mean per-task difference, from one method.

The interval is the set of values the test does not reject, so a difference is never called
significant by one and not the other. The method follows the data (see :func:`paired_inference`);
its coverage at small task counts is measured in benchmarks/coverage_sim.py.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy import special as _spc  # type: ignore[import-untyped]  # scipy ships no stubs

from chaoseval.analysis.stats import (
    Interval,
    PairedResult,
    TestResult,
    _as_1d,
    _check_ci,
    _percentiles,
    _resampled_means,
)

__all__ = [
    "EXACT_SIGN_FLIP_MAX_N",
    "RATIO_BOOTSTRAP_MAX_N",
    "PairedInference",
    "p_floor",
    "paired_compare",
    "paired_inference",
    "paired_test",
    "rate_interval",
    "ratio_bounds",
]

# Above this many tasks the 2^n subset enumeration stops being cheap (2^16 subset sums take about
# a millisecond); the paired t test takes over.
EXACT_SIGN_FLIP_MAX_N = 16
# Above this many tasks the ratio's interval is the delta method's, not a percentile bootstrap
# (10,000 resamples of 2,000 tasks is already 2e7 draws per comparison; a report makes dozens).
RATIO_BOOTSTRAP_MAX_N = 2_000


def paired_compare(
    a: np.ndarray,
    b: np.ndarray,
    n_resamples: int = 10_000,
    ci: float = 0.95,
    seed: int = 0,
    bound: float = 1.0,
    ratio: bool = True,
    den: int | None = None,
) -> tuple[PairedResult, TestResult]:
    """Paired comparison of ``mean(a) - mean(b)``, with its test, and ``mean(a) / mean(b)``.

    ``a[i]`` and ``b[i]`` must belong to the same task. Tasks where either arm is NaN are
    dropped (indices in ``dropped``). With ``den``, ``a`` and ``b`` are integer numerators over
    that common denominator (chaoseval.analysis.exact) and the difference is taken exactly.
    The difference's interval and test come from :func:`paired_inference` on the per-task
    differences (so they agree); the ratio, a descriptive figure with no test attached, keeps a
    paired percentile bootstrap (skipped when ``ratio`` is False: a ratio of two drops means
    nothing).
    """
    _check_ci(ci, n_resamples)
    if den is not None:
        num_a, num_b = _as_integers("a", a), _as_integers("b", b)
        if num_a.shape != num_b.shape:
            raise ValueError(
                f"a and b must be aligned on the same tasks, got lengths {num_a.size} and "
                f"{num_b.size}"
            )
        if num_a.size == 0:
            raise ValueError("no task has a defined value in both arms: nothing to compare")
        inference = paired_inference(num_a - num_b, ci=ci, bound=bound, den=den)
        a_kept, b_kept = _floats(num_a, den), _floats(num_b, den)
        dropped: tuple[int, ...] = ()
        difference = inference.interval
    else:
        a_arr, b_arr = _as_1d("a", a), _as_1d("b", b)
        if a_arr.shape != b_arr.shape:
            raise ValueError(
                f"a and b must be aligned on the same tasks, got lengths {a_arr.size} and "
                f"{b_arr.size}"
            )
        nan = np.isnan(a_arr) | np.isnan(b_arr)
        dropped = tuple(int(i) for i in np.flatnonzero(nan))
        a_kept, b_kept = a_arr[~nan], b_arr[~nan]
        if a_kept.size == 0:
            raise ValueError("no task has a defined value in both arms: nothing to compare")
        inference = paired_inference(a_kept - b_kept, ci=ci, bound=bound)
        difference = dataclasses.replace(inference.interval, dropped=dropped)
    n = int(a_kept.size)
    mean_a, mean_b = float(a_kept.mean()), float(b_kept.mean())
    ratio_iv: Interval | None = None
    note: str | None = None
    if not ratio:
        note = "no ratio for this comparison"
    elif mean_b == 0:
        note = "mean(b) == 0: the ratio mean(a) / mean(b) is undefined"
    elif n > RATIO_BOOTSTRAP_MAX_N:
        ratio_iv, note = _delta_ratio(a_kept, b_kept, ci, dropped, difference)
    else:
        means = _resampled_means([a_kept, b_kept], n_resamples, np.random.default_rng(seed))
        zero = int(np.count_nonzero(means[:, 1] == 0))
        if zero:
            note = (
                f"mean(b) == 0 in {zero} of {n_resamples} resamples: the ratio interval is "
                "undefined; use the difference"
            )
        else:
            r_low, r_high = _percentiles(means[:, 0] / means[:, 1], ci)
            if r_low == r_high:
                # Every resample gives the same ratio (e.g. 0: no perturbed success at all), which
                # proves no more than the tasks do: take the difference's interval over mean(b).
                r_low, r_high = ratio_bounds(mean_b, difference)
            # A ratio of two rates is never negative.
            ratio_iv = Interval(
                mean_a / mean_b, max(0.0, r_low), r_high, n_resamples, ci, n, dropped
            )
    result = PairedResult(difference, ratio_iv, note, mean_a, mean_b, n, dropped)
    return result, inference.test


def _delta_ratio(
    a: np.ndarray, b: np.ndarray, ci: float, dropped: tuple[int, ...], difference: Interval
) -> tuple[Interval, str]:
    """The ratio of macro means with the delta method's normal interval (paired: the
    covariance of the two arms counts), for more tasks than a bootstrap is run on. There the
    bootstrap's distribution of the ratio is this normal one within its own resampling noise,
    and resampling n tasks 10,000 times would cost n x 10,000 draws per comparison."""
    n = a.size
    ma, mb = float(a.mean()), float(b.mean())
    r = ma / mb
    cov = np.cov(a, b, ddof=1)
    var = (float(cov[0, 0]) - 2 * r * float(cov[0, 1]) + r * r * float(cov[1, 1])) / (n * mb * mb)
    q = float(_spc.ndtri(1 - (1 - ci) / 2))
    half = q * math.sqrt(max(var, 0.0))
    low, high = (r - half, r + half) if half > 0 else ratio_bounds(mb, difference)
    iv = Interval(r, max(0.0, low), high, 0, ci, n, dropped, "delta method")
    note = (
        f"ratio interval by the delta method (normal approximation) over {n} tasks: above "
        f"{RATIO_BOOTSTRAP_MAX_N} tasks no bootstrap is run"
    )
    return iv, note


def ratio_bounds(mean_b: float, difference: Interval) -> tuple[float, float]:
    """``mean(a) / mean(b)`` bounds from the interval of ``mean(a) - mean(b)`` (``mean_b > 0``):
    ``1 + difference / mean_b``, never below 0."""
    return max(0.0, 1 + difference.low / mean_b), max(0.0, 1 + difference.high / mean_b)


def _as_integers(name: str, values: np.ndarray) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == object):
        raise ValueError(f"{name} must be a 1-D array of integer numerators, got {arr.dtype}")
    return arr


def _floats(num: np.ndarray, den: int) -> np.ndarray:
    """Integer numerators over ``den`` as floats (an exact 0 stays 0.0)."""
    if num.dtype == object:
        return np.array([x / den for x in num.tolist()], dtype=np.float64)
    return num.astype(np.float64) / den


# --- paired inference: one interval and one test from the same statistic ------------------------


def _subset_sums(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sums and sizes of all ``2^n`` subsets of ``d`` (index 0 is the empty set), by doubling.

    Integer input gives integer sums (exact); float input float sums."""
    n = d.size
    sums = np.zeros(1 << n, dtype=d.dtype)
    sizes = np.zeros(1 << n, dtype=np.int64)
    for i, x in enumerate(d):
        h = 1 << i
        sums[h : 2 * h] = sums[:h] + x
        sizes[h : 2 * h] = sizes[:h] + 1
    return sums, sizes


def _sign_flip(
    d: np.ndarray, alpha: float, bound: float, den: int | None = None
) -> tuple[float, float, float]:
    """Exact sign-flip test of ``d`` and the interval that inverts it: ``(p, low, high)``.

    Flipping the signs of a set S of differences moves the sum by ``-2 sum_S d``, so the
    two-sided p-value is ``#{S : sum_S d <= 0} / 2^(n-1)`` when ``sum d > 0`` (mirror image
    below 0). Testing ``d - delta`` instead gives p(delta) >= alpha exactly between the r-th
    smallest and the r-th largest of the 2^n - 1 subset means, ``r = ceil(alpha 2^(n-1)) - 1``
    (Hartigan 1969): so the interval excludes 0 exactly when p < alpha, from one array.
    With ``den``, ``d`` holds integer numerators over it and every sum is exact.
    """
    n = d.size
    sums, sizes = _subset_sums(d)
    if den is None:
        # Float sums that are zero in exact arithmetic may carry rounding noise.
        sums[np.abs(sums) <= 1e-9 * max(1.0, float(np.abs(d).sum()))] = 0.0
    half = float(1 << (n - 1))
    total = sums[-1]
    if total > 0:
        p = float(np.count_nonzero(sums <= 0)) / half
    elif total < 0:
        p = float(np.count_nonzero(sums >= 0)) / half
    else:
        p = 1.0
    r = math.ceil(alpha * half) - 1
    if r <= 0:  # too few tasks: no sign pattern is rare enough to reject anything
        return min(1.0, p), -bound, bound
    means = sums[1:].astype(np.float64) / sizes[1:] / (den or 1)
    low = float(np.partition(means, r - 1)[r - 1])
    high = float(-np.partition(-means, r - 1)[r - 1])
    return min(1.0, p), low, high


def _student(d: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """Paired t test and the t interval: the same statistic, so they agree at the boundary."""
    n = d.size
    m, se = float(d.mean()), float(d.std(ddof=1)) / math.sqrt(n)
    # scipy.special's t distribution functions: the same values as scipy.stats.t, without
    # its argument checking (~1 ms a call, which thousands of comparisons add up).
    q = float(_spc.stdtrit(n - 1, 1 - alpha / 2))
    p = float(2 * _spc.stdtr(n - 1, -abs(m) / se)) if se > 0 else (1.0 if m == 0 else 0.0)
    return p, m - q * se, m + q * se


def _adjusted_wald(d: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """Adjusted Wald test and interval for differences of 0/1 per-task values (Agresti & Min
    2005 for matched proportions: half a pseudo-task at +1, half at -1, one at 0).

    With 0/1 values most tasks often agree, and a sample whose differences are all 0 (or
    nearly) makes the t and sign-flip intervals collapse on the observed mean: simulated as in
    benchmarks/coverage_sim.py, their 95% intervals for pass^5 at 10 tasks covered 0.64 to 0.87
    depending on the Beta population. The pseudo-tasks keep a little doubt in either direction;
    their weight fades as tasks grow. The same holds for any sample whose differences are all
    equal (a deterministic agent): the interval keeps a width set by the number of tasks.
    """
    n = d.size
    big_n = n + 2
    m = float(d.sum()) / big_n
    ss = float(((d - m) ** 2).sum()) + 0.5 * (1 - m) ** 2 + 0.5 * (1 + m) ** 2 + m**2
    se = math.sqrt(ss / ((big_n - 1) * big_n))
    q = float(_spc.ndtri(1 - alpha / 2))
    p = float(2 * _spc.ndtr(-abs(m) / se))
    return p, m - q * se, m + q * se


@dataclass(frozen=True)
class PairedInference:
    """An interval and a test of the mean of per-task paired differences, from one method."""

    interval: Interval
    test: TestResult


def p_floor(n: int) -> float:
    """The smallest two-sided p any paired test on ``n`` tasks can honestly give: the exact
    sign-flip test's ``2 / 2^n`` (only the two uniform sign patterns are that extreme). A normal
    or t tail below it claims more than ``n`` tasks can show."""
    return min(1.0, 2.0 ** (1 - n)) if n >= 1 else 1.0


def paired_inference(
    d: np.ndarray, ci: float = 0.95, bound: float = 1.0, den: int | None = None
) -> PairedInference:
    """Interval and two-sided test for the mean of per-task differences ``d`` (NaN dropped).

    With ``den``, ``d`` holds integer numerators over that common denominator
    (chaoseval.analysis.exact): zero, equality and integrality are then decided exactly. The
    interval is the set of means the test does not reject at ``alpha = 1 - ci``, so it excludes
    0 exactly when ``p < alpha``. The method follows the data:

    - integer differences (0/1 per-task values, e.g. pass^k with k = trials), or every
      difference equal (a deterministic agent): adjusted Wald, whose pseudo-tasks keep an
      interval of a width set by the number of tasks (never zero), and up to
      ``EXACT_SIGN_FLIP_MAX_N`` tasks also the exact sign-flip (rejecting only when both
      reject);
    - otherwise up to ``EXACT_SIGN_FLIP_MAX_N`` tasks: the exact sign-flip test, inverted;
    - otherwise the paired t test and the t interval.

    No p-value is below :func:`p_floor` (``2 / 2^n``): ``TestResult.floor`` holds it, so a
    renderer can say "p <= floor" rather than print a normal tail no sign pattern reaches.
    ``bound`` is the largest possible ``|difference|`` (1 for two metrics in [0, 1], 2 for a
    difference of differences): the interval is clipped to it, and is all of it when too few
    tasks can reject nothing. Coverage is measured in benchmarks/coverage_sim.py.
    """
    if not 0 < ci < 1:
        raise ValueError(f"ci must be strictly between 0 and 1, got ci={ci}")
    num: np.ndarray | None = None
    if den is not None:
        num = _as_integers("d", d)
        kept = _floats(num, den)
        dropped: tuple[int, ...] = ()
        integral = bool(np.all(num % den == 0))
        equal = bool(np.all(num == num[0])) if num.size else False
    else:
        arr = _as_1d("d", d)
        nan = np.isnan(arr)
        kept = arr[~nan]
        # A float difference this close to 0 is rounding of an exact 0.
        kept[np.abs(kept) <= 1e-12] = 0.0
        dropped = tuple(int(i) for i in np.flatnonzero(nan))
        integral = bool(np.all(kept == np.round(kept)))
        equal = bool(np.all(kept == kept[0])) if kept.size else False
    n = int(kept.size)
    if n == 0:
        raise ValueError("no defined difference to test")
    alpha = 1 - ci
    exact_d = num if num is not None else kept
    if integral or equal:
        method, (p, low, high) = "adjusted Wald", _adjusted_wald(kept, alpha)
        if n <= EXACT_SIGN_FLIP_MAX_N:
            # The pseudo-tasks mend coverage, not validity at a handful of tasks (4 tasks all
            # +1: adjusted Wald p = 0.017, exact sign-flip 2/16). Reject only when both do: p is
            # the larger, the interval the union of the two (both hold the sample mean).
            p2, low2, high2 = _sign_flip(exact_d, alpha, bound, den)
            method = "adjusted Wald + exact sign-flip"
            p, low, high = max(p, p2), min(low, low2), max(high, high2)
    elif n <= EXACT_SIGN_FLIP_MAX_N:
        method, (p, low, high) = "exact sign-flip", _sign_flip(exact_d, alpha, bound, den)
    else:
        method, (p, low, high) = "paired t", _student(kept, alpha)
    floor = p_floor(n)
    if num is not None:
        total = int(num.sum())
        estimate = float(Fraction(total, n * (den or 1)))
    else:
        estimate = float(kept.mean())
        total = 0 if abs(estimate) <= 1e-15 else 1
    if total == 0:
        # A mean difference of exactly 0 is no evidence either way (float noise in a sum of
        # differences must not become a claim).
        p, estimate = 1.0, 0.0
    p = min(1.0, max(p, floor))
    low, high = max(-bound, low), min(bound, high)
    interval = Interval(estimate, low, high, 0, ci, n, dropped, method)
    return PairedInference(interval, TestResult(p, method, n, estimate, floor))


def rate_interval(values: np.ndarray, ci: float = 0.95) -> Interval:
    """The interval of the macro mean of per-task rates ``r`` in [0, 1] (NaN dropped), from
    :func:`paired_inference` on ``r - (1 - r) = 2r - 1``: each task's rate against its
    complement, mapped back to the rate scale.

    So a rate gets the task-level method a difference gets, and 0 and 1 are treated alike
    (the adjusted Wald pseudo-tasks sit on either side of 1/2, as Agresti-Coull's do for one
    proportion): with every task at 0, or every task at 1, the interval keeps a width set by
    the number of tasks, where a bootstrap of identical values collapses on the estimate ([0,
    0] after any number of tasks that never once showed the event).
    """
    arr = _as_1d("values", values)
    iv = paired_inference(2 * arr - 1, ci=ci).interval
    return dataclasses.replace(
        iv,
        estimate=float(np.nanmean(arr)),
        low=max(0.0, (iv.low + 1) / 2),
        high=min(1.0, (iv.high + 1) / 2),
    )


def paired_test(d: np.ndarray) -> TestResult:
    """The two-sided test of :func:`paired_inference` at the default level (NaN dropped)."""
    return paired_inference(d).test
