"""What the analysis commands share: a journal read as columns, a k checked against its trials,
and text written to standard output or a file (redacted, control characters visible)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rich.console import Console

from chaoseval import redact
from chaoseval.errors import ConfigError
from chaoseval.render.printable import writable

if TYPE_CHECKING:
    from chaoseval.store.columns import Trials


def load(
    path: Path, source: str | None = None, scorer: str | None = None, errors_as: str = "source"
) -> Trials:
    """A chaoseval journal, or (with ``source``) a tau-bench / Inspect AI results file, as
    columns (a journal is read line by line; its trajectories are read again only for the
    trials a view shows)."""
    from chaoseval.store.columns import as_trials, read_trials
    from chaoseval.store.importers import load_source

    if source is None:
        return read_trials(path)
    return as_trials(load_source(source, path, scorer=scorer, errors_as=errors_as))


def emit(text: str, output: Path | None, what: str) -> None:
    # Standard output is as much a place things are written (`> report.md`, a CI log) as -o:
    # both get the redactor, and both get control characters as visible escapes, so a
    # Markdown or HTML report shown with `cat` cannot drive the terminal either; a lone
    # surrogate from a journal (no UTF-8 file or stream holds one) is written as its escape.
    text = writable(redact.redact(text))
    if output is None:
        print(text)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    Console(stderr=True).print(f"wrote {what} to {output}")


class _Shown:
    """A stream that writes what it is given as :func:`emit` writes a whole text: redacted,
    control characters as visible escapes (piece by piece, as redact.RedactingStream does)."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        return self.inner.write(writable(redact.redact(text)))


def stream(write: Callable[[TextIO], None], output: Path | None, what: str) -> None:
    """What ``write`` writes, printed or written to ``output`` as :func:`emit` does."""
    if output is None:
        write(_Shown(sys.stdout))  # type: ignore[arg-type]
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("w", encoding="utf-8") as fh:
        write(_Shown(fh))  # type: ignore[arg-type]
    Console(stderr=True).print(f"wrote {what} to {output}")


def check_margin(margin: float) -> None:
    if not 0 < margin < 1:
        raise ConfigError(f"--margin {margin:g}: use a drop between 0 and 1, e.g. 0.1")


def check_ks(
    data: Trials, k: list[int] | None, wanted: set[int] | None = None, asking: str = "rules ask for"
) -> list[int]:
    """The k values a view reports: refused, as run and gate refuse them, when a k exceeds
    the trials per cell (pass^k of 20 out of 8 trials is not a measurement, not a dash)."""
    ks = sorted(set(k or data.manifest.ks) | (wanted or set()))
    bad = [x for x in ks if x < 1]
    if bad:
        raise ConfigError(f"--k {bad}: k must be >= 1")
    trials = trials_per_cell(data)
    too_big = [x for x in ks if trials and x > trials]
    if too_big:
        asked = asking if wanted and set(too_big) & wanted else "--k asks for"
        raise ConfigError(
            f"{asked} k = {too_big} but {data.path.name} has {trials} trials per cell; "
            f"pass^k needs k <= trials: use k <= {trials}"
        )
    return ks


def trials_per_cell(data: Trials) -> int:
    """The most trials any cell holds: the manifest's count, or more where ``--resume -n``
    added trials to the run (its manifest keeps the first invocation's count)."""
    if data.manifest.sequential is not None:  # pass^k of the first round (analysis.build)
        return data.manifest.sequential.first
    index = data.col.get("index")
    seen = int(index.max()) + 1 if index is not None and len(index) else 0
    return max(data.manifest.trials or 0, seen)
