from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chaoseval.analysis.metrics import (
    InvalidCountsError,
    TaskCounts,
    delta,
    mean_rate,
    mean_rate_exact,
    pass_at_k,
    pass_at_k_exact,
    pass_hat_k,
    pass_hat_k_exact,
    per_task_metric,
    summarize,
)
from chaoseval.errors import ChaosevalError

F = Fraction


@st.composite
def counts(draw: st.DrawFn, max_n: int = 40) -> tuple[int, int, int]:
    n = draw(st.integers(1, max_n))
    c = draw(st.integers(0, n))
    k = draw(st.integers(1, n))
    return n, c, k


# --- DESIGN.md worked examples -----------------------------------------------------------------


WORKED = {"A": 5, "B": 4, "C": 2, "D": 0}
WORKED_PER_TASK = {
    # task: (mean, pass@2, pass^2)
    "A": (F(1), F(1), F(1)),
    "B": (F(4, 5), F(1), F(3, 5)),
    "C": (F(2, 5), F(7, 10), F(1, 10)),
    "D": (F(0), F(0), F(0)),
}


@pytest.mark.parametrize("task", list(WORKED))
def test_worked_example_per_task_exact(task: str) -> None:
    mean, at2, hat2 = WORKED_PER_TASK[task]
    c = WORKED[task]
    assert mean_rate_exact(5, c) == mean
    assert pass_at_k_exact(5, c, 2) == at2
    assert pass_hat_k_exact(5, c, 2) == hat2
    assert pass_at_k(5, c, 2) == pytest.approx(float(at2), abs=1e-15)
    assert pass_hat_k(5, c, 2) == pytest.approx(float(hat2), abs=1e-15)


def test_worked_example_macro() -> None:
    # Macro values from the exact per-task fractions: 0.550 / 0.675 / 0.425.
    per = list(WORKED_PER_TASK.values())
    assert sum(m for m, _, _ in per) / 4 == F(11, 20)
    assert sum(a for _, a, _ in per) / 4 == F(27, 40)
    assert sum(h for _, _, h in per) / 4 == F(17, 40)

    s = summarize([TaskCounts(t, 5, c) for t, c in WORKED.items()], ks=[2])
    assert s.tasks == 4 and s.trials == 20
    assert s.mean == pytest.approx(0.550, abs=1e-12)
    assert s.pass_at[2] == pytest.approx(0.675, abs=1e-12)
    assert s.pass_hat[2] == pytest.approx(0.425, abs=1e-12)
    assert s.excluded == {2: []} and s.included == {2: 4} and s.unscored == []


def test_two_tasks_p1_p0_is_not_mean_squared() -> None:
    s = summarize([TaskCounts("p1", 10, 10), TaskCounts("p0", 10, 0)], ks=[2])
    assert s.mean == 0.5
    assert s.pass_hat[2] == 0.5
    assert s.mean**2 == 0.25  # the wrong answer, for contrast


def test_p06_pass_at_5_vs_pass_hat_5() -> None:
    # With many trials at p = 0.6 the unbiased estimators approach 1 - 0.4^5 and 0.6^5.
    at5, hat5 = pass_at_k_exact(1000, 600, 5), pass_hat_k_exact(1000, 600, 5)
    assert at5 == 1 - F(math.comb(400, 5), math.comb(1000, 5))
    assert hat5 == F(math.comb(600, 5), math.comb(1000, 5))
    assert float(at5) == pytest.approx(0.99, abs=0.001)
    assert float(hat5) == pytest.approx(0.078, abs=0.001)
    assert abs(float(hat5) - 0.6**5) < 0.001
    assert pass_hat_k(1000, 600, 5) == pytest.approx(float(hat5), rel=1e-12)
    assert pass_at_k(1000, 600, 5) == pytest.approx(float(at5), rel=1e-12)


def test_large_n_does_not_overflow() -> None:
    # math.comb(10**6, 500) as a float would overflow; the product form does not.
    assert 0 < pass_hat_k(10**6, 999_000, 500) < 1
    assert pass_at_k(10**6, 1, 500) == pytest.approx(500 / 10**6, rel=1e-9)


# --- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "c", "k", "word"),
    [
        (0, 0, 1, "n"),
        (-1, 0, 1, "n"),
        (5, -1, 1, "c"),
        (5, 6, 1, "c"),
        (5, 2, 0, "k"),
        (5, 2, -1, "k"),
        (5, 2, 6, "k"),
        (5.0, 2, 1, "n"),
        (5, 2.0, 1, "c"),
        (5, 2, 1.5, "k"),
        (True, 1, 1, "n"),
        (5, True, 1, "c"),
        (5, 2, True, "k"),
        ("5", 2, 1, "n"),
        (None, 2, 1, "n"),
    ],
)
def test_invalid_counts_rejected(n: object, c: object, k: object, word: str) -> None:
    for fn in (pass_at_k, pass_hat_k, pass_at_k_exact, pass_hat_k_exact):
        with pytest.raises(ValueError, match=rf"\b{word}\b") as info:
            fn(n, c, k)  # type: ignore[arg-type]
        assert isinstance(info.value, ChaosevalError)
        bad = {"n": n, "c": c, "k": k}[word]
        assert str(bad) in str(info.value)


