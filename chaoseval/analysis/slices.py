"""Where failures concentrate: root causes by scenario tag and by tool, and the veto items."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chaoseval.analysis.aggregate import Records
from chaoseval.model.records import TrialRecord
from chaoseval.store.columns import Group, as_group, trials_of
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


def failing_tool(r: TrialRecord) -> str | None:
    """The tool most plausibly behind a failure: the first call that did not come back ok."""
    return summarize(r, {}).failing_tool


@dataclass
class ToolSlice:
    calls: int = 0
    not_ok: int = 0
    faults_delivered: int = 0
    failed_trials: int = 0
    causes: Counter[str] = field(default_factory=Counter)

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


def _by_tag(g: Group) -> tuple[dict[str, Counter[str]], dict[str, tuple[int, int]]]:
    by_tag: dict[str, Counter[str]] = defaultdict(Counter)
    tag_trials: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    tag_sets = [tags or (UNTAGGED,) for tags in g.t.vocab["tags"]]
    causes = g.t.vocab["root_cause"]
    tags, status, cause = g["tags"].tolist(), g["status"].tolist(), g["root_cause"].tolist()
    for code, st, rc in zip(tags, status, cause, strict=True):
        for tag in tag_sets[code] if code >= 0 else (UNTAGGED,):
            if st != 2:
                entry = tag_trials[tag]
                entry[0] += 1
                entry[1] += st == 1
            if st == 1 and rc >= 0 and causes[rc]:
                by_tag[tag][causes[rc]] += 1
    return dict(by_tag), {t: (v[0], v[1]) for t, v in tag_trials.items()}


def slices(records: Records) -> Slices:
    g = as_group(records)
    by_tag, tag_trials = _by_tag(g)
    vetoes: list[VetoItem] = []
    wanted = set(g.rows.tolist()) if len(g) != len(g.t) else None
    for row, items in g.t.vetoes.items():
        if wanted is None or row in wanted:
            tid, sc, cell = g.t.trial_id(row), g.t.value("scenario", row), g.t.value("cell", row)
            vetoes += [VetoItem(kind, tid, sc, cell, detail) for kind, detail in items]
    return Slices(by_tag=by_tag, tag_trials=tag_trials, by_tool=_by_tool(g), vetoes=vetoes)
