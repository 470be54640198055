"""Degradation: each perturbed cell against clean, paired at the task level; and the per-metric
comparison loop that `compare` shares (chaoseval.analysis.compare).

A perturbed cell is compared with the clean cell on the tasks both scored: the per-task
differences get one interval and one test from chaoseval.analysis.inference, so a report and a
comparison judge a difference by the same rule. Tasks that cannot give a metric (fewer than k
scored trials in either arm) are listed as excluded with their counts; they never shrink a
denominator silently."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from chaoseval.analysis.aggregate import CLEAN, CellResult, Records, not_landed, task_counts
from chaoseval.analysis.exact import exact_values
from chaoseval.analysis.inference import paired_compare
from chaoseval.analysis.primary import DEFAULT_PRIMARY, gatekeep
from chaoseval.analysis.stats import Interval, TestResult, benjamini_hochberg, holm
from chaoseval.model.seeding import derive_seed

__all__ = [
    "Comparison",
    "adjust_by_metric",
    "adjust_family",
    "compare_counts",
    "compare_drops",
    "compare_metrics",
    "degradation",
    "drops_table",
    "metric_grid",
    "metric_label",
]

TaskCountMap = dict[str, tuple[int, int]]  # task -> (scored trials n, passed c)


def metric_label(metric: str, k: int | None) -> str:
    return "mean" if metric == "mean" else metric.replace("k", str(k))


def _interval_json(x: Interval | None) -> dict[str, float] | None:
    return None if x is None else {"estimate": x.estimate, "low": x.low, "high": x.high}


@dataclass
class Comparison:
    """Arm ``a`` against arm ``b`` for one metric on the tasks both can score.

    ``difference`` is ``a - b`` (for degradation: perturbed - clean, negative = worse), ``ratio``
    is ``a / b`` (relative degradation as a ratio of macro means) or None with ``ratio_note``.
    ``excluded`` maps a task left out to why; ``p_holm`` / ``p_bh`` are filled by
    :func:`adjust_family` across the comparisons of one family.
    """

    metric: str
    k: int | None
    a: float | None
    b: float | None
    tasks: int
    excluded: dict[str, str]
    difference: Interval | None
    ratio: Interval | None
    ratio_note: str | None
    test: TestResult | None
    p_holm: float | None = None
    p_bh: float | None = None
    # Set by chaoseval.analysis.primary.gatekeep: the metric before this one in the fixed
    # order that did not reject, so this one is not tested (its interval still stands).
    gated_by: str | None = None

    @property
    def ratio_estimate(self) -> float | None:
        """``a / b`` of the macro means, even when its interval is undefined."""
        if self.a is None or not self.b:
            return None
        return self.a / self.b

    @property
    def label(self) -> str:
        return metric_label(self.metric, self.k)

    @property
    def significant(self) -> bool:
        """Adjusted (Holm) p < 0.05, the interval excludes zero, and every metric before this
        one in the fixed testing order rejected (not ``gated_by``)."""
        d = self.difference
        return (
            self.gated_by is None
            and d is not None
            and self.p_holm is not None
            and self.p_holm < 0.05
            and not d.contains(0.0)
        )

    def to_json(self, arms: tuple[str, str] = ("perturbed", "clean")) -> dict[str, Any]:
        """The comparison with each arm's value under its own name (``arms``), never a / b."""
        return {
            "metric": self.label,
            "k": self.k,
            arms[0]: self.a,
            arms[1]: self.b,
            "tasks": self.tasks,
            "excluded": self.excluded,
            "difference": _interval_json(self.difference),
            "interval": self.difference.method if self.difference else None,
            "ratio_estimate": self.ratio_estimate,
            "ratio": _interval_json(self.ratio),
            "ratio_note": self.ratio_note,
            "p_value": self.test.p_value if self.test else None,
            "p_floor": self.test.floor if self.test else None,
            "test": self.test.method if self.test else None,
            "p_holm": self.p_holm,
            "p_bh": self.p_bh,
            "significant": self.significant,
            "gated_by": self.gated_by,
        }


