"""Clean twins: each failed perturbed trial beside the clean trial with the same scenario and
trial seed.

Common random numbers give trial i of a scenario the same seed in every cell, so the clean trial
with that scenario and index is what the same agent did, with the same draws, without the
perturbation: where the two trajectories part is where the fault changed the agent's course.
Pure: a function of the journal's records. The steps are compared as
:mod:`chaoseval.investigate.semantic` reduces them (tool, normalised arguments, result class,
delivered faults, answer); model calls are kept on the timeline only when they carry a request
(model channel) or a fault, so a model-channel fault shows where it hit.
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import overload

import numpy as np

from chaoseval.analysis.aggregate import Records, groups, in_tasks, name_ranks, not_landed
from chaoseval.analysis.reasons import turn_transcript
from chaoseval.investigate.diverge import label_divergence
from chaoseval.investigate.semantic import SemStep, common_prefix, crash_reason, semantic_step
from chaoseval.model.records import CLEAN, TrialRecord
from chaoseval.model.trajectory import Fault, Step, Trajectory
from chaoseval.store.columns import Group, Trials, as_group

__all__ = [
    "FaultMark",
    "TimelineStep",
    "TwinPair",
    "TwinSet",
    "crash_reason",
    "fault_marks",
    "replay_command",
    "timeline",
    "twin_pair",
    "twins",
]


@dataclass(frozen=True)
class FaultMark:
    """One injected fault as the report shows it."""

    perturbation: str
    kind: str
    delivered: bool
    absorbed: bool  # absorbed by the client SDK's retry (model channel, issue 9)

    def short(self) -> str:
        return self.kind + (" absorbed" if self.absorbed else "" if self.delivered else " (missed)")

    def describe(self) -> str:
        state = (
            "absorbed by a retry"
            if self.absorbed
            else ("delivered" if self.delivered else "not delivered")
        )
        return f"{self.perturbation}/{self.kind} ({state})"


def _mark(f: Fault) -> FaultMark:
    return FaultMark(f.perturbation, f.kind, f.delivered, bool(f.detail.get("absorbed")))


def fault_marks(record: TrialRecord) -> list[FaultMark]:
    return [_mark(f) for f in record.trajectory.faults]


@dataclass(frozen=True)
class TimelineStep:
    step: int  # index into the trajectory's steps
    t: float  # trial clock seconds
    text: str
    faults: tuple[FaultMark, ...]
    key: SemStep  # what two trajectories are compared on


def _model_key(traj: Trajectory, s: Step) -> SemStep:
    kinds = tuple(traj.faults[i].kind for i in s.faults if 0 <= i < len(traj.faults))
    return SemStep(kind="model", result=s.result_class, faults=kinds)


def _model_text(s: Step) -> str:
    request = s.args or {}
    answer = s.result if isinstance(s.result, dict) else {}
    text = "model call"
    if request.get("attempt"):
        text += f" (attempt {request['attempt']})"
    text += f" -> {answer.get('status') or s.result_class or 'ok'}"
    if answer.get("tool_calls"):
        text += ": calls " + ", ".join(str(c) for c in answer["tool_calls"])
    return text


def timeline(record: TrialRecord) -> list[TimelineStep]:
    """The steps a reader needs: tool calls, observations, the answer, and the model calls
    that carry a request or a fault."""
    traj = record.trajectory
    out: list[TimelineStep] = []
    for s in traj.steps:
        marks = tuple(_mark(traj.faults[i]) for i in s.faults if 0 <= i < len(traj.faults))
        sem = semantic_step(traj, s)
        if sem is None:
            if s.kind != "model" or not (s.args or s.faults):
                continue
            sem, text = _model_key(traj, s), _model_text(s)
        elif sem.kind == "user":
            text = f"{sem.describe()}: {turn_transcript(s)}"
        else:
            text = sem.describe() if sem.kind != "tool" else _tool_text(s)
        out.append(TimelineStep(s.index, s.t, text, marks, sem))
    return out


def _tool_text(s: Step) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in (s.args or {}).items())
    text = f"{s.tool}({args}) -> {s.result_class}"
    return text + (f": {s.error}" if s.error and s.result_class != "ok" else "")


def replay_command(journal: str, trial_id: str, scenarios: Sequence[str] = ()) -> str:
    """The command that re-runs one recorded trial from its seeds; ``scenarios``: the files and
    directories the run loaded its scenarios from (none: the installed packs, found anyway)."""
    paths = "".join(f" --scenarios {_quote(p)}" for p in scenarios)
    return f"chaoseval replay {_quote(journal)} {_quote(trial_id)}{paths}"


def _quote(word: str) -> str:
    """Shell quoting that stays readable for perturbation specs with single quotes inside."""
    if "'" in word and not any(c in word for c in '"$`\\!'):
        return f'"{word}"'
    return shlex.quote(word)


@dataclass
class TwinPair:
    perturbed: TrialRecord
    clean: TrialRecord | None  # None when the journal has no clean trial with that seed
    perturbed_steps: list[TimelineStep]
    clean_steps: list[TimelineStep]
    diverge_at: int | None  # index into both timelines; None when they never part
    label: str  # what happened at the divergence, in words
    loose_faults: list[FaultMark] = field(default_factory=list)  # faults tied to no step
    # Where the run loaded its scenarios from (RunManifest.scenario_paths), for replay_command.
    scenarios: tuple[str, ...] = ()


def twin_pair(failed: TrialRecord, clean: TrialRecord | None) -> TwinPair:
    """``failed`` laid out beside its clean twin, the first step where they part found."""
    mine = timeline(failed)
    twin = timeline(clean) if clean is not None else []
    loose = [_mark(f) for f in failed.trajectory.faults if f.step is None]
    if clean is None:
        return TwinPair(failed, None, mine, [], None, "no clean twin in this journal", loose)
    # Compared without the fault marks: the fault is the treatment, not a divergence; what it
    # changed (a result class, the next call, the answer) is.
    a = [replace(s.key, faults=()) for s in mine]
    b = [replace(s.key, faults=()) for s in twin]
    d = common_prefix(a, b)
    crashed = crash_reason(failed)  # said wherever the steps stop, never "stopped early"
    if d == len(a) == len(b):
        judged = crashed or f"judged {failed.root_cause or 'failed'}"
        label = f"same steps as the clean twin; {judged}"
        return TwinPair(failed, clean, mine, twin, None, label, loose)
    label = (
        label_divergence(a, d, [b], ended=crashed, where="the clean twin")
        if d < len(a)
        else f"step {d + 1}: {crashed or 'stopped early'}"
    )
    hit = [f.short() for s in mine[max(0, d - 1) : d + 1] for f in s.faults]
    if hit:
        label += f" (fault: {', '.join(dict.fromkeys(hit))})"
    if crashed and crashed not in label:
        label += f"; then {crashed}"
    return TwinPair(failed, clean, mine, twin, d, label, loose)


class LazyPairs(Sequence[TwinPair]):
    """The pairs of one cell, each laid out from its two records when it is looked at: a
    report shows a few, so only those few trajectories are read again from the journal."""

    def __init__(self, t: Trials, rows: np.ndarray, twins: np.ndarray) -> None:
        self._t = t
        # Rows of the failed trials and of their clean twins (-1: none), as arrays: a list of
        # pairs of Python ints was ~45 MB for 300k failed trials.
        self._rows, self._twins = rows, twins

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, i: int) -> TwinPair: ...
    @overload
    def __getitem__(self, i: slice) -> list[TwinPair]: ...
    def __getitem__(self, i: int | slice) -> TwinPair | list[TwinPair]:
        if isinstance(i, slice):
            return [self._pair(j) for j in range(len(self))[i]]
        return self._pair(range(len(self))[i])

    def __iter__(self) -> Iterator[TwinPair]:
        return (self._pair(j) for j in range(len(self)))

    def _pair(self, i: int) -> TwinPair:
        twin = int(self._twins[i])
        clean = self._t.record(twin) if twin >= 0 else None
        pair = twin_pair(self._t.record(int(self._rows[i])), clean)
        manifest = self._t.manifest
        if manifest is not None and manifest.scenario_paths:
            pair.scenarios = tuple(manifest.scenario_paths)
        return pair


@dataclass
class TwinSet:
    """The failed trials of one perturbed cell (on the tasks its faults reached), each with its
    clean twin; the first ``detailed`` are the ones a report lays out side by side."""

    cell: str
    pairs: Sequence[TwinPair]
    detailed: int
    clean_passed: int  # failures whose clean twin passed: the ones the perturbation caused
    new_failure_causes: Counter[str]  # root causes of those

    @property
    def failed(self) -> int:
        return len(self.pairs)


class _Clean:
    """The clean trial of each (task, index), the last one of the rows when a pair repeats:
    sorted keys searched, not a dict of the clean cell's 300k pairs at 100k tasks."""

    def __init__(self, c: Group | None) -> None:
        if c is None or not len(c):
            self.keys, self.at = np.zeros(0, np.int64), np.zeros(0, np.int64)
            return
        self.span = int(c["index"].max()) + 1
        keys = c["scenario"].astype(np.int64) * self.span + c["index"]
        order = np.argsort(keys, kind="stable")  # equal keys in row order: the last is last
        self.keys, self.at = keys[order], c.rows[order]

    def rows(self, sc: np.ndarray, index: np.ndarray) -> np.ndarray:
        """The clean twin's row of each (task code, index), -1 where there is none."""
        if not len(self.keys):
            return np.full(len(sc), -1, np.int64)
        keys = sc.astype(np.int64) * self.span + index
        pos = np.searchsorted(self.keys, keys, side="right") - 1
        hit = (pos >= 0) & (index < self.span)
        hit[hit] &= self.keys[pos[hit]] == keys[hit]
        out: np.ndarray = np.where(hit, self.at[np.maximum(pos, 0)], -1)
        return out


