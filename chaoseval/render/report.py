"""Reports of one journal: a rich terminal table and a versioned JSON document."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from chaoseval.analysis.aggregate import CLEAN, CellResult, by_cell
from chaoseval.analysis.build import Analysis, analyze
from chaoseval.analysis.pairs import pair_json
from chaoseval.analysis.pairtext import long_list, pair_text
from chaoseval.analysis.sampling import sampling_json, sampling_lines
from chaoseval.analysis.simulator import simulator_failures, simulator_line
from chaoseval.analysis.verdict import Verdict, build_verdict
from chaoseval.render.printable import escape
from chaoseval.render.reasons import print_reason_summary, print_reasons
from chaoseval.render.tables import attack_table, cell_notes, delta_cell, status_word
from chaoseval.render.terminal import print_table
from chaoseval.render.verdict import print_twins, print_verdict
from chaoseval.store.columns import Trials, as_trials
from chaoseval.store.journal import Journal

REPORT_SCHEMA_VERSION = 1


def _fmt(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "—"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def _keyed(d: dict[int, float | None]) -> dict[str, float | None]:
    return {str(k): v for k, v in d.items()}


def _cell_json(r: CellResult, name: str) -> dict[str, Any]:
    s = r.summary
    return {
        "name": name,
        "tasks": s.tasks,
        "trials": r.trials,
        "scored": s.trials,
        "not_evaluable": r.not_evaluable,
        "mean": s.mean,
        "pass_at": _keyed(s.pass_at),
        "pass_hat": _keyed(s.pass_hat),
        "excluded": {str(k): v for k, v in s.excluded.items() if v},
        "unscored": s.unscored,
        "delta_mean": r.delta.mean if r.delta else None,
        "delta_pass_at": _keyed(r.delta.pass_at) if r.delta else {},
        "delta_pass_hat": _keyed(r.delta.pass_hat) if r.delta else {},
        "root_causes": dict(sorted(r.root_causes.items())),
        "vetoes": dict(sorted(r.vetoes.items())),
        "faults_injected": r.faults_injected,
        "faults_delivered": r.faults_delivered,
        "did_not_land": r.did_not_land,
        "not_landed": r.not_landed,
    }


def json_report(
    journal: Trials | Journal,
    ks: Sequence[int] | None = None,
    cells: Sequence[CellResult] | None = None,
    *,
    lists: Callable[[Iterable[Any]], Any] = list,
) -> dict[str, Any]:
    """The JSON report's data; ``cells``: the per-cell results when the caller has them
    already (an Analysis of the same ks); ``lists`` makes the per-(task, cell) results' list
    (render.jsonstream.Streamed: written item by item)."""
    journal = as_trials(journal)
    ks = list(ks or journal.manifest.ks)
    cells = by_cell(journal, ks) if cells is None else cells
    m = journal.manifest
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "journal": str(journal.path),
        "run_id": m.run_id,
        "agent": m.agent,
        "model": m.model.model_dump(),
        # Only for runs whose model requests went through a model channel (what they sent).
        **({"sampling": sampled} if (sampled := sampling_json(m.model, journal.sampling)) else {}),
        "seed": m.seed,
        # Only for runs whose users an LLM played (run --user-model-endpoint).
        **({"user_model": m.user_model} if m.user_model else {}),
        "clock": m.clock,
        "ks": ks,
        "warnings": [*m.run_warnings(), *journal.warnings],
        "root_causes": [c.model_dump() for c in m.root_causes],
        "perturbations": [_cell_json(r, r.cell) for r in cells],
        # Only for runs an LLM user broke trials of (not evaluable, counted apart).
        **_simulator_json(journal),
        # Streamed: the pairs' text written from their numbers, not an object each (300k at
        # 100k tasks).
        "cells": long_list(lists, partial(pair_text, journal, ks), partial(pair_json, journal, ks)),
    }


def _simulator_json(journal: Trials) -> dict[str, Any]:
    failures = simulator_failures(journal)
    if not failures:
        return {}
    return {
        "user_simulator_failures": {
            "trials": sum(failures.values()),
            "cells": failures,
            "note": simulator_line(failures),
        }
    }


def root_cause_legend(journal: Trials | Journal, names: set[str]) -> str:
    """What the root causes seen mean, from the manifest (no plugin needs to be installed)."""
    known = {c.name: c for c in journal.manifest.root_causes}
    seen = [known[name] for name in sorted(names & set(known))]
    lines = [f"  {c.name}: {c.label} ({c.owner})" for c in seen]
    return "Root causes:\n" + "\n".join(lines) if lines else ""


def _cell_table(a: Analysis, v: Verdict, journal: Trials) -> Table:
    m = journal.manifest
    ks = a.ks
    # The model settings are the run's defaults whether or not the agent used them: name them
    # only when some trial recorded a model call (an agent without a model has none).
    used = bool(len(journal) and journal.col["model_calls"].any())
    model = f"model {m.model.model} T={m.model.temperature}" if used else "no model calls"
    table = Table(
        title=f"{m.agent} — {len(a.scenarios)} scenarios, seed {m.seed}, {model} ({m.clock} clock)",
        title_justify="left",
    )
    table.add_column("perturbation")
    table.add_column("status")
    table.add_column("tasks", justify="right")  # the tasks its faults reached
    table.add_column("trials", justify="right")
    table.add_column("n/e", justify="right", header_style="bold")
    table.add_column("mean", justify="right")
    for k in ks:
        table.add_column(f"pass@{k}", justify="right")
    for k in ks:
        table.add_column(f"pass^{k}", justify="right")
    table.add_column(f"Δ{a.primary} [95% CI]", justify="right")
    table.add_column("faults (delivered, absorbed)", justify="right")
    verdicts = {c.cell: c for c in v.cells}
    for r in a.cells:
        s = r.summary
        cv = verdicts.get(r.cell)
        faults = f"{r.faults_injected} ({r.faults_delivered}, {cv.faults_absorbed if cv else 0})"
        if r.did_not_land:
            faults += " [red]did not land[/]"
        delta_text = escape(delta_cell(a, r.cell)) if r.cell != CLEAN else ""
        if cv is not None and cv.direction == "drop":
            delta_text = f"[bold red]{delta_text}[/]"
        elif cv is not None and not cv.significant:
            delta_text = f"[dim]{delta_text}[/]"
        table.add_row(
            escape(v.labels.get(r.cell, r.cell)),
            escape(status_word(a, r.cell)),
            str(s.tasks),
            str(r.trials),
            str(r.not_evaluable) if r.not_evaluable else "0",
            _fmt(s.mean),
            *[_fmt(s.pass_at[k]) for k in ks],
            *[_fmt(s.pass_hat[k]) for k in ks],
            delta_text,
            faults,
        )
    return table


def _cause_table(cells: Sequence[CellResult], labels: dict[str, str]) -> Table:
    table = Table(
        title="Failures by root cause (vetoes are counted on their own as well)",
        title_justify="left",
    )
    table.add_column("perturbation")
    table.add_column("root causes of failed trials, most common first")
    table.add_column("vetoes")
    for r in cells:
        causes = ", ".join(f"{c} {n}" for c, n in r.root_causes.most_common())
        vetoes = ", ".join(f"{k} {v}" for k, v in sorted(r.vetoes.items()))
        table.add_row(
            escape(labels.get(r.cell, r.cell)),
            escape(causes) or "—",
            f"[red]{escape(vetoes)}[/]" if vetoes else "—",
        )
    return table


def _cell_notes(cells: Sequence[CellResult], console: Console) -> None:
    """What each cell's numbers leave out: tasks short of k trials, unreached, unscored; a gap
    several cells share is printed once, naming them."""
    for where, what in cell_notes(cells):
        console.print(f"[yellow]{escape(where)}:[/] {escape(what)}", highlight=False)


def _not_evaluable(journal: Trials, cells: Sequence[CellResult], console: Console) -> None:
    ne = sum(r.not_evaluable for r in cells)
    if not ne:
        return
    if line := simulator_line(simulator_failures(journal)):
        console.print(f"[bold yellow]{escape(line)}[/]", highlight=False)
    rows = np.flatnonzero(journal.col["status"] == 2).tolist()
    errors = sorted({(journal.trial_id(row), journal.errors.get(row)) for row in rows})
    console.print(
        f"[bold yellow]{ne} trial(s) not evaluable (harness or plugin errors, not counted "
        "against the agent):[/]"
    )
    for trial_id, error in errors[:5]:
        console.print(f"  {escape(trial_id)}: {escape(str(error))}")
    if len(errors) > 5:
        console.print(f"  … and {len(errors) - 5} more (see the journal)")


def print_report(
    journal: Trials | Journal,
    console: Console,
    ks: Sequence[int] | None = None,
    analysis: Analysis | None = None,
    verdict: Verdict | None = None,
) -> None:
    """The verdict, the per-cell table (changes marked significant or not), root causes and
    vetoes per cell, and the first failed trials of each cell beside their clean twins."""
    journal = as_trials(journal)
    ks = list(ks or journal.manifest.ks)
    for w in [*journal.manifest.run_warnings(), *journal.warnings]:
        console.print(f"[yellow]warning:[/] {escape(w)}")
    a = analysis or analyze(journal, ks, n_resamples=2_000, references=False)
    v = verdict or build_verdict(a, journal)
    print_verdict(v, console)
    if journal.manifest.user_model:  # figures that depend on who played the user say so
        console.print(f"Users played by {escape(journal.manifest.user_model)}", highlight=False)
    print_reason_summary(v, console)
    console.print(_cell_table(a, v, journal))
    if (attack := attack_table(a)) is not None:
        print_table(attack, console, v.labels)
    for line in sampling_lines(journal.manifest.model, journal.sampling):
        console.print(f"Sampling {escape(line)}", highlight=False)
    cells = a.cells
    console.print(_cause_table(cells, v.labels))
    legend = root_cause_legend(journal, {c for r in cells for c in r.root_causes})
    if legend:
        console.print(legend, highlight=False)
    _cell_notes(cells, console)
    _not_evaluable(journal, cells, console)
    print_reasons(v, console)
    print_twins(v, console, str(journal.path))
