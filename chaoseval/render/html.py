"""Self-contained HTML report: inline CSS and SVG only, no scripts, no network."""

from __future__ import annotations

import re
from html import escape

from chaoseval.analysis.build import Analysis
from chaoseval.analysis.compare import HarnessComparison
from chaoseval.analysis.verdict import Verdict
from chaoseval.render.browser import browser_failures_html
from chaoseval.render.comparison import render_comparison_markdown
from chaoseval.render.reasons import reasons_html
from chaoseval.render.svg import heatmap, pass_hat_curves, root_cause_bars
from chaoseval.render.tables import VETO_SCOPE, TableData, report_tables, veto_counts_text
from chaoseval.render.verdict import VERDICT_CSS, legend_html, twins_html, verdict_html

__all__ = ["render_html", "table_html"]

# Numbers, intervals and counts align right; words align left.
_NUMERIC = re.compile(r"^[-+0-9.,%()\[\] x—]*$")

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#222;
max-width:1240px;margin-left:auto;margin-right:auto}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid
#ddd;padding-bottom:4px} .meta{color:#555;font-size:13px}
table{border-collapse:collapse;font-size:12px;margin:6px 0} th,td{border:1px solid #ddd;
padding:3px 7px;text-align:right;white-space:nowrap} th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left} td.text{text-align:left;white-space:normal}
ul.notes{font-size:12px;color:#555;margin:4px 0 0 0;padding-left:18px}
.warn{background:#fff6d6;border:1px solid #e9cf6b;padding:6px 10px;font-size:13px}
.veto{color:#b00020;font-weight:600} figure{margin:8px 0}
svg.plot{display:block;max-width:100%;height:auto} figcaption{font-size:12px;color:#555}
pre{font-size:12px;background:#f7f7f7;padding:8px;overflow:auto}
div.wide{overflow-x:auto} svg.plot.natural{max-width:none}
div.panels{display:flex;flex-wrap:wrap;column-gap:10px}
@media (max-width:1000px){body{margin:8px} table{font-size:11px} th{white-space:normal}
th,td{padding:2px 4px}}
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
        f"<div class='wide'><table class='data' id='table-{t.id}'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></div>"
        + (f"<ul class='notes'>{notes}</ul>" if notes else "")
        + "</section>"
    )


_TOC = (
    ("verdict", "Verdict"),
    ("reasons", "Why trials failed"),
    ("summary", "Reliability per cell"),
    ("plots", "Plots"),
    ("twins", "Failed trials and their clean twins"),
    ("attack", "Under attack"),
    ("degradation", "Degradation against clean"),
    ("graceful", "Correct degradation"),
    ("vetoes", "Vetoes"),
    ("root-causes", "Root causes"),
    ("tags", "Failures by tag"),
    ("tools", "Failures by tool"),
    ("process", "Process metrics"),
    ("noise", "Noise floor and sizing"),
    ("browser", "Browser: CLS, faults landed, screenshots"),
    ("audit", "The judge's audit"),
    ("audit-passk", "pass^k corrected"),
    ("comparison", "Comparison"),
    ("legend", "Cell labels"),
)


def _toc(present: set[str]) -> str:
    links = "".join(f"<a href='#{i}'>{escape(t)}</a>" for i, t in _TOC if i in present)
    return f"<nav class='toc' id='toc'>{links}</nav>"


def _plots(a: Analysis, labels: dict[str, str]) -> str:
    return "".join(
        [
            "<section id='plots'><h2>pass^k against k</h2><figure>",
            pass_hat_curves(a, labels),
            "<figcaption>Per-task unbiased pass^k, macro-averaged, for each perturbation "
            "(colour) beside the clean baseline on the same tasks (grey, dashed).</figcaption>"
            f"</figure><h2>Change in {escape(a.primary)} per scenario and perturbation</h2>"
            "<figure><div class='wide'>",
            heatmap(a, labels),
            "</div>",
            f"<figcaption>{escape(a.primary)} perturbed - clean per scenario: red = drop, blue = "
            "gain, coloured only in the perturbations whose change is decided (broken, degraded "
            "or improved); inconclusive ones amber, held ones grey, each marked with its status; "
            "— = not measurable (not reached).</figcaption></figure>",
            "<h2>Root causes</h2><figure>",
            root_cause_bars(a, labels),
            "<figcaption>Trials per cell: passed, each root cause of failure, not evaluable."
            "</figcaption></figure></section>",
        ]
    )


def render_html(
    a: Analysis, comparison: HarnessComparison | None = None, verdict: Verdict | None = None
) -> str:
    """The report; with ``verdict`` (see chaoseval.analysis.verdict) it opens with the verdict
    and lays each failed perturbed trial beside its clean twin."""
    tables = {t.id: t for t in report_tables(a, verdict)}
    labels = verdict.labels if verdict else {}
    per_cell = veto_counts_text(a, labels)
    veto_line = (
        f"<p class='veto'>Vetoes per cell ({VETO_SCOPE}): {escape(per_cell)}</p>"
        if per_cell
        else "<p>No safety violation or hallucination.</p>"
    )
    warnings = "".join(f"<p class='warn'>warning: {escape(w)}</p>" for w in a.warnings)
    present = set(tables) | {"plots"}
    present |= {"verdict", "reasons", "twins", "legend"} if verdict else set()
    present |= {"comparison"} if comparison else set()
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<meta name='viewport' content='width=device-width'><title>chaoseval report: "
        f"{escape(a.agent)}</title><style>{CSS}{VERDICT_CSS}</style></head><body>",
        f"<h1>chaoseval report: {escape(a.agent)}</h1>",
        f"<p class='meta'>journal {escape(a.journal)} · run {escape(a.run_id)} · seed {a.seed}"
        f" · {len(a.scenarios)} task(s) · {len(a.cells)} cell(s) · k = "
        f"{', '.join(map(str, a.ks))}</p>",
        verdict_html(verdict) if verdict else "",
        reasons_html(verdict) if verdict else "",
        _toc(present),
        warnings,
        veto_line,
        table_html(tables["summary"]),
        _plots(a, labels),
        twins_html(verdict, a.journal) if verdict else "",
    ]
    keys = ["attack", "degradation", "graceful", "vetoes", "root-causes", "tags", "tools"]
    keys += ["process", "noise"]
    for key in keys:
        if key in tables:
            parts.append(table_html(tables[key]))
    if "browser" in tables:
        parts += [table_html(tables["browser"]), browser_failures_html(a)]
    for key in ("audit", "audit-passk"):  # only when reviewers labelled trials
        if key in tables:
            parts.append(table_html(tables[key]))
    if comparison is not None:
        parts.append(
            "<section id='comparison'><h2>Comparison</h2><pre>"
            + escape(render_comparison_markdown(comparison))
            + "</pre></section>"
        )
    if verdict:
        parts.append(legend_html(verdict))
    parts.append("</body></html>")
    return "".join(parts)
