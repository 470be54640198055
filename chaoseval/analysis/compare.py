"""Compare two harnesses (two journals) on the same tasks, paired by scenario and cell.

Per cell present in both journals, two questions, each per metric (pass^k, mean) with an
interval and a test from chaoseval.analysis.inference and Holm / Benjamini-Hochberg adjusted
p-values across the cells:

- better: the absolute difference ``B - A`` in the cell;
- more resilient (perturbed cells): the difference of drops, paired by task,
  ``(B_cell - B_clean) - (A_cell - A_clean)``; positive means B loses less. A harness better by
  the same margin everywhere is better, never more resilient.

A budget table sits beside it so that more attempts (retries, model calls) are not mistaken for a
better architecture. Tasks or cells present in only one journal are reported and left out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from chaoseval.analysis.aggregate import CLEAN, Records, groups, not_landed, task_counts
from chaoseval.analysis.degradation import (
    Comparison,
    adjust_by_metric,
    compare_drops,
    compare_metrics,
)
from chaoseval.store.columns import Group, Trials, as_group, as_trials
from chaoseval.store.journal import Journal

__all__ = [
    "SCHEMA_VERSION",
    "Budget",
    "CellComparison",
    "HarnessComparison",
    "compare_journals",
]

ALPHA = 0.05


@dataclass(frozen=True)
class Budget:
    """What a run spent: more trials, calls or tokens can buy reliability without resilience."""

    label: str
    trials: int
    scored: int
    model_calls: int
    tool_calls: int
    tokens: int
    cost: float
    wall_seconds: float
    sim_seconds: float

    @classmethod
    def of(cls, label: str, records: Records) -> Budget:
        g = as_group(records)
        return cls(
            label=label,
            trials=len(g),
            scored=int((g["status"] != 2).sum()),
            model_calls=int(g["model_calls"].sum()),
            tool_calls=int(g["tool_calls"].sum()),
            tokens=int(g["tokens"].sum()),
            cost=math.fsum(g["cost"].tolist()),
            wall_seconds=math.fsum(g["wall_seconds"].tolist()),
            sim_seconds=math.fsum(g["sim_seconds"].tolist()),
        )

    ROWS = (
        ("trials", "trials"),
        ("scored", "scored trials"),
        ("model_calls", "model calls"),
        ("tool_calls", "tool calls"),
        ("tokens", "tokens"),
        ("cost", "cost"),
        ("wall_seconds", "wall time (s)"),
        ("sim_seconds", "sim time (s)"),
    )


SCHEMA_VERSION = 1  # of `compare -f json`

# The arms of every Comparison below are (B, A): its difference is B - A. Renderers and the JSON
# name the harnesses explicitly so that the order never leaks into what a user reads.


@dataclass
class CellComparison:
    """One cell of two harnesses: the absolute comparison ``B - A`` of each metric, and (for a
    perturbed cell) the resilience ``(B_cell - B_clean) - (A_cell - A_clean)`` paired by task:
    positive means B loses less. ``better`` / ``more_resilient`` are "A", "B" or None."""

    cell: str
    comparisons: list[Comparison]  # pass^k for each k (largest first), then the mean
    resilience: list[Comparison] = field(default_factory=list)  # same metrics; empty for clean
    better: str | None = None
    more_resilient: str | None = None
    summary: str = ""

    def get(self, label: str) -> Comparison | None:
        return next((c for c in self.comparisons if c.label == label), None)

    def get_resilience(self, label: str) -> Comparison | None:
        return next((c for c in self.resilience if c.label == label), None)


def _stats_json(x: Comparison) -> dict[str, Any]:
    d = x.difference
    return {
        "estimate": d.estimate if d else None,
        "low": d.low if d else None,
        "high": d.high if d else None,
        "interval": d.method if d else None,
        "p_value": x.test.p_value if x.test else None,
        "p_floor": x.test.floor if x.test else None,
        "test": x.test.method if x.test else None,
        "p_holm": x.p_holm,
        "p_bh": x.p_bh,
        "significant": x.significant,
        "tasks": x.tasks,
        "excluded": x.excluded,
    }


def _absolute_json(x: Comparison) -> dict[str, Any]:
    ratio = x.ratio
    return {
        "metric": x.label,
        "k": x.k,
        "score_a": x.b,  # Comparison arms are (B, A)
        "score_b": x.a,
        "difference": _stats_json(x),
        "ratio_b_over_a": x.ratio_estimate,
        "ratio_interval": None if ratio is None else [ratio.low, ratio.high],
        "ratio_note": x.ratio_note,
    }


def _resilience_json(x: Comparison) -> dict[str, Any]:
    return {"drop_a": x.b, "drop_b": x.a, **_stats_json(x)}


def _cell_json(c: CellComparison) -> dict[str, Any]:
    return {
        "cell": c.cell,
        "comparisons": [_absolute_json(x) for x in c.comparisons],
        "resilience": (
            {x.label: _resilience_json(x) for x in c.resilience} if c.cell != CLEAN else None
        ),
        "verdict": {"better": c.better, "more_resilient": c.more_resilient},
        "summary": c.summary,
    }


@dataclass
class HarnessComparison:
    a_label: str
    b_label: str
    a_path: str
    b_path: str
    ks: list[int]
    cells: list[CellComparison]
    budgets: tuple[Budget, Budget]
    only_in_a: list[str]
    only_in_b: list[str]
    cells_only_in_a: list[str]
    cells_only_in_b: list[str]
    warnings: list[str] = field(default_factory=list)

    @property
    def k_main(self) -> int:
        return max(self.ks)

    @property
    def conclusions(self) -> list[str]:
        return [c.summary for c in self.cells]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "a": {"label": self.a_label, "journal": self.a_path},
            "b": {"label": self.b_label, "journal": self.b_path},
            "direction": "b - a",
            "resilience": "(b_cell - b_clean) - (a_cell - a_clean) per task; > 0: b loses less",
            "ks": self.ks,
            "cells": [_cell_json(c) for c in self.cells],
            "budget": [b.__dict__ for b in self.budgets],
            "only_in_a": self.only_in_a,
            "only_in_b": self.only_in_b,
            "cells_only_in_a": self.cells_only_in_a,
            "cells_only_in_b": self.cells_only_in_b,
            "warnings": self.warnings,
        }


def _labels(a: Trials, b: Trials) -> tuple[str, str]:
    la, lb = a.manifest.agent, b.manifest.agent
    if la == lb:
        la, lb = f"{la} ({Path(a.path).stem})", f"{lb} ({Path(b.path).stem})"
        if la == lb:
            la, lb = f"A: {la}", f"B: {lb}"
    return la, lb


def _paired(t: Trials, keep: set[tuple[str, str]]) -> Group:
    g = Group.all(t)
    if not len(g):
        return g
    cells, tasks = t.vocab["cell"], t.vocab["scenario"]
    pairs = np.array([[(c, s) in keep for s in tasks] for c in cells])
    return g.where(pairs[g["cell"], g["scenario"]])


def _first_significant(cmps: Sequence[Comparison]) -> Comparison | None:
    return next((c for c in cmps if c.significant and c.difference is not None), None)


def _main(cmps: Sequence[Comparison], k: int) -> Comparison | None:
    return next((c for c in cmps if c.label == f"pass^{k}"), cmps[0] if cmps else None)


def _figure(c: Comparison, what: str) -> str:
    d = c.difference
    if d is None:
        return f"{c.label}: no paired tasks"
    return (
        f"{c.label} {what} = {d.estimate:+.3f} [{d.low:+.3f}, {d.high:+.3f}], "
        f"Holm-adjusted p = {c.p_holm:.3g}, {c.tasks} paired tasks"
    )


def _judge(
    cmps: Sequence[Comparison], k: int, labels: tuple[str, str], claim: str, what: str
) -> tuple[str | None, str]:
    """Who the evidence favours ("A", "B" or None) and the sentence that says it: the side
    only from a significant difference, else "no detectable difference" with the main metric."""
    hit = _first_significant(cmps)
    if hit is not None and hit.difference is not None:
        side = "B" if hit.difference.estimate > 0 else "A"
        name = labels[1] if side == "B" else labels[0]
        return side, f"{name} is {claim} ({_figure(hit, what)})"
    main = _main(cmps, k)
    figure = _figure(main, what) if main is not None else "no paired tasks"
    topic = "in resilience" if claim.startswith("more resilient") else "in score"
    return None, f"no detectable difference {topic} ({figure})"


def _verdict(c: CellComparison, labels: tuple[str, str], k: int) -> None:
    """Fill ``better`` from the absolute comparison and ``more_resilient`` from the drops."""
    la, lb = labels
    where = "on clean runs" if c.cell == CLEAN else f"under {c.cell}"
    c.better, said = _judge(c.comparisons, k, labels, f"better {where}", f"{lb} - {la}")
    parts = [said]
    if c.cell != CLEAN:
        c.more_resilient, said = _judge(
            c.resilience, k, labels, f"more resilient {where}", f"drop {lb} - drop {la}"
        )
        parts.append(said)
    c.summary = f"{c.cell}: " + "; ".join(parts)


def _warnings(a: Trials, b: Trials) -> list[str]:
    warnings: list[str] = []
    if a.manifest.seed != b.manifest.seed:
        warnings.append(
            f"the runs used different seeds ({a.manifest.seed} vs {b.manifest.seed}): worlds "
            "differ, so pairing is by task only"
        )
    for j in (a, b):
        warnings += [f"{j.path}: {w}" for w in [*j.manifest.run_warnings(), *j.warnings]]
    return warnings


def _cell(
    ga: Group,
    gb: Group,
    clean: tuple[Group, Group] | None,
    grid: Sequence[tuple[str, int | None]],
    labels: tuple[str, str],
    cell: str,
    opts: dict[str, Any],
) -> CellComparison:
    """B against A in one cell: absolute B - A and, against each one's clean cell, the drops."""
    la, lb = labels
    lost_a, lost_b = set(not_landed(ga)), set(not_landed(gb))
    # A task the perturbation reached in neither run is not a test of anything.
    neither = dict.fromkeys(sorted(lost_a & lost_b), "no fault reached either agent (did not land)")
    absolute = compare_metrics(
        task_counts(gb),
        task_counts(ga),
        grid,
        neither,
        arms=(lb, la),
        key=f"compare/{cell}",
        **opts,
    )
    resilience: list[Comparison] = []
    if clean is not None and cell != CLEAN:
        # A drop where the fault reached one harness only compares a fault with no fault.
        left_out = dict(neither)
        for t in sorted(lost_a ^ lost_b):
            left_out[t] = f"the fault landed only in {lb if t in lost_a else la}'s run"
        ca = {t: v for t, v in task_counts(ga).items() if t not in left_out}
        cb = {t: v for t, v in task_counts(gb).items() if t not in left_out}
        for metric, k in grid:
            cmp = compare_drops(
                (cb, task_counts(clean[1])), (ca, task_counts(clean[0])), metric, k,
                ci=opts["ci"], arms=(lb, la),
            )  # fmt: skip
            cmp.excluded.update(left_out)
            resilience.append(cmp)
    return CellComparison(cell, absolute, resilience)


