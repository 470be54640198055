"""``chaoseval scenarios ...`` and ``chaoseval perturbations list``: what is installed."""

from __future__ import annotations

import typer
from rich.table import Table

from chaoseval.cli._common import (
    ConfigPath,
    ScenarioGlobs,
    ScenarioPaths,
    console,
    fail,
    print_broken,
    project_scenario_paths,
)
from chaoseval.cli.authoring import lint_cmd
from chaoseval.errors import ChaosevalError


def scenarios_list(
    scenarios: ScenarioGlobs = None, scenario_path: ScenarioPaths = None, config: ConfigPath = None
) -> None:
    """List installed (or given) scenarios; -s selects them as 'chaoseval run -s' does."""
    from chaoseval.loading.files import installed_packs, load_paths, select

    try:
        scenario_path = project_scenario_paths(scenario_path, config)
        packs = installed_packs() if not scenario_path else None
        found = select(
            packs.scenarios if packs else load_paths(scenario_path or []), scenarios or []
        )
    except ChaosevalError as exc:
        fail(exc)
    table = Table("id", "domain", "tags", "tools", "description")
    for s in found:
        table.add_row(s.id, s.domain, ", ".join(s.tags), str(len(s.tools)), s.description)
    console.print(table)
    if packs and packs.broken:
        print_broken("scenario packs", packs.broken)


def perturbations_list() -> None:
    """List perturbation plugins with their parameters and defaults."""
    from chaoseval.seams.perturbation import registry as perturbation_registry

    try:
        items = list(perturbation_registry.items())
        broken = perturbation_registry.broken()
    except ChaosevalError as exc:
        fail(exc)
    table = Table("name", "channel", "models", "parameters (default)", show_lines=True)
    for name, cls in items:
        params = []
        for field, info in cls.Params.model_fields.items():
            default = info.get_default(call_default_factory=True)
            params.append(f"{field}={default!r}")
        table.add_row(name, cls.channel, cls.models, "\n".join(params))
    console.print(table)
    if broken:
        print_broken("perturbation plugins", broken)


def register(app: typer.Typer) -> None:
    scenarios_app = typer.Typer(help="The scenario library.", no_args_is_help=True)
    scenarios_app.command("list")(scenarios_list)
    scenarios_app.command("lint")(lint_cmd)  # also `chaoseval scenario lint`
    perturbations_app = typer.Typer(help="The perturbation plugins.", no_args_is_help=True)
    perturbations_app.command("list")(perturbations_list)
    app.add_typer(scenarios_app, name="scenarios")
    app.add_typer(perturbations_app, name="perturbations")
