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
from rich.markup import escape

from chaoseval.loading.userpath import append_path, check_not_shadowed

if TYPE_CHECKING:
    from chaoseval.model.scenario import Scenario
    from chaoseval.seams.agent import AgentAdapter
    from chaoseval.seams.registry import BrokenEntryPoint

# Matrix tables are wide: in a pipe or CI log, do not squeeze them into 80 columns.
console = Console(width=None if sys.stdout.isatty() else 180)
err = Console(stderr=True)

ScenarioPaths = Annotated[
    list[Path] | None, typer.Option("--scenarios", help="scenario files or directories")
]
AppDir = Annotated[
    Path,
    typer.Option(
        "--app-dir",
        help="where --agent module:factory is imported from (after installed packages)",
    ),
]


def fail(exc: Exception, code: int = 2) -> NoReturn:
    """Print ``error: ...`` on stderr and exit with ``code`` (2: the user's input was wrong)."""
    # Messages quote rules like 'pass^5[timeout]': escape them so rich keeps the brackets.
    err.print(f"[bold red]error:[/] {escape(str(exc))}")
    raise typer.Exit(code)


def load_scenarios(paths: Sequence[Path] | None) -> list[Scenario]:
    """The scenarios under ``paths``, or every installed pack's when none are given."""
    from chaoseval.loading.files import installed, load_paths

    return load_paths(paths) if paths else installed()


def select_scenarios(paths: Sequence[Path] | None, patterns: list[str] | None) -> list[Scenario]:
    """The scenarios a command runs: from ``paths``, or from the installed packs that load."""
    from chaoseval.loading.files import installed_packs, load_paths, select

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
    """``--agent``: a registered name, or ``module:factory`` importable from ``app_dir``."""
    from chaoseval.seams.agent import load_agent

    if ":" in name and not name.startswith("exec:"):  # exec: names a command, not a module
        append_path(app_dir)
        check_not_shadowed(name.partition(":")[0], app_dir)
    return load_agent(name)
