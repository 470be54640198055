"""Trial artifacts: files a trial leaves beside its journal record (an agent process's stdout
and stderr, a browser agent's screenshots and Playwright traces).

They live in ``<journal>.d/<trial>/`` (the trial id ``scenario/cell/index`` made safe for a
path), one directory per trial, and the record lists them (:class:`~chaoseval.model.records.
Artifact`: name, path relative to the journal's folder, full size, whether it was cut). Every
artifact is redacted and cut to a size limit before it is written. ``--overwrite`` removes the
whole store with the journal; ``--resume`` keeps the directories of the trials it keeps and
removes the others (those trials run again), and a trial queued again after its worker died
starts from an empty directory.

The runner binds a trial's :class:`TrialArtifacts` for the duration of the trial
(:func:`binding`); an adapter writes through :func:`current`, which is None when the run keeps
no journal (nothing is stored then).
"""

from __future__ import annotations

import shutil
from collections.abc import Container
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote

from chaoseval import redact
from chaoseval.model.records import Artifact

ARTIFACT_LIMIT = 1 << 20  # characters of one artifact written; the rest is counted, not kept
BINARY_LIMIT = 16 << 20  # bytes of one binary artifact (screenshot, Playwright trace)


def store_root(journal: Path) -> Path:
    return journal.with_name(journal.name + ".d")


def trial_dir_name(trial_id: str) -> str:
    """``scenario/cell/index`` as one path component per part, nothing a shell or OS minds."""
    return "/".join(quote(part, safe="-_.=+,@") for part in trial_id.split("/"))


def unquote_trial(relative: Path) -> str:
    """The trial id of a directory :func:`trial_dir_name` named (relative to the store)."""
    return "/".join(unquote(part) for part in relative.parts)


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

    def discard(self, trial_id: str) -> None:
        """Remove what an attempt of ``trial_id`` left (it will run again from the start)."""
        shutil.rmtree(self.root / trial_dir_name(trial_id), ignore_errors=True)

    def keep_only(self, trial_ids: Container[str]) -> None:
        """``--resume``: remove the directories of trials the journal does not keep, what an
        interrupted or not-evaluable attempt left. Those trials run again, and one that then
        writes nothing must not leave an earlier attempt's files beside its record. One walk
        of the store per run, not a look on disk per trial."""
        if not self.root.is_dir():
            return
        for d in self.root.glob("*/*/*"):
            if d.is_dir() and unquote_trial(d.relative_to(self.root)) not in trial_ids:
                shutil.rmtree(d, ignore_errors=True)

    def trial(self, trial_id: str) -> TrialArtifacts:
        """A trial's artifacts. Most trials store nothing, so they touch no file at all: the
        trial's directory is emptied when its first artifact is written (a re-run trial
        replaces what an earlier attempt left; one that writes nothing leaves it, and its
        record lists none of it)."""
        return TrialArtifacts(self, trial_id)


@dataclass
class TrialArtifacts:
    store: ArtifactStore
    trial_id: str
    _directory: Path | None = None  # worked out (and emptied) when the first artifact is written
    refs: list[Artifact] = field(default_factory=list)

    @property
    def directory(self) -> Path:
        """The trial's directory, emptied of an earlier attempt's files on first use."""
        if self._directory is None:
            self._directory = self.store.root / trial_dir_name(self.trial_id)
            shutil.rmtree(self._directory, ignore_errors=True)
        return self._directory

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


class _Binding:
    __slots__ = ("_tokens", "_trial", "_trial_id")

    def __init__(self, trial: TrialArtifacts | None, trial_id: str):
        self._trial, self._trial_id = trial, trial_id

    def __enter__(self) -> TrialArtifacts | None:
        self._tokens = (_current.set(self._trial), _trial_id.set(self._trial_id))
        return self._trial

    def __exit__(self, *exc: object) -> None:
        _current.reset(self._tokens[0])
        _trial_id.reset(self._tokens[1])


def binding(
    store: ArtifactStore | None, trial_id: str
) -> AbstractContextManager[TrialArtifacts | None]:
    """The trial's artifacts for the block (its task's context: concurrent trials never mix).
    A class, not a generator context manager: every trial enters one."""
    return _Binding(store.trial(trial_id) if store is not None else None, trial_id)


def current() -> TrialArtifacts | None:
    return _current.get()


def current_trial_id() -> str | None:
    return _trial_id.get()
