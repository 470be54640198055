"""Clean twins: each failed perturbed trial beside the clean trial with the same scenario and
trial seed.

Common random numbers give trial i of a scenario the same seed in every cell, so the clean trial
with that scenario and index is what the same agent did, with the same draws, without the
perturbation: where the two trajectories part is where the fault changed the agent's course.
Pure: a function of the journal's records. The steps are compared as
:mod:`chaoseval.investigate.diverge` reduces them (tool, normalised arguments, result class,
delivered faults, answer); model calls are kept on the timeline only when they carry a request
(model channel) or a fault, so a model-channel fault shows where it hit.
"""

from __future__ import annotations

import shlex
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from chaoseval.analysis.aggregate import not_landed
from chaoseval.investigate.diverge import SemStep, common_prefix, label_divergence, semantic_step
from chaoseval.model.records import CLEAN, TrialRecord
from chaoseval.model.trajectory import Fault, Step, Trajectory

__all__ = [
    "FaultMark",
    "TimelineStep",
    "TwinPair",
    "TwinSet",
    "fault_marks",
    "replay_command",
    "timeline",
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
        else:
            text = sem.describe() if sem.kind != "tool" else _tool_text(s)
        out.append(TimelineStep(s.index, s.t, text, marks, sem))
    return out


def _tool_text(s: Step) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in (s.args or {}).items())
    text = f"{s.tool}({args}) -> {s.result_class}"
    return text + (f": {s.error}" if s.error and s.result_class != "ok" else "")


def replay_command(journal: str, trial_id: str) -> str:
    """The command that re-runs one recorded trial from its seeds."""
    return f"chaoseval replay {_quote(journal)} {_quote(trial_id)}"


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


def _pair(failed: TrialRecord, clean: TrialRecord | None) -> TwinPair:
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
    if d == len(a) == len(b):
        label = f"same steps as the clean twin; judged {failed.root_cause or 'failed'}"
        return TwinPair(failed, clean, mine, twin, None, label, loose)
    label = label_divergence(a, d, [b]) if d < len(a) else f"step {d + 1}: stopped early"
    hit = [f.short() for s in mine[max(0, d - 1) : d + 1] for f in s.faults]
    if hit:
        label += f" (fault: {', '.join(dict.fromkeys(hit))})"
    return TwinPair(failed, clean, mine, twin, d, label, loose)


@dataclass
class TwinSet:
    """The failed trials of one perturbed cell (on the tasks its faults reached), each with its
    clean twin; the first ``detailed`` are the ones a report lays out side by side."""

    cell: str
    pairs: list[TwinPair]
    detailed: int
    clean_passed: int  # failures whose clean twin passed: the ones the perturbation caused
    new_failure_causes: Counter[str]  # root causes of those

    @property
    def failed(self) -> int:
        return len(self.pairs)


def twins(records: Sequence[TrialRecord], detailed: int | None = 3) -> dict[str, TwinSet]:
    """Per perturbed cell, its failed trials on the tasks it reached, each with its clean twin,
    failures the perturbation caused (clean twin passed) first; ``detailed`` per cell are meant
    for the side-by-side view (None: all)."""
    clean = {(r.scenario, r.index): r for r in records if r.cell == CLEAN}
    groups: dict[str, list[TrialRecord]] = defaultdict(list)
    for r in records:
        if r.cell != CLEAN:
            groups[r.cell].append(r)
    out: dict[str, TwinSet] = {}
    for cell, rs in groups.items():
        missed = set(not_landed(rs))  # not tested there: a failure is not the fault's doing
        failed = [r for r in rs if r.status == "failed" and r.scenario not in missed]
        if not failed:
            continue
        failed.sort(key=lambda r: (not _twin_passed(clean, r), r.scenario, r.index))
        new = [r for r in failed if _twin_passed(clean, r)]
        out[cell] = TwinSet(
            cell,
            [_pair(r, clean.get((r.scenario, r.index))) for r in failed],
            len(failed) if detailed is None else min(detailed, len(failed)),
            len(new),
            Counter(r.root_cause or "unknown" for r in new),
        )
    return out


def _twin_passed(clean: dict[tuple[str, int], TrialRecord], r: TrialRecord) -> bool:
    twin = clean.get((r.scenario, r.index))
    return twin is not None and twin.status == "passed"
