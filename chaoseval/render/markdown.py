"""Markdown report (GitHub-flavoured tables): for PR comments and CI job summaries."""

from __future__ import annotations

from chaoseval.analysis.build import Analysis
from chaoseval.analysis.verdict import Verdict
from chaoseval.render.tables import TableData, report_tables

__all__ = ["render_markdown", "table_markdown"]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table_markdown(t: TableData, level: int = 2) -> str:
    lines = [f"{'#' * level} {t.title}", ""]
    if t.rows:
        lines.append("| " + " | ".join(_cell(c) for c in t.columns) + " |")
        lines.append("|" + "|".join("---" for _ in t.columns) + "|")
        lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in t.rows]
    else:
        lines.append("_none_")
    if t.notes:
        lines.append("")
        lines += [f"- {n}" for n in t.notes]
    lines.append("")
    return "\n".join(lines)


def render_markdown(a: Analysis, verdict: Verdict | None = None) -> str:
    head = [
        f"# chaoseval report: {a.agent}",
        "",
        f"Journal `{a.journal}`, run `{a.run_id}`, seed {a.seed}, {len(a.scenarios)} task(s), "
        f"k = {', '.join(map(str, a.ks))}.",
        "",
    ]
    head += [f"> warning: {w}" for w in a.warnings]
    if verdict is not None:
        lines = verdict.lines()
        head += ["## Verdict", "", f"**{lines[0]}**", ""] + [f"- {x}" for x in lines[1:]] + [""]
        legend = [
            f"`{short}` = `{cell}`" for cell, short in verdict.labels.items() if short != cell
        ]
        head += (["Cell labels: " + "; ".join(legend) + ".", ""]) if legend else []
    tables = report_tables(a, verdict)
    return "\n".join(head) + "\n" + "\n".join(table_markdown(t) for t in tables)
