"""Browser trials in a journal: the page's layout stability (CLS) per cell, which layout faults
landed (delivered by the page's own report that its DOM change rendered), and the failed
trials' screenshots.

A browser trial is one whose trajectory holds the page server's ``note`` step
(``tool="browser"``: cls, layout_shifts, page_loads; chaoseval.channels.browser.server).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from statistics import fmean

from chaoseval.analysis.aggregate import Records
from chaoseval.store.columns import as_group

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


def browser_view(records: Records) -> BrowserView | None:
    """None when no trial ran in a browser."""
    g = as_group(records)
    t = g.t
    wanted = set(g.rows.tolist()) if len(g) != len(t) else None
    groups: dict[str, list[int]] = defaultdict(list)
    for row in sorted(t.browser):
        if wanted is None or row in wanted:
            groups[t.value("cell", row)].append(row)
    if not groups:
        return None
    cells, failures = [], []
    for cell, rows in groups.items():
        landed: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for row in rows:
            _, faults, shot = t.browser[row]
            for kind, delivered in faults:
                landed[kind][0] += delivered
                landed[kind][1] += 1
            if int(t.col["status"][row]) == 1 and shot is not None:
                cause = t.value("root_cause", row) or t.errors.get(row) or "failed"
                failures.append(BrowserFailure(t.trial_id(row), cell, cause, shot))
        values = [t.browser[row][0] for row in rows]
        cells.append(
            BrowserCell(
                cell=cell,
                trials=len(rows),
                cls_mean=fmean(values),
                cls_max=max(values),
                landed={k: (d, n) for k, (d, n) in sorted(landed.items())},
            )
        )
    return BrowserView(cells, sorted(failures, key=lambda f: f.trial_id))
