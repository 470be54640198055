"""Compare two harnesses (two journals) on the same tasks, paired by scenario and cell.

Per cell present in both journals: the paired difference ``B - A`` in mean and pass^k with a
task-level bootstrap interval, a paired test and Holm / Benjamini-Hochberg adjusted p-values
across the cells. A budget table sits beside it so that more attempts (retries, model calls)
are not mistaken for a better architecture. Tasks or cells present in only one journal are
reported and left out of the pairing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaoseval.analysis.aggregate import CLEAN, not_landed, task_counts
from chaoseval.analysis.degradation import Comparison, adjust_family, compare_counts
from chaoseval.model.records import TrialRecord
from chaoseval.model.seeding import derive_seed
from chaoseval.store.journal import Journal

__all__ = ["Budget", "CellComparison", "HarnessComparison", "compare_journals"]

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
    def of(cls, label: str, records: Sequence[TrialRecord]) -> Budget:
        return cls(
            label=label,
            trials=len(records),
            scored=sum(r.scored for r in records),
            model_calls=sum(r.usage.model_calls for r in records),
            tool_calls=sum(len(r.trajectory.tool_steps()) for r in records),
            tokens=sum(r.usage.input_tokens + r.usage.output_tokens for r in records),
            cost=math.fsum(r.usage.cost for r in records),
            wall_seconds=math.fsum(r.wall_seconds for r in records),
            sim_seconds=math.fsum(r.sim_seconds for r in records),
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


@dataclass
class CellComparison:
    cell: str
    comparisons: list[Comparison]  # mean, then pass^k for each k
    verdict: str = ""
    winner: str | None = None  # label of the harness the evidence favours, if any

    def get(self, label: str) -> Comparison | None:
        return next((c for c in self.comparisons if c.label == label), None)


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
        return [c.verdict for c in self.cells]

    def to_json(self) -> dict[str, Any]:
        return {
            "a": {"label": self.a_label, "journal": self.a_path},
            "b": {"label": self.b_label, "journal": self.b_path},
            "direction": "b - a",
            "ks": self.ks,
            "cells": [
                {
                    "cell": c.cell,
                    "winner": c.winner,
                    "verdict": c.verdict,
                    "comparisons": [x.to_json() for x in c.comparisons],
                }
                for c in self.cells
            ],
            "budget": [b.__dict__ for b in self.budgets],
            "only_in_a": self.only_in_a,
            "only_in_b": self.only_in_b,
            "cells_only_in_a": self.cells_only_in_a,
            "cells_only_in_b": self.cells_only_in_b,
            "warnings": self.warnings,
        }


def _labels(a: Journal, b: Journal) -> tuple[str, str]:
    la, lb = a.manifest.agent, b.manifest.agent
    if la == lb:
        la, lb = f"{la} ({Path(a.path).stem})", f"{lb} ({Path(b.path).stem})"
        if la == lb:
            la, lb = f"A: {la}", f"B: {lb}"
    return la, lb


def _group(records: Sequence[TrialRecord]) -> dict[str, list[TrialRecord]]:
    out: dict[str, list[TrialRecord]] = {}
    for r in records:
        out.setdefault(r.cell, []).append(r)
    return out


def _paired(records: Sequence[TrialRecord], keep: set[tuple[str, str]]) -> list[TrialRecord]:
    return [r for r in records if (r.cell, r.scenario) in keep]


def _verdict(cell: str, cmps: list[Comparison], la: str, lb: str, k: int) -> tuple[str, str | None]:
    where = "on clean runs" if cell == CLEAN else f"under {cell}"
    quality = "more reliable" if cell == CLEAN else "more resilient"
    for c in cmps:
        if c.significant and c.difference is not None:
            d = c.difference
            winner = lb if d.estimate > 0 else la
            return (
                f"{winner} is {quality} {where}: {c.label} {lb} - {la} = {d.estimate:+.3f} "
                f"[{d.low:+.3f}, {d.high:+.3f}], Holm-adjusted p = {c.p_holm:.3g} "
                f"({c.tasks} paired tasks)",
                winner,
            )
    main = next((c for c in cmps if c.label == f"pass^{k}"), cmps[0] if cmps else None)
    if main is None or main.difference is None:
        return f"{cell}: no paired tasks to compare", None
    d = main.difference
    return (
        f"{cell}: no detectable difference ({main.label} {lb} - {la} = {d.estimate:+.3f} "
        f"[{d.low:+.3f}, {d.high:+.3f}], Holm-adjusted p = {main.p_holm:.3g}, "
        f"{main.tasks} paired tasks)",
        None,
    )


def _warnings(a: Journal, b: Journal) -> list[str]:
    warnings: list[str] = []
    if a.manifest.seed != b.manifest.seed:
        warnings.append(
            f"the runs used different seeds ({a.manifest.seed} vs {b.manifest.seed}): worlds "
            "differ, so pairing is by task only"
        )
    for j in (a, b):
        warnings += [f"{j.path}: {w}" for w in j.warnings]
    return warnings


def _cell_comparisons(
    ra: Sequence[TrialRecord],
    rb: Sequence[TrialRecord],
    ks: Sequence[int],
    labels: tuple[str, str],
    cell: str,
    n_resamples: int,
    ci: float,
    seed: int,
) -> list[Comparison]:
    """B against A in one cell: pass^k for each k (largest first), then the mean."""
    la, lb = labels
    ca, cb = task_counts(ra), task_counts(rb)
    # A task the perturbation reached in neither run is not a test of resilience.
    unreached = sorted(set(not_landed(ra)) & set(not_landed(rb)))
    ca = {t: v for t, v in ca.items() if t not in unreached}
    cb = {t: v for t, v in cb.items() if t not in unreached}
    cmps = []
    for metric, k in [("pass^k", k) for k in reversed(ks)] + [("mean", None)]:
        cmp = compare_counts(
            cb,
            ca,
            metric,
            k,
            n_resamples=n_resamples,
            ci=ci,
            seed=derive_seed(seed, "compare", cell, metric, k or 0),
            arms=(lb, la),
        )
        for t in unreached:
            cmp.excluded[t] = "no fault reached either agent (did not land)"
        cmps.append(cmp)
    return cmps


def compare_journals(
    a: Journal,
    b: Journal,
    ks: Sequence[int] | None = None,
    *,
    n_resamples: int = 10_000,
    ci: float = 0.95,
    seed: int = 0,
) -> HarnessComparison:
    """Paired comparison of journal ``b`` against journal ``a`` (differences are ``b - a``)."""
    ks = sorted(set(ks or (set(a.manifest.ks) & set(b.manifest.ks)) or [1]))
    la, lb = _labels(a, b)
    ga, gb = _group(a.records), _group(b.records)
    sa = {r.scenario for r in a.records}
    sb = {r.scenario for r in b.records}
    common_cells = [c for c in ga if c in gb]
    common_cells.sort(key=lambda c: (c != CLEAN, c))

    # The budget counts only what is compared: unpaired tasks would inflate one side's bill.
    keep = {(c, t) for c in common_cells for t in sa & sb}
    cells = [
        CellComparison(
            cell,
            _cell_comparisons(ga[cell], gb[cell], ks, (la, lb), cell, n_resamples, ci, seed),
        )
        for cell in common_cells
    ]
    families: dict[str, list[Comparison]] = {}
    for c in cells:
        for cmp in c.comparisons:
            families.setdefault(cmp.label, []).append(cmp)
    for family in families.values():
        adjust_family(family)
    k_main = max(ks)
    for c in cells:
        c.verdict, c.winner = _verdict(c.cell, c.comparisons, la, lb, k_main)

    return HarnessComparison(
        a_label=la,
        b_label=lb,
        a_path=str(a.path),
        b_path=str(b.path),
        ks=ks,
        cells=cells,
        budgets=(Budget.of(la, _paired(a.records, keep)), Budget.of(lb, _paired(b.records, keep))),
        only_in_a=sorted(sa - sb),
        only_in_b=sorted(sb - sa),
        cells_only_in_a=sorted(set(ga) - set(gb)),
        cells_only_in_b=sorted(set(gb) - set(ga)),
        warnings=_warnings(a, b),
    )
