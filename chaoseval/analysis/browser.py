"""Browser trials in a journal: the page's layout stability (CLS) per cell, which layout faults
landed (delivered by the page's own report that its DOM change rendered), and the failed
trials' screenshots.

A browser trial is one whose trajectory holds the page server's ``note`` step
(``tool="browser"``: cls, layout_shifts, page_loads; chaoseval.channels.browser.server).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from statistics import fmean

from chaoseval.model.records import TrialRecord

__all__ = ["BrowserCell", "BrowserFailure", "BrowserView", "browser_view"]


@dataclass
class BrowserCell:
    cell: str
    trials: int  # trials whose page was opened in a browser
    cls_mean: float
    cls_max: float
    landed: dict[str, tuple[int, int]] = field(default_factory=dict)  # kind -> delivered, fired


@dataclass
class BrowserFailure:
    trial_id: str
    cell: str
    cause: str
    screenshot: str  # path relative to the journal's folder


@dataclass
class BrowserView:
    cells: list[BrowserCell]
    failures: list[BrowserFailure]


def _cls(record: TrialRecord) -> float | None:
    for step in record.trajectory.steps:
        if step.kind == "note" and step.tool == "browser" and isinstance(step.result, dict):
            return float(step.result.get("cls", 0.0))
    return None


def _screenshot(record: TrialRecord) -> str | None:
    shots = [a for a in record.artifacts if a.name.endswith(".png")]
    failed = [a for a in shots if a.name.startswith("failed")]  # the failing step, else the end
    chosen = (failed or shots)[:1]
    return chosen[0].path if chosen else None


def browser_view(records: Iterable[TrialRecord]) -> BrowserView | None:
    """None when no trial ran in a browser."""
    groups: dict[str, list[tuple[TrialRecord, float]]] = defaultdict(list)
    for r in records:
        cls = _cls(r)
        if cls is not None:
            groups[r.cell].append((r, cls))
    if not groups:
        return None
    cells, failures = [], []
    for cell, pairs in groups.items():
        landed: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for r, _ in pairs:
            for f in r.trajectory.faults:
                landed[f.kind][0] += f.delivered
                landed[f.kind][1] += 1
            shot = _screenshot(r)
            if r.status == "failed" and shot is not None:
                cause = r.root_cause or r.error or "failed"
                failures.append(BrowserFailure(r.trial_id, cell, cause, shot))
        values = [c for _, c in pairs]
        cells.append(
            BrowserCell(
                cell=cell,
                trials=len(pairs),
                cls_mean=fmean(values),
                cls_max=max(values),
                landed={k: (d, n) for k, (d, n) in sorted(landed.items())},
            )
        )
    return BrowserView(cells, sorted(failures, key=lambda f: f.trial_id))