@pytest.mark.parametrize(("n", "c"), [(0, 0), (3, 4), (3, -1), (2.5, 1), (False, 0)])
def test_mean_rate_rejects(n: object, c: object) -> None:
    with pytest.raises(ValueError):
        mean_rate(n, c)  # type: ignore[arg-type]


def test_numpy_integers_accepted() -> None:
    assert pass_hat_k(np.int64(5), np.int32(4), np.int8(2)) == pytest.approx(0.6)


def test_task_counts_validates() -> None:
    with pytest.raises(InvalidCountsError, match="task 't'"):
        TaskCounts("t", 3, 4)
    with pytest.raises(InvalidCountsError):
        TaskCounts("t", -1, 0)
    TaskCounts("t", 0, 0)  # all trials not evaluable: allowed, reported as unscored


# --- properties --------------------------------------------------------------------------------


@given(counts())
def test_hat_le_mean_le_at(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    hat, mean, at = pass_hat_k_exact(n, c, k), mean_rate_exact(n, c), pass_at_k_exact(n, c, k)
    assert 0 <= hat <= mean <= at <= 1
    assert pass_hat_k(n, c, k) <= mean_rate(n, c) + 1e-12 <= pass_at_k(n, c, k) + 2e-12


@given(counts())
def test_monotone_in_k(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    if k < n:
        assert pass_hat_k_exact(n, c, k + 1) <= pass_hat_k_exact(n, c, k)
        assert pass_at_k_exact(n, c, k + 1) >= pass_at_k_exact(n, c, k)


@given(counts())
def test_boundaries(nck: tuple[int, int, int]) -> None:
    n, _, k = nck
    assert pass_at_k_exact(n, 0, k) == 0 and pass_hat_k_exact(n, 0, k) == 0
    assert pass_at_k_exact(n, n, k) == 1 and pass_hat_k_exact(n, n, k) == 1
    assert pass_at_k(n, 0, k) == 0.0 and pass_hat_k(n, 0, k) == 0.0
    assert pass_at_k(n, n, k) == 1.0 and pass_hat_k(n, n, k) == 1.0


@given(counts())
def test_k1_is_mean(nck: tuple[int, int, int]) -> None:
    n, c, _ = nck
    assert pass_at_k_exact(n, c, 1) == pass_hat_k_exact(n, c, 1) == F(c, n)


@given(st.integers(2, 60).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_at_2_plus_pass_hat_2_is_twice_mean(nc: tuple[int, int]) -> None:
    # Inclusion-exclusion over two draws: P(A or B) + P(A and B) = P(A) + P(B) = 2 p.
    n, c = nc
    assert pass_at_k_exact(n, c, 2) + pass_hat_k_exact(n, c, 2) == 2 * pass_at_k_exact(n, c, 1)


@given(counts(max_n=80))
def test_product_form_equals_binomial_form(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    assert pass_hat_k_exact(n, c, k) == F(math.comb(c, k), math.comb(n, k))
    assert pass_at_k_exact(n, c, k) == 1 - F(math.comb(n - c, k), math.comb(n, k))
    assert pass_hat_k(n, c, k) == pytest.approx(math.comb(c, k) / math.comb(n, k), abs=1e-12)


@given(st.lists(counts(max_n=30), min_size=1, max_size=30), st.integers(1, 12))
def test_vectorised_matches_scalar(rows: list[tuple[int, int, int]], k: int) -> None:
    n = np.array([r[0] for r in rows])
    c = np.array([r[1] for r in rows])
    hat, at, mean = (per_task_metric(n, c, m, k) for m in ("pass^k", "pass@k", "mean"))
    for i, (ni, ci, _) in enumerate(rows):
        assert mean[i] == pytest.approx(ci / ni)
        if ni < k:
            assert np.isnan(hat[i]) and np.isnan(at[i])
        else:
            assert hat[i] == pytest.approx(pass_hat_k(ni, ci, k), abs=1e-12)
            assert at[i] == pytest.approx(pass_at_k(ni, ci, k), abs=1e-12)


def test_per_task_metric_edges() -> None:
    n, c = np.array([5, 1, 0]), np.array([4, 1, 0])
    out = per_task_metric(n, c, "pass^k", 2)
    assert out[0] == pytest.approx(0.6) and np.isnan(out[1]) and np.isnan(out[2])
    mean = per_task_metric(n, c, "mean")
    assert mean[:2].tolist() == [0.8, 1.0] and np.isnan(mean[2])
    with pytest.raises(ValueError, match="metric"):
        per_task_metric(n, c, "pass@x", 2)
    with pytest.raises(ValueError, match="task index 0"):
        per_task_metric(np.array([2]), np.array([3]), "mean")
    with pytest.raises(ValueError, match="same length"):
        per_task_metric(np.array([2, 3]), np.array([1]), "mean")
    with pytest.raises(ValueError, match="integers"):
        per_task_metric(np.array([2.5]), np.array([1]), "mean")
    with pytest.raises(ValueError, match="k"):
        per_task_metric(n, c, "pass^k", 0)


# --- summarize ---------------------------------------------------------------------------------


def test_summarize_excludes_short_tasks_and_lists_them() -> None:
    tasks = [
        TaskCounts("full", 5, 5),
        TaskCounts("short", 2, 0),  # 2 scored trials: fine for k=2, excluded for k=5
        TaskCounts("dead", 0, 0),  # all trials not evaluable
    ]
    s = summarize(tasks, ks=[1, 2, 5])
    assert s.tasks == 2 and s.trials == 7 and s.unscored == ["dead"]
    assert s.mean == 0.5
    assert s.excluded == {1: [], 2: [], 5: ["short"]}
    assert s.included == {1: 2, 2: 2, 5: 1}
    # "short" is not counted as a failure at k=5: the average is over "full" alone.
    assert s.pass_hat[5] == 1.0 and s.pass_at[5] == 1.0
    assert s.pass_hat[2] == 0.5


def test_summarize_all_excluded_gives_none() -> None:
    s = summarize([TaskCounts("a", 2, 1), TaskCounts("b", 3, 3)], ks=[4])
    assert s.pass_at == {4: None} and s.pass_hat == {4: None}
    assert s.excluded == {4: ["a", "b"]} and s.included == {4: 0}
    assert s.mean == pytest.approx(0.75)


def test_summarize_nothing_scored() -> None:
    s = summarize([TaskCounts("a", 0, 0)], ks=[1])
    assert s.tasks == 0 and s.mean is None and s.pass_hat == {1: None}
    assert s.unscored == ["a"] and s.excluded == {1: []}


def test_summarize_is_macro_not_pooled() -> None:
    # Pooled: 100/110 = 0.909; macro: (1.0 + 0.0) / 2 = 0.5.
    s = summarize([TaskCounts("big", 100, 100), TaskCounts("small", 10, 0)], ks=[1])
    assert s.mean == 0.5 and s.pass_at[1] == 0.5


def test_summarize_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        summarize([TaskCounts("a", 2, 1), TaskCounts("a", 2, 1)], ks=[1])
    with pytest.raises(ValueError, match="k"):
        summarize([TaskCounts("a", 2, 1)], ks=[0])


def test_delta() -> None:
    clean = summarize([TaskCounts(t, 5, c) for t, c in WORKED.items()], ks=[1, 2])
    pert = summarize([TaskCounts(t, 5, max(c - 1, 0)) for t, c in WORKED.items()], ks=[2, 6])
    d = delta(pert, clean)
    assert set(d.pass_hat) == {2} and d.same_tasks
    assert d.mean == pytest.approx(pert.mean - clean.mean)
    assert d.pass_hat[2] == pytest.approx(pert.pass_hat[2] - clean.pass_hat[2])
    assert d.pass_hat[2] < 0

    none = summarize([TaskCounts("a", 1, 1)], ks=[2])
    d2 = delta(none, summarize([TaskCounts("a", 3, 1)], ks=[2]))
    assert d2.pass_hat == {2: None} and d2.pass_at == {2: None}
    assert d2.mean == pytest.approx(1 - 1 / 3)
    assert not d2.same_tasks


@given(
    st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), max_size=30),
    st.lists(st.integers(1, 14), min_size=1, max_size=5),
)
def test_summarize_gives_the_scalar_estimators_floats_exactly(
    counts: list[tuple[int, int]], ks: list[int]
) -> None:
    """summarize counts all tasks at once (numpy): every figure is the fsum of the scalar
    estimators' own floats, to the last bit (reports are pinned byte for byte)."""
    tasks = [TaskCounts(f"t{i}", n, min(c, n)) for i, (n, c) in enumerate(counts)]
    s = summarize(tasks, ks)
    scored = [t for t in tasks if t.n >= 1]
    assert s.mean == (math.fsum(t.c / t.n for t in scored) / len(scored) if scored else None)
    for k in ks:
        ok = [t for t in scored if t.n >= k]
        assert s.excluded[k] == [t.task for t in scored if t.n < k]
        want_at = math.fsum(pass_at_k(t.n, t.c, k) for t in ok) / len(ok) if ok else None
        want_hat = math.fsum(pass_hat_k(t.n, t.c, k) for t in ok) / len(ok) if ok else None
        assert (s.pass_at[k], s.pass_hat[k]) == (want_at, want_hat)
