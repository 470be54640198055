from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from chaoseval.analysis.inference import (
    _sign_flip,
    paired_compare,
    paired_inference,
    paired_test,
    rate_interval,
)
from chaoseval.analysis.stats import (
    PairedResult,
    _resampled_means,
    benjamini_hochberg,
    bootstrap_macro,
    holm,
    noise_floor,
)

# Benjamini & Hochberg (1995), section 4: 15 p-values from a multiple-endpoint trial.
BH_1995 = [
    0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344,
    0.0459, 0.3240, 0.4262, 0.5719, 0.6528, 0.7590, 1.000,
]  # fmt: skip


# --- bootstrap ---------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.floats(0, 1), min_size=1, max_size=50),
    st.integers(0, 2**32 - 1),
)
def test_bootstrap_interval_contains_estimate(values: list[float], seed: int) -> None:
    iv = bootstrap_macro(np.array(values), n_resamples=200, seed=seed)
    assert iv.estimate == pytest.approx(np.mean(values))
    assert iv.low - 1e-12 <= iv.estimate <= iv.high + 1e-12
    assert iv.n == len(values) and iv.dropped == ()


def test_bootstrap_deterministic_and_drops_nan() -> None:
    v = np.array([0.1, np.nan, 0.9, 0.5, np.nan, 0.3])
    a, b = bootstrap_macro(v, seed=3), bootstrap_macro(v, seed=3)
    assert a == b
    assert a.dropped == (1, 4) and a.n == 4
    assert a.estimate == pytest.approx(0.45)
    assert a.n_resamples == 10_000 and a.ci == 0.95


def test_bootstrap_width_matches_standard_error() -> None:
    # For a large sample the 95% percentile interval is about mean +- 1.96 sd / sqrt(T).
    rng = np.random.default_rng(0)
    v = rng.random(2000)
    iv = bootstrap_macro(v, n_resamples=4000, seed=1)
    se = v.std() / np.sqrt(v.size)
    assert iv.half_width == pytest.approx(1.96 * se, rel=0.1)


def test_bootstrap_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="ci"):
        bootstrap_macro(np.ones(3), ci=1.5)
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_macro(np.ones(3), n_resamples=0)
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_macro(np.array([np.nan]))
    with pytest.raises(ValueError, match="1-D"):
        bootstrap_macro(np.ones((2, 2)))


def paired_bootstrap(a: np.ndarray, b: np.ndarray, **kw: int) -> PairedResult:
    return paired_compare(a, b, **kw)[0]


def test_paired_identical_arms() -> None:
    # Every difference 0: no evidence of a change, and no false certainty either (a zero-width
    # interval would claim the difference is known to be exactly 0 from 50 tasks).
    v = np.random.default_rng(2).random(50)
    r, test = paired_compare(v, v.copy(), n_resamples=500)
    assert r.difference.estimate == 0 and r.difference.low == -r.difference.high < 0
    assert test.p_value == 1.0
    assert r.ratio is not None and r.ratio.estimate == 1
    # Every resample agrees on 1: the ratio's interval is the difference's over mean(b).
    assert r.ratio.low < 1 < r.ratio.high
    assert r.ratio_note is None


def test_paired_narrower_than_unpaired() -> None:
    # Task difficulty varies a lot, the perturbation costs a steady 0.05: pairing cancels the
    # task variance, so the paired interval is far narrower than two independent intervals.
    rng = np.random.default_rng(4)
    clean = rng.random(200)
    pert = np.clip(clean - 0.05 + rng.normal(0, 0.01, 200), 0, 1)
    paired = paired_bootstrap(pert, clean, n_resamples=2000, seed=5)
    ia = bootstrap_macro(pert, n_resamples=2000, seed=6)
    ib = bootstrap_macro(clean, n_resamples=2000, seed=7)
    unpaired_half = np.hypot(ia.half_width, ib.half_width)
    assert paired.difference.half_width < unpaired_half / 5
    assert paired.difference.high < 0  # the drop is detected
    assert paired.difference.estimate == pytest.approx(pert.mean() - clean.mean())
    assert paired.ratio is not None and paired.ratio.high < 1


