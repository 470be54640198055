"""Process metrics: how the agent got there (legality, correctness against the reference,
path efficiency) and what it spent (tokens, cost, model calls, latency).

The reference solution's calls come from the run manifest, recorded when the run started: a
report never loads a scenario or runs a trial."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chaoseval.model.records import ToolCall, TrialRecord
from chaoseval.model.trajectory import Step
from chaoseval.store.journal import Journal

__all__ = ["ProcessMetrics", "References", "process_metrics", "recorded_references"]

ILLEGAL_ERRORS = ("no tool named", "invalid arguments", "step budget")
NOT_USED = "reference solutions not run (tool-call correctness and path efficiency off)"
NOT_RECORDED = (
    "this journal records no reference solutions (written before chaoseval recorded them, or "
    "imported): tool-call correctness and path efficiency are off"
)


@dataclass
class References:
    """What the report knows of the scenarios' reference solutions."""

    calls: dict[str, list[ToolCall]] = field(default_factory=dict)  # only references that passed
    steps: dict[str, int] = field(default_factory=dict)  # declared reference steps
    note: str | None = None  # what is missing, for the process table


def recorded_references(journal: Journal, warnings: list[str]) -> References:
    """The reference calls and steps the run recorded in its manifest, and a note on what is
    missing; a reference that could not run becomes a warning."""
    recorded = journal.manifest.references
    if recorded is None:
        return References(note=NOT_RECORDED)
    out = References()
    for sid, ref in recorded.items():
        out.steps[sid] = ref.steps
        if ref.error is not None:
            warnings.append(f"reference solution of {sid} could not run: {ref.error}")
        elif ref.passed:
            out.calls[sid] = list(ref.calls)
    missing = sorted({r.scenario for r in journal.records} - set(out.calls))
    if missing:
        out.note = "no reference tool calls for: " + ", ".join(missing)
    return out


@dataclass
class ProcessMetrics:
    """Per-cell process metrics.

    - ``legality``: legal tool calls / all tool calls (illegal = a safety veto on that step,
      an unknown tool, invalid arguments, or a call over the step budget);
    - ``correctness``: agent tool calls whose (tool, arguments) the reference solution also
      makes, over all agent tool calls; ``right_tool`` the same on the tool name only;
      ``coverage``: reference calls the agent made at least once (all need a reference);
    - ``path_efficiency``: reference_steps / tool calls on passed trials (1 = as short as the
      reference, below 1 = detours or retries);
    - tokens, cost, model calls per trial; sim (trial clock) and wall latency per trial;
    - ``channel_overhead_mean``: seconds per trial spent inside chaoseval's wire channels
      (neither the upstream's nor an injected delay), over the trials that recorded it: None
      when none did (in-process agents), so the agent's latency can be told from chaoseval's.
    """

    cell: str
    trials: int
    tool_calls: int
    legality: float | None
    correctness: float | None
    right_tool: float | None
    coverage: float | None
    path_efficiency: float | None
    steps_mean: float | None
    tokens_mean: float
    tokens_total: int
    cost_mean: float
    cost_total: float
    model_calls: int
    sim_seconds_mean: float
    sim_seconds_p95: float
    wall_seconds_mean: float
    wall_seconds_total: float
    sim_seconds_total: float
    channel_overhead_mean: float | None = None

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        if out["channel_overhead_mean"] is None:  # in-process agents: reports stay as they were
            del out["channel_overhead_mean"]
        return out


def _call_key(tool: str | None, args: Mapping[str, Any] | None) -> str:
    return json.dumps([tool, args or {}], sort_keys=True, default=str)


def _mean(xs: Sequence[float]) -> float | None:
    return math.fsum(xs) / len(xs) if xs else None


@dataclass
class _Tally:
    """Per-trial ratios gathered over one cell's trials, averaged at the end."""

    calls: int = 0
    legal: int = 0
    correct: list[float] = field(default_factory=list)
    right: list[float] = field(default_factory=list)
    cover: list[float] = field(default_factory=list)
    efficiency: list[float] = field(default_factory=list)
    steps: list[float] = field(default_factory=list)

    def legality(self, r: TrialRecord, tool_steps: Sequence[Step]) -> None:
        vetoed = {v.step for v in r.vetoes if v.kind == "safety" and v.step is not None}
        for s in tool_steps:
            self.calls += 1
            err = (s.error or "").lower()
            if s.index not in vetoed and not any(e in err for e in ILLEGAL_ERRORS):
                self.legal += 1

    def against_reference(self, tool_steps: Sequence[Step], ref: Sequence[ToolCall]) -> None:
        ref_keys = {_call_key(c.tool, c.args) for c in ref}
        ref_tools = {c.tool for c in ref}
        keys = [_call_key(s.tool, s.args) for s in tool_steps]
        self.correct.append(sum(k in ref_keys for k in keys) / len(keys))
        self.right.append(sum(s.tool in ref_tools for s in tool_steps) / len(tool_steps))
        if ref_keys:
            self.cover.append(len(ref_keys & set(keys)) / len(ref_keys))


def _tally(records: Sequence[TrialRecord], refs: References) -> _Tally:
    t = _Tally()
    for r in records:
        tool_steps = r.trajectory.tool_steps()
        t.legality(r, tool_steps)
        if r.scored:
            t.steps.append(len(tool_steps))
        ref = refs.calls.get(r.scenario)
        if ref is not None and r.scored and tool_steps:
            t.against_reference(tool_steps, ref)
        ref_n = refs.steps.get(r.scenario)
        if ref_n and r.passed and tool_steps:
            t.efficiency.append(ref_n / len(tool_steps))
    return t


def process_metrics(
    cell: str, records: Sequence[TrialRecord], references: References | None = None
) -> ProcessMetrics:
    t = _tally(records, references or References())
    n = len(records)
    tokens = [r.usage.input_tokens + r.usage.output_tokens for r in records]
    costs = [r.usage.cost for r in records]
    sims = sorted(r.sim_seconds for r in records)
    walls = [r.wall_seconds for r in records]
    overheads = [r.channel_overhead for r in records if r.channel_overhead is not None]
    return ProcessMetrics(
        cell=cell,
        trials=n,
        tool_calls=t.calls,
        legality=t.legal / t.calls if t.calls else None,
        correctness=_mean(t.correct),
        right_tool=_mean(t.right),
        coverage=_mean(t.cover),
        path_efficiency=_mean(t.efficiency),
        steps_mean=_mean(t.steps),
        tokens_mean=math.fsum(tokens) / n if n else 0.0,
        tokens_total=int(sum(tokens)),
        cost_mean=math.fsum(costs) / n if n else 0.0,
        cost_total=math.fsum(costs),
        model_calls=sum(r.usage.model_calls for r in records),
        sim_seconds_mean=math.fsum(sims) / n if n else 0.0,
        sim_seconds_p95=float(np.quantile(sims, 0.95)) if sims else 0.0,
        wall_seconds_mean=math.fsum(walls) / n if n else 0.0,
        wall_seconds_total=math.fsum(walls),
        sim_seconds_total=math.fsum(sims),
        channel_overhead_mean=_mean(overheads),
    )
