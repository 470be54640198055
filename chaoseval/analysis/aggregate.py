"""From trial records to per-cell and per-(scenario, cell) summaries.

A task is a scenario; a cell is a perturbation stack (or clean). Not-evaluable trials are
counted and shown, never scored: they shrink ``n`` for their task, and a task left with fewer
than k scored trials is listed as excluded for that k.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from chaoseval.analysis.metrics import Delta, Summary, TaskCounts, delta, summarize

# CLEAN is re-exported: the analysis and render modules import it from here.
from chaoseval.model.records import CLEAN as CLEAN
from chaoseval.model.records import TrialRecord


@dataclass
class CellResult:
    cell: str
    summary: Summary  # over the tasks the perturbation reached (all tasks for clean)
    trials: int  # all trials, scored or not
    not_evaluable: int
    root_causes: Counter[str]
    vetoes: Counter[str]
    faults_injected: int
    faults_delivered: int
    perturbed: bool
    delta: Delta | None = None
    counts: dict[str, tuple[int, int]] = field(default_factory=dict)  # task -> (n, c)
    not_landed: list[str] = field(default_factory=list)  # tasks no fault of the cell reached
    # What the agent never called in the trials of those tasks ("its model", "its tools"): a
    # fault on a channel the agent never uses cannot land, and the note says so.
    untouched: list[str] = field(default_factory=list)

    def landing_note(self) -> str | None:
        """One line on the tasks this cell's faults did not reach, naming the shorter side."""
        if not self.not_landed:
            return None
        total = len(self.counts) + len(self.not_landed)
        if len(self.counts) < len(self.not_landed):
            where = f"reached only: {', '.join(sorted(self.counts)) or 'none'}"
        else:
            where = f"not reached: {', '.join(self.not_landed)}"
        never = f"; there the agent never called {' or '.join(self.untouched)}"
        return (
            f"{self.cell}: no fault reached the agent on {len(self.not_landed)} of {total} "
            f"task(s); those are left out of its metrics ({where})"
            + (never if self.untouched else "")
        )

    @property
    def did_not_land(self) -> bool:
        """A perturbed cell whose faults never reached the agent cannot count as survived."""
        return self.perturbed and self.faults_delivered == 0


def task_counts(records: Iterable[TrialRecord]) -> dict[str, tuple[int, int]]:
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in records:
        entry = counts[r.scenario]
        if r.scored:
            entry[0] += 1
            entry[1] += r.passed
    return {t: (n, c) for t, (n, c) in counts.items()}


def not_landed(records: Iterable[TrialRecord]) -> list[str]:
    """Tasks of a perturbed cell where no fault reached the agent in any trial.

    Such a task was not tested under the perturbation; scoring it would count an untested
    task as one that survived, so it is left out of the cell's metrics and listed instead.
    """
    landed: dict[str, bool] = {}
    for r in records:
        if not r.perturbations:
            return []
        landed[r.scenario] = landed.get(r.scenario, False) or r.faults_delivered() > 0
    return sorted(t for t, hit in landed.items() if not hit)


def untouched_channels(records: Iterable[TrialRecord]) -> list[str]:
    """The channels no trial among ``records`` called: its model (a model request or call)
    and its tools (a tool call). Empty when there are no records."""
    trials = list(records)
    if not trials:
        return []
    kinds = {s.kind for r in trials for s in r.trajectory.steps}
    return [
        name for kind, name in (("model", "its model"), ("tool", "its tools")) if kind not in kinds
    ]


def landed_counts(records: Sequence[TrialRecord]) -> dict[str, tuple[int, int]]:
    """Per-task (n, c) over the tasks the cell's perturbations reached."""
    skip = set(not_landed(records))
    return {t: nc for t, nc in task_counts(records).items() if t not in skip}


def _summary(counts: dict[str, tuple[int, int]], ks: Sequence[int]) -> Summary:
    return summarize([TaskCounts(t, n, c) for t, (n, c) in sorted(counts.items())], ks)


def cell_result(name: str, records: Sequence[TrialRecord], ks: Sequence[int]) -> CellResult:
    counts = landed_counts(records)
    missed = not_landed(records)
    # Root causes and vetoes describe the same trials the metrics do: the tasks reached.
    reached = [r for r in records if r.scenario not in missed]
    return CellResult(
        cell=name,
        summary=_summary(counts, ks),
        trials=len(records),
        not_evaluable=sum(not r.scored for r in records),
        root_causes=Counter(r.root_cause for r in reached if r.status == "failed" and r.root_cause),
        vetoes=Counter(v.kind for r in reached for v in r.vetoes),
        faults_injected=sum(len(r.trajectory.faults) for r in records),
        faults_delivered=sum(r.faults_delivered() for r in records),
        perturbed=any(r.perturbations for r in records),
        counts=counts,
        not_landed=missed,
        untouched=untouched_channels(r for r in records if r.scenario in missed),
    )


def _against_clean(result: CellResult, clean: CellResult, ks: Sequence[int]) -> Delta:
    """perturbed - clean over the same tasks: clean restricted to where the cell landed."""
    same = {t: nc for t, nc in clean.counts.items() if t in result.counts}
    return delta(result.summary, _summary(same, ks))


def by_cell(records: Sequence[TrialRecord], ks: Sequence[int]) -> list[CellResult]:
    """One result per cell, clean first, each with its degradation against clean."""
    groups: dict[str, list[TrialRecord]] = defaultdict(list)
    for record in records:
        groups[record.cell].append(record)
    order = [CLEAN] + [c for c in groups if c != CLEAN]
    results = [cell_result(c, groups[c], ks) for c in order if c in groups]
    clean = next((r for r in results if r.cell == CLEAN), None)
    if clean is not None:
        for r in results:
            r.delta = _against_clean(r, clean, ks)
    return results


def by_scenario_cell(
    records: Sequence[TrialRecord], ks: Sequence[int]
) -> dict[tuple[str, str], CellResult]:
    groups: dict[tuple[str, str], list[TrialRecord]] = defaultdict(list)
    for r in records:
        groups[(r.scenario, r.cell)].append(r)
    results = {key: cell_result(key[1], recs, ks) for key, recs in groups.items()}
    for (scenario, _cell), result in results.items():
        clean = results.get((scenario, CLEAN))
        if clean is not None:
            result.delta = _against_clean(result, clean, ks)
    return results
