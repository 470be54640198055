"""A sequential run's decisions as lines of text: one per cell, then the run's trials."""

from __future__ import annotations

from chaoseval.analysis.sequential import METHOD_WORDS, CellDecision, Progress

__all__ = ["decision_lines"]


def _interval(d: CellDecision) -> str:
    if d.estimate is None:
        return ""
    if d.lower is None or d.upper is None:
        return f"  difference {d.estimate:+.3f}"
    return f"  difference {d.estimate:+.3f} [{d.lower:+.3f}, {d.upper:+.3f}]"


def _phrase(d: CellDecision) -> str:
    tasks = f"{len(d.tasks)} task{'s' if len(d.tasks) != 1 else ''}"
    if d.status == "did not land":
        return "did not land (no fault reached the agent in its first round: not tested)"
    where = f"after {d.trials} trial(s) per task on {tasks}"
    if d.status in ("broken", "improved", "held"):
        return f"{d.status} in round {d.round} {where} ({d.rule})"
    if d.status == "inconclusive":
        return f"inconclusive {where}: {d.rule}; {d.why}"
    return f"undecided {where}"


def decision_lines(p: Progress) -> list[str]:
    """``timeout  broken in round 1 after 2 trial(s) per task on 9 tasks (...)  difference
    -0.611 [-0.85, -0.30]``, a line per cell, then what the guarantee is."""
    width = max((len(c) for c in p.decisions), default=0)
    lines = [f"{cell.ljust(width)}  {_phrase(d)}{_interval(d)}" for cell, d in p.decisions.items()]
    design = p.design
    lines.append(
        f"sequential: {p.rounds_done} round(s); every claim (broken, improved, held within "
        f"{design.margin:g}) tested together by e-values ({METHOD_WORDS[design.method]}) at alpha "
        f"{design.alpha:g}, "
        "valid after every round (on these tasks; the intervals are confidence sequences, "
        "simultaneous over the cells)"
    )
    return lines
