"""Failure-trajectory analysis: where a failed trial first left the path successful ones took.

Each trajectory is reduced to semantic steps (:mod:`chaoseval.investigate.semantic`: tool,
normalised arguments, result class, the faults that hit it, and a final answer step). A failed
trial's divergence point is the first step at which it matches no successful trial of the same
task that agreed with it so far (the longest common prefix with any success), so a failure is
never blamed on a step some success also took. Failures are then grouped by a
readable label of that point.

Consistency is reported apart from correctness: a task whose every trial fails the same way is
a *stable error*, never "stable".
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from chaoseval import redact
from chaoseval.analysis.reasons import one_line
from chaoseval.investigate.semantic import (
    DECODER,
    LiteTrial,
    SemStep,
    common_prefix,
    crash_reason,
    semantic_step,
    semantic_steps,
)
from chaoseval.model.records import CLEAN, TrialRecord
from chaoseval.store.columns import Trials, as_trials
from chaoseval.store.journal import Journal

# SemStep, semantic_step(s) and common_prefix lived here first: still importable from here.
__all__ = [
    "Analysed",
    "Divergence",
    "FailureGroup",
    "SemStep",
    "TaskAnalysis",
    "analyse",
    "common_prefix",
    "diverge_one",
    "label_divergence",
    "semantic_step",
    "semantic_steps",
    "to_json",
]

Consistency = Literal["stable", "stable error", "unstable errors", "inconsistent", "not evaluable"]


@dataclass(slots=True)
class Divergence:
    trial_id: str
    step: int  # 0-based index into the semantic steps
    label: str
    root_cause: str | None


@dataclass
class FailureGroup:
    """Failures that left the successful path at the same point: their journal rows, named
    only when asked (a big journal's groups hold hundreds of thousands)."""

    label: str
    step: int
    rows: array[int] = field(default_factory=lambda: array("q"))
    root_causes: Counter[str] = field(default_factory=Counter)
    name: Callable[[int], str] = field(default=str, repr=False, compare=False)  # row -> trial id

    @property
    def count(self) -> int:
        return len(self.rows)

    @property
    def trials(self) -> list[str]:
        return [self.name(row) for row in self.rows]


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
    # The failures' divergences in index order, made when asked (see _task).
    found: Callable[[], list[Divergence]] = field(default=list, repr=False, compare=False)

    @property
    def divergences(self) -> list[Divergence]:
        return self.found()

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
                    "count": g.count,
                    "trials": g.trials,
                    "root_causes": dict(g.root_causes),
                }
                for g in self.groups
            ],
        }


_MISSING = object()
VALUE_CHARS = 40  # of each value a label shows: a label names a group, it does not hold data
SHOWN_KEYS = 3


def _value(v: Any) -> str:
    """An argument's (normalised) value as a label shows it: redacted, then cut to one line."""
    if v is _MISSING:
        return "(none)"
    return one_line(redact.redact(repr(v) if isinstance(v, str | tuple) else str(v)), VALUE_CHARS)


def _arg_diff(failed: SemStep, others: list[SemStep], where: str) -> str:
    """'amount 99.0 against 84.9 in a passing trial': each argument that differs, its value
    in the failure against the first of ``others`` (taken ``where``) whose value differs."""
    mine = dict(failed.args)
    found: dict[str, Any] = {}
    for other in others:
        theirs = dict(other.args)
        for k in sorted(set(mine) | set(theirs)):
            if k not in found and mine.get(k, _MISSING) != theirs.get(k, _MISSING):
                found[k] = theirs.get(k, _MISSING)
    if not found:
        return "arguments differ"
    said = [
        f"{k} {_value(mine.get(k, _MISSING))} against {_value(v)}"
        for k, v in list(found.items())[:SHOWN_KEYS]
    ]
    more = len(found) - SHOWN_KEYS
    return "; ".join(said) + (f" and {more} more" if more > 0 else "") + f" in {where}"


def _after_fault(prev: SemStep, prev_n: int, nxt: SemStep | None, ended: str | None = None) -> str:
    what = f"an injected {'+'.join(prev.faults)}" if prev.faults else f"a {prev.result}"
    if nxt is None:
        tail = ended or "stopped instead of retrying"
    elif nxt.kind == "answer":
        tail = "gave up" if nxt.gave_up else "answered without retrying"
    elif nxt.tool == prev.tool:
        tail = "retried"
    else:
        tail = f"moved on to {nxt.tool} without retrying"
    return f"after {what} at step {prev_n} ({prev.tool or prev.kind}): {tail}"