def test_paired_same_resamples_for_both_arms() -> None:
    # b = 2a exactly: with shared indices every resampled ratio is exactly 0.5.
    a = np.random.default_rng(8).random(30) + 0.1
    means = _resampled_means([a, 2 * a], 300, np.random.default_rng(0))
    assert means[:, 0] / means[:, 1] == pytest.approx(np.full(300, 0.5))
    # Resamples that all agree prove no more than the tasks: the shown interval keeps a width.
    r = paired_bootstrap(a, 2 * a, n_resamples=300)
    assert r.ratio is not None and r.ratio.low < 0.5 < r.ratio.high


def test_paired_drops_nan_and_reports() -> None:
    a = np.array([0.5, np.nan, 0.2, 0.9])
    b = np.array([0.4, 0.3, np.nan, 0.8])
    r = paired_bootstrap(a, b, n_resamples=100)
    assert r.dropped == (1, 2) and r.n == 2 and r.difference.dropped == (1, 2)
    assert r.difference.estimate == pytest.approx(0.1)


def test_paired_ratio_zero_baseline_is_stated() -> None:
    r = paired_bootstrap(np.array([0.2, 0.4]), np.zeros(2), n_resamples=100)
    assert r.ratio is None and r.ratio_note is not None and "mean(b) == 0" in r.ratio_note
    assert r.difference.estimate == pytest.approx(0.3)

    # Baseline positive overall but zero on some resamples: the interval is refused, not faked.
    r2 = paired_bootstrap(np.array([0.5, 0.5]), np.array([0.0, 1.0]), n_resamples=200)
    assert r2.ratio is None and r2.ratio_note is not None and "resamples" in r2.ratio_note


def test_paired_rejects_misaligned() -> None:
    with pytest.raises(ValueError, match="aligned"):
        paired_bootstrap(np.ones(3), np.ones(4))


# --- paired test -------------------------------------------------------------------------------


def test_sign_flip_all_positive_by_hand() -> None:
    # Only +++++ and ----- reach |sum| = 5 x 0.5: p = 2 / 32.
    p, _, _ = _sign_flip(np.full(5, 0.5), 0.05, 1.0)
    r = paired_test(np.full(5, 0.5))
    assert p == r.p_value == 0.0625 and r.method == "adjusted Wald + exact sign-flip" and r.n == 5


def test_sign_flip_small_case_by_hand() -> None:
    # d = [3, -1, 2] / 2: |sum| = 2. The 8 sign patterns give |sums| 4,6,0,2,2,0,6,4 (halved):
    # 4 of 8 reach it.
    r = paired_test(np.array([1.5, -0.5, 1.0]))
    assert r.p_value == 0.5


def test_sign_flip_zeros_do_not_change_p() -> None:
    assert paired_test(np.array([0.5, 0.5, 0.5, 0.5, 0.5, 0, 0])).p_value == 0.0625
    r = paired_test(np.zeros(4))
    assert r.p_value == 1.0 and r.n == 4


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=1, max_size=9))
def test_sign_flip_matches_brute_force(d: list[int]) -> None:
    x = np.array(d, dtype=float) + 0.5  # never integer: the sign-flip path
    obs = abs(x.sum())
    pats = list(itertools.product([1, -1], repeat=len(d)))
    expected = sum(abs(np.dot(p, x)) >= obs - 1e-9 for p in pats)
    assert paired_test(x).p_value == pytest.approx(expected / len(pats))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-4, 4), min_size=6, max_size=10))
