"""Several journals side by side: per perturbation, each harness's pass^k and its change."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.table import Table

from chaoseval.analysis.aggregate import CLEAN, CellResult, by_cell, groups
from chaoseval.analysis.degradation import Comparison, degradation
from chaoseval.analysis.primary import recorded_primary
from chaoseval.render.printable import escape
from chaoseval.store.columns import Group, Trials, as_trials
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


def _significance(
    j: Trials, ks: list[int], k: int, cells: list[CellResult]
) -> dict[tuple[str, str], Comparison]:
    """The degradation tests of ``mean`` and pass^k in each cell, as the report makes them
    (its k values and the run's primary metric decide the tests' families and order); only
    those, not the report's other sections."""
    main = recorded_primary(j.manifest)
    tested = sorted(set(ks) | ({main.kk} if main.metric != "mean" else set()))
    records = Group.all(j)
    by = groups(records, "cell")
    if tested != ks:
        cells = by_cell(records, tested)
    degraded = degradation(cells, by, tested, [], n_resamples=2_000, primary=main.label)
    wanted = {"mean", f"pass^{k}"}
    return {(cell, c.label): c for cell, cs in degraded.items() for c in cs if c.label in wanted}


def _column(j: Trials, k: int) -> dict[str, list[str]]:
    """One journal's three figures in each of its cells."""
    ks = sorted(set(j.manifest.ks) | {k})
    results = by_cell(j, ks)
    test = _significance(j, ks, k, results)
    out: dict[str, list[str]] = {}
    for r in results:
        cell = r.cell
        d = r.delta if r.delta and cell != CLEAN else None
        mean = _fmt(r.summary.mean) + (
            f" ({_marked(d.mean, test.get((cell, 'mean')))})" if d else ""
        )
        phat = _fmt(r.summary.pass_hat.get(k)) + (
            f" ({_marked(d.pass_hat.get(k), test.get((cell, f'pass^{k}')))})" if d else ""
        )
        reached = f"{r.summary.tasks + len(r.summary.unscored)}/{len(r.counts) + len(r.not_landed)}"
        if r.did_not_land:
            reached = "[yellow]did not land[/]"
        out[cell] = [mean, phat, reached]
    return out


def print_summary(
    journals: Iterable[Trials | Journal], console: Console, k: int | None = None
) -> None:
    """``journals`` taken one at a time: each is summed up into its figures and let go before
    the next is read (a generator of read_trials holds one journal's columns at a time)."""
    columns: list[tuple[str, dict[str, list[str]]]] = []
    for j in journals:
        t = as_trials(j)
        k = k or max(t.manifest.ks)
        columns.append((t.manifest.agent, _column(t, k)))
        del j, t  # before the next journal is read
    cells: list[str] = []
    for _, res in columns:
        cells += [c for c in res if c not in cells]
    table = Table(
        title=f"Per perturbation and harness: mean and pass^{k}, with the change against clean "
        "on the same tasks (red: a significant drop, n.s.: not significant)",
        title_justify="left",
    )
    table.add_column("perturbation")
    for agent_name, _ in columns:
        agent = escape(agent_name)
        table.add_column(f"{agent}\nmean (Δ)", justify="right")
        table.add_column(f"{agent}\npass^{k} (Δ)", justify="right")
        table.add_column(f"{agent}\ntasks reached", justify="right")
    for cell in cells:
        row = [escape(cell)]
        for _, res in columns:
            row += res.get(cell, ["—", "—", "—"])
        table.add_row(*row)
    console.print(table)