def label_divergence(
    failed: Sequence[SemStep],
    d: int,
    successes: Sequence[Sequence[SemStep]],
    weights: Sequence[int] | None = None,
    ended: str | None = None,
    where: str = "a passing trial",
) -> str:
    """A readable name for the first step where ``failed`` left every matching success.
    ``weights``: how many successes took each path of ``successes`` (default one each);
    ``ended``: why the failure's steps end there when it did not stop by itself (a crash);
    ``where``: what the successes are, as an argument's value is said to be 'in' them."""
    n = d + 1  # people count steps from 1
    # The successes that agreed with the failure up to d show what should have come next.
    votes: Counter[SemStep] = Counter()
    for s, w in zip(successes, weights or [1] * len(successes), strict=True):
        if len(s) > d and common_prefix(s, failed) >= d:
            votes[s[d]] += w
    expected = list(votes)  # in first-seen order, as each success was met
    mine = failed[d] if d < len(failed) else None
    prev = failed[d - 1] if d > 0 else None
    if mine is None:  # the failure simply ended here
        if prev is not None and prev.kind == "tool" and prev.result != "ok":
            return _after_fault(prev, n - 1, None, ended)
        return f"step {n}: {ended or 'stopped early'}"
    if not expected:  # every matching success had ended: the failure did extra work
        return f"step {n}: extra step {mine.describe()}"
    exp_common = votes.most_common(1)[0][0]
    if mine.kind == "answer":
        if prev is not None and prev.kind == "tool" and prev.result != "ok":
            return _after_fault(prev, n - 1, mine)
        verb = "gave up" if mine.gave_up else "answered"
        if exp_common.kind == "user":
            return f"step {n}: {verb} instead of writing to the user"
        return f"step {n}: {verb} instead of calling {exp_common.tool or exp_common.kind}"
    if mine.kind == "user" and exp_common.kind == "user" and mine.args == exp_common.args:
        return _user_turn(failed, d, exp_common, ended)
    if mine.kind == "tool":
        same_tool = [e for e in expected if e.kind == "tool" and e.tool == mine.tool]
        if same_tool:
            if all(dict(e.args) == dict(mine.args) for e in same_tool):
                if mine.faults:
                    nxt = failed[d + 1] if d + 1 < len(failed) else None
                    return _after_fault(mine, n, nxt, ended)
                return f"step {n}, {mine.tool}: got {mine.result} instead of {same_tool[0].result}"
            return f"step {n}, {mine.tool}: {_arg_diff(mine, same_tool, where)}"
        if exp_common.kind == "answer":
            return f"step {n}: called {mine.tool} instead of answering"
        return f"step {n}: called {mine.tool} instead of {exp_common.tool}"
    return f"step {n}: {mine.describe()} instead of {exp_common.describe()}"


def _user_turn(failed: Sequence[SemStep], d: int, expected: SemStep, ended: str | None) -> str:
    """The same message (as far as the task goes) met another reply, or a fault on the turn:
    the user's side moved, and what the agent did next is the story."""
    mine, n = failed[d], d + 1
    hit = f" [{', '.join(mine.faults)}]" if mine.faults else ""
    if mine.result != expected.result:
        return f"step {n}, user {mine.result} instead of {expected.result}{hit}"
    nxt = failed[d + 1] if d + 1 < len(failed) else None
    then = (
        ended or "stopped"
        if nxt is None
        else ("gave up" if nxt.gave_up else "answered")
        if nxt.kind == "answer"
        else nxt.describe()
    )
    return f"step {n}, user {mine.result}{hit}; then {then}"


def _final_label(record: TrialRecord | LiteTrial, n: int) -> str:
    """Same steps as a success: the difference is in the answer or the judged state."""
    crashed = crash_reason(record)
    if crashed:
        return f"step {n}: same steps, then {crashed}"
    failed_checks = [c.name for c in record.checks if not c.passed]
    if record.vetoes:
        return f"step {n}, answer: same steps, {record.vetoes[0].kind} veto"
    if failed_checks:
        return f"step {n}, answer: same steps, check failed: {failed_checks[0]}"
    return f"step {n}, answer: same steps, judged {record.root_cause or 'failed'}"


def diverge_one(
    failed: TrialRecord | LiteTrial,
    successes: Sequence[Sequence[SemStep]],
    weights: Sequence[int] | None = None,
) -> Divergence:
    """Where ``failed`` left the ``successes`` (paths, each taken ``weights`` times)."""
    return _diverge(failed, semantic_steps(failed), successes, weights)


