"""Several journals side by side: per perturbation, each harness's pass^k and its change."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from .aggregate import CellResult, by_cell
from .journal import Journal


def _fmt(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "—"
    text = f"{x:+.3f}" if signed else f"{x:.3f}"
    return f"[red]{text}[/]" if signed and x < -0.05 else text


def print_summary(journals: Sequence[Journal], console: Console, k: int | None = None) -> None:
    k = k or max(journals[0].manifest.ks)
    results: list[dict[str, CellResult]] = []
    for j in journals:
        ks = sorted(set(j.manifest.ks) | {k})
        results.append({r.cell: r for r in by_cell(j.records, ks)})
    cells: list[str] = []
    for res in results:
        cells += [c for c in res if c not in cells]
    table = Table(
        title=f"pass^{k} per perturbation and its change against clean, per harness",
        title_justify="left",
    )
    table.add_column("perturbation")
    for j in journals:
        table.add_column(f"{j.manifest.agent} mean", justify="right")
        table.add_column(f"{j.manifest.agent} pass^{k}", justify="right")
        table.add_column(f"{j.manifest.agent} Δpass^{k}", justify="right")
    for cell in cells:
        row = [cell]
        for res in results:
            r = res.get(cell)
            if r is None:
                row += ["—", "—", "—"]
                continue
            d = r.delta.pass_hat.get(k) if r.delta and cell != "clean" else None
            note = " [yellow](did not land)[/]" if r.did_not_land else ""
            row += [
                _fmt(r.summary.mean),
                _fmt(r.summary.pass_hat.get(k)),
                ("" if cell == "clean" else _fmt(d, signed=True)) + note,
            ]
        table.add_row(*row)
    console.print(table)
