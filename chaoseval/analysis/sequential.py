"""A sequential run's decisions (``run --sequential``), recomputed from its trials and design.

On these tasks (trials are the units, the suite is fixed): for a perturbed cell, round after
round, each task's trial j is paired with clean's trial j (the same seed), and the pairs'
differences of success, one step of a task each (chaoseval.analysis.anytime), feed three
e-processes on the mean difference D over the cell's tasks (equal weight per task, pass^1):

- ``drop``: against D >= 0; it rejecting is the claim ``broken`` (the cell is worse on these
  tasks);
- ``gain``: against D <= 0 (``improved``);
- ``held``: against D <= -margin (``held``: any drop is smaller than the margin).

After each round the claims of every cell are tested together by closed testing with e-values
(:func:`by_cells`: the intersections of nulls that can be true together, mean-merged by cell;
journals that recorded ``e-holm`` are replayed by e-Holm, mean-merged by claim), so the chance
of any false claim in the run stays at most alpha however many rounds were looked at. A decided
cell stops (its e-processes frozen); the others get the next round.
A cell whose cap (``max_trials``) comes undecided is ``inconclusive``, with the trials per task
it would still need were the data to go on as they went.

The decisions are a function of the journal's trials and the design alone: the runner, report,
gate and a resumed run all replay them the same way. The cell's tasks are those its faults
reached in the first round (a task never reached behaves as clean and says nothing). A step
with a trial the harness could not score (not evaluable) in any of the cell's tasks is left out
of the cell's evidence whole: the bettors' guarantee needs every task in each step.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chaoseval.analysis.allocation import Allocation
from chaoseval.analysis.anytime import (
    Bounds,
    confidence_sequence,
    e_holm,
    growth_rate,
    log_eprocess,
    paired_steps,
)
from chaoseval.analysis.status import CellStatus
from chaoseval.model.records import CLEAN, SequentialDesign

__all__ = [
    "METHOD_WORDS",
    "CellDecision",
    "Outcomes",
    "Progress",
    "by_cells",
    "compare_note",
    "decisions_side_by_side",
    "first_round",
    "hindsight_log_wealth",
    "journal_progress",
    "replay",
    "statuses",
    "stop_early",
]

MISSING, PASSED, FAILED, UNSCORED = -1, 0, 1, 2
# How each recorded method is named where the decisions are said.
METHOD_WORDS = {"cells": "closed testing by cell", "e-holm": "e-Holm"}
TESTS = ("drop", "gain", "held")


@dataclass
class Outcomes:
    """Every trial's outcome as (task x index) arrays per cell: -1 not run, 0 passed, 1 failed,
    2 not evaluable; and whether a fault of the cell reached the agent in it."""

    tasks: list[str]
    trials: int
    status: dict[str, np.ndarray] = field(default_factory=dict)
    delivered: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        tasks: Sequence[str],
        cells: Iterable[str],
        trials: int,
        rows: Iterable[tuple[str, str, int, int, int]],
    ) -> Outcomes:
        """From ``(task, cell, index, status, faults delivered)`` rows (a journal's trials)."""
        out = cls(list(tasks), trials)
        at = {t: i for i, t in enumerate(out.tasks)}
        for cell in cells:
            out.status[cell] = np.full((len(at), trials), MISSING, np.int8)
            out.delivered[cell] = np.zeros((len(at), trials), bool)
        for task, cell, index, status, delivered in rows:
            if cell in out.status and task in at and 0 <= index < trials:
                out.status[cell][at[task], index] = status
                out.delivered[cell][at[task], index] = delivered > 0
        return out

    @classmethod
    def of_trials(cls, t: Any, tasks: Sequence[str] | None = None) -> Outcomes:
        """From a journal's columns (chaoseval.store.columns.Trials); ``tasks``: the run's
        task ids, else its manifest's (read again when the columns hold it without them)."""
        m = t.manifest
        if tasks is None:
            tasks = [s.id for s in (m.scenarios or t.full_manifest().scenarios)]
        col = t.col
        rows = zip(
            t.names("scenario"), t.names("cell"), col["index"].tolist(),
            col["status"].tolist(), col["delivered"].tolist(), strict=True,
        )  # fmt: skip
        return cls.of(sorted(tasks), [c.name for c in m.cells], m.trials, rows)


@dataclass
class CellDecision:
    """Where one perturbed cell stands after the rounds so far."""

    cell: str
    status: str = "undecided"  # broken, improved, held, inconclusive, did not land, undecided
    rule: str = ""  # what decided it, in words
    round: int | None = None  # the round (1-based) that decided it
    trials: int = 0  # trials per task its evidence holds (each arm)
    tasks: list[str] = field(default_factory=list)
    steps: int = 0  # the steps (trial indices) counted: every task scored in both arms
    estimate: float | None = None  # mean difference in pass^1 against clean
    # its confidence sequence at alpha / cells (simultaneous over the cells), at the end
    lower: float | None = None
    upper: float | None = None
    log_e: dict[str, float] = field(default_factory=lambda: dict.fromkeys(TESTS, 0.0))
    more_trials: int | None = None  # per task, were the data to go on as they went
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status, "rule": self.rule, "round": self.round,
            "trials_per_task": self.trials, "tasks": len(self.tasks), "steps": self.steps,
            "difference": self.estimate, "cs_lower": self.lower, "cs_upper": self.upper,
            "e_values": {k: _e_text(v) for k, v in self.log_e.items()},
            "more_trials_per_task": self.more_trials, "why": self.why,
        }  # fmt: skip