def _diverge(
    failed: TrialRecord | LiteTrial,
    steps: Sequence[SemStep],
    successes: Sequence[Sequence[SemStep]],
    weights: Sequence[int] | None = None,
) -> Divergence:
    """:func:`diverge_one` of a failure whose semantic steps are ``steps`` already."""
    d = max((common_prefix(s, steps) for s in successes), default=0)
    if d >= len(steps) and any(
        len(s) == len(steps) and common_prefix(s, steps) == d for s in successes
    ):
        label = _final_label(failed, max(1, d))
        return Divergence(failed.trial_id, max(0, d - 1), label, failed.root_cause)
    label = label_divergence(steps, d, successes, weights, crash_reason(failed))
    return Divergence(failed.trial_id, d, label, failed.root_cause)


Steps = tuple[SemStep, ...]


class _Interned:
    """Semantic step sequences stored once, numbered: trials mostly repeat a few paths."""

    def __init__(self, size: int) -> None:
        self.ids: dict[Steps, int] = {}
        self.paths: list[Steps] = []
        self.of_row = np.full(size, -1, np.int32)

    def add(self, row: int, record: Any) -> Steps:
        """The record's path (the one kept, when an equal one was met before)."""
        path = tuple(semantic_steps(record))
        i = self.ids.setdefault(path, len(self.paths))
        if i == len(self.paths):
            self.paths.append(path)
        self.of_row[row] = i
        return self.paths[i]

    def distinct(self, rows: np.ndarray) -> tuple[list[Steps], list[int]]:
        """The distinct paths of ``rows`` in first-seen order, with how often each was taken
        (what diverge_one and label_divergence need of the whole list)."""
        counts: Counter[int] = Counter(self.of_row[rows].tolist())
        return [self.paths[i] for i in counts], list(counts.values())


def _tasks(t: Trials) -> dict[tuple[str, str], np.ndarray]:
    """Rows per (scenario, cell), sorted by those names; each task's rows in index order
    (journal order among equal indexes)."""
    key = t.col["scenario"].astype(np.int64) * len(t.vocab["cell"]) + t.col["cell"]
    order = np.lexsort((t.col["index"], key))  # stable
    cuts = np.flatnonzero(np.diff(key[order])) + 1
    out = {}
    for rows in np.split(order, cuts) if len(order) else []:
        row = int(rows[0])
        out[(t.value("scenario", row), t.value("cell", row))] = rows
    return dict(sorted(out.items()))


def _references(
    t: Trials, tasks: dict[tuple[str, str], np.ndarray], baseline: bool
) -> dict[tuple[str, str], np.ndarray]:
    """The passed rows each task with failures is compared with: its own, else (with
    ``baseline``) the clean cell's of its scenario."""
    status = t.col["status"]
    out = {}
    for (scenario, cell), rows in tasks.items():
        st = status[rows]
        if not (st == 1).any():
            continue
        if (st == 0).any():
            out[(scenario, cell)] = rows[st == 0]
        elif baseline and cell != CLEAN and (scenario, CLEAN) in tasks:
            clean = tasks[(scenario, CLEAN)]
            # Kept from the record-list version: the clean trials were put in index order
            # only once their own task had come up in the sorted loop, so a cell named before
            # "clean" saw them in journal order (the order decides ties between labels).
            if cell < CLEAN:
                clean = np.sort(clean)
            out[(scenario, cell)] = clean[status[clean] == 0]
    return out


def analyse(journal: Journal | Trials, *, baseline: bool = True) -> list[TaskAnalysis]:
    """Every task (scenario x cell) of the journal, with its failures grouped by divergence.

    With ``baseline``, a task with failures but no success is compared with the successes of
    the same scenario's clean cell (labelled "clean"), so a cell where a fault breaks every
    trial still shows where the trials left the clean path.

    Read from the journal's columns: the passed trials a failure is compared with and the
    failed trials are read from their lines (only the fields diverge uses), in file order,
    and each path is kept once, so memory follows the distinct paths, not the trials.
    """
    return list(Analysed(as_trials(journal), baseline))


