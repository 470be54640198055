"""From trial records to per-cell and per-(scenario, cell) summaries.

A task is a scenario; a cell is a perturbation stack (or clean). Not-evaluable trials are
counted and shown, never scored: they shrink ``n`` for their task, and a task left with fewer
than k scored trials is listed as excluded for that k.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chaoseval.analysis.counts import CountsByTask
from chaoseval.analysis.counts import name_ranks as name_ranks  # re-exported
from chaoseval.analysis.metrics import Delta, Summary, delta, summarize_counts, summarize_sorted

# CLEAN is re-exported: the analysis and render modules import it from here.
from chaoseval.model.records import CLEAN as CLEAN
from chaoseval.model.records import TrialRecord
from chaoseval.store.colcache import LazyColumns
from chaoseval.store.columns import Group, Trials, as_group

# What the functions here take: a group of a journal's rows, or records in memory.
Records = Group | Trials | Sequence[TrialRecord]

# Rows of a column taken out as a Python list at once (analysis.process, analysis.slices): a
# few hundred KB, never a list of a value per trial.
BLOCK = 1 << 16


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
    counts: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # task -> (n, c)
    not_landed: list[str] = field(default_factory=list)  # tasks no fault of the cell reached
    # What the agent never called in the trials of those tasks ("its model", "its tools"): a
    # fault on a channel the agent never uses cannot land, and the note says so.
    untouched: list[str] = field(default_factory=list)

    def landing_note(self) -> str | None:
        """One line on the tasks this cell's faults did not reach, naming the shorter side."""
        text = self._landing()
        return f"{self.cell}: {text}" if text else None

    def _landing(self) -> str | None:
        if not self.not_landed:
            return None
        total = len(self.counts) + len(self.not_landed)
        if len(self.counts) < len(self.not_landed):
            where = f"reached only: {', '.join(sorted(self.counts)) or 'none'}"
        else:
            where = f"not reached: {', '.join(self.not_landed)}"
        never = f"; there the agent never called {' or '.join(self.untouched)}"
        return (
            f"no fault reached the agent on {len(self.not_landed)} of {total} "
            f"task(s); those are left out of its metrics ({where})"
            + (never if self.untouched else "")
        )

    def gaps(self) -> list[str]:
        """What this cell's numbers leave out (tasks short of k scored trials, unreached,
        unscored), each without the cell's name: the same gap in several cells is one note."""
        s = self.summary
        out = [
            f"pass@{k}/pass^{k} exclude {len(tasks)} task(s) with fewer than {k} scored "
            f"trials: {', '.join(tasks)}"
            for k, tasks in s.excluded.items()
            if tasks
        ]
        landing = self._landing()
        out += [landing] if landing else []
        if s.unscored:
            out.append(f"{len(s.unscored)} task(s) had no evaluable trial: {', '.join(s.unscored)}")
        return out

    @property
    def did_not_land(self) -> bool:
        """A perturbed cell whose faults never reached the agent cannot count as survived."""
        return self.perturbed and self.faults_delivered == 0


