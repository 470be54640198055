"""Where failures concentrate: root causes by scenario tag and by tool, and the veto items."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from chaoseval.analysis.aggregate import BLOCK, Records
from chaoseval.model.records import TrialRecord, make_trial_id
from chaoseval.store.columns import Group, ToolTally, as_group, trials_of
from chaoseval.store.lite import summarize

__all__ = ["Slices", "ToolSlice", "VetoItem", "failing_tool", "slices"]

UNTAGGED = "(untagged)"


@dataclass(frozen=True)
class VetoItem:
    kind: str
    trial_id: str
    scenario: str
    cell: str
    detail: str
    name: str | None = None  # the scenario's veto rule that found it

    def to_json(self) -> dict[str, Any]:
        """Its fields; ``name`` only when a named rule found it (as the record has it)."""
        out = dict(self.__dict__)
        if self.name is None:
            del out["name"]
        return out


def failing_tool(r: TrialRecord) -> str | None:
    """The tool most plausibly behind a failure: the first call that did not come back ok."""
    return summarize(r, {}).failing_tool


@dataclass
class ToolSlice(ToolTally):
    """A tool's sums as the columns hold them (store.builder.ToolTally), for the report."""

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "not_ok": self.not_ok,
            "faults_delivered": self.faults_delivered,
            "failed_trials": self.failed_trials,
            "root_causes": dict(sorted(self.causes.items())),
        }


@dataclass
class Slices:
    by_tag: dict[str, Counter[str]]  # tag -> root causes of its failed trials
    tag_trials: dict[str, tuple[int, int]]  # tag -> (scored, failed)
    by_tool: dict[str, ToolSlice]
    vetoes: list[VetoItem]


def _by_tool(g: Group) -> dict[str, ToolSlice]:
    """Calls per tool: summed as the journal was read (a subset of it is read again)."""
    if len(g) == len(g.t) and (g.rows == np.arange(len(g.t))).all():
        tallies = g.t.by_tool
    else:
        tallies = trials_of(None, g.records()).by_tool
    return {
        tool: ToolSlice(v.calls, v.not_ok, v.faults_delivered, v.failed_trials, Counter(v.causes))
        for tool, v in tallies.items()
    }


def _combinations(g: Group, width: int) -> list[tuple[int, int, int, int]]:
    """The rows' distinct (tags code, status, cause code), each with how many rows have it,
    in the order of their first rows (taken a block of rows at a time: a few MB at most)."""
    tags, status, cause = g["tags"], g["status"], g["root_cause"]
    seen: dict[int, list[int]] = {}  # combination -> [its first row, its rows]
    for start in range(0, len(tags), BLOCK):
        block = slice(start, start + BLOCK)
        key = (tags[block].astype(np.int64) + 1) * (3 * width)
        key += status[block].astype(np.int64) * width + cause[block] + 1
        combos, first, counts = np.unique(key, return_index=True, return_counts=True)
        for combo, at, n in zip(combos.tolist(), first.tolist(), counts.tolist(), strict=True):
            entry = seen.get(combo)
            if entry is None:
                seen[combo] = [start + at, n]
            else:
                entry[1] += n
    ordered = sorted(seen.items(), key=lambda item: item[1][0])
    return [(c // (3 * width) - 1, c // width % 3, c % width - 1, n) for c, (_, n) in ordered]



def _by_tag(g: Group) -> tuple[dict[str, Counter[str]], dict[str, tuple[int, int]]]:
    by_tag: dict[str, Counter[str]] = defaultdict(Counter)
    tag_trials: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    tag_sets = [tags or (UNTAGGED,) for tags in g.t.vocab["tags"]]
    causes = g.t.vocab["root_cause"]
    # Each distinct (tags, status, cause) once, with its rows' count, in the order of its
    # first row: every key below is made at the same one of them as row by row (the first
    # row that makes it is the first of its combination), and counted as often.
    for code, st, rc, times in _combinations(g, len(causes) + 1):
        for tag in tag_sets[code] if code >= 0 else (UNTAGGED,):
            if st != 2:
                entry = tag_trials[tag]
                entry[0] += times
                entry[1] += times if st == 1 else 0
            if st == 1 and rc >= 0 and causes[rc]:
                by_tag[tag][causes[rc]] += times
    return dict(by_tag), {t: (v[0], v[1]) for t, v in tag_trials.items()}


def slices(records: Records) -> Slices:
    g = as_group(records)
    by_tag, tag_trials = _by_tag(g)
    return Slices(by_tag=by_tag, tag_trials=tag_trials, by_tool=_by_tool(g), vetoes=_vetoes(g))


def _vetoes(g: Group) -> list[VetoItem]:
    """Each veto item of the group's rows, sorted by trial id (each row's names and trial id as
    Trials.value and Trials.trial_id give them, taken out of the columns a block at a time)."""
    t = g.t
    by_row = t.vetoes
    rows = np.fromiter(by_row.keys(), np.int64, count=len(by_row))
    kept = np.isin(rows, g.rows) if len(g) != len(t) else np.ones(len(rows), bool)
    scenarios, cells, odd_ids = t.vocab["scenario"], t.vocab["cell"], t.odd_ids
    vetoes: list[VetoItem] = []
    items = iter(by_row.values())
    for start in range(0, len(rows), BLOCK):
        at = rows[start : start + BLOCK]
        for row, keep, found, s, c, index in zip(
            at.tolist(),
            kept[start : start + BLOCK].tolist(),
            items,
            t.col["scenario"][at].tolist(),
            t.col["cell"][at].tolist(),
            t.col["index"][at].tolist(),
            strict=False,  # (items goes on past the block)
        ):
            if not keep:
                continue
            sc: Any = scenarios[s] if s >= 0 else None  # (as Trials.value gives it)
            cell: Any = cells[c] if c >= 0 else None
            tid = odd_ids.get(row)
            if tid is None:
                tid = make_trial_id(sc, cell, index)
            vetoes += [VetoItem(v[0], tid, sc, cell, v[1], *v[2:]) for v in found]
    # By trial id, not row order: a journal resumed (or run with more workers) lists its trials
    # in completion order, and two journals of the same trials must give the same report.
    vetoes.sort(key=lambda v: v.trial_id)
    return vetoes