def test_sign_flip_interval_inverts_the_test(d: list[int]) -> None:
    # The interval is exactly the set of shifts delta the test of d - delta does not reject.
    x = np.array(d, dtype=float) / 4
    _, low, high = _sign_flip(x, 0.05, 1.0)
    sums = {sum(s) / len(s) for r in range(1, len(d) + 1) for s in itertools.combinations(x, r)}
    for m in sorted(sums):
        for delta in (m - 1e-6, m, m + 1e-6):
            p, _, _ = _sign_flip(x - delta, 0.05, 1.0)
            assert (low <= delta <= high) == (p >= 0.05), (delta, p, low, high)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-5, 5), min_size=1, max_size=40),
    st.sampled_from([1.0, 5.0, 7.0]),
)
def test_interval_excludes_zero_iff_p_below_alpha(d: list[int], scale: float) -> None:
    # Integer (0/1-derived), sign-flip and t paths alike; and no p-value is ever 0.
    x = np.clip(np.array(d, dtype=float) / scale, -1, 1)  # scale 1: 0/1-derived differences
    r = paired_inference(x)
    assert r.test.p_value > 0
    assert (not r.interval.contains(0.0)) == (r.test.p_value < 0.05), r
    assert r.interval.low - 1e-12 <= r.interval.estimate <= r.interval.high + 1e-12
    assert -1 <= r.interval.low <= r.interval.high <= 1


def test_large_n_uses_paired_t() -> None:
    d = np.random.default_rng(9).normal(0.1, 1, 40)
    r = paired_test(d)
    assert r.method == "paired t" and r.n == 40
    assert r.p_value == pytest.approx(sps.ttest_1samp(d, 0).pvalue)
    iv = paired_inference(d).interval
    half = sps.t.ppf(0.975, 39) * d.std(ddof=1) / np.sqrt(40)
    assert (iv.low, iv.high) == pytest.approx((d.mean() - half, d.mean() + half))


def test_zero_variance_never_gives_p_zero() -> None:
    # Every task loses the same 0.5: the t statistic is infinite; no test on 20 tasks can go
    # below the exact sign-flip's 2 / 2^20 (only the two uniform sign patterns are as extreme),
    # and 20 equal differences do not prove the 21st is equal: the interval keeps a width.
    r = paired_inference(np.full(20, 0.5))
    assert r.test.p_value == r.test.floor == 2 / 2**20 and r.test.at_floor
    assert r.interval.low < 0.5 < r.interval.high and r.interval.low > 0
    # Five tasks can never reject at 5% (p = 2/32): the interval then spans every difference.
    r = paired_inference(np.full(5, 0.5))
    assert r.test.p_value == 0.0625 and (r.interval.low, r.interval.high) == (-1.0, 1.0)
    # An enormous t statistic underflows in float: still not 0.
    d = np.full(200, 1.0) + np.random.default_rng(1).normal(0, 1e-12, 200) - 0.5
    assert paired_test(d).p_value > 0


def test_0_1_differences_use_the_adjusted_wald() -> None:
    # Ten tasks, every difference 0: the t and sign-flip intervals would collapse on [0, 0]
    # and claim certainty; the adjusted interval keeps room for a difference it did not see.
    r = paired_inference(np.zeros(10))
    assert r.test.method == "adjusted Wald + exact sign-flip" and r.test.p_value == 1.0
    # Two pseudo-tasks at +1 and -1 (half weight each) and one at 0: ss = 1, N = 12.
    assert r.interval.low == pytest.approx(-sps.norm.ppf(0.975) * np.sqrt(1 / (11 * 12)))