def _by_task(g: Group, *weights: np.ndarray) -> tuple[list[str], list[np.ndarray]]:
    """The tasks of ``g`` in first-seen order and, per weight, its sum over each task's rows.

    Sized by the tasks ``g`` holds, not by the journal's vocabulary: a (task, cell) group of a
    journal of 100k tasks costs its own rows, not 100k."""
    sc = g["scenario"]
    uniq, first, inverse = np.unique(sc, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    names = g.t.vocab["scenario"]
    sums = [np.bincount(inverse, weights=w, minlength=len(uniq))[order] for w in weights]
    return [names[c] for c in uniq[order].tolist()], sums


def task_counts(records: Records) -> dict[str, tuple[int, int]]:
    """Per task (first-seen order): scored trials n and passed c."""
    g = as_group(records)
    st = g["status"]
    names, (n, c) = _by_task(g, st != 2, st == 0)
    return dict(zip(names, zip(n.astype(int).tolist(), c.astype(int).tolist(), strict=True),
                    strict=True))  # fmt: skip


def _perturbed(g: Group) -> np.ndarray:
    """Per row: whether its trial ran under a perturbation."""
    stacked = np.array([bool(p) for p in g.t.vocab["plugins"]] or [False])
    codes = g["plugins"]
    return np.where(codes >= 0, stacked[np.maximum(codes, 0)], False)


def not_landed(records: Records) -> list[str]:
    """Tasks of a perturbed cell where no fault reached the agent in any trial.

    Such a task was not tested under the perturbation; scoring it would count an untested
    task as one that survived, so it is left out of the cell's metrics and listed instead.
    """
    g = as_group(records)
    if not len(g) or not _perturbed(g).all():
        return []
    names, (hit,) = _by_task(g, g["delivered"] > 0)
    return sorted(name for name, h in zip(names, hit.tolist(), strict=True) if not h)


def untouched_channels(records: Records) -> list[str]:
    """The channels no trial among ``records`` called: its model (a model request or call)
    and its tools (a tool call). Empty when there are no records."""
    g = as_group(records)
    if not len(g):
        return []
    kinds = int(np.bitwise_or.reduce(g["kinds"]))
    return [name for bit, name in ((1, "its model"), (2, "its tools")) if not kinds & bit]


def landed_counts(records: Records, missed: Sequence[str] | None = None) -> CountsByTask:
    """Per-task (n, c) over the tasks the cell's perturbations reached (``missed``: the
    tasks not reached, when the caller has them already)."""
    g = as_group(records)
    return CountsByTask.of(g).without(not_landed(g) if missed is None else missed)


def in_tasks(g: Group, tasks: Iterable[str]) -> np.ndarray:
    """Per row of ``g``: whether its task is one of ``tasks``."""
    codes = [c for c in (g.t.code("scenario", name) for name in tasks) if c >= 0]
    if not codes or not len(g):
        return np.zeros(len(g), bool)
    return np.isin(g["scenario"], codes)


def veto_counts(g: Group) -> Counter[str]:
    """Veto kinds over ``g``'s trials, in the order they first appear (as most_common breaks
    ties)."""
    first: list[tuple[int, int, str, int]] = []
    for kind in ("safety", "hallucination"):
        n = g[kind]
        if n.any():
            row = int(g.rows[int(np.argmax(n > 0))])
            within = [v[0] for v in g.t.vetoes.get(row, [])].index(kind)
            first.append((row, within, kind, int(n.sum())))
    return Counter({kind: n for _, _, kind, n in sorted(first)})


def summary_of(counts: Mapping[str, tuple[int, int]], ks: Sequence[int]) -> Summary:
    """The Summary of per-task counts (``summarize_counts``; from arrays where they are)."""
    if isinstance(counts, CountsByTask):
        return summarize_sorted(*counts.by_name(), ks)
    return summarize_counts(counts, ks)


def same_tasks(
    counts: Mapping[str, tuple[int, int]], other: Mapping[str, tuple[int, int]]
) -> Mapping[str, tuple[int, int]]:
    """``counts`` on the tasks ``other`` has too."""
    if isinstance(counts, CountsByTask) and isinstance(other, CountsByTask):
        return counts.among(other)
    return {t: nc for t, nc in counts.items() if t in other}


def cell_result(name: str, records: Records, ks: Sequence[int]) -> CellResult:
    g = as_group(records)
    missed = not_landed(g)
    counts = landed_counts(g, missed)
    # Root causes and vetoes describe the same trials the metrics do: the tasks reached.
    reached = g.where(~in_tasks(g, missed))
    failed = reached.where(reached["status"] == 1)
    return CellResult(
        cell=name,
        summary=summary_of(counts, ks),
        trials=len(g),
        not_evaluable=int((g["status"] == 2).sum()),
        root_causes=Counter(c for c in failed.names("root_cause") if c),
        vetoes=veto_counts(reached),
        faults_injected=int(g["faults"].sum()),
        faults_delivered=int(g["delivered"].sum()),
        perturbed=bool(_perturbed(g).any()),
        counts=counts,
        not_landed=missed,
        untouched=untouched_channels(g.where(in_tasks(g, missed))),
    )


def _against_clean(result: CellResult, clean: CellResult, ks: Sequence[int]) -> Delta:
    """perturbed - clean over the same tasks: clean restricted to where the cell landed."""
    return delta(result.summary, summary_of(same_tasks(clean.counts, result.counts), ks))


def groups(records: Records, *columns: str) -> dict[Any, Group]:
    """The rows of each distinct value of ``columns`` (a tuple of names when several), in the
    order each first appears."""
    g = as_group(records)
    if not len(g):
        return {}
    key = np.zeros(len(g), np.int64)
    for column in columns:
        key = key * (len(g.t.vocab[column]) + 1) + g[column] + 1
    order = np.argsort(key, kind="stable")
    _, start = np.unique(key[order], return_index=True)
    bounds = [*start[1:].tolist(), len(order)]
    parts = [(int(order[s]), order[s:e]) for s, e in zip(start.tolist(), bounds, strict=True)]
    out: dict[Any, Group] = {}
    for _, rows in sorted(parts, key=lambda p: p[0]):
        first = int(g.rows[rows[0]])
        names = tuple(g.t.value(c, first) for c in columns)
        out[names if len(columns) > 1 else names[0]] = Group(g.t, g.rows[rows])
    return out


def by_cell(records: Records, ks: Sequence[int]) -> list[CellResult]:
    """One result per cell, clean first, each with its degradation against clean."""
    cells = groups(records, "cell")
    order = [CLEAN] + [c for c in cells if c != CLEAN]
    results = [cell_result(c, cells[c], ks) for c in order if c in cells]
    clean = next((r for r in results if r.cell == CLEAN), None)
    if clean is not None:
        for r in results:
            r.delta = _against_clean(r, clean, ks)
    return results


def by_scenario_cell(records: Records, ks: Sequence[int]) -> dict[tuple[str, str], CellResult]:
    results = {
        key: cell_result(key[1], g, ks) for key, g in groups(records, "scenario", "cell").items()
    }
    for (scenario, _cell), result in results.items():
        clean = results.get((scenario, CLEAN))
        if clean is not None:
            result.delta = _against_clean(result, clean, ks)
    return results


def release(t: Trials) -> None:
    """Let go of the columns read so far where they can be read again (a column cache's,
    each read when first asked for): a command's later steps then hold the columns they read,
    not every one an earlier step read (a report's process measures: ~90 MB at 1M trials).
    Columns read from the lines, the only copy, are kept."""
    if isinstance(t.col, LazyColumns):
        dict.clear(t.col)


def task_names(t: Trials) -> set[str]:
    """The tasks ``t`` has rows of (from its codes: not a name per row, 1M of them)."""
    names: list[str] = t.vocab["scenario"]
    return {names[c] for c in np.unique(t.col["scenario"]).tolist()}
