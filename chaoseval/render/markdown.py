"""Markdown report (GitHub-flavoured tables): for PR comments and CI job summaries."""

from __future__ import annotations

from chaoseval.analysis.build import Analysis
from chaoseval.analysis.compare import Budget, HarnessComparison
from chaoseval.render.tables import TableData, budget_value, report_tables

__all__ = ["render_comparison_markdown", "render_markdown", "table_markdown"]


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


def render_markdown(a: Analysis) -> str:
    head = [
        f"# chaoseval report: {a.agent}",
        "",
        f"Journal `{a.journal}`, run `{a.run_id}`, seed {a.seed}, {len(a.scenarios)} task(s), "
        f"k = {', '.join(map(str, a.ks))}.",
        "",
    ]
    head += [f"> warning: {w}" for w in a.warnings]
    return "\n".join(head) + "\n" + "\n".join(table_markdown(t) for t in report_tables(a))


def render_comparison_markdown(h: HarnessComparison) -> str:
    lines = [f"# {h.b_label} vs {h.a_label}", "", "Differences are B - A, paired by task.", ""]
    lines += [f"> warning: {w}" for w in h.warnings]
    for label, tasks in ((h.a_label, h.only_in_a), (h.b_label, h.only_in_b)):
        if tasks:
            lines.append(f"- tasks only in {label} (excluded from pairing): {', '.join(tasks)}")
    lines += ["", "## Conclusions", ""] + [f"- {v}" for v in h.conclusions] + [""]
    cols = ["cell", "metric", "A", "B", "B - A", "95% CI", "p", "Holm", "BH", "tasks"]
    rows = []
    for c in h.cells:
        for x in c.comparisons:
            d = x.difference
            rows.append(
                [
                    c.cell,
                    x.label,
                    "—" if x.b is None else f"{x.b:.3f}",
                    "—" if x.a is None else f"{x.a:.3f}",
                    "—" if d is None else f"{d.estimate + 0.0:+.3f}",
                    "—" if d is None else f"[{d.low + 0.0:+.3f}, {d.high + 0.0:+.3f}]",
                    "—" if x.test is None else f"{x.test.p_value:.3g}",
                    "—" if x.p_holm is None else f"{x.p_holm:.3g}",
                    "—" if x.p_bh is None else f"{x.p_bh:.3g}",
                    str(x.tasks),
                ]
            )
    lines.append(table_markdown(TableData("cmp", "Paired differences", cols, rows)))
    ba, bb = h.budgets
    brows = [[name, budget_value(ba, attr), budget_value(bb, attr)] for attr, name in Budget.ROWS]
    lines.append(table_markdown(TableData("budget", "Budget", ["", h.a_label, h.b_label], brows)))
    return "\n".join(lines)
