"""A status per perturbed cell, the same word in every view, in two scopes (../DESIGN: "Two
scopes: these tasks, and tasks like these").

- ``degraded``: on tasks like these. The task-level paired test of the primary metric
  (chaoseval.analysis.degradation, Holm across the cells) finds a significant drop: the drop
  would hold on new tasks.
- ``broken``: on these tasks. The task-level test does not reject, but the one-sided exact
  stratified test with trials as the units (chaoseval.analysis.strata, Holm across the cells)
  does, at p <= alpha: the agent got worse on the tasks it was given.
- ``improved``: the mirror image of either (a significant gain).
- ``held``: neither finds a change, and the drop's upper bound (the task-level interval's, the
  scope that has one) is under the margin (``--margin``, 0.1 of the primary metric by default).
- ``inconclusive``: anything else, and always when the clean baseline is at the floor (nothing
  to lose): the status says how many more trials, or tasks, would decide.
- ``did not land``: no fault reached the agent; nothing was tested.

The exact test is on trial successes: under its null (the same success probability in both arms
of each task) every per-task metric is unchanged, so it tests the primary metric too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from chaoseval.analysis.degradation import Comparison
from chaoseval.analysis.primary import FLOOR, at_floor
from chaoseval.analysis.stats import holm
from chaoseval.analysis.strata import Table, stratified_exact, trials_needed

__all__ = [
    "ALPHA",
    "DEFAULT_MARGIN",
    "STATUSES",
    "CellStatus",
    "Status",
    "cell_statuses",
]

Status = Literal["degraded", "broken", "improved", "held", "inconclusive", "did not land"]
STATUSES: tuple[Status, ...] = (
    "broken", "degraded", "inconclusive", "improved", "held", "did not land",
)  # fmt: skip
ALPHA = 0.05
DEFAULT_MARGIN = 0.1
POWER = 0.8
# The exact sign-flip's smallest p over T tasks is 2 / 2^T: below this many, no claim on tasks
# like these can be made after Holm over a few cells.
LIKE_THESE_MIN = 6


@dataclass
class CellStatus:
    """One perturbed cell's status and the counts it is read from (pass^1 counts on the tasks
    the cell reached; clean on the same tasks)."""

    cell: str
    status: Status
    scope: str  # "these tasks", "tasks like these", or "" (did not land / nothing tested)
    passed: int
    scored: int
    clean_passed: int
    clean_scored: int
    tasks: int  # tasks both the cell and clean scored
    dropped: int  # tasks whose success rate fell against clean
    gained: int
    p_drop: float | None = None  # the exact test's, Holm-adjusted across the cells
    p_gain: float | None = None
    why: str = ""
    more_trials: int | None = None  # per task and arm, to decide at 80% power vs the margin
    tasks_for_scope: int | None = None  # tasks a claim on tasks like these needs at least

    def phrase(self) -> str:
        """'broken on 1 of 1 task', 'held on 4 tasks', 'inconclusive on 1 task: ...'."""
        t = f"{self.tasks} task{'s' if self.tasks != 1 else ''}"
        if self.status == "did not land":
            return "did not land (no fault reached the agent: not tested)"
        if self.status in ("broken", "degraded"):
            where = "these tasks" if self.status == "broken" else "tasks like these"
            return f"{self.status} on {self.dropped} of {t} (on {where})"
        if self.status == "improved":
            return f"improved on {self.gained} of {t} (on {self.scope})"
        if self.status == "held":
            return f"held on {t} ({self.why})"
        return f"inconclusive on {t}: {self.why}"

    def line(self, label: str, width: int = 0) -> str:
        """The pytest-style counts line: ``stale_memory  0/3 passed (clean 3/3)  broken ...``."""
        if self.status == "did not land":
            return f"{label.ljust(width)}  {self.phrase()}"
        return (
            f"{label.ljust(width)}  {self.passed}/{self.scored} passed "
            f"(clean {self.clean_passed}/{self.clean_scored})  {self.phrase()}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "scope": self.scope,
            "passed": self.passed,
            "scored": self.scored,
            "clean_passed": self.clean_passed,
            "clean_scored": self.clean_scored,
            "tasks": self.tasks,
            "tasks_dropped": self.dropped,
            "tasks_gained": self.gained,
            "p_these_tasks_drop_holm": self.p_drop,
            "p_these_tasks_gain_holm": self.p_gain,
            "why": self.why,
            "more_trials_per_task": self.more_trials,
            "tasks_for_tasks_like_these": self.tasks_for_scope,
        }


def _tables(
    cell: Mapping[str, tuple[int, int]], clean: Mapping[str, tuple[int, int]]
) -> list[Table]:
    return [
        (n, c, clean[t][0], clean[t][1])
        for t, (n, c) in sorted(cell.items())
        if t in clean and n > 0 and clean[t][0] > 0
    ]


def _base(cell: str, tables: Sequence[Table]) -> CellStatus:
    return CellStatus(
        cell, "inconclusive", "",
        sum(t[1] for t in tables), sum(t[0] for t in tables),
        sum(t[3] for t in tables), sum(t[2] for t in tables), len(tables),
        sum(t[1] * t[2] < t[3] * t[0] for t in tables),
        sum(t[1] * t[2] > t[3] * t[0] for t in tables),
    )  # fmt: skip


def _needed(s: CellStatus, tables: Sequence[Table], family: int, margin: float) -> None:
    """How many more trials per task (each arm) a one-sided exact test at alpha / family would
    need to see a drop of ``margin`` at 80% power; and the tasks a task-level claim needs."""
    rate = s.clean_passed / s.clean_scored if s.clean_scored else 0.0
    per_arm = trials_needed(rate, margin, ALPHA / max(1, family), POWER)
    have = min(min(t[0], t[2]) for t in tables)
    s.more_trials = max(1, math.ceil(per_arm / len(tables)) - have)
    s.tasks_for_scope = max(LIKE_THESE_MIN, math.floor(math.log2(2 * max(1, family) / ALPHA)) + 1)


def _undecided(s: CellStatus, cmp: Comparison | None, primary: str, margin: float) -> str:
    if cmp is not None and at_floor(cmp.b):
        return (
            f"the clean baseline is at the floor ({primary} {cmp.b:.3f} <= {FLOOR}): nothing to "
            "lose; tasks where clean succeeds would tell"
        )
    return (
        f"about {s.more_trials} more trial(s) per task in each arm would tell at 80% power "
        f"against a drop of {margin:g}, or at least {s.tasks_for_scope} tasks for a claim on "
        "tasks like these"
    )


def cell_statuses(
    counts: Mapping[str, Mapping[str, tuple[int, int]]],
    clean: Mapping[str, tuple[int, int]] | None,
    comparisons: Mapping[str, Comparison | None],
    landed: Mapping[str, bool],
    primary: str,
    margin: float = DEFAULT_MARGIN,
) -> dict[str, CellStatus]:
    """Every perturbed cell's status: ``counts`` its per-task (scored, passed) on the tasks it
    reached, ``clean`` the clean cell's, ``comparisons`` its task-level comparison of the
    primary metric (Holm-adjusted), ``landed`` whether any fault reached the agent."""
    if not 0 < margin < 1:
        raise ValueError(f"margin must be strictly between 0 and 1, got {margin}")
    tables = {c: _tables(n, clean or {}) for c, n in counts.items() if landed.get(c, False)}
    tested = [c for c, ts in tables.items() if ts]
    drops = holm([stratified_exact(tables[c], "less") for c in tested])
    gains = holm([stratified_exact(tables[c], "greater") for c in tested])
    out: dict[str, CellStatus] = {}
    for cell in counts:
        ts = tables.get(cell, [])
        s = _base(cell, ts)
        out[cell] = s
        if not landed.get(cell, False):
            s.status = "did not land"
            continue
        if not ts:
            s.why = "no evaluable trial paired with a clean one: nothing to compare"
            continue
        i = tested.index(cell)
        s.p_drop, s.p_gain = drops[i], gains[i]
        _decide(s, ts, comparisons.get(cell), primary, margin, len(tested))
    return out


def _decide(
    s: CellStatus,
    ts: Sequence[Table],
    cmp: Comparison | None,
    primary: str,
    margin: float,
    family: int,
) -> None:
    d = cmp.difference if cmp is not None else None
    if cmp is not None and cmp.significant and d is not None and d.estimate != 0:
        s.status, s.scope = ("degraded" if d.estimate < 0 else "improved"), "tasks like these"
        return
    # A p this close above alpha is alpha in exact arithmetic (1/20 read as a float).
    if s.p_drop is not None and s.p_drop <= ALPHA * (1 + 1e-12):
        s.status, s.scope = "broken", "these tasks"
        return
    if s.p_gain is not None and s.p_gain <= ALPHA * (1 + 1e-12):
        s.status, s.scope = "improved", "these tasks"
        return
    _needed(s, ts, family, margin)
    floor = cmp is not None and at_floor(cmp.b)
    if not floor and d is not None and 0.0 - d.low < margin:
        s.status, s.scope = "held", "tasks like these"
        s.why = f"the drop's upper bound {0.0 - d.low:+.3f} is under the margin {margin:g}"
        s.more_trials = s.tasks_for_scope = None
        return
    s.why = _undecided(s, cmp, primary, margin)
