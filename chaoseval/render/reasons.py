"""Why trials failed, in every view: a line per cell under the verdict, and the first failed
trials of each cell (clean included) with their error, failed checks, vetoes and answer.

The reasons are the journal's text (chaoseval.analysis.reasons); each format escapes it here:
rich markup and control characters for the terminal, HTML for the page, Markdown for the
Markdown report (JUnit's XML is escaped by ElementTree and render.junit).
"""

from __future__ import annotations

from html import escape as html_escape

from rich.console import Console

from chaoseval.analysis.reasons import CellReasons, TrialReason
from chaoseval.analysis.verdict import Verdict
from chaoseval.render.printable import escape, md_code, md_text

__all__ = [
    "print_reason_summary",
    "print_reasons",
    "reason_lines",
    "reasons_html",
    "reasons_markdown",
    "summary_lines",
]

TITLE = "Why trials failed"


def _label(v: Verdict, cell: str) -> str:
    return v.labels.get(cell, cell)


def _more(c: CellReasons) -> str:
    return f"… and {c.more} more failed trial(s) in this cell" if c.more else ""


def summary_lines(v: Verdict) -> list[str]:
    """One line per cell with a failure: how many, and the first one's reason."""
    out = []
    for cell, c in v.reasons.items():
        first = c.listed[0]
        out.append(f"{_label(v, cell)}: {c.failed} failed; {first.trial_id}: {first.headline()}")
    return out


def reason_lines(r: TrialReason) -> list[str]:
    """A trial's heading line and its reason lines (plain text, indented)."""
    return [f"{r.trial_id}: {r.root_cause or 'failed'}", *(f"  {x}" for x in r.lines())]


def print_reason_summary(v: Verdict, console: Console) -> None:
    """Right under the verdict: the first thing read says why, not only how many."""
    lines = summary_lines(v)
    if lines:
        console.print(f"[bold]{TITLE}:[/]", highlight=False)
    for line in lines:
        console.print(f"  {escape(line)}", highlight=False)


def print_reasons(v: Verdict, console: Console) -> None:
    if not v.reasons:
        return
    console.print(f"[bold]{TITLE} (the first of each cell, clean included)[/]", highlight=False)
    for cell, c in v.reasons.items():
        console.print(f"  [bold]{escape(_label(v, cell))}[/]: {c.failed} failed", highlight=False)
        for r in c.listed:
            head, *rest = reason_lines(r)
            console.print(f"    {escape(head)}", highlight=False)
            for line in rest:
                console.print(f"    [dim]{escape(line)}[/]", highlight=False)
        if c.more:
            console.print(f"    {escape(_more(c))}", highlight=False)


def _trial_html(r: TrialReason) -> str:
    items = "".join(f"<li>{html_escape(line)}</li>" for line in r.lines())
    return (
        f"<li><b>{html_escape(r.trial_id)}</b>: {html_escape(r.root_cause or 'failed')}"
        f"<ul class='reason'>{items}</ul></li>"
    )


def reasons_html(v: Verdict) -> str:
    parts = [
        f"<section id='reasons'><h2>{TITLE}</h2><p class='meta'>The first failed trials of "
        "each cell, clean included: the error the agent raised, the checks that failed (with "
        "what they expected and found), the vetoes and the start of the answer.</p>"
    ]
    if not v.reasons:
        parts.append("<p>No trial failed.</p>")
    for cell, c in v.reasons.items():
        more = f"<p class='meta'>{html_escape(_more(c))}</p>" if c.more else ""
        parts.append(
            f"<h3>{html_escape(_label(v, cell))}: {c.failed} failed trial(s)</h3>"
            f"<ul class='reasons'>{''.join(_trial_html(r) for r in c.listed)}</ul>{more}"
        )
    parts.append("</section>")
    return "".join(parts)


def reasons_markdown(v: Verdict) -> list[str]:
    """The Markdown section's lines (none when no trial failed)."""
    if not v.reasons:
        return []
    out = [f"## {TITLE}", ""]
    for cell, c in v.reasons.items():
        out += [f"### {md_text(_label(v, cell))}: {c.failed} failed trial(s)", ""]
        for r in c.listed:
            out.append(f"- {md_code(r.trial_id)}: {md_text(r.root_cause or 'failed')}")
            out += [f"  - {md_text(line)}" for line in r.lines()]
        if c.more:
            out.append(f"- {md_text(_more(c))}")
        out.append("")
    return out
