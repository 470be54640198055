"""Failure-trajectory analysis: where a failed trial first left the path successful ones took.

Each trajectory is reduced to semantic steps (tool, normalised arguments, result class, the
faults that hit it, and a final answer step); model-call bookkeeping and timings are dropped.
A failed trial's divergence point is the first step at which it matches no successful trial
of the same task that agreed with it so far (the longest common prefix with any success), so
a failure is never blamed on a step some success also took. Failures are then grouped by a
readable label of that point.

Consistency is reported apart from correctness: a task whose every trial fails the same way is
a *stable error*, never "stable".
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from chaoseval.model.records import CLEAN, TrialRecord
from chaoseval.model.trajectory import Step, Trajectory
from chaoseval.store.journal import Journal

Consistency = Literal["stable", "stable error", "unstable errors", "inconsistent", "not evaluable"]


@dataclass(frozen=True)
class SemStep:
    """One step as far as the task's semantics go."""

    kind: str  # tool | answer | observation (| model, in the report's twin timelines)
    tool: str | None = None
    args: tuple[tuple[str, Any], ...] = ()
    result: str | None = None
    faults: tuple[str, ...] = ()  # delivered fault kinds, e.g. ("timeout",)
    gave_up: bool = False

    def describe(self) -> str:
        if self.kind == "answer":
            return "gave up" if self.gave_up else "answered"
        if self.kind == "observation":
            return "looked at the page"
        if self.kind == "model":  # a model-channel call (the report's clean-twin timelines)
            return f"model call -> {self.result}" + (
                f" [{', '.join(self.faults)}]" if self.faults else ""
            )
        args = ", ".join(f"{k}={v!r}" for k, v in self.args)
        text = f"{self.tool}({args}) -> {self.result}"
        if self.faults:
            text += f" [{', '.join(self.faults)}]"
        return text


