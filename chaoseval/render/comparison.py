"""Two harnesses compared (chaoseval.analysis.compare): terminal tables and Markdown.

Both formats show the same rows, built once here: the absolute comparison (is B better in this
cell?) and the resilience comparison (does B lose less than A against its own clean run?).
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from chaoseval.analysis.compare import CellComparison, HarnessComparison
from chaoseval.analysis.compare_conclusion import CompareConclusion
from chaoseval.analysis.degradation import Comparison
from chaoseval.analysis.spend import Budget
from chaoseval.render.markdown import table_markdown
from chaoseval.render.printable import escape, md_code, md_text
from chaoseval.render.tables import TableData, budget_value, fmt, fmt_p, fmt_test_p

__all__ = [
    "budget_table",
    "comparison_tables",
    "left_out",
    "print_comparison",
    "render_comparison_markdown",
    "unpaired",
    "up_front",
]

ABSOLUTE = ("cell", "metric", "A", "B", "B - A", "95% CI", "p", "test", "Holm", "BH", "tasks")
RESILIENCE = ("cell", "metric", "drop A", "drop B", "drop B - drop A", *ABSOLUTE[5:])
_LEFT = {"cell", "metric", "test"}


def _row(cell: str, x: Comparison, drops: bool) -> list[str]:
    """One metric of one cell; a Comparison's arms are (B, A), so A is ``x.b``."""
    d = x.difference
    return [
        cell,
        x.label,
        fmt(x.b, signed=drops),
        fmt(x.a, signed=drops),
        fmt(d.estimate if d else None, signed=True),
        "—" if d is None else f"[{fmt(d.low, True)}, {fmt(d.high, True)}]",
        fmt_test_p(x.test),
        x.test.method if x.test else "—",
        fmt_p(x.p_holm),
        fmt_p(x.p_bh),
        str(x.tasks),
    ]


def _rows(cells: list[CellComparison], resilience: bool) -> tuple[list[list[str]], list[bool]]:
    rows: list[list[str]] = []
    significant: list[bool] = []
    for c in cells:
        for i, x in enumerate(c.resilience if resilience else c.comparisons):
            rows.append(_row(c.cell if i == 0 else "", x, resilience))
            significant.append(x.significant)
    return rows, significant


def comparison_tables(h: HarnessComparison) -> list[TableData]:
    """The absolute and the resilience comparison as plain tables (A and B named in titles)."""
    rows, _ = _rows(h.cells, resilience=False)
    absolute = TableData(
        "absolute",
        f"Scores of {h.b_label} (B) and {h.a_label} (A), paired by task, B - A (the verdict "
        f"is in the conclusion above: {h.primary} only)",
        list(ABSOLUTE),
        rows,
    )
    rows, _ = _rows([c for c in h.cells if c.resilience], resilience=True)
    notes = [
        "drop = cell - clean of the same harness on the same task; drop B - drop A > 0: B loses "
        "less. The clean cell has no resilience figure. Tasks where either harness had no clean "
        f"success ({h.primary} = 0) have nothing to lose and are left out."
    ]
    notes += left_out(h, resilience=True)
    resilience = TableData(
        "resilience",
        "Drops against clean: difference in differences paired by task",
        list(RESILIENCE),
        rows,
        notes,
    )
    return [absolute, resilience]


def left_out(h: HarnessComparison, resilience: bool) -> list[str]:
    """Tasks left out of a cell (other than those in one journal only), grouped by reason."""
    grouped: dict[tuple[str, str], set[str]] = {}
    for c in h.cells:
        for x in c.resilience if resilience else c.comparisons:
            for t, why in x.excluded.items():
                if not why.startswith("only in"):  # listed once at the top
                    grouped.setdefault((c.cell, why), set()).add(t)
    return [
        f"{cell}: left out, {why}: {', '.join(sorted(tasks))}"
        for (cell, why), tasks in sorted(grouped.items())
    ]


def unpaired(h: HarnessComparison) -> list[str]:
    """Tasks and cells present in one journal only: named, and left out of the pairing."""
    lines = []
    for label, tasks in ((h.a_label, h.only_in_a), (h.b_label, h.only_in_b)):
        if tasks:
            lines.append(f"tasks only in {label} (excluded from pairing): {', '.join(tasks)}")
    for label, cells in ((h.a_label, h.cells_only_in_a), (h.b_label, h.cells_only_in_b)):
        if cells:
            lines.append(f"cells only in {label} (not compared): {', '.join(cells)}")
    return lines


