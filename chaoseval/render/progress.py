"""The run's progress bar in a terminal: trials done, with pass / fail / not-evaluable counts.

The runner reports through its ``RunProgress`` protocol (chaoseval.engine.runner) and draws
nothing itself; the CLI hands it this one when a terminal is attached."""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from chaoseval.model.records import TrialRecord

__all__ = ["TerminalProgress"]


class TerminalProgress:
    def __init__(self, console: Console | None = None) -> None:
        self._bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self._counts: Counter[str] = Counter()
        self._task: TaskID | None = None

    def start(self, label: str, total: int) -> None:
        self._bar.start()
        self._task = self._bar.add_task(label, total=total, status="")

    def trial_done(self, record: TrialRecord) -> None:
        self._counts[record.status] += 1
        if self._task is None:
            return
        c = self._counts
        status = f"pass {c['passed']} fail {c['failed']} n/e {c['not_evaluable']}"
        self._bar.update(self._task, advance=1, status=status)

    def stop(self) -> None:
        self._bar.stop()
