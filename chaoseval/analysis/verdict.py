"""The verdict a report opens with: each perturbed cell's status first, counts first
(``stale_memory  0/3 passed (clean 3/3)  broken on 1 of 1 task``; chaoseval.analysis.status),
then by how much the primary metric changes (with the interval), the leading root cause, which
cells start at the floor (nothing to lose), which did not land, and what was absorbed.

Pure: built from an :class:`~chaoseval.analysis.build.Analysis` and the journal's records. The
significance is the degradation module's (``Comparison.significant`` of the primary metric:
Holm-adjusted across the perturbation family), never recomputed here; the other metrics do not
decide a verdict (chaoseval.analysis.primary).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from chaoseval.analysis.aggregate import CLEAN, CellResult, Records, groups
from chaoseval.analysis.build import Analysis
from chaoseval.analysis.degradation import Comparison
from chaoseval.analysis.primary import FLOOR, at_floor
from chaoseval.analysis.reasons import CellReasons, failure_reasons, reasons_json
from chaoseval.analysis.status import STATUSES, CellStatus
from chaoseval.analysis.twins import TwinSet, twins
from chaoseval.store.columns import Group, as_group, as_trials
from chaoseval.store.journal import Journal

__all__ = ["CellVerdict", "Verdict", "build_verdict", "short_labels", "verdict_json"]

Direction = Literal["drop", "gain", "none"]
SHORT = 16  # a cell name up to this long is its own label
# Below this many paired tasks no exact paired test reaches 0.05 once adjusted across a few
# perturbations (the sign-flip test's smallest two-sided p over n tasks is 2 / 2^n).
FEW_TASKS = 6


def short_labels(cells: Sequence[str], plugins: dict[str, list[str]]) -> dict[str, str]:
    """A short, unique label per cell (long spec strings overlap in plots): the name when it is
    short, else its plugins joined by '+', numbered when two cells would share one."""
    base: dict[str, str] = {}
    for c in cells:
        if len(c) <= SHORT:
            base[c] = c
        else:
            names = plugins.get(c) or [c.split("(", 1)[0].split(":", 1)[0]]
            base[c] = "+".join(names)[: SHORT + 8]
    counts = Counter(base.values())
    seen: Counter[str] = Counter()
    out: dict[str, str] = {}
    for c in cells:
        b = base[c]
        if counts[b] > 1:
            seen[b] += 1
            b = f"{b}#{seen[b]}"
        out[c] = b
    return out


@dataclass
class CellVerdict:
    cell: str
    label: str
    metric: str  # the primary metric, e.g. "pass^1": the one the verdict is judged by
    comparison: Comparison | None  # the degradation module's, for this metric
    direction: Direction  # significant drop, significant gain, or neither
    tasks_reached: int
    tasks_total: int
    did_not_land: bool
    failed: int
    new_failures: int  # failed while the clean twin passed
    leading_cause: str | None  # of the new failures; of all failures when there is none new
    leading_count: int
    faults_injected: int
    faults_delivered: int
    faults_absorbed: int
    vetoes: Counter[str] = field(default_factory=Counter)
    status: CellStatus | None = None  # None only for a cell the analysis gave no status

    @property
    def word(self) -> str:
        """The cell's status, as every view names it."""
        if self.status is not None:
            return self.status.status
        return "did not land" if self.did_not_land else "inconclusive"

    @property
    def significant(self) -> bool:
        return self.direction != "none"

    @property
    def at_floor(self) -> bool:
        """No significant change, and the clean baseline on the cell's tasks is at the floor
        (chaoseval.analysis.primary.at_floor): this cell cannot show degradation."""
        c = self.comparison
        return self.direction == "none" and c is not None and at_floor(c.b)

    def floor_note(self) -> str:
        clean = self.comparison.b if self.comparison else None
        level = "0" if not clean else f"{clean:.3f} (at most {FLOOR})"
        return f"the clean baseline is at {level}: this cell cannot show degradation"

    def change(self) -> str:
        """'-0.320 [-0.520, -0.160], Holm p = 0.006' or 'not measurable'."""
        c = self.comparison
        if c is None or c.difference is None:
            return "not measurable"
        d = c.difference
        text = f"{d.estimate + 0.0:+.3f} [{d.low + 0.0:+.3f}, {d.high + 0.0:+.3f}]"
        if c.p_holm is not None:
            text += f", Holm p = {c.p_holm:.3g}"
        return text


