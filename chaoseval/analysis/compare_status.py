"""`compare`'s cells in the report's words (chaoseval.analysis.status), B judged against A.

Per cell, two statuses, each naming its scope:

- ``score``, B's primary metric against A's: ``degraded`` when compare's task-level verdict
  says A is better (on tasks like these); else ``broken`` when the one-sided exact test with
  trials as the units, stratified by task, finds B below A at p <= alpha after Holm across the
  cells (on these tasks); ``improved`` for the mirror image; ``held`` when the difference's
  lower bound is above minus the margin; ``inconclusive`` otherwise.
- ``resilience`` (perturbed cells), the difference of drops: ``degraded`` when A is called
  more resilient, ``improved`` when B is, ``held`` when the difference's lower bound is above
  minus the margin, ``inconclusive`` otherwise. The difference of drops has no exact test on
  trials here: its scope is tasks like these.

``compare --fail-on-regression`` exits 1 when a cell is broken or degraded on either, 3 when
one is inconclusive (chaoseval.exitcodes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chaoseval.analysis.aggregate import CLEAN
from chaoseval.analysis.compare import CellComparison, HarnessComparison
from chaoseval.analysis.degradation import Comparison
from chaoseval.analysis.stats import holm
from chaoseval.analysis.status import ALPHA, DEFAULT_MARGIN
from chaoseval.analysis.strata import stratified_exact
from chaoseval.exitcodes import exit_code

__all__ = ["compare_statuses", "judge_comparison", "regression_exit", "status_lines"]

Counts = Mapping[str, Mapping[str, tuple[int, int]]]  # cell -> task -> (n, c)


def _by_interval(c: Comparison | None, margin: float) -> str:
    d = c.difference if c is not None else None
    return "held" if d is not None and d.low > -margin else "inconclusive"


def compare_statuses(
    h: HarnessComparison, a: Counts, b: Counts, margin: float = DEFAULT_MARGIN
) -> dict[str, dict[str, Any]]:
    """Cell -> {"score": status, "score_scope", "resilience": status or None}, B against A."""
    tables = {
        c.cell: [
            (b[c.cell][t][0], b[c.cell][t][1], n, k)
            for t, (n, k) in sorted(a.get(c.cell, {}).items())
            if t in b.get(c.cell, {}) and n > 0 and b[c.cell][t][0] > 0
        ]
        for c in h.cells
    }
    names = [c.cell for c in h.cells]
    worse = holm([stratified_exact(tables[n], "less") for n in names])
    gain = holm([stratified_exact(tables[n], "greater") for n in names])
    out = {}
    for i, c in enumerate(h.cells):
        out[c.cell] = _one(c, h.primary, worse[i], gain[i], margin)
        # What happened, in counts: passed of scored trials on the paired tasks, per harness.
        rows = tables[c.cell]
        out[c.cell]["passed_a"] = [sum(r[3] for r in rows), sum(r[2] for r in rows)]
        out[c.cell]["passed_b"] = [sum(r[1] for r in rows), sum(r[0] for r in rows)]
    return out


def _one(
    c: CellComparison, primary: str, worse: float, gain: float, margin: float
) -> dict[str, Any]:
    tol = ALPHA * (1 + 1e-12)  # 1/20 read as a float is still alpha
    if c.better is not None:
        score, scope = ("degraded" if c.better == "A" else "improved"), "tasks like these"
    elif worse <= tol:
        score, scope = "broken", "these tasks"
    elif gain <= tol:
        score, scope = "improved", "these tasks"
    else:
        score, scope = _by_interval(c.get(primary), margin), "tasks like these"
    resilience: str | None = None
    if c.cell != CLEAN:
        if c.more_resilient is not None:
            resilience = "degraded" if c.more_resilient == "A" else "improved"
        else:
            resilience = _by_interval(c.get_resilience(primary), margin)
    return {
        "score": score,
        "score_scope": scope,
        "p_these_tasks_worse_holm": worse,
        "resilience": resilience,
    }


def regression_exit(statuses: Mapping[str, Mapping[str, Any]], allow_inconclusive: bool) -> int:
    words = [s[k] for s in statuses.values() for k in ("score", "resilience") if s[k]]
    return exit_code(
        any(w in ("broken", "degraded") for w in words),
        any(w == "inconclusive" for w in words),
        allow_inconclusive,
    )


def _counts(s: Mapping[str, Any]) -> str:
    (pa, na), (pb, nb) = s.get("passed_a", (0, 0)), s.get("passed_b", (0, 0))
    return f"A {pa}/{na}, B {pb}/{nb} passed"


def status_lines(statuses: Mapping[str, Mapping[str, Any]], width: int = 0) -> list[str]:
    """One line per cell, its trials passed in each harness and then the report's words:
    'timeout  A 3/24, B 20/24 passed  B improved (on tasks like these); resilience held'."""
    width = width or max((len(c) for c in statuses), default=0)
    counted = max((len(_counts(s)) for s in statuses.values()), default=0)
    out = []
    for cell, s in statuses.items():
        line = f"{cell.ljust(width)}  {_counts(s).ljust(counted)}  B {s['score']}"
        line += f" (on {s['score_scope']})"
        if s["resilience"]:
            line += f"; resilience {s['resilience']} (on tasks like these)"
        out.append(line)
    return out


def judge_comparison(
    h: HarnessComparison, a: Any, b: Any, margin: float
) -> dict[str, dict[str, Any]]:
    """The statuses of a comparison of two journals' columns (``a``, ``b``: store Trials)."""
    from chaoseval.analysis.aggregate import groups, task_counts
    from chaoseval.analysis.sequential import first_round

    def counts(t: Any) -> dict[str, dict[str, tuple[int, int]]]:
        return {cell: task_counts(g) for cell, g in groups(first_round(t), "cell").items()}

    return compare_statuses(h, counts(a), counts(b), margin)
