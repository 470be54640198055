"""Process metrics: how the agent got there (legality, correctness against the reference,
path efficiency) and what it spent (tokens, cost, model calls, latency).

The reference solution's calls come from the run manifest, recorded when the run started: a
report never loads a scenario or runs a trial."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np

from chaoseval.analysis.aggregate import BLOCK, Records
from chaoseval.model.records import ToolCall
from chaoseval.store.columns import Group, Trials, as_group, trials_of
from chaoseval.store.lite import ILLEGAL_ERRORS, RefCalls, call_key

__all__ = [
    "ILLEGAL_ERRORS",
    "ProcessMetrics",
    "References",
    "process_metrics",
    "recorded_references",
]

NOT_USED = "reference solutions not run (tool-call correctness and path efficiency off)"
NOT_RECORDED = (
    "this journal records no reference solutions (written before chaoseval recorded them, or "
    "imported): tool-call correctness and path efficiency are off"
)


@dataclass
class References:
    """What the report knows of the scenarios' reference solutions."""

    calls: dict[str, list[ToolCall]] = field(default_factory=dict)  # only references that passed
    # Passed references already keyed as the journal's columns were measured against (the
    # manifest's, read with them): nothing to key or measure again.
    keyed: dict[str, RefCalls] = field(default_factory=dict)
    steps: dict[str, int] = field(default_factory=dict)  # declared reference steps
    note: str | None = None  # what is missing, for the process table


def recorded_references(journal: Trials, warnings: list[str]) -> References:
    """The reference calls and steps the run recorded in its manifest, and a note on what is
    missing; a reference that could not run becomes a warning."""
    recorded = journal.references
    if recorded is None:
        return References(note=NOT_RECORDED)
    out = References(steps=recorded.steps, keyed=recorded.calls)
    for sid, error in recorded.errors.items():
        warnings.append(f"reference solution of {sid} could not run: {error}")
    present = {journal.vocab["scenario"][c] for c in np.unique(journal.col["scenario"]).tolist()}
    missing = sorted(present - set(out.calls) - set(out.keyed))
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
      when none did (in-process agents), so the agent's latency can be told from chaoseval's;
    - ``user_turns_mean``: the agent's messages to the user per scored trial of the scenarios
      with a user (those in which any trial of the journal conversed): None without one.
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
    user_turns_mean: float | None = None

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        # In-process agents, scenarios without a user: reports stay as they were.
        for key in ("channel_overhead_mean", "user_turns_mean"):
            if out[key] is None:
                del out[key]
        return out


def _mean(xs: Sequence[float] | np.ndarray) -> float | None:
    return fsum(xs) / len(xs) if len(xs) else None


def fsum(xs: Sequence[float] | np.ndarray) -> float:
    """``math.fsum(xs)``, the same exact sum: an array's values taken out as lists a block at
    a time (a third of the time of reading them one numpy scalar at a time, without a list of
    a Python float per trial), all in one fsum (sums of blocks would round)."""
    if not isinstance(xs, np.ndarray):
        return math.fsum(xs)
    blocks = (xs[i : i + BLOCK].tolist() for i in range(0, len(xs), BLOCK))
    return math.fsum(chain.from_iterable(blocks))



def _defined(xs: np.ndarray) -> np.ndarray:
    out: np.ndarray = xs[~np.isnan(xs)]
    return out


def _keys(calls: Sequence[ToolCall]) -> set[str]:
    return {call_key(c.tool, c.args) for c in calls}


def _table_keys(g: Group, scenario: str) -> set[str] | None:
    ref = g.t.refs.get(scenario)
    return ref.keys if ref is not None else None


def process_metrics(
    cell: str, records: Records, references: References | None = None
) -> ProcessMetrics:
    g = as_group(records)
    refs = references or References()
    status, tool_calls = g["status"], g["tool_calls"]
    scored = status != 2
    # Reference steps per row (0: none declared); path efficiency over passed trials.
    ref_steps = np.array([refs.steps.get(s) or 0 for s in g.t.vocab["scenario"]] or [0])
    ref_n = ref_steps[g["scenario"]] if len(g) else np.zeros(0, np.int64)
    eff = (ref_n > 0) & (status == 0) & (tool_calls > 0)
    with_ref = np.array(
        [s in refs.calls or s in refs.keyed for s in g.t.vocab["scenario"]] or [False]
    )
    has_ref = with_ref[g["scenario"]] if len(g) else np.zeros(0, bool)
    # Correctness was measured against the manifest's references while reading; against
    # other references the group is measured again.
    if any(_keys(c) != _table_keys(g, sid) for sid, c in refs.calls.items()):
        own = {sid: RefCalls(_keys(c), {x.tool for x in c}) for sid, c in refs.calls.items()}
        g = Group.all(trials_of(None, g.records(), refs=own))
    correct = np.where(has_ref, g["correct"], np.nan)
    n = len(g)
    calls = int(tool_calls.sum())
    # Summed from the arrays (math.fsum takes any iterable of floats: the same exact sums)
    # rather than from lists of a million Python floats each.
    tokens = g["tokens"]
    costs = g["cost"]
    sims = np.sort(g["sim_seconds"])
    walls = g["wall_seconds"]
    return ProcessMetrics(
        cell=cell,
        trials=n,
        tool_calls=calls,
        legality=int(g["legal"].sum()) / calls if calls else None,
        correctness=_mean(_defined(correct)),
        right_tool=_mean(_defined(np.where(has_ref, g["right_tool"], np.nan))),
        coverage=_mean(_defined(np.where(has_ref, g["coverage"], np.nan))),
        path_efficiency=_mean(ref_n[eff] / tool_calls[eff]),
        steps_mean=_mean(tool_calls[scored]),
        tokens_mean=fsum(tokens) / n if n else 0.0,
        tokens_total=int(tokens.sum()),
        cost_mean=fsum(costs) / n if n else 0.0,
        cost_total=fsum(costs),
        model_calls=int(g["model_calls"].sum()),
        sim_seconds_mean=fsum(sims) / n if n else 0.0,
        sim_seconds_p95=float(np.quantile(sims, 0.95)) if len(sims) else 0.0,
        wall_seconds_mean=fsum(walls) / n if n else 0.0,
        wall_seconds_total=fsum(walls),
        sim_seconds_total=fsum(sims),
        channel_overhead_mean=_mean(_defined(g["channel_overhead"])),
        user_turns_mean=_user_turns(g, scored),
    )


def _user_turns(g: Group, scored: np.ndarray) -> float | None:
    """Turns per scored trial of the tasks with a user: those any trial of the journal
    conversed in (a trial that never spoke to its user counts its 0)."""
    every = g.t.col["user_turns"]
    talked = np.unique(g.t.col["scenario"][every > 0])
    if not len(talked) or not len(g):
        return None
    return _mean(g["user_turns"][scored & np.isin(g["scenario"], talked)])