@dataclass
class Verdict:
    k: int
    ks: list[int]
    metric: str
    cells: list[CellVerdict]
    labels: dict[str, str]  # every cell (clean too) -> short label
    twins: dict[str, TwinSet]
    clean_vetoes: Counter[str] = field(default_factory=Counter)
    agent: str = ""  # as the run named it: says whose the clean cell's vetoes are
    evaluable: int = 0  # scored trials in the journal: none, nothing can be judged
    # Per cell with a failure (clean too): the first failed trials and why each failed.
    reasons: dict[str, CellReasons] = field(default_factory=dict)

    def by(self, direction: Direction) -> list[CellVerdict]:
        landed = [c for c in self.cells if not c.did_not_land]
        return [c for c in landed if c.direction == direction]

    @property
    def not_landed(self) -> list[CellVerdict]:
        return [c for c in self.cells if c.did_not_land]

    @property
    def measurable(self) -> bool:
        """Some cell has a change against clean (not so without a clean cell)."""
        return any(c.comparison is not None and c.comparison.difference for c in self.cells)

    def count(self, word: str) -> int:
        return sum(c.word == word for c in self.cells)

    def headline(self) -> str:
        """Counts first, pytest-style: '1 broken, 2 held of 3 perturbed cell(s) (pass^1; ...)'."""
        if not self.evaluable:
            return "No evaluable trial in this journal: nothing can be judged"
        if not self.cells:
            return "No perturbed cell in this journal: nothing to judge against clean"
        words = [f"{self.count(w)} {w}" for w in STATUSES if self.count(w)]
        if not self.measurable:
            return (
                "No change against clean can be measured (no clean trials on the tasks "
                f"reached): {', '.join(words)}"
            )
        return (
            f"{', '.join(words)} of {len(self.cells)} perturbed cell(s) ({self.metric}; broken: "
            "on these tasks, trials as the units; degraded: on tasks like these, tasks as the "
            "units; Holm across the cells)"
        )

    def status_lines(self) -> list[str]:
        """One counts line per cell: ``stale_memory  0/3 passed (clean 3/3)  broken ...``."""
        width = max((len(c.label) for c in self.cells), default=0)
        return [c.status.line(c.label, width) for c in self.cells if c.status is not None]

    @property
    def at_floor(self) -> list[CellVerdict]:
        return [c for c in self.by("none") if c.at_floor]

    def lines(self, compact: bool = False) -> list[str]:
        """The verdict as plain sentences, most important first; ``compact`` names the cells
        that are not significant without their numbers (a table beside it has them)."""
        out = [self.headline() + ".", *self.status_lines()]
        for c in sorted(self.by("drop"), key=_drop_size):
            cause = (
                f"; leading root cause {c.leading_cause} ({c.leading_count} of "
                f"{c.new_failures or c.failed} {'new ' if c.new_failures else ''}failures)"
                if c.leading_cause
                else ""
            )
            out.append(f"{c.label}: {c.metric} {c.change()}{cause}.")
        for c in self.by("gain"):
            out.append(f"{c.label}: {c.metric} improves, {c.change()}.")
        for c in self.at_floor:
            out.append(f"{c.label}: {c.floor_note()}.")
        # A cell decided on these tasks (broken, improved) is not "not significant".
        quiet = sorted(
            (c for c in self.by("none") if not c.at_floor and c.word not in DECIDED_HERE),
            key=_drop_size,
        )
        listed = quiet
        if quiet and not self.by("drop") and _drop_size(quiet[0]) < 0:
            c, listed = quiet[0], quiet[1:]
            out.append(
                f"Largest drop, not significant: {c.label} {c.metric} {c.change()}; more "
                "trials or tasks would tell (see the noise floor and sizing)."
            )
        if listed and self.measurable:
            out.append(
                "Not significant: "
                + "; ".join(
                    c.label if compact else f"{c.label} {c.metric} {c.change()}" for c in listed
                )
                + "."
            )
        few = [c for c in quiet if c.tasks_reached < FEW_TASKS] if self.measurable else []
        if few:
            out.append(
                "Reached too few tasks for a claim on tasks like these: "
                + ", ".join(f"{c.label} ({c.tasks_reached})" for c in few)
                + "; add scenarios these perturbations reach."
            )
        if self.not_landed:
            out.append(
                "Did not land (no fault reached the agent, so not tested): "
                + ", ".join(c.label for c in self.not_landed)
                + "."
            )
        if self.clean_vetoes:
            out.append(self.clean_veto_line())
        absorbed = [c for c in self.cells if c.faults_absorbed]
        if absorbed:
            out.append(
                "Absorbed by the client's retry: "
                + ", ".join(f"{c.label} {c.faults_absorbed}" for c in absorbed)
                + " fault(s) (reached the client, retried before the agent saw them)."
            )
        return out

    def clean_veto_line(self) -> str:
        """The clean cell's vetoes are the agent's own: no fault was injected there."""
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.clean_vetoes.items()))
        line = (
            f"Vetoes in clean: {kinds}; no fault was injected there, so these are the agent's "
            "own mistakes, not caused by a perturbation"
        )
        # Imported here: chaoseval.seams.agent brings the scenario model (faker, freezegun,
        # ~25 MB) into every report, which needs it for this one line.
        from chaoseval.seams.agent import split_agent

        name, params = split_agent(self.agent)
        if name in SLIPPING and params.get("slips", True) is not False:
            line += (
                f" (the reference agent's simulated slips: --agent {name}:slips=false turns "
                "them off)"
            )
        return line + "."