def test_a_rate_at_0_or_at_1_keeps_an_interval_of_width() -> None:
    # Ten tasks that never once showed the event: a bootstrap of ten zeros says [0, 0] (no
    # task can ever show it); the rate's interval keeps what ten tasks cannot exclude.
    assert (bootstrap_macro(np.zeros(10)).low, bootstrap_macro(np.zeros(10)).high) == (0, 0)
    none, every = rate_interval(np.zeros(10)), rate_interval(np.ones(10))
    # By hand: 2r - 1 = -1 on ten tasks, adjusted Wald over N = 12 (one pseudo-task at 0, half
    # a one at each of +1 and -1), back on the rate scale.
    m = -10 / 12
    ss = 10 * (-1 - m) ** 2 + 0.5 * (1 - m) ** 2 + 0.5 * (1 + m) ** 2 + m**2
    high = (m + sps.norm.ppf(0.975) * np.sqrt(ss / (11 * 12)) + 1) / 2
    assert (none.estimate, none.low, none.high) == (0.0, 0.0, pytest.approx(high))
    assert 0.2 < high < 0.25
    # 0 and 1 alike: the rate of the complement mirrors it.
    assert (every.estimate, every.high) == (1.0, 1.0)
    assert every.low == pytest.approx(1 - none.high)
    # More tasks, narrower; three tasks can exclude nothing.
    assert 0 < rate_interval(np.zeros(40)).high < none.high
    assert (rate_interval(np.zeros(3)).low, rate_interval(np.zeros(3)).high) == (0.0, 1.0)
    # NaN (a task with no trial to rate) is dropped, the estimate is the plain mean.
    r = rate_interval(np.array([np.nan, 0.5, 1.0, 0.0, 0.25] * 4))
    assert (r.n, r.estimate) == (16, pytest.approx(0.4375)) and 0 < r.low < r.high < 1


def test_paired_test_drops_nan() -> None:
    assert paired_test(np.array([1.0, np.nan, 1, 1, 1, 1])).n == 5


# --- multiple comparisons ----------------------------------------------------------------------


def test_bh_1995_example() -> None:
    adj = benjamini_hochberg(BH_1995)
    # Hand computation: p_(i) * 15 / i, then a running minimum from the top.
    assert adj[:5] == pytest.approx([0.0015, 0.003, 0.0095, 0.035625, 0.0603])
    assert adj[5] == pytest.approx(0.0298 * 15 / 7) and adj[6] == adj[5]
    assert adj[-1] == 1.0
    assert [a <= 0.05 for a in adj] == [True] * 4 + [False] * 11
    assert adj == pytest.approx(list(sps.false_discovery_control(BH_1995)))


def test_holm_known_example() -> None:
    # m = 4: sorted 0.01,0.02,0.03,0.04 -> 0.04, 0.06, 0.06, 0.06 (running max); input order kept.
    assert holm([0.03, 0.01, 0.04, 0.02]) == pytest.approx([0.06, 0.04, 0.06, 0.06])
    adj = holm(BH_1995)
    assert adj[:3] == pytest.approx([0.0015, 0.0056, 0.0247])
    assert [a <= 0.05 for a in adj] == [True] * 3 + [False] * 12


@given(st.lists(st.floats(0, 1), max_size=30))
def test_adjustments_are_valid(p: list[float]) -> None:
    for fn in (holm, benjamini_hochberg):
        adj = fn(p)
        assert len(adj) == len(p)
        assert all(pi <= ai + 1e-15 <= 1 + 1e-15 for pi, ai in zip(p, adj, strict=True))
        order = np.argsort(p, kind="stable")
        sorted_adj = np.array(adj)[order]
        assert np.all(np.diff(sorted_adj) >= -1e-15)
    assert all(b <= h + 1e-15 for b, h in zip(benjamini_hochberg(p), holm(p), strict=True))


def test_adjustment_rejects_bad_p() -> None:
    with pytest.raises(ValueError, match="index 1"):
        holm([0.1, 1.5])
    with pytest.raises(ValueError):
        benjamini_hochberg([float("nan")])


# --- noise floor -------------------------------------------------------------------------------


def test_noise_floor_unanimous() -> None:
    outcomes = [np.ones(5)] * 3 + [np.zeros(5)] * 2
    nf = noise_floor(outcomes)
    assert nf.flip_share == 0 and nf.flips == 0
    assert nf.icc == 1.0 and nf.within_var == 0
    assert nf.mde == 0  # identical reruns of unanimous tasks cannot differ
    assert nf.between_var == pytest.approx(0.3)  # variance (T - 1 denominator) of 1,1,1,0,0


