"""The ``chaoseval`` command line, built in one place: each command module registers its
commands on the app it is given, in the order ``--help`` lists them."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from chaoseval import redact
from chaoseval.cli import (
    analysis,
    authoring,
    catalogue,
    doctor,
    investigate,
    relay,
    review,
    run,
    summary,
    view,
)
from chaoseval.cli._common import fail


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
        # Help texts are plain text: "[tool.chaoseval]" and 'chaoseval[ray]' are words, not
        # rich markup tags to swallow.
        rich_markup_mode=None,
    )
    app.callback()(_session)
    for module in (run, analysis, investigate, review, summary, catalogue, authoring, doctor,
                   relay, view):  # fmt: skip
        module.register(app)
    _guard(app)
    return app


def _os_errors_as_messages(command: Callable[..., Any]) -> Callable[..., Any]:
    """A file the user named cannot be read or written (a directory, no such parent, no
    permission): one line naming it, exit 2, never a traceback. Commands catch chaoseval's
    own errors themselves; this is for the operating system's."""

    @functools.wraps(command)  # typer reads the options from the wrapped signature
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            fail(OSError(f"{where}{exc.strerror or exc}"))

    return guarded


def _guard(app: typer.Typer) -> None:
    for info in app.registered_commands:
        if info.callback is not None:
            info.callback = _os_errors_as_messages(info.callback)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            _guard(group.typer_instance)


app = build()


def main() -> None:  # pragma: no cover
    app()
