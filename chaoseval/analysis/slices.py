"""Where failures concentrate: root causes by scenario tag and by tool, and the veto items."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from chaoseval.model.records import TrialRecord

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
    steps = r.trajectory.tool_steps()
    for s in steps:
        if s.result_class not in (None, "ok"):
            return s.tool
    return steps[-1].tool if steps else None


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


def _tool_calls(r: TrialRecord, by_tool: dict[str, ToolSlice]) -> None:
    faults = r.trajectory.faults
    for s in r.trajectory.tool_steps():
        sl = by_tool[s.tool or "?"]
        sl.calls += 1
        sl.not_ok += s.result_class not in (None, "ok")
        sl.faults_delivered += sum(faults[i].delivered for i in s.faults if i < len(faults))
    if r.status == "failed":
        tool = failing_tool(r)
        if tool is not None:
            by_tool[tool].failed_trials += 1
            if r.root_cause:
                by_tool[tool].causes[r.root_cause] += 1


def slices(records: Iterable[TrialRecord]) -> Slices:
    by_tag: dict[str, Counter[str]] = defaultdict(Counter)
    tag_trials: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_tool: dict[str, ToolSlice] = defaultdict(ToolSlice)
    vetoes: list[VetoItem] = []
    for r in records:
        for tag in r.scenario_tags or [UNTAGGED]:
            if r.scored:
                tag_trials[tag][0] += 1
                tag_trials[tag][1] += r.status == "failed"
            if r.status == "failed" and r.root_cause:
                by_tag[tag][r.root_cause] += 1
        _tool_calls(r, by_tool)
        vetoes += [VetoItem(v.kind, r.trial_id, r.scenario, r.cell, v.detail) for v in r.vetoes]
    return Slices(
        by_tag=dict(by_tag),
        tag_trials={t: (v[0], v[1]) for t, v in tag_trials.items()},
        by_tool=dict(by_tool),
        vetoes=vetoes,
    )