def _rich(t: TableData, significant: list[bool]) -> Table:
    table = Table(title=t.title, title_justify="left")
    for col in t.columns:
        table.add_column(col, justify="left" if col in _LEFT else "right")
    for row, sig in zip(t.rows, significant, strict=True):
        cells = [escape(v) for v in row]
        if sig:  # the difference column
            cells[4] = f"[bold]{cells[4]}[/]"
        table.add_row(*cells)
    return table


def budget_table(h: HarnessComparison) -> TableData:
    ba, bb = h.budgets
    rows = []
    for attr, name in Budget.ROWS:
        va, vb = getattr(ba, attr), getattr(bb, attr)
        ratio = f"{vb / va:.2f}x" if va else "—"
        rows.append([name, budget_value(ba, attr), budget_value(bb, attr), ratio])
    title = "budget on the paired tasks and cells (what each harness spent)"
    return TableData("budget", title, ["", h.a_label, h.b_label, "B / A"], rows)


def up_front(h: HarnessComparison) -> list[str]:
    return [
        f"primary metric: {h.primary} (verdicts come from it alone; other metrics are tested "
        "only behind it, in a fixed order)",
        *h.sizing,
    ]


def print_comparison(h: HarnessComparison, console: Console, c: CompareConclusion) -> None:
    """The conclusion first (counts, what it means, how sure), then what it rests on."""
    console.print(f"[bold]{escape(c.headline)}[/]", highlight=False)
    for line in [*c.cells, *c.meaning, *c.sure]:
        console.print(escape(line), highlight=False)
    console.print()
    for line in up_front(h):
        console.print(escape(line), highlight=False)
    for w in h.warnings:
        console.print(f"[yellow]warning:[/] {escape(w)}")
    for line in unpaired(h):
        console.print(f"[yellow]{escape(line)}[/]")
    absolute, resilience = comparison_tables(h)
    console.print(_rich(absolute, _rows(h.cells, False)[1]))
    if resilience.rows:
        console.print(_rich(resilience, _rows(h.cells, True)[1]))
        for note in resilience.notes:
            console.print(f"  [dim]{escape(note)}[/]", highlight=False)
    budget = budget_table(h)
    table = Table(title=budget.title, title_justify="left")
    for i, col in enumerate(budget.columns):
        table.add_column(escape(col), justify="left" if i == 0 else "right")
    for row in budget.rows:
        table.add_row(*row)
    console.print(table)
    for line in left_out(h, resilience=False):
        console.print(f"[yellow]{escape(line)}[/]")


def _conclusion_markdown(h: HarnessComparison, c: CompareConclusion | None) -> list[str]:
    if c is None:  # the report's comparison section: the cells' sentences
        return ["## Conclusions", ""] + [f"- {md_text(v)}" for v in h.conclusions] + [""]
    lines = ["## Conclusion", "", f"**{md_text(c.headline)}**", ""]
    lines += [f"- {md_code(line)}" for line in c.cells] + [""]
    lines += [f"- {md_text(line)}" for line in c.meaning] + [""]
    lines += [md_text(c.sure[0]), ""] + [f"- {md_text(x.strip())}" for x in c.sure[1:]] + [""]
    return lines


def render_comparison_markdown(h: HarnessComparison, c: CompareConclusion | None = None) -> str:
    """The comparison as Markdown; with ``c`` it opens with that conclusion."""
    lines = [f"# {md_text(h.b_label)} (B) vs {md_text(h.a_label)} (A)", ""]
    lines += _conclusion_markdown(h, c)
    lines += [f"- {md_text(line.strip())}" for line in up_front(h)] + [""]
    lines += [f"> warning: {md_text(w)}" for w in h.warnings]
    lines += [f"- {md_text(line)}" for line in unpaired(h)] + [""]
    absolute, resilience = comparison_tables(h)
    absolute.notes = left_out(h, resilience=False)
    lines.append(table_markdown(absolute))
    if resilience.rows:
        lines.append(table_markdown(resilience))
    lines.append(table_markdown(budget_table(h)))
    return "\n".join(lines)
