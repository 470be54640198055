"""The ``chaoseval`` command line."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from chaoseval.engine.runner import RunConfig, run
from chaoseval.errors import ChaosevalError
from chaoseval.loading.files import installed_packs, load_paths, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import ModelSettings
from chaoseval.render.report import print_report
from chaoseval.seams.agent import load_agent
from chaoseval.seams.perturbation import registry as perturbation_registry
from chaoseval.seams.registry import BrokenEntryPoint
from chaoseval.store.journal import read_journal

app = typer.Typer(
    help="Robustness and chaos testing for tool-using AI agents: pass^k under perturbation.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
scenarios_app = typer.Typer(help="The scenario library.", no_args_is_help=True)
perturbations_app = typer.Typer(help="The perturbation plugins.", no_args_is_help=True)
app.add_typer(scenarios_app, name="scenarios")
app.add_typer(perturbations_app, name="perturbations")

# Matrix tables are wide: in a pipe or CI log, do not squeeze them into 80 columns.
console = Console(width=None if sys.stdout.isatty() else 180)
err = Console(stderr=True)


@app.callback()
def _session() -> None:
    # The malformed plugin draws with hypothesis, which caches data under ./.hypothesis by
    # default; a CLI run must not litter the user's working directory.
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(cache / "chaoseval" / "hypothesis"))


def _fail(exc: Exception, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {exc}")
    raise typer.Exit(code)


def _scenarios(paths: list[Path] | None, patterns: list[str] | None):
    if paths:
        return select(load_paths(paths), patterns or [])
    packs = installed_packs()
    for b in packs.broken:  # the other packs still load; say what is missing and why
        err.print(f"[yellow]warning:[/] {escape(b.describe())}; its scenarios are left out")
    return select(packs.scenarios, patterns or [])


def _print_broken(what: str, broken: list[BrokenEntryPoint]) -> None:
    """Broken entry points under the working ones: one line each, the error and the fix."""
    console.print(f"[bold red]Broken {what} (not loaded):[/]")
    for b in broken:
        console.print(f"  [red]{b.name}[/]: {escape(b.describe())}", soft_wrap=True)


@app.command("run")
def run_cmd(
    agent: Annotated[str, typer.Option("--agent", "-a", help="agent name or module:factory")],
    perturbation: Annotated[
        list[str] | None,
        typer.Option("--perturbation", "-p", help="perturbation cell (repeatable); see docs"),
    ] = None,
    scenario: Annotated[
        list[str] | None, typer.Option("--scenario", "-s", help="id glob, domain or tag:NAME")
    ] = None,
    scenario_path: Annotated[
        list[Path] | None, typer.Option("--scenarios", help="scenario files or directories")
    ] = None,
    trials: Annotated[int, typer.Option("--trials", "-n", help="trials per cell")] = 5,
    k: Annotated[list[int] | None, typer.Option("--k", help="k values for pass@k / pass^k")] = None,
    seed: Annotated[int, typer.Option(help="run seed: every random stream derives from it")] = 0,
    model: Annotated[str, typer.Option(help="model name given to the agent")] = "sim-1",
    temperature: Annotated[float, typer.Option(help="sampling temperature")] = 0.7,
    model_seed: Annotated[int | None, typer.Option(help="sampling seed given to the agent")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", "-j")] = 4,
    journal: Annotated[Path, typer.Option(help="JSONL journal to write")] = Path("chaoseval.jsonl"),
    resume: Annotated[bool, typer.Option(help="continue an interrupted journal")] = False,
    overwrite: Annotated[bool, typer.Option(help="replace an existing journal")] = False,
    trial_timeout: Annotated[
        float | None, typer.Option(help="wall-clock seconds before a hung trial is stopped")
    ] = None,
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
    report: Annotated[bool, typer.Option(help="print the report when done")] = True,
) -> None:
    """Run the matrix: scenarios x (clean + each perturbation cell) x n trials."""
    try:
        config = RunConfig(
            scenarios=_scenarios(scenario_path, scenario),
            agent=load_agent(agent),
            agent_name=agent,
            cells=parse_cells(perturbation or []),
            trials=trials,
            seed=seed,
            model=ModelSettings(model=model, temperature=temperature, seed=model_seed),
            # Default k: 1, 2, 5 where the trial count allows, and n itself.
            ks=sorted(set(k or [x for x in (1, 2, 5) if x <= trials] + [max(trials, 1)])),
            concurrency=concurrency,
            journal=journal,
            resume=resume,
            overwrite=overwrite,
            wall_timeout=trial_timeout,
            progress=progress and sys.stderr.isatty(),
        )
        bad_k = [x for x in config.ks if x < 1 or x > trials]
        if bad_k:
            raise ChaosevalError(f"--k {bad_k} must be between 1 and --trials ({trials})")
        result = run(config)
    except ChaosevalError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        kept = len(read_journal(journal).records) if journal.exists() else 0
        err.print(
            f"[bold yellow]interrupted:[/] {kept} finished trial(s) are in {journal}; "
            f"run the same command with --resume to carry on"
        )
        raise typer.Exit(130) from None
    console.print(
        f"wrote {len(result.records) - result.resumed} trial(s) to {journal}"
        + (f" (resumed; {result.resumed} kept)" if result.resumed else "")
    )
    if report:
        print_report(read_journal(journal), console)


@app.command("report")
def report_cmd(
    journal: Annotated[Path, typer.Argument(help="a journal written by 'chaoseval run'")],
    format: Annotated[
        str, typer.Option("--format", "-f", help="table | json | markdown | html | junit")
    ] = "table",
    output: Annotated[Path | None, typer.Option("--output", "-o")] = None,
    k: Annotated[list[int] | None, typer.Option("--k")] = None,
    source: Annotated[
        str | None,
        typer.Option("--from", help="read JOURNAL as a tau-bench or inspect results file"),
    ] = None,
    scorer: Annotated[str | None, typer.Option(help="Inspect scorer (with --from inspect)")] = None,
) -> None:
    """Summarise a journal: pass^k against clean with intervals, root causes, vetoes, process."""
    from chaoseval.cli.analysis import report_impl  # the formats live in their own module

    try:
        report_impl(journal, format, output, k, source, scorer)
    except ChaosevalError as exc:
        _fail(exc)


@scenarios_app.command("list")
def scenarios_list(
    scenario_path: Annotated[list[Path] | None, typer.Option("--scenarios")] = None,
) -> None:
    """List installed (or given) scenarios."""
    try:
        packs = installed_packs() if not scenario_path else None
        found = packs.scenarios if packs else _scenarios(scenario_path, None)
    except ChaosevalError as exc:
        _fail(exc)
    table = Table("id", "domain", "tags", "tools", "description")
    for s in found:
        table.add_row(s.id, s.domain, ", ".join(s.tags), str(len(s.tools)), s.description)
    console.print(table)
    if packs and packs.broken:
        _print_broken("scenario packs", packs.broken)


@perturbations_app.command("list")
def perturbations_list() -> None:
    """List perturbation plugins with their parameters and defaults."""
    try:
        items = list(perturbation_registry.items())
        broken = perturbation_registry.broken()
    except ChaosevalError as exc:
        _fail(exc)
    table = Table("name", "channel", "models", "parameters (default)", show_lines=True)
    for name, cls in items:
        params = []
        for field, info in cls.Params.model_fields.items():
            default = info.get_default(call_default_factory=True)
            params.append(f"{field}={default!r}")
        table.add_row(name, cls.channel, cls.models, "\n".join(params))
    console.print(table)
    if broken:
        _print_broken("perturbation plugins", broken)


def main() -> None:  # pragma: no cover
    app()


# Command modules register themselves on ``app`` (one module per area keeps this file small).
import chaoseval.cli.analysis  # noqa: E402, I001
import chaoseval.cli.investigate  # noqa: E402
import chaoseval.cli.summary  # noqa: E402
import chaoseval.cli.authoring  # noqa: E402
import chaoseval.cli.relay  # noqa: E402, F401
