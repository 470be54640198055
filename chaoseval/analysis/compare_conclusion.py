"""What ``compare`` says first, in every format, before any table (issue 42, item 5).

1. what happened, in counts: each status counted over the cells (the score, then resilience),
   and one line per cell with the trials each harness passed on the paired tasks and the
   cell's statuses (chaoseval.analysis.compare_status);
2. what it means: where B scores higher or lower than A, where it loses less or more to a
   perturbation, and what is undecided;
3. how sure: what each status rests on (its test, its units, its scope), then each cell's
   figures (difference, 95% interval, Holm-adjusted p, paired tasks: chaoseval.analysis.compare).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from chaoseval.analysis.compare import HarnessComparison
from chaoseval.analysis.compare_status import status_lines
from chaoseval.analysis.status import ALPHA, STATUSES

__all__ = ["CompareConclusion", "conclude"]


@dataclass(frozen=True)
class CompareConclusion:
    headline: str  # counts of the statuses
    cells: list[str]  # a counts line per cell
    meaning: list[str]
    sure: list[str]  # what the statuses rest on, then each cell's figures

    def lines(self) -> list[str]:
        return [self.headline, *self.cells, *self.meaning, *self.sure]


def _tally(words: Iterable[str]) -> str:
    counted = Counter(words)
    return ", ".join(f"{counted[w]} {w}" for w in STATUSES if counted[w]) or "none"


def _named(cells: list[str], none: str) -> str:
    return ", ".join(cells) if cells else none


def _said(statuses: Mapping[str, Mapping[str, Any]], word: str) -> list[str]:
    """'cell (score)', 'cell (resilience)' for each status that is ``word``."""
    return [
        f"{cell} ({key})"
        for cell, s in statuses.items()
        for key in ("score", "resilience")
        if s[key] == word
    ]


def _meaning(
    h: HarnessComparison, statuses: Mapping[str, Mapping[str, Any]], margin: float
) -> list[str]:
    def where(key: str, *words: str) -> list[str]:
        return [cell for cell, s in statuses.items() if s[key] in words]

    la, lb = h.a_label, h.b_label
    out = [
        f"What it means: {lb} scores higher than {la} in "
        f"{_named(where('score', 'improved'), 'no cell')}, lower in "
        f"{_named(where('score', 'degraded', 'broken'), 'no cell')}"
    ]
    if any(s["resilience"] for s in statuses.values()):
        out[0] += (
            f"; against its own clean run it loses less than {la} to "
            f"{_named(where('resilience', 'improved'), 'no perturbation')}, more to "
            f"{_named(where('resilience', 'degraded'), 'none')}"
        )
    out[0] += "."
    held = _said(statuses, "held")
    if held:
        out.append(f"Held, {lb} no worse than {la} by more than {margin:g}: {', '.join(held)}.")
    undecided = _said(statuses, "inconclusive")
    if undecided:
        out.append(
            f"Undecided: {', '.join(undecided)}: neither a difference nor the absence of one "
            "is shown at this size; more trials or tasks would tell (see the sizing below)."
        )
    return out


def conclude(
    h: HarnessComparison, statuses: Mapping[str, Mapping[str, Any]], margin: float
) -> CompareConclusion:
    """The conclusion of ``h`` judged as ``statuses`` (compare_status.judge_comparison)."""
    score = [s["score"] for s in statuses.values()]
    resilience = [s["resilience"] for s in statuses.values() if s["resilience"]]
    headline = (
        f"{h.b_label} (B) against {h.a_label} (A) on {h.primary}, paired by task: score in "
        f"{len(score)} cell(s): {_tally(score)}"
    )
    if resilience:
        headline += f"; resilience under {len(resilience)} perturbation(s): {_tally(resilience)}"
    sure = [
        f"How sure: improved and degraded (on tasks like these) are significant differences of "
        f"{h.primary}, tasks as the units, Holm-adjusted across the cells at p <= {ALPHA:g}; "
        "broken and improved (on these tasks): the one-sided exact test, trials as the units, "
        f"stratified by task, Holm; held: the difference's 95% interval lies above -{margin:g}; "
        "inconclusive: none of these. Per cell:",
        *(f"  {line}" for line in h.conclusions),
    ]
    return CompareConclusion(
        headline + ".", status_lines(statuses), _meaning(h, statuses, margin), sure
    )
