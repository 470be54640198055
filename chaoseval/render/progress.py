"""The run's progress: trials done, with pass / fail / not-evaluable counts.

The runner reports through its ``RunProgress`` protocol (chaoseval.engine.runner) and draws
nothing itself; the CLI hands it a bar when a terminal is attached and status lines when
stderr is a pipe or a CI log (a bar there is either nothing or escape codes)."""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from typing import TextIO

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

__all__ = ["LineProgress", "TerminalProgress"]


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
        self._bar.update(self._task, advance=1, status=self._status())

    def _status(self) -> str:
        c = self._counts
        return f"pass {c['passed']} fail {c['failed']} n/e {c['not_evaluable']}"

    def stop(self, ended: str = "finished") -> None:
        if self._task is not None and ended != "finished":  # the bar's last word: why it ended
            self._bar.update(self._task, status=f"{self._status()} ({ended})")
        self._bar.stop()


class LineProgress:
    """One plain status line every ``interval`` seconds while trials run, and one at the
    start and the end. Lines come from a timer, not from finished trials: a CI job whose
    trials each take minutes must still show it is alive, or the job looks hung (and some CI
    systems kill a job that prints nothing for ten minutes)."""

    def __init__(self, stream: TextIO | None = None, interval: float = 5.0) -> None:
        self._stream = stream
        self.interval = interval
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._label = ""
        self._total = 0
        self._started = 0.0

    def start(self, label: str, total: int) -> None:
        self._label, self._total, self._started = label, total, time.monotonic()
        self._write(f"{total} trial(s) to run")
        self._thread = threading.Thread(target=self._tick, name="chaoseval-progress", daemon=True)
        self._thread.start()

    def trial_done(self, record: TrialRecord) -> None:
        with self._lock:
            self._counts[record.status] += 1

    def stop(self, ended: str = "finished") -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            self._write(f"{self.status()} ({ended})")

    def status(self) -> str:
        with self._lock:
            c = dict(self._counts)
        done = sum(c.values())
        elapsed = time.monotonic() - self._started
        text = (
            f"{done}/{self._total} trials (pass {c.get('passed', 0)} fail {c.get('failed', 0)} "
            f"n/e {c.get('not_evaluable', 0)}), {elapsed:.0f}s"
        )
        if 0 < done < self._total:
            text += f", about {elapsed / done * (self._total - done):.0f}s left"
        return text

    def _tick(self) -> None:
        while not self._stopped.wait(self.interval):
            self._write(self.status())

    def _write(self, text: str) -> None:
        stream = self._stream or sys.stderr  # looked up per line: tests and redaction swap it
        stream.write(f"chaoseval run {self._label}: {text}\n")
        stream.flush()
