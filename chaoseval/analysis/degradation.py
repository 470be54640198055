"""Degradation: each perturbed cell against clean, paired at the task level.

A perturbed cell is compared with the clean cell on the tasks both scored; each bootstrap
resample draws the same tasks for both arms, and the per-task differences are tested
(chaoseval.analysis.stats). Tasks that cannot give a metric (fewer than k scored trials in
either arm) are listed as excluded with their counts; they never shrink a denominator silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from chaoseval.analysis.aggregate import CLEAN, CellResult, landed_counts, not_landed, task_counts
from chaoseval.analysis.metrics import per_task_metric
from chaoseval.analysis.stats import (
    Interval,
    TestResult,
    benjamini_hochberg,
    holm,
    paired_bootstrap,
    paired_test,
)
from chaoseval.model.records import TrialRecord
from chaoseval.model.seeding import derive_seed

__all__ = [
    "Comparison",
    "adjust_family",
    "compare_counts",
    "degradation",
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
        """Adjusted (Holm) p < 0.05 and the interval excludes zero."""
        d = self.difference
        return (
            d is not None and self.p_holm is not None and self.p_holm < 0.05 and not d.contains(0.0)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.label,
            "k": self.k,
            "a": self.a,
            "b": self.b,
            "tasks": self.tasks,
            "excluded": self.excluded,
            "difference": _interval_json(self.difference),
            "ratio_estimate": self.ratio_estimate,
            "ratio": _interval_json(self.ratio),
            "ratio_note": self.ratio_note,
            "p_value": self.test.p_value if self.test else None,
            "test": self.test.method if self.test else None,
            "p_holm": self.p_holm,
            "p_bh": self.p_bh,
            "significant": self.significant,
        }


def _pairable(
    a: TaskCountMap, b: TaskCountMap, metric: str, kk: int, arms: tuple[str, str]
) -> tuple[list[str], dict[str, str]]:
    """The tasks both arms can score for the metric, and why each other task is left out."""
    excluded: dict[str, str] = {}
    tasks: list[str] = []
    for t in sorted(set(a) | set(b)):
        if t not in a or t not in b:
            excluded[t] = f"only in {arms[0] if t in a else arms[1]}"
            continue
        (na, _), (nb, _) = a[t], b[t]
        if min(na, nb) < kk:
            counts = f"{arms[0]}={na}, {arms[1]}={nb}"
            excluded[t] = (
                f"fewer than {kk} scored trials ({counts})"
                if metric != "mean"
                else f"no scored trial ({counts})"
            )
            continue
        tasks.append(t)
    return tasks, excluded


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
    kk = 1 if metric == "mean" else int(k or 1)
    tasks, excluded = _pairable(a, b, metric, kk, arms)
    if not tasks:
        return Comparison(metric, k, None, None, 0, excluded, None, None, None, None)
    va = per_task_metric(
        np.array([a[t][0] for t in tasks]), np.array([a[t][1] for t in tasks]), metric, kk
    )
    vb = per_task_metric(
        np.array([b[t][0] for t in tasks]), np.array([b[t][1] for t in tasks]), metric, kk
    )
    pr = paired_bootstrap(va, vb, n_resamples=n_resamples, ci=ci, seed=seed)
    return Comparison(
        metric,
        k,
        pr.mean_a,
        pr.mean_b,
        len(tasks),
        excluded,
        pr.difference,
        pr.ratio,
        pr.ratio_note,
        paired_test(va - vb),
    )


def adjust_family(comparisons: Sequence[Comparison]) -> None:
    """Fill Holm and Benjamini-Hochberg adjusted p-values across one family, in place."""
    tested = [(c, c.test) for c in comparisons if c.test is not None]
    ps = [t.p_value for _, t in tested]
    for (c, _), ph, pb in zip(tested, holm(ps), benjamini_hochberg(ps), strict=True):
        c.p_holm, c.p_bh = ph, pb


def metric_grid(ks: Sequence[int]) -> list[tuple[str, int | None]]:
    return [("mean", None)] + [(m, k) for m in ("pass@k", "pass^k") for k in ks]


def degradation(
    cells: Sequence[CellResult],
    groups: Mapping[str, Sequence[TrialRecord]],
    ks: Sequence[int],
    warnings: list[str],
    *,
    n_resamples: int = 10_000,
    ci: float = 0.95,
    seed: int = 0,
) -> dict[str, list[Comparison]]:
    """Each perturbed cell against clean; each (metric, k) is one family across the cells.

    Appends a warning when there is no clean cell to compare with."""
    out: dict[str, list[Comparison]] = {c.cell: [] for c in cells if c.cell != CLEAN}
    if CLEAN not in groups and out:
        warnings.append("no clean cell in this journal: degradation cannot be computed")
        return out
    if not out:
        return out
    clean_counts = task_counts(groups[CLEAN])
    for metric, k in metric_grid(ks):
        family = []
        for name, comparisons in out.items():
            cmp = compare_counts(
                landed_counts(groups[name]),
                clean_counts,
                metric,
                k,
                n_resamples=n_resamples,
                ci=ci,
                seed=derive_seed(seed, "degradation", name, metric, k or 0),
                arms=(name, CLEAN),
            )
            for task in not_landed(groups[name]):
                cmp.excluded[task] = "no fault reached the agent (did not land)"
            comparisons.append(cmp)
            family.append(cmp)
        adjust_family(family)
    return out