def _norm(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.split()).casefold()
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return tuple(sorted((k, _norm(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_norm(v) for v in value)
    return value


def _fault_kinds(traj: Trajectory, step: Step) -> tuple[str, ...]:
    return tuple(
        traj.faults[i].kind
        for i in step.faults
        if 0 <= i < len(traj.faults) and traj.faults[i].delivered
    )


def semantic_step(traj: Trajectory, s: Step) -> SemStep | None:
    """One step as far as the task's semantics go; None for bookkeeping (model calls, notes)."""
    if s.kind == "tool":
        return SemStep(
            kind="tool",
            tool=s.tool,
            args=tuple(sorted((k, _norm(v)) for k, v in (s.args or {}).items())),
            result=s.result_class,
            faults=_fault_kinds(traj, s),
        )
    if s.kind == "observation":
        return SemStep(kind="observation", faults=_fault_kinds(traj, s))
    if s.kind == "answer":
        return SemStep(kind="answer", gave_up=s.gave_up)
    return None


def semantic_steps(record: TrialRecord) -> list[SemStep]:
    traj = record.trajectory
    return [x for s in traj.steps if (x := semantic_step(traj, s)) is not None]


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading items ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@dataclass
class Divergence:
    trial_id: str
    step: int  # 0-based index into the semantic steps
    label: str
    root_cause: str | None


@dataclass
class FailureGroup:
    label: str
    step: int
    trials: list[str] = field(default_factory=list)
    root_causes: Counter[str] = field(default_factory=Counter)


@dataclass
class TaskAnalysis:
    scenario: str
    cell: str
    passed: int
    failed: int
    not_evaluable: int
    consistency: Consistency
    reference: str  # where the successful trajectories came from: "same cell" | "clean" | ""
    groups: list[FailureGroup] = field(default_factory=list)
    divergences: list[Divergence] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "cell": self.cell,
            "passed": self.passed,
            "failed": self.failed,
            "not_evaluable": self.not_evaluable,
            "consistency": self.consistency,
            "reference": self.reference or None,
            "groups": [
                {
                    "label": g.label,
                    "step": g.step + 1,
                    "count": len(g.trials),
                    "trials": g.trials,
                    "root_causes": dict(g.root_causes),
                }
                for g in self.groups
            ],
        }


def _arg_diff(failed: SemStep, others: list[SemStep]) -> str:
    mine = dict(failed.args)
    keys: list[str] = []
    for other in others:
        theirs = dict(other.args)
        for k in sorted(set(mine) | set(theirs)):
            if mine.get(k) != theirs.get(k) and k not in keys:
                keys.append(k)
    if not keys:
        return "arguments differ"
    return f"{', '.join(keys)} {'differs' if len(keys) == 1 else 'differ'}"


def _after_fault(prev: SemStep, prev_n: int, nxt: SemStep | None) -> str:
    what = f"an injected {'+'.join(prev.faults)}" if prev.faults else f"a {prev.result}"
    if nxt is None:
        tail = "stopped instead of retrying"
    elif nxt.kind == "answer":
        tail = "gave up" if nxt.gave_up else "answered without retrying"
    elif nxt.tool == prev.tool:
        tail = "retried"
    else:
        tail = f"moved on to {nxt.tool} without retrying"
    return f"after {what} at step {prev_n} ({prev.tool or prev.kind}): {tail}"


def label_divergence(failed: list[SemStep], d: int, successes: list[list[SemStep]]) -> str:
    """A readable name for the first step where ``failed`` left every matching success."""
    n = d + 1  # people count steps from 1
    # The successes that agreed with the failure up to d show what should have come next.
    peers = [s for s in successes if common_prefix(s, failed) >= d]
    expected = [s[d] for s in peers if len(s) > d]
    mine = failed[d] if d < len(failed) else None
    prev = failed[d - 1] if d > 0 else None
    if mine is None:  # the failure simply ended here
        if prev is not None and prev.kind == "tool" and prev.result != "ok":
            return _after_fault(prev, n - 1, None)
        return f"step {n}: stopped early"
    if not expected:  # every matching success had ended: the failure did extra work
        return f"step {n}: extra step {mine.describe()}"
    exp_common = Counter(expected).most_common(1)[0][0]
    if mine.kind == "answer":
        if prev is not None and prev.kind == "tool" and prev.result != "ok":
            return _after_fault(prev, n - 1, mine)
        verb = "gave up" if mine.gave_up else "answered"
        return f"step {n}: {verb} instead of calling {exp_common.tool or exp_common.kind}"
    if mine.kind == "tool":
        same_tool = [e for e in expected if e.kind == "tool" and e.tool == mine.tool]
        if same_tool:
            if all(dict(e.args) == dict(mine.args) for e in same_tool):
                if mine.faults:
                    nxt = failed[d + 1] if d + 1 < len(failed) else None
                    return _after_fault(mine, n, nxt)
                return f"step {n}, {mine.tool}: got {mine.result} instead of {same_tool[0].result}"
            return f"step {n}, {mine.tool}: {_arg_diff(mine, same_tool)}"
        if exp_common.kind == "answer":
            return f"step {n}: called {mine.tool} instead of answering"
        return f"step {n}: called {mine.tool} instead of {exp_common.tool}"
    return f"step {n}: {mine.describe()} instead of {exp_common.describe()}"


def _final_label(record: TrialRecord, n: int) -> str:
    """Same steps as a success: the difference is in the answer or the judged state."""
    failed_checks = [c.name for c in record.checks if not c.passed]
    if record.vetoes:
        return f"step {n}, answer: same steps, {record.vetoes[0].kind} veto"
    if failed_checks:
        return f"step {n}, answer: same steps, check failed: {failed_checks[0]}"
    return f"step {n}, answer: same steps, judged {record.root_cause or 'failed'}"


def diverge_one(failed: TrialRecord, successes: list[list[SemStep]]) -> Divergence:
    steps = semantic_steps(failed)
    d = max((common_prefix(s, steps) for s in successes), default=0)
    if d >= len(steps) and any(
        len(s) == len(steps) and common_prefix(s, steps) == d for s in successes
    ):
        label = _final_label(failed, max(1, d))
        return Divergence(failed.trial_id, max(0, d - 1), label, failed.root_cause)
    return Divergence(failed.trial_id, d, label_divergence(steps, d, successes), failed.root_cause)


def _signature(record: TrialRecord) -> tuple[Any, ...]:
    return (record.root_cause, tuple(semantic_steps(record)))


def analyse(journal: Journal, *, baseline: bool = True) -> list[TaskAnalysis]:
    """Every task (scenario x cell) of the journal, with its failures grouped by divergence.

    With ``baseline``, a task with failures but no success is compared with the successes of
    the same scenario's clean cell (labelled "clean"), so a cell where a fault breaks every
    trial still shows where the trials left the clean path.
    """
    tasks: dict[tuple[str, str], list[TrialRecord]] = defaultdict(list)
    for r in journal.records:
        tasks[(r.scenario, r.cell)].append(r)
    out: list[TaskAnalysis] = []
    for (scenario, cell), records in sorted(tasks.items()):
        records.sort(key=lambda r: r.index)
        passed = [r for r in records if r.status == "passed"]
        failed = [r for r in records if r.status == "failed"]
        ne = len(records) - len(passed) - len(failed)
        if not passed and not failed:
            consistency: Consistency = "not evaluable"
        elif not failed:
            consistency = "stable"
        elif not passed:
            sigs = {_signature(r) for r in failed}
            consistency = "stable error" if len(sigs) == 1 else "unstable errors"
        else:
            consistency = "inconsistent"
        reference = ""
        successes = [semantic_steps(r) for r in passed]
        if successes:
            reference = "same cell"
        elif baseline and failed and cell != CLEAN:
            clean = [r for r in tasks.get((scenario, CLEAN), []) if r.status == "passed"]
            successes = [semantic_steps(r) for r in clean]
            reference = CLEAN if successes else ""
        task = TaskAnalysis(scenario, cell, len(passed), len(failed), ne, consistency, reference)
        if successes:
            groups: dict[str, FailureGroup] = {}
            for r in failed:
                div = diverge_one(r, successes)
                task.divergences.append(div)
                g = groups.setdefault(div.label, FailureGroup(div.label, div.step))
                g.trials.append(r.trial_id)
                g.root_causes[r.root_cause or "unknown"] += 1
            task.groups = sorted(groups.values(), key=lambda g: (g.step, -len(g.trials), g.label))
        out.append(task)
    return out


def to_json(tasks: list[TaskAnalysis], journal: Journal) -> dict[str, Any]:
    counts = Counter(t.consistency for t in tasks)
    return {
        "journal": str(journal.path),
        "run_id": journal.manifest.run_id,
        "agent": journal.manifest.agent,
        "consistency": dict(counts),
        "tasks": [t.to_json() for t in tasks],
    }