class _Table:
    """The arms' per-task counts as arrays, made once for every metric compared on them: each
    arm's scored trials (-1 where the task is not in it) and successes, tasks in name order
    (a dozen comparisons of 100k tasks each looked every task up in every arm)."""

    def __init__(self, maps: Mapping[str, TaskCountMap]) -> None:
        self.maps = maps
        self.names = sorted(set().union(*maps.values()))
        size = (len(maps), len(self.names))
        self.n = np.array(
            [[m[t][0] if t in m else -1 for t in self.names] for m in maps.values()],
            dtype=np.int64,
        ).reshape(size)
        self.c = np.array(
            [[m[t][1] if t in m else 0 for t in self.names] for m in maps.values()],
            dtype=np.int64,
        ).reshape(size)

    def pairable(self, metric: str, kk: int) -> tuple[np.ndarray, dict[str, str]]:
        """The tasks every arm can score for the metric (their places), and why each other
        task is left out (reasons written only for those)."""
        everywhere = np.asarray((self.n >= 0).all(axis=0), dtype=bool)
        few = everywhere & (self.n.min(axis=0, initial=kk) < kk)
        excluded: dict[str, str] = {}
        for i in np.flatnonzero(~everywhere | few).tolist():
            t = self.names[i]
            if not everywhere[i]:
                present_in = [name for name, m in self.maps.items() if t in m]
                excluded[t] = f"only in {', '.join(present_in)}"
                continue
            shown = ", ".join(f"{name}={m[t][0]}" for name, m in self.maps.items())
            excluded[t] = (
                f"fewer than {kk} scored trials ({shown})"
                if metric != "mean"
                else f"no scored trial ({shown})"
            )
        return np.flatnonzero(everywhere & ~few), excluded

    def values(self, where: np.ndarray, metric: str, kk: int) -> tuple[list[np.ndarray], int]:
        """Each arm's per-task metric on the tasks at ``where`` as integer numerators over one
        common denominator (chaoseval.analysis.exact): differences of them are exact."""
        arms = [(self.n[i][where], self.c[i][where]) for i in range(len(self.maps))]
        return exact_values(arms, metric, kk)


def _compare_values(
    va: np.ndarray,
    vb: np.ndarray,
    den: int,
    metric: str,
    k: int | None,
    excluded: dict[str, str],
    *,
    n_resamples: int,
    ci: float,
    seed: int,
    drops: bool = False,
) -> Comparison:
    # A difference of two drops spans [-2, 2]; of two metrics in [0, 1], [-1, 1].
    pr, test = paired_compare(
        va,
        vb,
        n_resamples=n_resamples,
        ci=ci,
        seed=seed,
        bound=2.0 if drops else 1.0,
        ratio=not drops,
        den=den,
    )
    return Comparison(
        metric, k, pr.mean_a, pr.mean_b, pr.n, excluded, pr.difference, pr.ratio,
        None if drops else pr.ratio_note, test,
    )  # fmt: skip


def compare_counts(
    a: TaskCountMap,
    b: TaskCountMap,
    metric: str,
    k: int | None = None,
    *,
    n_resamples: int = 10_000,
    ci: float = 0.95,
    seed: int = 0,
    arms: tuple[str, str] = ("a", "b"),
) -> Comparison:
    """Paired comparison of per-task ``(n, c)`` counts of two arms for one metric.

    Only tasks present in both arms are paired; a task missing from one arm, unscored in one,
    or with fewer than ``k`` scored trials in one is reported in ``excluded`` with the reason.
    """
    table = _Table(dict(zip(arms, (a, b), strict=True)))
    return _compare_table(table, metric, k, n_resamples=n_resamples, ci=ci, seed=seed)


def _compare_table(
    table: _Table, metric: str, k: int | None, *, n_resamples: int, ci: float, seed: int
) -> Comparison:
    kk = 1 if metric == "mean" else int(k or 1)
    where, excluded = table.pairable(metric, kk)
    if not len(where):
        return Comparison(metric, k, None, None, 0, excluded, None, None, None, None)
    (va, vb), den = table.values(where, metric, kk)
    return _compare_values(
        va, vb, den, metric, k, excluded, n_resamples=n_resamples, ci=ci, seed=seed
    )


def compare_drops(
    a: tuple[TaskCountMap, TaskCountMap],
    b: tuple[TaskCountMap, TaskCountMap],
    metric: str,
    k: int | None = None,
    *,
    ci: float = 0.95,
    arms: tuple[str, str] = ("a", "b"),
    table: _Table | None = None,
) -> Comparison:
    """Difference in differences, paired by task: ``(a_cell - a_clean) - (b_cell - b_clean)``.

    ``a`` and ``b`` are each ``(cell counts, clean counts)``. The Comparison's ``a`` / ``b`` are
    the mean drops (cell - clean) of each arm; its difference and test are on the per-task
    differences of drops, so positive means arm ``a`` loses less. Only tasks every one of the
    four arms can score are used; the others are in ``excluded`` with the reason.
    ``table``: :func:`drops_table` of the same ``a``, ``b`` and ``arms``, made once for every
    metric compared on them (made here without it).
    """
    kk = 1 if metric == "mean" else int(k or 1)
    table = table or drops_table(a, b, arms)
    where, excluded = table.pairable(metric, kk)
    if not len(where):
        return Comparison(metric, k, None, None, 0, excluded, None, None, None, None)
    v, den = table.values(where, metric, kk)
    return _compare_values(
        v[0] - v[1], v[2] - v[3], den, metric, k, excluded, n_resamples=1, ci=ci, seed=0,
        drops=True,
    )  # fmt: skip


