"""Several journals side by side: per perturbation, each harness's pass^k and its change."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from chaoseval.analysis.aggregate import CLEAN, CellResult, by_cell
from chaoseval.store.journal import Journal


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
        title=f"Per perturbation and harness: mean and pass^{k}, with the change against clean "
        "on the same tasks",
        title_justify="left",
    )
    table.add_column("perturbation")
    for j in journals:
        table.add_column(f"{j.manifest.agent}\nmean (Δ)", justify="right")
        table.add_column(f"{j.manifest.agent}\npass^{k} (Δ)", justify="right")
        table.add_column(f"{j.manifest.agent}\ntasks reached", justify="right")
    for cell in cells:
        row = [cell]
        for res in results:
            r = res.get(cell)
            if r is None:
                row += ["—", "—", "—"]
                continue
            d = r.delta if r.delta and cell != CLEAN else None
            mean = _fmt(r.summary.mean) + (f" ({_fmt(d.mean, True)})" if d else "")
            phat = _fmt(r.summary.pass_hat.get(k)) + (
                f" ({_fmt(d.pass_hat.get(k), True)})" if d else ""
            )
            reached = (
                f"{r.summary.tasks + len(r.summary.unscored)}/{len(r.counts) + len(r.not_landed)}"
            )
            if r.did_not_land:
                reached = "[yellow]did not land[/]"
            row += [mean, phat, reached]
        table.add_row(*row)
    console.print(table)