def test_noise_floor_pure_coin_flips() -> None:
    # Every task has the same p = 0.5: all variance is within tasks; icc ~ 0.
    outcomes = [np.array([1, 0] * 10)] * 30
    nf = noise_floor(outcomes)
    assert nf.flip_share == 1.0 and nf.icc == 0.0 and nf.between_var == 0.0
    assert nf.within_var == pytest.approx(0.25 * 20 / 19)
    # Paired mde: (z_.975 + z_.8) * sqrt(2 * within / (T n)).
    expected = (1.959964 + 0.841621) * np.sqrt(2 * nf.within_var / (30 * 20))
    assert nf.mde == pytest.approx(expected, rel=1e-5)


def test_noise_floor_recovers_variance_split() -> None:
    rng = np.random.default_rng(10)
    p = rng.beta(2, 2, 3000)  # var(p) = 0.05, E[p(1-p)] = 0.2
    outcomes = [(rng.random(20) < pi).astype(int) for pi in p]
    nf = noise_floor([*outcomes, np.array([])])
    assert nf.unscored == 1 and nf.tasks == 3000
    assert nf.between_var == pytest.approx(0.05, abs=0.006)
    assert nf.within_var == pytest.approx(0.2, abs=0.01)
    assert nf.icc == pytest.approx(0.2, abs=0.03)
    assert nf.mde < nf.mde_unpaired


def test_run_sizing_formulas() -> None:
    outcomes = [np.array([1, 0] * 10)] * 10 + [np.ones(20)] * 5 + [np.zeros(20)] * 5
    nf = noise_floor(outcomes)
    z = 1.959963984540054
    b, w = nf.between_var, nf.within_var
    t = nf.tasks_needed(0.05, 20)
    assert z**2 * (b + w / 20) / t <= 0.05**2 < z**2 * (b + w / 20) / (t - 1)
    n = nf.trials_needed(0.1, 400)
    assert n is not None
    assert z**2 * (b / 400 + w / (400 * n)) <= 0.1**2
    assert n == 1 or z**2 * (b / 400 + w / (400 * (n - 1))) > 0.1**2
    # Between-task variance alone is too big for 20 tasks: more trials cannot help.
    assert nf.trials_needed(0.01, 20) is None


def test_noise_floor_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="0/1"):
        noise_floor([np.array([0, 2]), np.array([1, 1])])
    with pytest.raises(ValueError, match="2 tasks"):
        noise_floor([np.array([0, 1])])


def test_ratio_over_many_tasks_is_the_delta_method_and_agrees_with_the_bootstrap() -> None:
    """Above RATIO_BOOTSTRAP_MAX_N tasks the ratio's interval is the delta method's (no
    n x 10,000 resampling), says so, and lands where the paired bootstrap does."""
    from chaoseval.analysis.inference import RATIO_BOOTSTRAP_MAX_N
    from chaoseval.analysis.stats import _percentiles, _resampled_means

    rng = np.random.default_rng(3)
    n = RATIO_BOOTSTRAP_MAX_N + 500
    b = rng.beta(4, 2, n)
    a = np.clip(b - rng.normal(0.1, 0.1, n), 0, 1)  # paired: a follows b
    result, _ = paired_compare(a, b)
    assert result.ratio is not None and result.ratio.method == "delta method"
    assert result.ratio_note is not None and "delta method" in result.ratio_note
    means = _resampled_means([a, b], 4_000, np.random.default_rng(0))
    low, high = _percentiles(means[:, 0] / means[:, 1], 0.95)
    width = high - low
    assert abs(result.ratio.low - low) < 0.1 * width
    assert abs(result.ratio.high - high) < 0.1 * width
    small, _ = paired_compare(a[:RATIO_BOOTSTRAP_MAX_N], b[:RATIO_BOOTSTRAP_MAX_N])
    assert small.ratio is not None and small.ratio.method == "percentile bootstrap"
