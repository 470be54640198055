"""The analysis as rich tables in the terminal (after chaoseval.render.report's cell table)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from chaoseval.analysis.build import Analysis
from chaoseval.render.printable import escape
from chaoseval.render.tables import TableData, report_tables

__all__ = ["print_analysis", "print_table"]


def print_analysis(a: Analysis, console: Console, labels: dict[str, str] | None = None) -> None:
    for t in report_tables(a):
        if t.id in ("summary", "attack"):  # chaoseval.render.report already printed them
            continue
        print_table(t, console, labels)


def print_table(t: TableData, console: Console, labels: dict[str, str] | None = None) -> None:
    table = Table(title=t.title, title_justify="left")
    for c in t.columns:
        table.add_column(c, overflow="fold")
    for row in t.rows:
        # Long perturbation specs as their short label (the verdict prints the legend).
        first = (labels or {}).get(row[0], row[0]) if row else ""
        table.add_row(*(escape(c) for c in [first, *row[1:]]))
    console.print(table)
    for n in t.notes:
        console.print(f"  [dim]{escape(n)}[/]", highlight=False)