class Analysed:
    """The journal's tasks as :func:`analyse` gives them, each made when iterated (a report of
    100k tasks streams its 300k without holding them: ~1 KB each as objects)."""

    def __init__(self, t: Trials, baseline: bool = True) -> None:
        self.t = t
        self.tasks = tasks = _tasks(t)
        refs = _references(t, tasks, baseline)
        self.paths = paths = _Interned(len(t))
        wanted = np.unique(np.concatenate([np.zeros(0, np.int64), *refs.values()]))
        for row, record in t.scan(wanted, DECODER):
            paths.add(row, record)
        self.successes = successes = {task: paths.distinct(rows) for task, rows in refs.items()}
        keys = list(tasks)
        task_of = np.full(len(t), -1, np.int32)  # a failed row's task, when it has successes
        for i, (task, rows) in enumerate(tasks.items()):
            if task in successes:
                task_of[rows] = i
        failed = np.flatnonzero(t.col["status"] == 1)
        labels: dict[tuple[str, int], int] = {}
        self.label_of = label_of = np.full(len(t), -1, np.int32)
        for row, record in t.scan(failed, DECODER):
            steps = paths.add(row, record)  # (its steps made once: kept and compared)
            if task_of[row] >= 0:
                div = _diverge(record, steps, *successes[keys[task_of[row]]])
                label_of[row] = labels.setdefault((div.label, div.step), len(labels))
        self.names = {code: key for key, code in labels.items()}
        self._consistencies: list[Consistency] | None = None

    def __iter__(self) -> Iterator[TaskAnalysis]:
        each: Sequence[Consistency | None] = self._consistencies or [None] * len(self.tasks)
        for (task, rows), consistency in zip(self.tasks.items(), each, strict=True):
            yield _task(
                self.t, task, rows, self.paths, self.label_of, self.names,
                self.successes.get(task), consistency,
            )  # fmt: skip

    def consistency(self) -> Counter[str]:
        """How many tasks of each consistency, in the order the tasks first show each (each
        task's kept for the iteration after: to_json counts them, then writes the tasks)."""
        if self._consistencies is None:
            status = self.t.col["status"]
            self._consistencies = [
                _consistency(self.t, status[rows], rows, self.paths) for rows in self.tasks.values()
            ]
        return Counter(self._consistencies)


def _consistency(t: Trials, status: np.ndarray, rows: np.ndarray, paths: _Interned) -> Consistency:
    passed, failed = bool((status == 0).any()), rows[status == 1].tolist()
    if not passed and not failed:
        return "not evaluable"
    if not failed:
        return "stable"
    if not passed:
        causes = t.col["root_cause"]
        sigs = {(int(causes[r]), int(paths.of_row[r])) for r in failed}
        return "stable error" if len(sigs) == 1 else "unstable errors"
    return "inconsistent"


def _task(
    t: Trials,
    task: tuple[str, str],
    rows: np.ndarray,
    paths: _Interned,
    label_of: np.ndarray,
    names: dict[int, tuple[str, int]],
    successes: tuple[list[Steps], list[int]] | None,
    consistency: Consistency | None = None,
) -> TaskAnalysis:
    scenario, cell = task
    status = t.col["status"][rows]
    passed, failed = rows[status == 0], rows[status == 1].tolist()
    if consistency is None:
        consistency = _consistency(t, status, rows, paths)
    reference = "same cell" if len(passed) else ""
    if not len(passed) and successes is not None and successes[0]:
        reference = CLEAN
    ne = len(rows) - len(passed) - len(failed)
    out = TaskAnalysis(scenario, cell, len(passed), len(failed), ne, consistency, reference)
    if successes is None or not successes[0]:
        return out
    groups: dict[str, FailureGroup] = {}
    for row in failed:
        label, step = names[int(label_of[row])]
        g = groups.get(label) or groups.setdefault(
            label, FailureGroup(label, step, name=t.trial_id)
        )
        g.rows.append(row)
        g.root_causes[t.value("root_cause", row) or "unknown"] += 1
    out.groups = sorted(groups.values(), key=lambda g: (g.step, -g.count, g.label))
    rows_failed = rows[status == 1]  # 8 bytes a failure until the divergences are asked for

    def found() -> list[Divergence]:
        return [
            Divergence(t.trial_id(r), names[c][1], names[c][0], t.value("root_cause", r))
            for r, c in zip(rows_failed.tolist(), label_of[rows_failed].tolist(), strict=True)
        ]

    out.found = found
    return out


def to_json(
    tasks: list[TaskAnalysis] | Analysed,
    journal: Journal | Trials,
    lists: Callable[[Iterable[Any]], Any] = list,
) -> dict[str, Any]:
    """The JSON document of ``tasks``; ``lists`` makes its list of tasks (render.jsonstream's
    Streamed writes it a task at a time: 300k tasks as one list of dicts were ~1 GB with
    their text)."""
    if isinstance(tasks, Analysed):
        counts = tasks.consistency()
    else:
        counts = Counter(t.consistency for t in tasks)
    return {
        "journal": str(journal.path),
        "run_id": journal.manifest.run_id,
        "agent": journal.manifest.agent,
        "consistency": dict(counts),
        "tasks": lists(t.to_json() for t in tasks),
    }
