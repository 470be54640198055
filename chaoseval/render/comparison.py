"""Two harnesses compared (chaoseval.analysis.compare) as rich tables in the terminal."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from chaoseval.analysis.compare import Budget, HarnessComparison
from chaoseval.render.tables import budget_value, fmt, fmt_p

__all__ = ["print_comparison"]

COLUMNS = ("cell", "metric", "A", "B", "B - A", "95% CI", "p", "test", "Holm", "BH", "tasks")


def _unpaired(h: HarnessComparison, console: Console) -> None:
    """Tasks and cells present in one journal only: named, and left out of the pairing."""
    for label, tasks in ((h.a_label, h.only_in_a), (h.b_label, h.only_in_b)):
        if tasks:
            console.print(
                f"[yellow]tasks only in {label} (excluded from pairing):[/] " + ", ".join(tasks)
            )
    for label, cells in ((h.a_label, h.cells_only_in_a), (h.b_label, h.cells_only_in_b)):
        if cells:
            console.print(f"[yellow]cells only in {label} (not compared):[/] {', '.join(cells)}")


def _differences(h: HarnessComparison) -> Table:
    table = Table(
        title=f"{h.b_label} vs {h.a_label} — paired by task, differences are B - A",
        title_justify="left",
    )
    for col in COLUMNS:
        table.add_column(col, justify="left" if col in ("cell", "metric", "test") else "right")
    for c in h.cells:
        for i, x in enumerate(c.comparisons):
            d = x.difference
            diff = fmt(d.estimate if d else None, signed=True)
            table.add_row(
                escape(c.cell) if i == 0 else "",
                x.label,
                fmt(x.b),
                fmt(x.a),
                f"[bold]{diff}[/]" if x.significant else diff,
                "—" if d is None else f"[{d.low:+.3f}, {d.high:+.3f}]",
                fmt_p(x.test.p_value if x.test else None),
                x.test.method if x.test else "—",
                fmt_p(x.p_holm),
                fmt_p(x.p_bh),
                str(x.tasks),
            )
    return table


def _budget(h: HarnessComparison) -> Table:
    table = Table(
        title="budget on the paired tasks and cells (what each harness spent)", title_justify="left"
    )
    table.add_column("")
    table.add_column(h.a_label, justify="right")
    table.add_column(h.b_label, justify="right")
    table.add_column("B / A", justify="right")
    ba, bb = h.budgets
    for attr, name in Budget.ROWS:
        va, vb = getattr(ba, attr), getattr(bb, attr)
        ratio = f"{vb / va:.2f}x" if va else "—"
        table.add_row(name, budget_value(ba, attr), budget_value(bb, attr), ratio)
    return table


def _excluded(h: HarnessComparison, console: Console) -> None:
    excluded = {
        (c.cell, t): why
        for c in h.cells
        for x in c.comparisons
        for t, why in x.excluded.items()
        if not why.startswith("only in")  # already listed above
    }
    if not excluded:
        return
    console.print("[yellow]excluded from pairing (cell: reason: tasks)[/]")
    grouped: dict[tuple[str, str], list[str]] = {}
    for (cell, t), why in sorted(excluded.items()):
        grouped.setdefault((cell, why), []).append(t)
    for (cell, why), tasks in grouped.items():
        names = escape(", ".join(tasks))
        console.print(f"  {escape(cell)}: {escape(why)}: {len(tasks)} task(s): {names}")


def print_comparison(h: HarnessComparison, console: Console) -> None:
    for w in h.warnings:
        console.print(f"[yellow]warning:[/] {escape(w)}")
    _unpaired(h, console)
    console.print(_differences(h))
    console.print(_budget(h))
    console.print("[bold]conclusions[/]")
    for c in h.cells:
        style = "green" if c.winner else "dim"
        console.print(f"  [{style}]{escape(c.verdict)}[/]", highlight=False)
    _excluded(h, console)
