"""Compare two harnesses (two journals) on the same tasks, paired by scenario and cell.

Per cell present in both journals, two questions, each answered by the primary metric alone
(chaoseval.analysis.primary; recorded in the runs' manifests), Holm-adjusted across the cells;
the other metrics keep intervals and are tested only in a fixed order behind it:

- better: the absolute difference ``B - A`` in the cell;
- more resilient (perturbed cells): the difference of drops, paired by task,
  ``(B_cell - B_clean) - (A_cell - A_clean)``; positive means B loses less. A harness better by
  the same margin everywhere is better, never more resilient. Tasks where either harness had
  no clean success are left out, relative retention is shown beside it, and the claim needs
  both scales to agree (chaoseval.analysis.resilience).

Which tasks are at the floor is chosen on clean trials the drops are not estimated from: each
harness's scored clean trials of a task are split by trial index, before any outcome is looked
at, into choosing trials (the first half, fewer where the primary's k needs more to estimate)
and estimating trials (:func:`clean_split`); repeats are exchangeable, so the two halves are
independent.
Chosen on the same counts the drop is computed from, a task kept for a lucky clean success
shows a drop it does not have (regression to the mean): under equal true drops "B more
resilient" came out in 15% of 67-task runs (benchmarks/calibration_sim.py). With the split the
choice is independent of the estimate, so the difference of drops over the kept tasks is
unbiased; the price is the choosing trials' share of the clean arm's variance.

A budget table sits beside it so that more attempts (retries, model calls) are not mistaken for a
better architecture. Tasks or cells present in only one journal are reported and left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from chaoseval.analysis.aggregate import (
    CLEAN,
    groups,
    not_landed,
    task_counts,
    task_names,
)
from chaoseval.analysis.degradation import (
    Comparison,
    adjust_by_metric,
    compare_drops,
    compare_metrics,
    drops_table,
)
from chaoseval.analysis.primary import Primary, gatekeep, parse_primary, recorded_primary
from chaoseval.analysis.resilience import (
    Retention,
    Split,
    TaskCountMap,
    clean_split,
    count_split,
    floor_by_choosing,
    macro,
    resilience_call,
    retention,
    sizing,
)
from chaoseval.analysis.sequential import compare_note, first_round
from chaoseval.analysis.spend import Budget
from chaoseval.errors import ConfigError
from chaoseval.model.seeding import derive_seed
from chaoseval.store.columns import Group, Trials, as_trials
from chaoseval.store.journal import Journal

__all__ = [
    "SCHEMA_VERSION",
    "CellComparison",
    "CellCounts",
    "HarnessComparison",
    "compare_cells",
    "compare_journals",
]

ALPHA = 0.05
# One cell of one harness: per-task (scored, passed) counts, and the tasks its fault never
# reached (did not land).
CellCounts = tuple[TaskCountMap, set[str]]


SCHEMA_VERSION = 2  # of `compare -f json`; 2: primary, decided_by, retention, sizing

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
    retention: Retention | None = None
    floor: dict[str, str] = field(default_factory=dict)  # task -> why left out of the DiD
    withheld: str | None = None  # why "more resilient" was not said despite a significant DiD
    # Each harness's clean primary score on the cell's paired tasks (floor tasks included).
    clean_scores: tuple[float | None, float | None] = (None, None)

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


def _cell_json(c: CellComparison, primary: str) -> dict[str, Any]:
    return {
        "cell": c.cell,
        "comparisons": [_absolute_json(x) for x in c.comparisons],
        "resilience": (
            {x.label: _resilience_json(x) for x in c.resilience} if c.cell != CLEAN else None
        ),
        "verdict": {
            "better": c.better,
            "more_resilient": c.more_resilient,
            "decided_by": primary,
            "resilience_withheld": c.withheld,
        },
        "retention": c.retention.to_json() if c.retention else None,
        "floor_tasks": c.floor,
        "clean_primary": {"a": c.clean_scores[0], "b": c.clean_scores[1]},
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
    primary: str = "pass^1"
    sizing: list[str] = field(default_factory=list)  # said before any table

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
            "primary": self.primary,
            "sizing": self.sizing,
            "cells": [_cell_json(c, self.primary) for c in self.cells],
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


def _figure(c: Comparison, what: str) -> str:
    d = c.difference
    if d is None:
        return f"{c.label}: no paired tasks"
    return (
        f"{c.label} {what} = {d.estimate:+.3f} [{d.low:+.3f}, {d.high:+.3f}], "
        f"Holm-adjusted p = {c.p_holm:.3g}, {c.tasks} paired tasks"
    )


def _judge(
    cmps: Sequence[Comparison], primary: str, labels: tuple[str, str], claim: str, what: str
) -> tuple[str | None, str]:
    """Who the primary metric favours ("A", "B" or None) and the sentence that says it: a side
    only from its significant difference, else "no detectable difference"."""
    main = next((c for c in cmps if c.label == primary), None)
    topic = "in resilience" if claim.startswith("more resilient") else "in score"
    if main is None:
        return None, f"no detectable difference {topic} ({primary}: not measurable)"
    if main.significant and main.difference is not None and main.difference.estimate != 0:
        side = "B" if main.difference.estimate > 0 else "A"
        name = labels[1] if side == "B" else labels[0]
        return side, f"{name} is {claim} ({_figure(main, what)})"
    return None, f"no detectable difference {topic} ({_figure(main, what)})"


def _retention_text(r: Retention | None, labels: tuple[str, str], primary: str) -> str:
    if r is None or r.a is None or r.b is None:
        return f"retention ({primary} cell / clean): {r.note if r else 'no tasks'}"
    return (
        f"retention ({primary} cell / clean) {labels[0]} {r.a.estimate:.2f} "
        f"[{r.a.low:.2f}, {r.a.high:.2f}], {labels[1]} {r.b.estimate:.2f} "
        f"[{r.b.low:.2f}, {r.b.high:.2f}]"
    )


def _verdict(c: CellComparison, labels: tuple[str, str], primary: str) -> None:
    """Fill ``better`` from the absolute comparison and ``more_resilient`` from the drops, both
    of the primary metric; resilience also needs retention to agree and no floor."""
    la, lb = labels
    where = "on clean runs" if c.cell == CLEAN else f"under {c.cell}"
    c.better, said = _judge(c.comparisons, primary, labels, f"better {where}", f"{lb} - {la}")
    parts = [said]
    if c.cell != CLEAN:
        side, said = _judge(
            c.resilience, primary, labels, f"more resilient {where}", f"drop {lb} - drop {la}"
        )
        main = c.get_resilience(primary)
        did = main.difference.estimate if main and main.difference else None
        r = c.retention
        c.more_resilient, c.withheld = resilience_call(side is not None, did, r, c.clean_scores)
        if c.withheld and main is not None:
            said = f"no verdict on resilience {where}: {c.withheld} ({_figure(main, 'DiD')})"
        parts.append(said)
        parts.append(_retention_text(r, labels, primary))
        if c.floor:
            parts.append(f"{len(c.floor)} task(s) with no clean success left out of the DiD")
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
    a: CellCounts,
    b: CellCounts,
    clean: tuple[TaskCountMap, TaskCountMap] | None,
    grid: Sequence[tuple[str, int | None]],
    labels: tuple[str, str],
    cell: str,
    opts: dict[str, Any],
    primary: Primary,
    split: tuple[Split, Split] | None = None,
) -> CellComparison:
    """B against A in one cell: absolute B - A and, against each one's clean cell, the drops
    (without the tasks where either had no clean success in its choosing trials, estimated
    on the estimating ones: ``split``) and the retention."""
    la, lb = labels
    (counts_a, lost_a), (counts_b, lost_b) = a, b
    # A task the perturbation reached in neither run is not a test of anything.
    neither = dict.fromkeys(sorted(lost_a & lost_b), "no fault reached either agent (did not land)")
    absolute = compare_metrics(
        counts_b,
        counts_a,
        grid,
        neither,
        arms=(lb, la),
        key=f"compare/{cell}",
        **opts,
    )
    resilience: list[Comparison] = []
    out = CellComparison(cell, absolute, resilience)
    if clean is not None and split is not None and cell != CLEAN:
        # A drop where the fault reached one harness only compares a fault with no fault.
        left_out = dict(neither)
        for t in sorted(lost_a ^ lost_b):
            left_out[t] = f"the fault landed only in {lb if t in lost_a else la}'s run"
        all_a, all_b = clean
        (choose_a, clean_a), (choose_b, clean_b) = split
        ca = {t: v for t, v in counts_a.items() if t not in left_out}
        cb = {t: v for t, v in counts_b.items() if t not in left_out}
        # Clean scores over the tasks paired here, before the floor tasks go: the floor test
        # of "more resilient" is about the harness, not about the tasks that are left.
        paired = [t for t in ca if t in cb and t in all_a and t in all_b]
        at_zero = floor_by_choosing({la: (choose_a, clean_a), lb: (choose_b, clean_b)}, paired)
        out.floor = at_zero
        kept = [t for t in paired if t not in at_zero and min(
            ca[t][0], cb[t][0], clean_a[t][0], clean_b[t][0]) >= primary.kk]  # fmt: skip
        ca = {t: v for t, v in ca.items() if t not in at_zero}
        cb = {t: v for t, v in cb.items() if t not in at_zero}
        table = drops_table((cb, clean_b), (ca, clean_a), (lb, la))  # once for every metric
        for metric, k in grid:
            cmp = compare_drops(
                (cb, clean_b), (ca, clean_a), metric, k, ci=opts["ci"], arms=(lb, la),
                table=table,
            )  # fmt: skip
            cmp.excluded.update(left_out)
            cmp.excluded.update(at_zero)
            resilience.append(cmp)
        ret = retention(
            (ca, clean_a), (cb, clean_b), kept, primary, n_resamples=opts["n_resamples"],
            ci=opts["ci"], seed=derive_seed(opts["seed"], "retention", cell),
        )  # fmt: skip
        out.retention = ret
        out.clean_scores = (macro(all_a, paired, primary), macro(all_b, paired, primary))
    return out


def _on(counts: TaskCountMap, tasks: Sequence[str]) -> TaskCountMap:
    return {t: counts[t] for t in tasks}


def compare_cells(
    a: Mapping[str, CellCounts],
    b: Mapping[str, CellCounts],
    ks: Sequence[int],
    primary: Primary,
    *,
    labels: tuple[str, str] = ("A", "B"),
    n_resamples: int = 10_000,
    ci: float = 0.95,
    seed: int = 0,
    split: tuple[Split, Split] | None = None,
) -> list[CellComparison]:
    """The comparison and verdict of every cell in both ``a`` and ``b`` (cell -> per-task
    counts and the tasks its fault did not reach), from counts alone: what
    :func:`compare_journals` does after reading the journals. ``split``: each harness's clean
    counts as (choosing, estimating) (:func:`clean_split`); without it a seeded random split
    of the counts (:func:`count_split`)."""
    cells = [c for c in a if c in b]
    cells.sort(key=lambda c: (c != CLEAN, c))
    grid: list[tuple[str, int | None]] = [("pass^k", k) for k in reversed(ks)] + [("mean", None)]
    if primary.metric == "pass@k":
        grid.append(("pass@k", primary.k))
    clean = (a[CLEAN][0], b[CLEAN][0]) if CLEAN in cells else None
    if split is None and clean is not None:
        split = (
            count_split(clean[0], primary.kk, derive_seed(seed, "floor", "a")),
            count_split(clean[1], primary.kk, derive_seed(seed, "floor", "b")),
        )
    opts: dict[str, Any] = {"n_resamples": n_resamples, "ci": ci, "seed": seed}
    out = [_cell(a[c], b[c], clean, grid, labels, c, opts, primary, split) for c in cells]
    # One family per metric across the cells, for each question asked; in each cell the
    # metrics after the primary are tested only behind it, in a fixed order.
    adjust_by_metric(c.comparisons for c in out)
    adjust_by_metric(c.resilience for c in out)
    for c in out:
        gatekeep(c.comparisons, primary.label)
        gatekeep(c.resilience, primary.label)
        _verdict(c, labels, primary.label)
    return out


def _primary(a: Trials, b: Trials, primary: str | None) -> Primary:
    if primary is not None:
        return parse_primary(primary)
    pa, pb = recorded_primary(a.manifest), recorded_primary(b.manifest)
    if pa != pb:
        raise ConfigError(
            f"the runs declared different primary metrics ({a.path}: {pa.label}, {b.path}: "
            f"{pb.label}); pass --primary to compare by one of them"
        )
    return pa


def _sizing(cells: Sequence[CellComparison], primary: str) -> list[str]:
    """What the suite can show, said before any table (chaoseval.analysis.resilience.sizing)."""
    better = [(c.cell, c.get(primary)) for c in cells]
    resilient = [(c.cell, c.get_resilience(primary)) for c in cells if c.cell != CLEAN]
    return sizing("better", better, primary) + sizing("more resilient", resilient, primary)


def compare_journals(
    a: Trials | Journal,
    b: Trials | Journal,
    ks: Sequence[int] | None = None,
    *,
    n_resamples: int = 10_000,
    ci: float = 0.95,
    seed: int = 0,
    primary: str | None = None,
) -> HarnessComparison:
    """Paired comparison of journal ``b`` against journal ``a`` (differences are ``b - a``),
    judged by ``primary`` or else the primary metric both runs recorded."""
    a, b = as_trials(a), as_trials(b)
    main = _primary(a, b, primary)
    ks = sorted(set(ks or (set(a.manifest.ks) & set(b.manifest.ks)) or [1]))
    if main.metric == "pass^k":
        ks = sorted({*ks, main.kk})
    la, lb = _labels(a, b)
    # A sequential journal's cells ran more trials where they were undecided: compared on the
    # first round alone, as many trials a task in every cell.
    ga, gb = groups(first_round(a), "cell"), groups(first_round(b), "cell")
    sa, sb = task_names(a), task_names(b)
    common_cells = [c for c in ga if c in gb]

    # The budget counts only what is compared: unpaired tasks would inflate one side's bill.
    keep = {(c, t) for c in common_cells for t in sa & sb}
    cells = compare_cells(
        {c: (task_counts(g), set(not_landed(g))) for c, g in ga.items()},
        {c: (task_counts(g), set(not_landed(g))) for c, g in gb.items()},
        ks, main, labels=(la, lb), n_resamples=n_resamples, ci=ci, seed=seed,
        split=(
            (clean_split(ga[CLEAN], main.kk), clean_split(gb[CLEAN], main.kk))
            if CLEAN in ga and CLEAN in gb
            else None
        ),
    )  # fmt: skip

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
        warnings=[*_warnings(a, b), *filter(None, (compare_note(a, la), compare_note(b, lb)))],
        primary=main.label,
        sizing=_sizing(cells, main.label),
    )
