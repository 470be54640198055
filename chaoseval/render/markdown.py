"""Markdown report (GitHub-flavoured tables): for PR comments and CI job summaries."""

from __future__ import annotations

from chaoseval.analysis.build import Analysis
from chaoseval.analysis.verdict import Verdict
from chaoseval.render.printable import md_code, md_text
from chaoseval.render.reasons import reasons_markdown
from chaoseval.render.tables import TableData, report_tables

__all__ = ["render_markdown", "table_markdown"]


def table_markdown(t: TableData, level: int = 2) -> str:
    """A table as Markdown, every title, cell and note escaped (they hold cell, task, tool
    and agent names, errors and veto details: a journal's text, shown as written)."""
    lines = [f"{'#' * level} {md_text(t.title)}", ""]
    if t.rows:
        lines.append("| " + " | ".join(md_text(c) for c in t.columns) + " |")
        lines.append("|" + "|".join("---" for _ in t.columns) + "|")
        lines += ["| " + " | ".join(md_text(c) for c in row) + " |" for row in t.rows]
    else:
        lines.append("_none_")
    if t.notes:
        lines.append("")
        lines += [f"- {md_text(n)}" for n in t.notes]
    lines.append("")
    return "\n".join(lines)


def render_markdown(a: Analysis, verdict: Verdict | None = None) -> str:
    head = [
        f"# chaoseval report: {md_text(a.agent)}",
        "",
        f"Journal {md_code(a.journal)}, run {md_code(a.run_id)}, seed {a.seed}, "
        f"{len(a.scenarios)} task(s), k = {', '.join(map(str, a.ks))}.",
        "",
    ]
    head += [f"> warning: {md_text(w)}" for w in a.warnings]
    if verdict is not None:
        lines = [md_text(x) for x in verdict.lines()]
        head += ["## Verdict", "", f"**{lines[0]}**", ""] + [f"- {x}" for x in lines[1:]] + [""]
        legend = [
            f"{md_code(short)} = {md_code(cell)}"
            for cell, short in verdict.labels.items()
            if short != cell
        ]
        head += (["Cell labels: " + "; ".join(legend) + ".", ""]) if legend else []
        head += reasons_markdown(verdict)
    tables = report_tables(a, verdict)
    return "\n".join(head) + "\n" + "\n".join(table_markdown(t) for t in tables)
