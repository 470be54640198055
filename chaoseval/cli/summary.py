"""``chaoseval summary``: several harnesses' degradation in one table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chaoseval.cli._common import console, fail
from chaoseval.errors import ChaosevalError


def summary_cmd(
    journals: Annotated[list[Path], typer.Argument(help="journals, one per harness")],
    k: Annotated[
        int | None, typer.Option("--k", min=1, help="k for pass^k (default: the largest run)")
    ] = None,
) -> None:
    """Per perturbation: each journal's mean, pass^k and change against its clean baseline."""
    from chaoseval.render.summary import print_summary
    from chaoseval.store.columns import read_trials

    try:
        # One journal read at a time: two 1M-trial journals' columns at once were ~330 MB.
        print_summary((read_trials(p) for p in journals), console, k)
    except ChaosevalError as exc:
        fail(exc)


def register(app: typer.Typer) -> None:
    app.command("summary")(summary_cmd)
