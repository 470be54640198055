"""Differences of counts are taken exactly: a zero stays zero, and no interval or p claims more
than the number of tasks allows."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from chaoseval.analysis.degradation import compare_counts, compare_drops
from chaoseval.analysis.exact import exact_value, exact_values
from chaoseval.analysis.inference import p_floor, paired_inference
from chaoseval.analysis.metrics import pass_at_k_exact, pass_hat_k_exact


def test_exact_values_match_the_fraction_estimators() -> None:
    n = np.array([5, 5, 7, 3])
    c = np.array([0, 3, 7, 2])
    for metric, ref in (("pass^k", pass_hat_k_exact), ("pass@k", pass_at_k_exact)):
        (num,), den = exact_values([(n, c)], metric, 2)
        got = [Fraction(int(x), den) for x in num]
        assert got == [ref(int(a), int(b), 2) for a, b in zip(n, c, strict=True)]
    assert exact_value(5, 2, "mean", 1) == Fraction(2, 5)


def test_huge_denominators_use_python_integers() -> None:
    (num,), den = exact_values([(np.array([200, 199]), np.array([150, 7]))], "pass^k", 60)
    assert num.dtype == object and den > 2**62
    assert Fraction(int(num[0]), den) == pass_hat_k_exact(200, 150, 60)


def test_a_difference_of_drops_that_is_zero_stays_zero() -> None:
    # A: clean 1/5 -> 0/5, B: clean 3/5 -> 2/5 on every task: both lose 0.2. In floats the
    # difference of drops is 5.6e-17 on every task, which the old code took for ten equal
    # differences: p = 2^-9 and a zero-width interval excluding 0.
    tasks = [f"t{i}" for i in range(10)]
    b = ({t: (5, 2) for t in tasks}, {t: (5, 3) for t in tasks})
    a = ({t: (5, 0) for t in tasks}, {t: (5, 1) for t in tasks})
    cmp = compare_drops(b, a, "pass^k", 1)
    assert cmp.difference is not None and cmp.test is not None
    assert cmp.difference.estimate == 0.0 and cmp.test.p_value == 1.0
    assert cmp.difference.low < 0 < cmp.difference.high


def test_no_p_below_what_the_tasks_can_reach() -> None:
    # 44 tasks, 40 of them +1 and 4 at 0: the adjusted Wald's normal tail is ~1e-140, far below
    # what any arrangement of 44 signs can give.
    d = np.array([1] * 40 + [0] * 4)
    r = paired_inference(d, den=1)
    assert r.test.p_value == p_floor(44) == 2.0**-43 and r.test.at_floor
    clean = {f"t{i}": (5, 5) for i in range(44)}
    hurt = {t: (5, 0 if i < 40 else 5) for i, t in enumerate(clean)}
    cmp = compare_counts(hurt, clean, "pass^k", 5, n_resamples=200)
    assert cmp.test is not None and cmp.test.p_value == 2.0**-43


@pytest.mark.parametrize("value", [1, 3, -2])
def test_equal_differences_never_give_a_zero_width_interval(value: int) -> None:
    for n in (3, 12, 40):
        r = paired_inference(np.full(n, value), den=5, bound=1.0)
        iv = r.interval
        assert iv.low < value / 5 < iv.high, (n, iv)
        assert iv.high - iv.low > 0
        assert iv.low >= -1 and iv.high <= 1


def test_a_ratio_that_every_resample_agrees_on_keeps_a_width() -> None:
    # The perturbed cell never passes: every bootstrap ratio is 0, which would print
    # "0.00 [0.00, 0.00]"; the interval comes from the difference's instead.
    clean = {f"t{i}": (3, 2 + i % 2) for i in range(10)}
    hurt = {t: (3, 0) for t in clean}
    cmp = compare_counts(hurt, clean, "pass^k", 1, n_resamples=200)
    assert cmp.ratio is not None and cmp.ratio.estimate == 0.0
    assert cmp.ratio.low == 0.0 < cmp.ratio.high
