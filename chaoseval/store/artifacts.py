"""Trial artifacts: files a trial leaves beside its journal record (an agent process's stdout
and stderr, a browser agent's screenshots and Playwright traces).

They live in ``<journal>.d/<trial>/`` (the trial id ``scenario/cell/index`` made safe for a
path), one directory per trial, and the record lists them (:class:`~chaoseval.model.records.
Artifact`: name, path relative to the journal's folder, full size, whether it was cut). Every
artifact is redacted and cut to a size limit before it is written. ``--overwrite`` removes the
whole store with the journal; ``--resume`` keeps it, and a trial run again replaces only its own
directory.

The runner binds a trial's :class:`TrialArtifacts` for the duration of the trial
(:func:`binding`); an adapter writes through :func:`current`, which is None when the run keeps
no journal (nothing is stored then).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from chaoseval import redact
from chaoseval.model.records import Artifact

ARTIFACT_LIMIT = 1 << 20  # characters of one artifact written; the rest is counted, not kept
BINARY_LIMIT = 16 << 20  # bytes of one binary artifact (screenshot, Playwright trace)


def store_root(journal: Path) -> Path:
    return journal.with_name(journal.name + ".d")


def trial_dir_name(trial_id: str) -> str:
    """``scenario/cell/index`` as one path component per part, nothing a shell or OS minds."""
    return "/".join(quote(part, safe="-_.=+,@") for part in trial_id.split("/"))


@dataclass
class ArtifactStore:
    """The artifacts of one journal's trials."""

    root: Path
    limit: int = ARTIFACT_LIMIT

    @classmethod
    def for_journal(cls, journal: Path) -> ArtifactStore:
        return cls(store_root(journal))

    def clear(self) -> None:
        """Everything stored (``--overwrite``: the journal is replaced)."""
        shutil.rmtree(self.root, ignore_errors=True)

    def trial(self, trial_id: str) -> TrialArtifacts:
        """A trial's artifacts, its directory emptied (a re-run trial starts afresh).

        Most trials store nothing: with no store on disk yet there is nothing to empty, and
        one ``stat`` is all a trial pays (not a path built and a ``rmtree`` tried)."""
        directory = self.root / trial_dir_name(trial_id) if self.root.exists() else None
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)
        return TrialArtifacts(self, trial_id, directory)


@dataclass
class TrialArtifacts:
    store: ArtifactStore
    trial_id: str
    given_directory: Path | None = None  # None: worked out when the first artifact is written
    refs: list[Artifact] = field(default_factory=list)

    @property
    def directory(self) -> Path:
        if self.given_directory is None:
            self.given_directory = self.store.root / trial_dir_name(self.trial_id)
        return self.given_directory

    def write(self, name: str, text: str, *, size: int | None = None) -> Artifact:
        """Store ``text`` as ``name``: redacted, cut to the limit; ``size`` is the full size
        when the caller already kept only part of it."""
        given = len(text.encode("utf-8", "replace"))
        full = max(size or 0, given)
        kept = redact.current().text(text)
        cut = full > given  # the caller kept only part of it
        if len(kept) > self.store.limit:
            kept, cut = kept[: self.store.limit], True
        if cut:
            kept += f"\n[... cut by chaoseval: {full} bytes in full]\n"
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / name
        path.write_text(kept, encoding="utf-8", errors="replace")
        ref = Artifact(
            name=name, path=str(path.relative_to(self.store.root.parent)), size=full, cut=cut
        )
        self.refs = [r for r in self.refs if r.name != name] + [ref]
        return ref

    def write_bytes(self, name: str, data: bytes) -> Artifact | None:
        """Store a binary artifact (a screenshot, a trace) as is; one over the binary limit is
        not kept (None): half an image is no evidence."""
        if len(data) > BINARY_LIMIT:
            return None
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / name
        path.write_bytes(data)
        ref = Artifact(
            name=name, path=str(path.relative_to(self.store.root.parent)), size=len(data), cut=False
        )
        self.refs = [r for r in self.refs if r.name != name] + [ref]
        return ref


_current: ContextVar[TrialArtifacts | None] = ContextVar("chaoseval_artifacts", default=None)
_trial_id: ContextVar[str | None] = ContextVar("chaoseval_trial_id", default=None)


@contextmanager
def binding(store: ArtifactStore | None, trial_id: str) -> Iterator[TrialArtifacts | None]:
    """The trial's artifacts for the block (its task's context: concurrent trials never mix)."""
    trial = store.trial(trial_id) if store is not None else None
    tokens = (_current.set(trial), _trial_id.set(trial_id))
    try:
        yield trial
    finally:
        _current.reset(tokens[0])
        _trial_id.reset(tokens[1])


def current() -> TrialArtifacts | None:
    return _current.get()


def current_trial_id() -> str | None:
    return _trial_id.get()
