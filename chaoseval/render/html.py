"""Self-contained HTML report: inline CSS and SVG only, no scripts, no network."""

from __future__ import annotations

import re
from html import escape

from chaoseval.analysis.build import Analysis
from chaoseval.analysis.compare import HarnessComparison
from chaoseval.render.comparison import render_comparison_markdown
from chaoseval.render.svg import heatmap, pass_hat_curves, root_cause_bars
from chaoseval.render.tables import TableData, report_tables

__all__ = ["render_html", "table_html"]

# Numbers, intervals and counts align right; words align left.
_NUMERIC = re.compile(r"^[-+0-9.,%()\[\] x—]*$")

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#222;
max-width:1240px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid
#ddd;padding-bottom:4px} .meta{color:#555;font-size:13px}
table{border-collapse:collapse;font-size:12px;margin:6px 0} th,td{border:1px solid #ddd;
padding:3px 7px;text-align:right;white-space:nowrap} th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left} td.text{text-align:left;white-space:normal}
ul.notes{font-size:12px;color:#555;margin:4px 0 0 0;padding-left:18px}
.warn{background:#fff6d6;border:1px solid #e9cf6b;padding:6px 10px;font-size:13px}
.veto{color:#b00020;font-weight:600} figure{margin:8px 0} figcaption{font-size:12px;color:#555}
pre{font-size:12px;background:#f7f7f7;padding:8px;overflow:auto}
"""


def table_html(t: TableData) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in t.columns)
    body = []
    for row in t.rows:
        tds = "".join(
            f"<td>{escape(v)}</td>" if _NUMERIC.match(v) else f"<td class='text'>{escape(v)}</td>"
            for v in row
        )
        body.append(f"<tr>{tds}</tr>")
    if not t.rows:
        body.append(f"<tr><td colspan='{len(t.columns)}'>none</td></tr>")
    notes = "".join(f"<li>{escape(n)}</li>" for n in t.notes)
    return (
        f"<section id='{t.id}'><h2>{escape(t.title)}</h2>"
        f"<table class='data' id='table-{t.id}'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
        + (f"<ul class='notes'>{notes}</ul>" if notes else "")
        + "</section>"
    )


def render_html(a: Analysis, comparison: HarnessComparison | None = None) -> str:
    tables = {t.id: t for t in report_tables(a)}
    vetoes = a.veto_counts()
    veto_line = (
        "<p class='veto'>Vetoes: "
        + ", ".join(f"{escape(k)} {n}" for k, n in sorted(vetoes.items()))
        + "</p>"
        if vetoes
        else "<p>No safety violation or hallucination.</p>"
    )
    warnings = "".join(f"<p class='warn'>warning: {escape(w)}</p>" for w in a.warnings)
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>chaoseval report: {escape(a.agent)}</title><style>{CSS}</style></head><body>",
        f"<h1>chaoseval report: {escape(a.agent)}</h1>",
        f"<p class='meta'>journal {escape(a.journal)} · run {escape(a.run_id)} · seed {a.seed}"
        f" · {len(a.scenarios)} task(s) · cells: {escape(', '.join(c.cell for c in a.cells))}"
        f" · k = {', '.join(map(str, a.ks))}</p>",
        warnings,
        veto_line,
        table_html(tables["summary"]),
        "<section id='plots'><h2>pass^k against k</h2><figure>",
        pass_hat_curves(a),
        "<figcaption>Per-task unbiased pass^k, macro-averaged, for each perturbation (colour) "
        "beside the clean baseline (grey, dashed).</figcaption></figure>",
        f"<h2>Change in pass^{a.k_main} per scenario and perturbation</h2><figure>",
        heatmap(a),
        f"<figcaption>pass^{a.k_main} perturbed - clean per scenario: red = drop, blue = gain, "
        "grey = not measurable.</figcaption></figure>",
        "<h2>Root causes</h2><figure>",
        root_cause_bars(a),
        "<figcaption>Trials per cell: passed, each root cause of failure, not evaluable."
        "</figcaption></figure></section>",
    ]
    for key in ("degradation", "vetoes", "root-causes", "tags", "tools", "process", "noise"):
        if key in tables:
            parts.append(table_html(tables[key]))
    if comparison is not None:
        parts.append(
            "<section id='comparison'><h2>Comparison</h2><pre>"
            + escape(render_comparison_markdown(comparison))
            + "</pre></section>"
        )
    parts.append("</body></html>")
    return "".join(parts)