def drops_table(
    a: tuple[TaskCountMap, TaskCountMap],
    b: tuple[TaskCountMap, TaskCountMap],
    arms: tuple[str, str] = ("a", "b"),
) -> _Table:
    """The four arms of :func:`compare_drops` as one table (at 100k tasks, building it for
    every metric was most of a comparison's time)."""
    names = (f"{arms[0]} cell", f"{arms[0]} clean", f"{arms[1]} cell", f"{arms[1]} clean")
    return _Table(dict(zip(names, (*a, *b), strict=True)))


def adjust_family(comparisons: Sequence[Comparison]) -> None:
    """Fill Holm and Benjamini-Hochberg adjusted p-values across one family, in place."""
    tested = [(c, c.test) for c in comparisons if c.test is not None]
    ps = [t.p_value for _, t in tested]
    for (c, _), ph, pb in zip(tested, holm(ps), benjamini_hochberg(ps), strict=True):
        c.p_holm, c.p_bh = ph, pb


def adjust_by_metric(groups: Iterable[Sequence[Comparison]]) -> None:
    """One family per metric label across ``groups`` (one group per cell), adjusted in place."""
    families: dict[str, list[Comparison]] = {}
    for group in groups:
        for cmp in group:
            families.setdefault(cmp.label, []).append(cmp)
    for family in families.values():
        adjust_family(family)


def compare_metrics(
    a: TaskCountMap,
    b: TaskCountMap,
    grid: Sequence[tuple[str, int | None]],
    left_out: Mapping[str, str],
    *,
    arms: tuple[str, str],
    key: str,
    n_resamples: int,
    ci: float,
    seed: int,
) -> list[Comparison]:
    """``a`` against ``b`` for each (metric, k) of ``grid``, without the ``left_out`` tasks
    (task -> why, listed in each comparison's ``excluded``). ``key`` names the comparison in
    the derived bootstrap seeds, so every comparison resamples independently and reproducibly.
    """
    a = {t: v for t, v in a.items() if t not in left_out}
    b = {t: v for t, v in b.items() if t not in left_out}
    table = _Table(dict(zip(arms, (a, b), strict=True)))  # once for every metric
    out = []
    for metric, k in grid:
        cmp = _compare_table(
            table,
            metric,
            k,
            n_resamples=n_resamples,
            ci=ci,
            seed=derive_seed(seed, key, metric, k or 0),
        )
        cmp.excluded.update(left_out)
        out.append(cmp)
    return out


def metric_grid(ks: Sequence[int]) -> list[tuple[str, int | None]]:
    return [("mean", None)] + [(m, k) for m in ("pass@k", "pass^k") for k in ks]


def degradation(
    cells: Sequence[CellResult],
    groups: Mapping[str, Records],
    ks: Sequence[int],
    warnings: list[str],
    *,
    n_resamples: int = 10_000,
    ci: float = 0.95,
    seed: int = 0,
    primary: str = DEFAULT_PRIMARY,
) -> dict[str, list[Comparison]]:
    """Each perturbed cell against clean; each (metric, k) is one family across the cells, and
    in each cell the metrics after ``primary`` are tested in a fixed order behind it
    (chaoseval.analysis.primary.gatekeep).

    Appends a warning when there is no clean cell to compare with."""
    out: dict[str, list[Comparison]] = {c.cell: [] for c in cells if c.cell != CLEAN}
    if CLEAN not in groups and out:
        warnings.append("no clean cell in this journal: degradation cannot be computed")
        return out
    if not out:
        return out
    clean_counts = task_counts(groups[CLEAN])
    for name in out:
        left_out = dict.fromkeys(
            not_landed(groups[name]), "no fault reached the agent (did not land)"
        )
        out[name] = compare_metrics(
            task_counts(groups[name]),
            clean_counts,
            metric_grid(ks),
            left_out,
            arms=(name, CLEAN),
            key=f"degradation/{name}",
            n_resamples=n_resamples,
            ci=ci,
            seed=seed,
        )
    adjust_by_metric(out.values())
    for comps in out.values():
        gatekeep(comps, primary)
    return out
