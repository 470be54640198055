"""The HTML report's failed browser trials, each screenshot beside its failure
(chaoseval.analysis.browser; the CLS table is render.tables.browser_table)."""

from __future__ import annotations

import base64
from html import escape
from pathlib import Path

from chaoseval.analysis.build import Analysis
from chaoseval.store.artifacts import OutsideStore, artifact_file

SHOWN = 6  # screenshots embedded in the HTML report; the rest are listed by path
LISTED = 200  # failures listed at all; a big run's page says how many more there are


def browser_failures_html(a: Analysis) -> str:
    """Each failed browser trial's screenshot (the failing step's, else the last) beside it."""
    if a.browser is None or not a.browser.failures:
        return ""
    parts = ["<section id='browser-failures'><h2>Failed browser trials</h2>"]
    for i, f in enumerate(a.browser.failures[:LISTED]):
        caption = f"{escape(f.trial_id)}: {escape(f.cause)} ({escape(f.screenshot)})"
        try:  # only a file inside the journal's store is ever read
            path = artifact_file(Path(a.journal), f.screenshot, record=f.trial_id)
        except OutsideStore as exc:
            parts.append(f"<p class='meta refused'>{escape(str(exc))}</p>")
            continue
        if i < SHOWN and path.is_file():
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            parts.append(
                f"<figure class='shot'><img alt='screenshot of {escape(f.trial_id)}' width='480' "
                f"src='data:image/png;base64,{data}'><figcaption>{caption}</figcaption></figure>"
            )
        else:
            parts.append(f"<p class='meta'>{caption}</p>")
    more = len(a.browser.failures) - LISTED
    if more > 0:
        folder = escape(f"{Path(a.journal).name}.d/")
        parts.append(
            f"<p class='meta'>{more} more failed browser trial(s), not listed; their "
            f"screenshots are under {folder}</p>"
        )
    return "".join(parts) + "</section>"
