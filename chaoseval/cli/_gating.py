"""Judging a journal by its gate: the rules given (``gate``, ``run --gate``, the settings'
``gate``), or without any the cells' statuses; what is printed and the exit code
(chaoseval.exitcodes)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from chaoseval.cli._common import console
from chaoseval.cli._reading import check_ks, check_margin, emit, load
from chaoseval.render.printable import escape

if TYPE_CHECKING:
    from chaoseval.analysis.build import Analysis
    from chaoseval.store.columns import Trials


def judge(
    path: Path,
    rules: list[str],
    perturbation: list[str],
    k: list[int] | None,
    *,
    source: str | None = None,
    errors_as: str = "source",
    junit: Path | None = None,
    resamples: int = 2_000,
    margin: float = 0.1,
    allow_inconclusive: bool = False,
) -> int:
    """What ``gate`` (and ``run`` with gate rules) prints and its exit code: the rules, or
    without any the cells' statuses (chaoseval.analysis.status)."""
    from chaoseval.analysis.build import analyze
    from chaoseval.analysis.gate import evaluate, exit_code, parse_rule
    from chaoseval.render.junit import render_junit

    check_margin(margin)
    parsed = [parse_rule(r) for r in rules]
    data = load(path, source, errors_as=errors_as)
    ks = check_ks(data, k, {r.k for r in parsed if r.k is not None})
    a = analyze(data, ks, n_resamples=resamples, references=False, margin=margin)
    for w in data.warnings:
        console.print(f"[yellow]warning:[/] {escape(w)}")
    if not parsed:
        return _judge_statuses(data, a, junit, allow_inconclusive)
    results = evaluate(a, parsed, perturbation)
    for r in results:
        style = "green" if r.passed else "yellow" if r.undecided else "bold red"
        console.print(f"[{style}]{escape(r.message())}[/]", highlight=False, soft_wrap=True)
    if junit is not None:
        emit(render_junit(data, a, results), junit, "JUnit XML")
    broken = [r for r in results if r.broken]
    undecided = [r for r in results if r.undecided]
    code = exit_code(bool(broken), bool(undecided), allow_inconclusive)
    if broken:
        console.print(
            f"[bold red]gate failed:[/] {len(broken)} of {len(results)} rule(s) broken: "
            + escape("; ".join(f"{r.rule.text} (measured {r.detail})" for r in broken)),
            highlight=False,
            soft_wrap=True,
        )
    elif undecided:
        console.print(
            f"[bold yellow]gate undecided:[/] {len(undecided)} of {len(results)} rule(s) could "
            "not be decided: " + escape("; ".join(f"{r.rule.text} ({r.detail})" for r in undecided))
            + (" (--allow-inconclusive: exit 0)" if allow_inconclusive else ""),
            highlight=False,
            soft_wrap=True,
        )
    else:
        console.print(f"[green]gate passed:[/] {len(results)} rule(s)")
    return code


def _judge_statuses(data: Trials, a: Analysis, junit: Path | None, allow: bool) -> int:
    """No rule given: any broken or degraded cell fails, an inconclusive one (or a journal with
    nothing evaluable) is undecided."""
    from chaoseval.analysis.gate import exit_code
    from chaoseval.analysis.verdict import build_verdict
    from chaoseval.render.junit import render_junit
    from chaoseval.render.verdict import print_verdict

    v = build_verdict(a, data, 0)
    print_verdict(v, console)
    if junit is not None:
        emit(render_junit(data, a), junit, "JUnit XML")
    failing = v.count("broken") + v.count("degraded")
    undecided = v.count("inconclusive") or not v.evaluable
    code = exit_code(bool(failing), bool(undecided), allow)
    if failing:
        console.print(f"[bold red]gate failed:[/] {failing} cell(s) broken or degraded")
    elif undecided:
        console.print(
            "[bold yellow]gate undecided:[/] "
            + ("no evaluable trial" if not v.evaluable else f"{undecided} cell(s) inconclusive")
            + (" (--allow-inconclusive: exit 0)" if allow else "")
        )
    else:
        console.print(f"[green]gate passed:[/] {len(v.cells)} cell(s), none broken or degraded")
    return code


def recorded_gate(path: Path, data: Trials) -> None:
    """The gate ``run`` applied (its rules are in the manifest), judged as run judged it: the
    same lines, no exit code (a report reports)."""
    rules = data.manifest.gate if data.manifest is not None else None
    if rules:
        console.print(
            "[bold]Gate[/] (the rules the run applied, as recorded in the journal):",
            highlight=False,
        )
        judge(path, rules, [], None)
