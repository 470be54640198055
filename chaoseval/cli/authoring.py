"""Authoring commands: `chaoseval scenario lint` (also `scenarios lint`) and `chaoseval init`."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from chaoseval.cli._common import ConfigPath, console, fail, project_scenario_paths
from chaoseval.errors import ChaosevalError
from chaoseval.render.printable import escape

if TYPE_CHECKING:
    from chaoseval.authoring.lint import ScenarioLint

MARK = {True: "[green]PASS[/]", False: "[bold red]FAIL[/]"}


def _print(reports: list[ScenarioLint]) -> None:
    for rep in reports:
        title = rep.scenario or "(did not load)"
        console.print(f"[bold]{title}[/]  [dim]{rep.source}[/]")
        for f in rep.findings:
            mark = "[yellow]SKIP[/]" if f.skipped else MARK[f.ok]
            console.print(f"  {mark} {f.check:<12} {escape(f.summary)}", highlight=False)
            for line in f.details:  # (escaped: an expression's [column=value] is no markup)
                console.print(f"         - {escape(line)}", highlight=False, soft_wrap=True)
    bad = sum(1 for r in reports if not r.ok)
    console.print(
        f"{len(reports)} scenario(s) linted, "
        + (f"[bold red]{bad} with problems[/]" if bad else "[green]no problems[/]")
    )


def lint_cmd(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="scenario files or directories (default: the settings' scenario_paths, "
            "else the installed packs)"
        ),
    ] = None,
    seeds: Annotated[
        int, typer.Option(min=1, help="how many run seeds the reference must pass under")
    ] = 3,
    trials: Annotated[int, typer.Option(min=1, help="trials per seed")] = 2,
    perturbation: Annotated[
        list[str] | None,
        typer.Option("--perturbation", "-p", help="also canary this cell (repeatable)"),
    ] = None,
    format: Annotated[str, typer.Option("--format", "-f", help="table | json")] = "table",
    config: ConfigPath = None,
) -> None:
    """Check scenarios: schema, solvable, non-trivial, the conversation (with a user),
    perturbations reachable. Exit 1 on any problem."""
    from chaoseval.authoring.lint import lint_paths

    try:
        reports = lint_paths(
            project_scenario_paths(paths, config),
            seeds=list(range(seeds)),
            trials=trials,
            perturbations=perturbation or [],
        )
    except ChaosevalError as exc:
        fail(exc)
    if format == "json":
        print(json.dumps([{**asdict(r), "ok": r.ok} for r in reports], indent=2))
    elif format == "table":
        _print(reports)
    else:
        fail(ChaosevalError(f"unknown --format {format!r}; use table or json"))
    if not reports or any(not r.ok for r in reports):
        raise typer.Exit(1)


def init_scenario(
    name: Annotated[str, typer.Argument(help="scenario id, e.g. bookshop-refund")],
    directory: Annotated[Path, typer.Option("--dir", "-d", help="where to write it")] = Path("."),
    force: Annotated[bool, typer.Option(help="overwrite an existing file")] = False,
) -> None:
    """Write NAME.yaml: a small complete YAML scenario that passes lint as generated."""
    from chaoseval.authoring.scaffold import write_scenario

    try:
        path = write_scenario(name, directory, force=force)
    except ChaosevalError as exc:
        fail(exc)
    console.print(f"wrote {path}\nnext: chaoseval scenario lint {path}")


def init_plugin(
    name: Annotated[str, typer.Argument(help="perturbation name, e.g. flaky-auth")],
    directory: Annotated[Path, typer.Option("--dir", "-d", help="where to write it")] = Path("."),
    force: Annotated[bool, typer.Option(help="overwrite existing files")] = False,
) -> None:
    """Write a perturbation plugin package (pyproject entry point, module, test)."""
    from chaoseval.authoring.scaffold import write_plugin

    try:
        root = write_plugin(name, directory, force=force)
    except ChaosevalError as exc:
        fail(exc)
    console.print(
        f"wrote {root}\nnext: pip install -e {root} && pytest {root / 'tests'}\n"
        f"then: chaoseval run --agent naive -p {name}"
    )


def register(app: typer.Typer) -> None:
    scenario_app = typer.Typer(help="Write and check scenarios.", no_args_is_help=True)
    scenario_app.command("lint")(lint_cmd)
    init_app = typer.Typer(
        help="Scaffold a scenario or a perturbation plugin.", no_args_is_help=True
    )
    init_app.command("scenario")(init_scenario)
    init_app.command("plugin")(init_plugin)
    app.add_typer(scenario_app, name="scenario")
    app.add_typer(init_app, name="init")
