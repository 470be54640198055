"""The ``chaoseval`` command line, built in one place: each command module registers its
commands on the app it is given, in the order ``--help`` lists them."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from chaoseval import redact
from chaoseval.cli import analysis, authoring, catalogue, investigate, relay, run, summary


def _session() -> None:
    # The malformed plugin draws with hypothesis, which caches data under ./.hypothesis by
    # default; a CLI run must not litter the user's working directory.
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(cache / "chaoseval" / "hypothesis"))
    redact.guard_output()  # no command prints a secret


def build() -> typer.Typer:
    """A fresh app with every command registered."""
    app = typer.Typer(
        help="Robustness and chaos testing for tool-using AI agents: pass^k under perturbation.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
    )
    app.callback()(_session)
    for module in (run, analysis, investigate, summary, catalogue, authoring, relay):
        module.register(app)
    return app


app = build()


def main() -> None:  # pragma: no cover
    app()
