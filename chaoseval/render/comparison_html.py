"""``compare -f html``: the comparison as one self-contained page in the HTML report's style
(its CSS, its tables, no scripts, no network), the conclusion first.

Every piece of journal text (agent names, cells, tasks, warnings) goes through
:func:`html.escape` as in the report; the page is redacted and its control characters made
visible where it is written (cli._reading.emit), as every report is.
"""

from __future__ import annotations

from html import escape

from chaoseval.analysis.compare import HarnessComparison
from chaoseval.analysis.compare_conclusion import CompareConclusion
from chaoseval.render.comparison import (
    budget_table,
    comparison_tables,
    left_out,
    unpaired,
    up_front,
)
from chaoseval.render.html import CSS, table_html
from chaoseval.render.verdict import VERDICT_CSS

__all__ = ["render_comparison_html"]


def _items(lines: list[str], css: str) -> str:
    return f"<ul class='{css}'>" + "".join(f"<li>{escape(x.strip())}</li>" for x in lines) + "</ul>"


def _conclusion(c: CompareConclusion) -> str:
    return (
        "<section id='conclusion'><h2>Conclusion</h2>"
        f"<p class='headline'>{escape(c.headline)}</p>"
        f"<pre class='counts'>{escape(chr(10).join(c.cells))}</pre>"
        + _items(c.meaning, "verdict")
        + f"<p>{escape(c.sure[0])}</p>"
        + _items(c.sure[1:], "verdict")
        + "</section>"
    )


def render_comparison_html(h: HarnessComparison, c: CompareConclusion) -> str:
    title = f"chaoseval compare: {h.b_label} (B) vs {h.a_label} (A)"
    absolute, resilience = comparison_tables(h)
    absolute.notes = left_out(h, resilience=False)
    tables = [absolute, *([resilience] if resilience.rows else []), budget_table(h)]
    warnings = [f"warning: {w}" for w in h.warnings] + unpaired(h)
    return "".join(
        [
            "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
            f"<meta name='viewport' content='width=device-width'><title>{escape(title)}</title>"
            f"<style>{CSS}{VERDICT_CSS}</style></head><body>",
            f"<h1>{escape(title)}</h1>",
            f"<p class='meta'>A: {escape(h.a_path)} · B: {escape(h.b_path)} · k = "
            f"{', '.join(map(str, h.ks))}</p>",
            _conclusion(c),
            _items(up_front(h), "notes"),
            "".join(f"<p class='warn'>{escape(w)}</p>" for w in warnings),
            *(table_html(t) for t in tables),
            "</body></html>",
        ]
    )
