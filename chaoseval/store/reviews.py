"""Reviewers' labels of a journal's trials: ``<journal>.d/.reviews.jsonl``, beside the journal.

``chaoseval review`` appends one line per label (the trial, the reviewer's verdict, the judge's
verdict the reviewer saw, who, when, the sheet's file and line, the run id); the journal's
trial lines are never rewritten. A label is only ever added: a trial labelled again keeps
both lines, and the later one counts (:func:`latest`). The writer takes the journal's write
lock (chaoseval.store.lock), as ``chaoseval run`` does, so labels are never appended while a
run writes or replaces the journal; readers (report) never take it. ``--overwrite`` replaces
the journal and clears its store, labels included: they were about trials that are gone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from chaoseval import redact
from chaoseval.errors import JournalError, disk_full, stop_for
from chaoseval.store.artifacts import REVIEWS, store_root
from chaoseval.store.lock import JournalLock

__all__ = ["VERDICTS", "Label", "append_labels", "latest", "read_labels", "reviews_file"]

VERDICTS = ("passed", "failed")


@dataclass(frozen=True)
class Label:
    """One reviewer's verdict on one trial, as ``chaoseval review`` recorded it."""

    trial_id: str
    verdict: str  # passed | failed: what the reviewer says the trial did
    judge: str  # the judge's verdict when the reviewer looked (the journal's status)
    reviewer: str
    at: str  # UTC, ISO 8601
    run_id: str
    note: str = ""
    sheet: str = ""  # the label sheet it came from, and its line there
    line: int = 0


def reviews_file(journal: Path) -> Path:
    return store_root(journal) / REVIEWS


def append_labels(journal: Path, labels: Sequence[Label]) -> Path:
    """Append ``labels`` to the journal's reviews under its write lock (JournalBusy while a run
    writes it), redacted, flushed and synced: a label written is a label kept."""
    path = reviews_file(journal)
    text = "".join(redact.redact(json.dumps(asdict(x), ensure_ascii=False)) + "\n" for x in labels)
    with JournalLock(journal):
        try:
            with path.open("a", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            if disk_full(exc):
                raise stop_for(exc, path) from exc
            raise JournalError(f"{path}: cannot write the labels ({exc.strerror or exc})") from exc
    return path


def read_labels(journal: Path, run_id: str, warnings: list[str]) -> list[Label]:
    """The journal's labels in the order they were written; a line that is not a label, or a
    label of another run (a journal replaced by hand), is left out with a warning naming it.
    Records analysed in memory (``trials_of``: no journal file, its path ".") have none."""
    if not journal.name:
        return []
    path = reviews_file(journal)
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []
    except OSError as exc:
        warnings.append(f"{path}: reviewers' labels not read ({exc.strerror or exc})")
        return []
    out: list[Label] = []
    other_run = 0
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            label = Label(**json.loads(text))
            if label.verdict not in VERDICTS:
                raise ValueError(f"verdict {label.verdict!r}")
        except (ValueError, TypeError) as exc:
            warnings.append(f"{path}:{number}: not a label, left out ({exc})")
            continue
        if label.run_id != run_id:
            other_run += 1
            continue
        out.append(label)
    if other_run:
        warnings.append(
            f"{path}: {other_run} label(s) of another run than the journal's ({run_id}) left out"
        )
    return out


def latest(labels: Iterable[Label]) -> dict[str, Label]:
    """Each trial's last label (whoever wrote it): the one that counts."""
    return {x.trial_id: x for x in labels}
