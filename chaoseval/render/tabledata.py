"""A report table as plain data (title, columns, rows, notes), and how a number is written in
one: every format (terminal, Markdown, HTML) shows the same text."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["TableData", "fmt"]


@dataclass
class TableData:
    id: str
    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)


def fmt(x: float | None, signed: bool = False, digits: int = 3) -> str:
    if x is None:
        return "—"
    x = x + 0.0  # no "-0.000"
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"