def twins(records: Records, detailed: int | None = 3) -> dict[str, TwinSet]:
    """Per perturbed cell, its failed trials on the tasks it reached, each with its clean twin,
    failures the perturbation caused (clean twin passed) first; ``detailed`` per cell are meant
    for the side-by-side view (None: all)."""
    g = as_group(records)
    t = g.t
    by = groups(g, "cell")
    clean = _Clean(by.get(CLEAN))
    status = t.col["status"]
    rank = name_ranks(t.vocab["scenario"])
    out: dict[str, TwinSet] = {}
    for cell, rs in by.items():
        if cell == CLEAN:
            continue
        # Not tested on the tasks no fault reached: a failure there is not the fault's doing.
        f = rs.where((rs["status"] == 1) & ~in_tasks(rs, not_landed(rs)))
        if not len(f):
            continue
        sc, index = f["scenario"], f["index"]
        twin = clean.rows(sc, index)
        ok = (twin >= 0) & (status[np.maximum(twin, 0)] == 0)
        # New failures (clean twin passed) first, then by task name and index; in row order
        # among equals (a stable sort, as the list's was).
        order = np.lexsort((index, rank[sc], ~ok))
        rows, twin, ok = f.rows[order], twin[order], ok[order]
        new = rows[ok]
        out[cell] = TwinSet(
            cell,
            LazyPairs(t, rows, twin),
            len(rows) if detailed is None else min(detailed, len(rows)),
            len(new),
            Counter(t.value("root_cause", row) or "unknown" for row in new.tolist()),
        )
    return out
