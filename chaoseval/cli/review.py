"""``chaoseval review``: a filled label sheet read back beside its journal."""

from __future__ import annotations

import getpass
import os
from pathlib import Path
from typing import Annotated

import typer

from chaoseval.cli._common import console, fail
from chaoseval.errors import ChaosevalError, ConfigError
from chaoseval.render.printable import escape


def _default_reviewer() -> str:
    try:
        return os.environ.get("CHAOSEVAL_REVIEWER") or getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        return "reviewer"


def review_cmd(
    journal: Annotated[Path, typer.Argument(help="the journal the sheet was drawn from")],
    sheet: Annotated[
        Path, typer.Argument(help="the label sheet 'chaoseval sample' wrote, filled in")
    ],
    reviewer: Annotated[
        str | None,
        typer.Option(
            help="who labelled the sheet (default: $CHAOSEVAL_REVIEWER, else the user name)"
        ),
    ] = None,
) -> None:
    """Record a reviewer's verdicts from a label sheet beside the journal (its .d/ folder);
    'chaoseval report' then shows the judge's audit and pass^1 corrected for its error."""
    from chaoseval.investigate.sheet import read_sheet
    from chaoseval.store.columns import read_trials
    from chaoseval.store.lite import STATUS
    from chaoseval.store.reviews import append_labels

    name = (reviewer if reviewer is not None else _default_reviewer()).strip()
    try:
        if not name:
            raise ConfigError("--reviewer: give a name (the audit tells reviewers apart by it)")
        data = read_trials(journal)
        status = {v: k for k, v in STATUS.items()}
        judged = {data.trial_id(r): status[int(s)] for r, s in enumerate(data.col["status"])}
        labels, blank = read_sheet(sheet, judged, data.manifest.run_id, name)
        if labels:
            where = append_labels(journal, labels)
    except ChaosevalError as exc:
        fail(exc)
    if not labels:
        console.print(
            f"no verdict in {escape(str(sheet))} ({blank} row(s) blank): nothing recorded"
        )
        return
    console.print(
        f"recorded {len(labels)} label(s) by {escape(name)} in {escape(str(where))}"
        + (f"; {blank} row(s) left blank" if blank else "")
        + f"; 'chaoseval report {escape(str(journal))}' shows the judge's audit",
        soft_wrap=True,
    )


def register(app: typer.Typer) -> None:
    app.command("review")(review_cmd)