def compare_journals(
    a: Trials | Journal,
    b: Trials | Journal,
    ks: Sequence[int] | None = None,
    *,
    n_resamples: int = 10_000,
    ci: float = 0.95,
    seed: int = 0,
) -> HarnessComparison:
    """Paired comparison of journal ``b`` against journal ``a`` (differences are ``b - a``)."""
    a, b = as_trials(a), as_trials(b)
    ks = sorted(set(ks or (set(a.manifest.ks) & set(b.manifest.ks)) or [1]))
    la, lb = _labels(a, b)
    ga, gb = groups(a, "cell"), groups(b, "cell")
    sa = set(Group.all(a).names("scenario"))
    sb = set(Group.all(b).names("scenario"))
    common_cells = [c for c in ga if c in gb]
    common_cells.sort(key=lambda c: (c != CLEAN, c))

    # The budget counts only what is compared: unpaired tasks would inflate one side's bill.
    keep = {(c, t) for c in common_cells for t in sa & sb}
    grid: list[tuple[str, int | None]] = [("pass^k", k) for k in reversed(ks)] + [("mean", None)]
    clean = (ga[CLEAN], gb[CLEAN]) if CLEAN in common_cells else None
    opts: dict[str, Any] = {"n_resamples": n_resamples, "ci": ci, "seed": seed}
    cells = [_cell(ga[c], gb[c], clean, grid, (la, lb), c, opts) for c in common_cells]
    # One family per metric across the cells, for each question asked.
    adjust_by_metric(c.comparisons for c in cells)
    adjust_by_metric(c.resilience for c in cells)
    for c in cells:
        _verdict(c, (la, lb), max(ks))

    return HarnessComparison(
        a_label=la,
        b_label=lb,
        a_path=str(a.path),
        b_path=str(b.path),
        ks=ks,
        cells=cells,
        budgets=(Budget.of(la, _paired(a, keep)), Budget.of(lb, _paired(b, keep))),
        only_in_a=sorted(sa - sb),
        only_in_b=sorted(sb - sa),
        cells_only_in_a=sorted(set(ga) - set(gb)),
        cells_only_in_b=sorted(set(gb) - set(ga)),
        warnings=_warnings(a, b),
    )
