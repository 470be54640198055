"""What every command module shares: the consoles, ``fail``, finding scenarios and agents.

Command modules import this; ``chaoseval.cli.app`` imports them all and nothing imports it,
so the command line has no import circle. Command modules import what a command runs inside
the command: ``chaoseval --help`` loads typer, not scipy and hypothesis.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console

from chaoseval.errors import ConfigError
from chaoseval.loading.userpath import append_path, check_not_shadowed
from chaoseval.render.printable import escape

if TYPE_CHECKING:
    from chaoseval.config import ProjectConfig
    from chaoseval.model.scenario import Scenario
    from chaoseval.seams.agent import AgentAdapter
    from chaoseval.seams.registry import BrokenEntryPoint

# Matrix tables are wide: in a pipe or CI log, do not squeeze them into 80 columns.
# emoji=False: rich would print "file.yaml:100:" with an emoji for ":100:".
console = Console(width=None if sys.stdout.isatty() else 180, emoji=False)
err = Console(stderr=True, emoji=False)

ScenarioPaths = Annotated[
    list[Path] | None,
    typer.Option(
        "--scenarios",
        help="scenario files (.py, .yaml) or directories to load instead of the installed "
        "packs (repeatable)",
    ),
]
ScenarioGlobs = Annotated[
    list[str] | None,
    typer.Option(
        "--scenario",
        "-s",
        help="keep scenarios whose id matches this glob ('vending-*'), whose domain is this, "
        "or with tag:NAME (repeatable; default: all)",
    ),
]
ConfigPath = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="settings file (chaoseval.toml, or a pyproject.toml with [tool.chaoseval]); "
        "default: the first one found from the working directory upwards",
        show_default=False,
    ),
]
AppDir = Annotated[
    Path | None,
    typer.Option(
        "--app-dir",
        help="where --agent module:factory is imported from (after installed packages; "
        "default: the settings' app_dir, else the working directory)",
        show_default=False,
    ),
]


def fail(exc: Exception, code: int = 2) -> NoReturn:
    """Print ``error: ...`` on stderr and exit with ``code`` (2: the user's input was wrong)."""
    # Messages quote rules like 'pass^5[timeout]': escape them so rich keeps the brackets.
    err.print(f"[bold red]error:[/] {escape(str(exc))}", soft_wrap=True)
    raise typer.Exit(code)


def above_zero(value: float | None) -> float | None:
    """Option callback: a duration or amount that must be strictly positive."""
    if value is not None and value <= 0:
        raise typer.BadParameter(f"{value:g} is not above 0")
    return value


def settings(explicit: Path | None) -> ProjectConfig:
    """The project's settings (chaoseval.config): --config, else the file found upwards."""
    from chaoseval.config import project_config

    return project_config(explicit)


def project_scenario_paths(paths: Sequence[Path] | None, config: Path | None) -> list[Path] | None:
    """``--scenarios``, else the settings' ``scenario_paths``: every command that loads
    scenarios (replay, sample, search, list, lint) finds the ones ``run`` ran."""
    if paths:
        return list(paths)
    return settings(config).scenario_paths or None


def project_app_dir(app_dir: Path | None, config: Path | None) -> Path:
    """``--app-dir``, else the settings' ``app_dir``, else the working directory."""
    if app_dir is not None:
        return app_dir
    return settings(config).app_dir or Path(".")


def clock_notice(agent: object, name: str) -> None:
    """One line when an agent that never said which clock it runs on gets the real one: every
    injected delay then costs real time, which a virtual-clock agent would skip."""
    if getattr(agent, "clock", None) is None:
        err.print(
            f"[yellow]note:[/] agent {escape(name)} runs on the real clock, so injected "
            "delays take real time; if it never waits on wall-clock time itself, set clock = "
            '"virtual" on it (a class attribute) and they cost nothing',
            highlight=False,
            soft_wrap=True,  # one line, however narrow the terminal: a CI log greps it
        )


def load_scenarios(paths: Sequence[Path] | None) -> list[Scenario]:
    """The scenarios under ``paths``, or every installed pack's when none are given."""
    from chaoseval.loading.files import installed, load_paths

    _check_exist(paths)
    return load_paths(paths) if paths else installed()


def _check_exist(paths: Sequence[Path] | None) -> None:
    missing = [str(p) for p in paths or [] if not p.exists()]
    if missing:
        raise ConfigError(f"--scenarios {', '.join(missing)}: no such file or directory")


def select_scenarios(paths: Sequence[Path] | None, patterns: list[str] | None) -> list[Scenario]:
    """The scenarios a command runs: from ``paths``, or from the installed packs that load."""
    from chaoseval.loading.files import installed_packs, load_paths, select

    _check_exist(paths)
    if paths:
        return select(load_paths(paths), patterns or [])
    packs = installed_packs()
    for b in packs.broken:  # the other packs still load; say what is missing and why
        err.print(f"[yellow]warning:[/] {escape(b.describe())}; its scenarios are left out")
    return select(packs.scenarios, patterns or [])


def print_broken(what: str, broken: list[BrokenEntryPoint]) -> None:
    """Broken entry points under the working ones: one line each, the error and the fix."""
    console.print(f"[bold red]Broken {what} (not loaded):[/]")
    for b in broken:
        console.print(f"  [red]{b.name}[/]: {escape(b.describe())}", soft_wrap=True)


def user_agent(name: str, app_dir: Path) -> AgentAdapter:
    """``--agent``: a registered name, or ``module:factory`` importable from ``app_dir``,
    either with parameters (``resilient:slips=false``)."""
    from chaoseval.seams.agent import load_agent, split_agent

    base = split_agent(name)[0]
    if ":" in base and not base.startswith("exec:"):  # exec: names a command, not a module
        if not app_dir.is_dir():
            raise ConfigError(f"--app-dir {app_dir}: no such directory (--agent {name})")
        append_path(app_dir)
        check_not_shadowed(base.partition(":")[0], app_dir)
    return load_agent(name)
