"""Several journals side by side: per perturbation, each harness's pass^k and its change."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from chaoseval.analysis.aggregate import CLEAN, CellResult, by_cell
from chaoseval.analysis.build import analyze
from chaoseval.analysis.degradation import Comparison
from chaoseval.render.printable import escape
from chaoseval.store.columns import Trials, as_trials
from chaoseval.store.journal import Journal


def _fmt(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "—"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def _marked(x: float | None, cmp: Comparison | None) -> str:
    """A change against clean: red when the degradation test finds it significant, marked
    'n.s.' when it does not."""
    text = _fmt(x, True)
    if x is None or cmp is None:
        return text
    if not cmp.significant:
        return f"[dim]{text} n.s.[/]"
    return f"[bold red]{text}[/]" if x < 0 else f"[blue]{text}[/]"


def _significance(j: Trials, ks: list[int], k: int) -> dict[tuple[str, str], Comparison]:
    a = analyze(j, ks, n_resamples=2_000, references=False)
    wanted = {"mean", f"pass^{k}"}
    return {
        (cell, c.label): c for cell, cs in a.degradation.items() for c in cs if c.label in wanted
    }


def print_summary(
    journals: Sequence[Trials | Journal], console: Console, k: int | None = None
) -> None:
    tables = [as_trials(j) for j in journals]
    k = k or max(tables[0].manifest.ks)
    results: list[dict[str, CellResult]] = []
    tests: list[dict[tuple[str, str], Comparison]] = []
    for j in tables:
        ks = sorted(set(j.manifest.ks) | {k})
        results.append({r.cell: r for r in by_cell(j, ks)})
        tests.append(_significance(j, ks, k))
    cells: list[str] = []
    for res in results:
        cells += [c for c in res if c not in cells]
    table = Table(
        title=f"Per perturbation and harness: mean and pass^{k}, with the change against clean "
        "on the same tasks (red: a significant drop, n.s.: not significant)",
        title_justify="left",
    )
    table.add_column("perturbation")
    for j in tables:
        agent = escape(j.manifest.agent)
        table.add_column(f"{agent}\nmean (Δ)", justify="right")
        table.add_column(f"{agent}\npass^{k} (Δ)", justify="right")
        table.add_column(f"{agent}\ntasks reached", justify="right")
    for cell in cells:
        row = [escape(cell)]
        for res, test in zip(results, tests, strict=True):
            r = res.get(cell)
            if r is None:
                row += ["—", "—", "—"]
                continue
            d = r.delta if r.delta and cell != CLEAN else None
            mean = _fmt(r.summary.mean) + (
                f" ({_marked(d.mean, test.get((cell, 'mean')))})" if d else ""
            )
            phat = _fmt(r.summary.pass_hat.get(k)) + (
                f" ({_marked(d.pass_hat.get(k), test.get((cell, f'pass^{k}')))})" if d else ""
            )
            reached = (
                f"{r.summary.tasks + len(r.summary.unscored)}/{len(r.counts) + len(r.not_landed)}"
            )
            if r.did_not_land:
                reached = "[yellow]did not land[/]"
            row += [mean, phat, reached]
        table.add_row(*row)
    console.print(table)