def _e_text(log_e: float) -> str:
    return f"{math.exp(log_e):.3g}" if log_e < 700 else f"e^{log_e:.0f}"


@dataclass
class Progress:
    """The replayed sequence: every perturbed cell's decision, the rounds finished, and the
    next round (its cumulative trials per task and the cells it runs), None when over."""

    design: SequentialDesign
    decisions: dict[str, CellDecision]
    rounds_done: int
    next_trials: int | None
    next_cells: list[str]
    family: int  # claims tested together
    # With allocation (design.settled_rate): per next cell, each task's trial indices to run.
    allocated: dict[str, dict[str, set[int]]] | None = None
    allocation: Allocation | None = field(default=None, repr=False)

    def undecided(self) -> list[str]:
        return [c for c, d in self.decisions.items() if d.status == "undecided"]


def _tasks_reached(o: Outcomes, cell: str, first: int) -> list[int]:
    return [int(i) for i in np.flatnonzero(o.delivered[cell][:, :first].any(axis=1))]


def _complete(o: Outcomes, cell: str, tasks: Sequence[int], n: int) -> bool:
    """Every trial of the cell's tasks below index n ran, in the cell and in clean."""
    return bool((o.status[cell][tasks, :n] != MISSING).all()) and bool(
        (o.status[CLEAN][tasks, :n] != MISSING).all()
    )


def _differences(o: Outcomes, cell: str, tasks: Sequence[int], n: int) -> np.ndarray:
    """(steps x tasks) differences of success, perturbed minus clean, on the steps below n
    where every task is scored in both arms."""
    a, b = o.status[cell][tasks, :n], o.status[CLEAN][tasks, :n]
    scored = ((a == PASSED) | (a == FAILED)) & ((b == PASSED) | (b == FAILED))
    keep = scored.all(axis=0)
    d = (a == PASSED).astype(int) - (b == PASSED).astype(int)
    out: np.ndarray = d[:, keep].T
    return out


@dataclass
class _Steps:
    """A cell's evidence: rescaled values (steps x tasks), their bounds when importance
    weights may take them out of [0, 1] (allocation), and the estimate of D."""

    x: np.ndarray
    bounds: Bounds | None
    estimate: float

    def __len__(self) -> int:
        return len(self.x)


def _steps(o: Outcomes, d: CellDecision, n: int, alloc: Allocation | None) -> _Steps:
    rows = _codes(o, d)
    if alloc is not None:
        return _Steps(*alloc.steps(d.cell, rows, n))
    diffs = _differences(o, d.cell, rows, n)
    return _Steps(paired_steps(diffs), None, float(diffs.mean()) if len(diffs) else 0.0)


def _evidence(d: CellDecision, s: _Steps, margin: float) -> None:
    d.steps = len(s)
    if not len(s):
        d.log_e = dict.fromkeys(TESTS, 0.0)
        return
    x, b = s.x, s.bounds
    d.log_e = {
        "drop": float(log_eprocess(x, 0.5, "below", b)[-1]),
        "gain": float(log_eprocess(x, 0.5, "above", b)[-1]),
        "held": float(log_eprocess(x, (1 - margin) / 2, "above", b)[-1]),
    }
    d.estimate = s.estimate


def _interval(d: CellDecision, s: _Steps, alpha: float) -> None:
    if len(s):
        cs = confidence_sequence(s.x, alpha, s.bounds)
        d.lower, d.upper = float(2 * cs.lower[-1] - 1), float(2 * cs.upper[-1] - 1)


