"""A trial's artifacts as the view serves them: only files a record lists, and only those that
resolve inside both the journal's store and the view's folder.

A journal is data, and its artifact paths are a journal's word: ``../../etc/passwd``, an
absolute path, a symlink out of the store. Each is resolved by the one containment check every
reader of a store uses (store.artifacts: ``artifact_file``, then ``inside`` the folder again, so
a store that is itself a symlink out of the folder serves nothing) before a byte is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from chaoseval import redact
from chaoseval.model.records import Artifact, TrialRecord
from chaoseval.store.artifacts import OutsideStore, artifact_file, inside
from chaoseval.view.library import NotServed

__all__ = ["IMAGES", "Served", "served", "tail"]

# What is served as an image; every other artifact is served as text (redacted), never as
# HTML or script whatever its name says.
IMAGES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp"}
TAIL = 4096  # characters of stderr a trial's page shows (the whole file is a link)


@dataclass(frozen=True)
class Served:
    path: Path
    media_type: str

    @property
    def image(self) -> bool:
        return self.media_type.startswith("image/")


def served(root: Path, journal: Path, record: TrialRecord, artifact: Artifact) -> Served:
    """The file of ``artifact`` and how to serve it; NotServed when it leaves the store or
    the folder, or is gone."""
    try:
        path = artifact_file(journal, artifact.path, record=record.trial_id)
        inside(root, path, what=f"{journal}: {record.trial_id}: artifact")
    except OutsideStore as exc:
        raise NotServed(str(exc)) from None
    if not path.is_file():
        raise NotServed(f"{record.trial_id}: artifact {artifact.name!r} is not in the store")
    media = IMAGES.get(path.suffix.lower(), "text/plain; charset=utf-8")
    return Served(path, media)


def read_text(file: Served) -> str:
    """A text artifact as the page shows it: redacted again (it was when written; a pattern
    added since applies too)."""
    return redact.redact(file.path.read_text("utf-8", errors="replace"))


def tail(file: Served, limit: int = TAIL) -> str:
    """The last ``limit`` characters of a text artifact, redacted before the cut."""
    return redact.tail(file.path.read_text("utf-8", errors="replace"), limit)