# Statuses the exact test on these tasks decides when the task-level test cannot.
DECIDED_HERE = frozenset({"broken", "improved"})

# The reference agents whose simulated policy slips on purpose (chaoseval.agents.simulated),
# with a ``slips`` parameter to turn it off.
SLIPPING = frozenset({"naive", "resilient", "http-naive", "http-resilient"})


def _drop_size(c: CellVerdict) -> float:
    d = c.comparison.difference if c.comparison else None
    return d.estimate if d is not None else 0.0


def _absorbed(records: Records) -> Counter[str]:
    g = as_group(records)
    out: Counter[str] = Counter()
    for cell, rows in groups(g, "cell").items():
        n = int(rows["absorbed"].sum())
        if n:
            out[cell] = n
    return out


def _headline_change(a: Analysis, cell: str) -> tuple[str, Comparison | None, Direction]:
    """The primary metric's change (Holm-adjusted across the perturbations): the one question
    declared before the data. Picking whichever metric happens to be significant would give
    every metric its own chance at a claim."""
    cmp = next((x for x in a.degradation.get(cell, []) if x.label == a.primary), None)
    if cmp is not None and cmp.significant and cmp.difference is not None:
        return a.primary, cmp, "drop" if cmp.difference.estimate < 0 else "gain"
    return a.primary, cmp, "none"


def _cell_verdict(
    c: CellResult, a: Analysis, label: str, tw: TwinSet | None, absorbed: int
) -> CellVerdict:
    metric, cmp, direction = _headline_change(a, c.cell)
    causes = tw.new_failure_causes if tw and tw.new_failure_causes else c.root_causes
    leading = causes.most_common(1)[0] if causes else (None, 0)
    return CellVerdict(
        cell=c.cell,
        label=label,
        metric=metric,
        comparison=cmp,
        direction=direction,
        tasks_reached=len(c.counts),
        tasks_total=len(c.counts) + len(c.not_landed),
        did_not_land=c.did_not_land,
        failed=sum(c.root_causes.values()),
        new_failures=tw.clean_passed if tw else 0,
        leading_cause=leading[0],
        leading_count=leading[1],
        faults_injected=c.faults_injected,
        faults_delivered=c.faults_delivered,
        faults_absorbed=absorbed,
        vetoes=Counter(c.vetoes),
        status=a.statuses.get(c.cell),
    )


def build_verdict(
    a: Analysis, records: Records | Journal, twins_per_cell: int | None = 3
) -> Verdict:
    """The verdict of one analysed journal; ``twins_per_cell`` failed trials per cell get their
    clean twin laid out (None: all of them)."""
    names = [c.cell for c in a.cells]
    labels = short_labels(names, a.plugins)
    g = Group.all(as_trials(records)) if isinstance(records, Journal) else as_group(records)
    tw = twins(g, twins_per_cell)
    absorbed = _absorbed(g)
    cells = [
        _cell_verdict(c, a, labels[c.cell], tw.get(c.cell), absorbed[c.cell])
        for c in a.cells
        if c.cell != CLEAN
    ]
    clean = a.cell(CLEAN)
    return Verdict(
        a.k_main,
        list(a.ks),
        a.primary,
        cells,
        labels,
        tw,
        Counter(clean.vetoes) if clean else Counter(),
        a.agent,
        sum(c.summary.trials for c in a.cells),
        failure_reasons(g),
    )


def verdict_json(v: Verdict) -> dict[str, Any]:
    return {
        "failures": reasons_json(v.reasons),
        "metric": v.metric,
        "primary": v.metric,
        "statuses": {w: v.count(w) for w in STATUSES},
        "summary": v.lines(),
        "labels": v.labels,
        "cells": [
            {
                "cell": c.cell,
                "label": c.label,
                "metric": c.metric,
                "status": c.word,
                "scope": c.status.scope if c.status else "",
                "status_detail": c.status.to_json() if c.status else None,
                "direction": c.direction,
                "significant": c.significant,
                "decided_by": c.metric,
                "baseline_at_floor": c.at_floor,
                "change": c.comparison.to_json() if c.comparison else None,
                "did_not_land": c.did_not_land,
                "tasks_reached": c.tasks_reached,
                "tasks_total": c.tasks_total,
                "failed": c.failed,
                "new_failures": c.new_failures,
                "leading_root_cause": c.leading_cause,
                "leading_root_cause_among": "new failures" if c.new_failures else "all failures",
                "faults": {
                    "injected": c.faults_injected,
                    "delivered": c.faults_delivered,
                    "absorbed": c.faults_absorbed,
                },
                "vetoes": dict(sorted(c.vetoes.items())),
                "twins": [
                    {
                        "trial": p.perturbed.trial_id,
                        "clean_twin": p.clean.trial_id if p.clean else None,
                        "diverge_at": None if p.diverge_at is None else p.diverge_at + 1,
                        "label": p.label,
                    }
                    for p in (v.twins[c.cell].pairs if c.cell in v.twins else [])[:50]
                ],
            }
            for c in v.cells
        ],
    }