def _need(d: CellDecision, s: _Steps, design: SequentialDesign, family: int) -> None:
    """Trials per task the likelier claim would still need at its present growth rate."""
    # A lone claim's bar in the closed test, at worst: a term per claim (e-Holm) or per cell.
    terms = family if design.method == "e-holm" else max(1, family // 3)
    bar = math.log(terms / design.alpha)
    best: int | None = None
    if len(s):
        held_m = (1 - design.margin) / 2
        for test, m, side in (("drop", 0.5, "below"), ("held", held_m, "above")):
            rate = growth_rate(s.x, m, side, s.bounds)
            if rate <= 0:
                continue
            steps = math.ceil(max(0.0, bar - d.log_e[test]) / (rate * len(d.tasks)))
            best = steps if best is None else min(best, steps)
    d.more_trials = None if best is None else max(1, best)
    if d.more_trials is None:
        d.why = (
            f"the difference so far ({d.estimate or 0.0:+.3f}) lies between a drop and the "
            f"margin {design.margin:g}: no number of trials in reach would decide it"
        )
    else:
        d.why = f"about {d.more_trials} more trial(s) per task would decide it at this rate"


def _claims(
    decisions: dict[str, CellDecision], alpha: float, method: str = "cells"
) -> dict[tuple[str, str], bool]:
    keys = [(c, t) for c, d in decisions.items() if d.status != "did not land" for t in TESTS]
    if method == "e-holm":
        rejected = e_holm([decisions[c].log_e[t] for c, t in keys], alpha)
        return dict(zip(keys, rejected.tolist(), strict=True))
    return by_cells({c: decisions[c].log_e for c in dict.fromkeys(c for c, _ in keys)}, alpha)


def _options(log_e: dict[str, float]) -> dict[str, float]:
    """For each claim of a cell, the smallest e-value (log) of the cell's intersections of
    nulls that hold it and can be true together. D's nulls: drop D >= 0, gain D <= 0, held
    D <= -margin. Together they can be: {drop} (D > 0), {gain} (-margin < D < 0), {drop, gain}
    (D = 0), {gain, held} (D <= -margin, which is held's null alone); drop and held never. Each
    is tested by an e-value valid under it: its claim's, the mean of drop's and gain's for
    D = 0, held's for {gain, held}."""
    drop, gain, held = log_e["drop"], log_e["gain"], log_e["held"]
    both = float(np.logaddexp(drop, gain) - math.log(2))
    return {"drop": min(drop, both), "gain": min(gain, both, held), "held": held}


def by_cells(log_e: dict[str, dict[str, float]], alpha: float) -> dict[tuple[str, str], bool]:
    """Closed testing of every cell's claims at family-wise level ``alpha``, valid whenever it
    is looked at (each claim's e-process stopped when its cell is decided).

    An intersection of nulls is a choice, per cell, of nulls that can be true together (or none);
    it is tested by the mean over its cells of an e-value valid under that cell's choice
    (:func:`_options`): a mean of e-processes valid under it, so Ville's inequality bounds the
    chance the true nulls' intersection is ever rejected by alpha. A claim is made when every
    intersection holding it is rejected; the least mean is the claim's cell at its smallest
    option with the k smallest options of the other cells, for some k. The family is the cells
    (one term each), not their claims: with three claims a cell, mean-merging by claim (e-Holm)
    made each claim pay for about twice as many e-values near or below one."""
    options = {c: _options(e) for c, e in log_e.items()}
    least = {c: min(o.values()) for c, o in options.items()}
    threshold = math.log(1 / alpha)
    out: dict[tuple[str, str], bool] = {}
    for cell, opts in options.items():
        others = np.sort([v for c, v in least.items() if c != cell])
        for test, own in opts.items():
            with np.errstate(divide="ignore"):
                cums = np.logaddexp.accumulate(np.concatenate([[own], others]))
            means = cums - np.log(np.arange(1, others.size + 2))
            out[cell, test] = bool(means.min() >= threshold)
    return out


def _decide(
    d: CellDecision, rejected: dict[tuple[str, str], bool], rnd: int, n: int, margin: float
) -> None:
    for test, status, words in (
        ("drop", "broken", "worse than clean on these tasks"),
        ("gain", "improved", "better than clean on these tasks"),
        ("held", "held", f"no drop of {margin:g} or more in pass^1 on these tasks"),
    ):
        if rejected.get((d.cell, test)):
            d.status, d.round, d.trials = status, rnd, n
            d.rule = f"{test} e-value {_e_text(d.log_e[test])} rejected in the closed test: {words}"
            return


def replay(o: Outcomes, design: SequentialDesign, cells: Sequence[str]) -> Progress:
    """Replay the rounds on the trials recorded so far: what each round decided, and what
    the next round must run (every trial of it below the round's count, in the undecided cells
    and clean)."""
    decisions = {c: CellDecision(c) for c in cells if c != CLEAN}
    rounds = design.rounds()
    family = 3 * len(decisions)
    done = 0
    rate, seed = design.settled_rate, design.allocation_seed or 0
    alloc = None if rate is None else Allocation(o, rate, seed, design.first)
    for rnd, n in enumerate(rounds, start=1):
        live = [d for d in decisions.values() if d.status == "undecided"]
        if not live:
            break
        ready = [_ready(o, d, design.first, n, alloc) for d in live]  # each cell planned
        if not all(ready):
            want = {c.cell: alloc.wanted(c.cell, _codes(o, c), n) for c in live} if alloc else None
            cells_next = [d.cell for d in live]
            return Progress(design, decisions, done, n, cells_next, family, want, alloc)
        for d in live:
            if not d.tasks:
                d.status, d.round, d.rule = "did not land", rnd, "no fault reached the agent"
                continue
            _evidence(d, _steps(o, d, n, alloc), design.margin)
            d.trials = n
        family = 3 * sum(d.status != "did not land" for d in decisions.values())
        rejected = _claims(decisions, design.alpha, design.method)
        for d in live:
            if d.status == "undecided":
                _decide(d, rejected, rnd, n, design.margin)
        done = rnd
    for d in decisions.values():
        if d.tasks and d.status != "did not land":
            ev = _steps(o, d, d.trials, alloc)
            _interval(d, ev, design.alpha / max(1, family // 3))
            if d.status == "undecided" and done == len(rounds):
                d.status, d.round = "inconclusive", done
                d.rule = f"the cap of {design.max_trials} trials per task came first"
                _need(d, ev, design, family)
    return Progress(design, decisions, done, None, [], family, None, alloc)


def _ready(
    o: Outcomes, d: CellDecision, first: int, n: int, alloc: Allocation | None = None
) -> bool:
    """The round's trials are all in; the cell's tasks are fixed by its first round. With
    allocation, the round's trials are planned here, from the trials before it."""
    if not _complete(o, d.cell, range(len(o.tasks)), min(first, n)):
        return False
    if not d.tasks:
        d.tasks = [o.tasks[i] for i in _tasks_reached(o, d.cell, first)]
    if alloc is None:
        return _complete(o, d.cell, _codes(o, d), n)
    alloc.plan(d.cell, _codes(o, d), n)
    return alloc.complete(d.cell, _codes(o, d), n)


def _codes(o: Outcomes, d: CellDecision) -> list[int]:
    at = {t: i for i, t in enumerate(o.tasks)}
    return [at[t] for t in d.tasks]


def hindsight_log_wealth(p: Progress, o: Outcomes, cell: str) -> dict[str, float]:
    """The log wealth the best constant stake of the grid, chosen in hindsight, reaches on the
    cell's evidence for ``drop`` and ``held``: more than any bettor that must choose its stakes
    as the trials come can count on. When it is under log(1 / alpha), no betting e-process
    would have decided the claim on these trials even alone (``make bench-sequential``)."""
    d = p.decisions[cell]
    if not d.tasks or not d.trials:
        return dict.fromkeys(("drop", "held"), 0.0)
    ev = _steps(o, d, d.trials, p.allocation)
    if not ev.x.size:
        return dict.fromkeys(("drop", "held"), 0.0)
    held = (1 - p.design.margin) / 2
    return {
        "drop": growth_rate(ev.x, 0.5, "below", ev.bounds) * ev.x.size,
        "held": growth_rate(ev.x, held, "above", ev.bounds) * ev.x.size,
    }


def stop_early(p: Progress, o: Outcomes, why: str) -> None:
    """The sequence ends before its cap (a budget spent, a run stopped): each undecided cell
    is inconclusive, with why and the trials per task it would still need."""
    for d in p.decisions.values():
        if d.status != "undecided":
            continue
        d.status, d.round, d.rule = "inconclusive", p.rounds_done or None, why
        if d.tasks and d.trials:
            ev = _steps(o, d, d.trials, p.allocation)
            _interval(d, ev, p.design.alpha / max(1, p.family // 3))
            _need(d, ev, p.design, p.family)
        else:
            d.why = "no round of it finished: run it again with --resume and a larger budget"


def journal_progress(t: Any) -> tuple[Progress, Outcomes]:
    """A sequential journal's decisions (``t``: its columns), as the run that wrote it left
    them; cells a stopped run left undecided are inconclusive, with what they would need."""
    design = t.manifest.sequential
    if design is None:
        raise ValueError(f"{t.path} is not a sequential run's journal")
    o = Outcomes.of_trials(t)
    p = replay(o, design, [c.name for c in t.manifest.cells])
    if p.next_trials is not None:
        stop_early(
            p,
            o,
            "the run stopped before deciding it (a budget, or interrupted): "
            "'run --resume' with the same settings continues the sequence",
        )
    return p, o


def _counts(o: Outcomes, d: CellDecision, alloc: Allocation | None) -> CellStatus:
    rows = _codes(o, d)
    a, b = o.status[d.cell][rows, : d.trials], o.status[CLEAN][rows, : d.trials]
    if alloc is not None:  # clean's trials paired with the cell's, not those run for others
        b = np.where(alloc.of(d.cell).include[rows, : d.trials], b, MISSING)
    scored_a, scored_b = (a == PASSED) | (a == FAILED), (b == PASSED) | (b == FAILED)
    na, ca = scored_a.sum(axis=1), (a == PASSED).sum(axis=1)
    nb, cb = scored_b.sum(axis=1), (b == PASSED).sum(axis=1)
    return CellStatus(
        d.cell, "inconclusive", "these tasks", int(ca.sum()), int(na.sum()), int(cb.sum()),
        int(nb.sum()), len(rows), int((ca * nb < cb * na).sum()), int((ca * nb > cb * na).sum()),
    )  # fmt: skip


def statuses(t: Any) -> dict[str, CellStatus]:
    """Each perturbed cell's status in the report's words, from the sequential decisions (on
    these tasks: broken, improved, held, inconclusive, did not land)."""
    p, o = journal_progress(t)
    out: dict[str, CellStatus] = {}
    for cell, d in p.decisions.items():
        if d.status == "did not land":
            out[cell] = CellStatus(cell, "did not land", "", 0, 0, 0, 0, 0, 0, 0)
            continue
        s = _counts(o, d, p.allocation)
        s.status = d.status  # type: ignore[assignment]  # replay's words are Status's
        s.why = f"sequential, round {d.round}: {d.rule}" + (f"; {d.why}" if d.why else "")
        if d.status == "held":
            s.why = f"sequential, round {d.round}, {d.trials} trial(s) per task: {d.rule}"
        s.more_trials = d.more_trials
        out[cell] = s
    return out


def first_round(t: Any) -> Any:
    """The trials a view that counts trials alike in every cell may read (``t``: a journal's
    columns): a sequential journal's first-round trials (each task's first ``-n``, as many in
    every cell, which the rounds' stopping cannot bias), else all of them; a store Group."""
    from chaoseval.store.columns import Group

    g = Group.all(t)
    design = t.manifest.sequential
    return g if design is None else g.where(g["index"] < design.first)


def compare_note(t: Any, label: str) -> str | None:
    """What compare reads of a sequential journal, said beside its tables (None: fixed)."""
    s = t.manifest.sequential
    if s is None:
        return None
    return (
        f"{label} ({t.path.name}) is a sequential run: compared on each task's first-round "
        f"{s.first} trial(s), as many in every cell (its later rounds ran only where a cell was "
        f"undecided, so they are not alike across cells and harnesses); its own decisions, "
        f"replayed from its recorded design (alpha {s.alpha:g}, margin {s.margin:g}), are "
        "listed after the comparison (table, markdown and json)"
    )


def decisions_side_by_side(a: Any, b: Any) -> dict[str, dict[str, str | None]]:
    """Each perturbed cell of either journal: its sequential status in A and in B (each
    against its own clean, on these tasks, replayed from its design; None for a fixed run or
    a cell it lacks)."""
    got = [statuses(t) if t.manifest.sequential is not None else {} for t in (a, b)]
    cells = [c.name for t in (a, b) for c in t.manifest.cells if c.name != CLEAN]
    return {
        cell: {
            side: (s[cell].status if cell in s else None)
            for side, s in zip(("a", "b"), got, strict=True)
        }
        for cell in dict.fromkeys(cells)
    }
