"""Trial artifacts: files a trial leaves beside its journal record (an agent process's stdout
and stderr, a browser agent's screenshots and Playwright traces).

They live in ``<journal>.d/<trial>/``, one directory per trial, and the record lists them
(:class:`~chaoseval.model.records.Artifact`: name, path relative to the journal's folder, full
size, whether it was cut). Every artifact is redacted, then cut to a size limit, before it is
written. ``--overwrite`` removes the
whole store with the journal; ``--resume`` keeps the directories of the trials it keeps and
removes the others (those trials run again), and a trial queued again after its worker died
starts from an empty directory.

Names are data, never paths: a trial's directory comes from its id by :func:`trial_dir_name`
alone (every character outside a safe set escaped, so a cell named ``../../x`` is one harmless
component), an artifact's file name likewise, and every write, removal and read first resolves
the path and checks that it is inside the store (:func:`inside`): nothing a spec, a cell name,
an agent or a journal says makes chaoseval touch a file outside ``<journal>.d``.

The runner binds a trial's :class:`TrialArtifacts` for the duration of the trial
(:func:`binding`); an adapter writes through :func:`current`, which is None when the run keeps
no journal (nothing is stored then).
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from chaoseval import redact
from chaoseval.errors import JournalError, disk_full, stop_for
from chaoseval.model.records import Artifact

# A trial's model messages (chaoseval.channels.model.transcript writes it, view/messages reads
# it): one JSON line per model step, keyed by the step's index in the trajectory.
MODEL_MESSAGES = "model.jsonl"
ARTIFACT_LIMIT = 1 << 20  # characters of one artifact written; the rest is counted, not kept
BINARY_LIMIT = 16 << 20  # bytes of one binary artifact (screenshot, Playwright trace)


def store_root(journal: Path) -> Path:
    return journal.with_name(journal.name + ".d")


# chaoseval's own files at the top of a store, beside the trials' directories (whose names
# never start with a dot: _escape): the writer's lock (chaoseval.store.lock), the journal
# being made (written whole, then renamed onto the journal), a torn last line set aside, the
# readers' column cache (chaoseval.store.colcache) and reviewers' labels (store.reviews).
LOCK = ".lock"
NEW_JOURNAL = ".journal.new"
PARTIAL = ".partial"
COLUMNS = ".columns.npz"
REVIEWS = ".reviews.jsonl"


# Characters a directory name keeps as they are (urllib's quote keeps the same ones, so the
# stores of earlier versions keep their names); every other one is %XX of its UTF-8 bytes.
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~=+,@")
_NAME_MAX = 200  # bytes of one escaped part kept whole (a file name holds 255)


def _escape(part: str) -> str:
    """``part`` as one path component: never empty, ``.``, ``..``, or holding a ``/``.

    The escapes are ``%XX`` (uppercase hex); ``%`` alone (the empty part) and ``%~`` (a
    long part's hash) are never produced by them, so no two parts share a name."""
    if not part:
        return "%"
    out = "".join(
        c if c in _SAFE else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
        for c in part
    )
    if out.startswith("."):  # ".", "..", and no hidden directories
        out = "%2E" + out[1:]
    if len(out) > _NAME_MAX:
        digest = hashlib.blake2b(out.encode(), digest_size=8).hexdigest()
        out = out[: _NAME_MAX - 20] + "%~" + digest
    return out


def trial_dir_name(trial_id: str) -> str:
    """The ONE map from a trial id to its directory under the store: always three escaped
    components, ``scenario/cell/index``, whatever the id holds (a cell named
    ``../../victim`` is one component, ``%2E.%2F..%2Fvictim``).

    A run's ids are ``scenario/cell/index``: the scenario id has no ``/`` (its pattern) and
    the index is a number, so the first and last ``/`` split it and every ``/`` of the cell
    is escaped. An id of another shape is kept apart under ``%-/%-/``."""
    scenario, sep, rest = trial_id.partition("/")
    cell, sep2, index = rest.rpartition("/")
    if not (sep and sep2):
        return f"%-/%-/{_escape(trial_id)}"
    return f"{_escape(scenario)}/{_escape(cell)}/{_escape(index)}"


class OutsideStore(JournalError):
    """A path that would leave a journal's artifact store (never read, written or removed)."""


def inside(root: Path, path: Path, *, what: str) -> Path:
    """``path`` once every ``..`` and symlink in it is resolved, or OutsideStore when that is
    not strictly inside ``root``. Checked before every write, removal and read of a store."""
    resolved = path.resolve()
    base = root.resolve()
    if resolved == base or not resolved.is_relative_to(base):
        raise OutsideStore(f"{what}: {str(path)!r} is outside {root}; not touched")
    return resolved


def artifact_file(journal: Path, relative: str, *, record: str) -> Path:
    """A record's artifact (its path relative to the journal's folder) as a file to read, or
    OutsideStore naming the journal and the record when the path leaves the journal's store
    (an absolute path, ``..``, a symlink out of it): a journal never makes chaoseval read
    another file."""
    try:
        return ArtifactStore.for_journal(journal).file(relative, record=record)
    except OutsideStore as exc:
        raise OutsideStore(f"{journal}: {exc}") from None


@contextmanager
def _written(path: Path) -> Iterator[None]:
    """A write to the store: on a full disk, HarnessStop naming the file (the trial is not the
    agent's to answer for, and the run cannot go on)."""
    try:
        yield
    except OSError as exc:
        if disk_full(exc):
            raise stop_for(exc, path) from exc
        raise


@dataclass
class ArtifactStore:
    """The artifacts of one journal's trials."""

    root: Path
    limit: int = ARTIFACT_LIMIT

    @classmethod
    def for_journal(cls, journal: Path) -> ArtifactStore:
        return cls(store_root(journal))

    def clear(self) -> None:
        """Everything stored (``--overwrite``: the journal is replaced) but the writer's lock,
        which guards the journal's path across the replacement."""
        if not self.root.is_dir():
            return
        for entry in self.root.iterdir():
            if entry.name == LOCK:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)

    def discard(self, trial_id: str) -> None:
        """Remove what an attempt of ``trial_id`` left (it will run again from the start)."""
        self._remove(self.root / trial_dir_name(trial_id), trial_id)

    def _remove(self, directory: Path, trial_id: str) -> None:
        """``rmtree`` of a trial's directory, only once it is known to be inside the store."""
        if directory.exists():
            shutil.rmtree(inside(self.root, directory, what=trial_id), ignore_errors=True)

    def keep_only(self, trial_ids: Iterable[str]) -> None:
        """``--resume``: remove the directories of trials the journal does not keep, what an
        interrupted or not-evaluable attempt left. Those trials run again, and one that then
        writes nothing must not leave an earlier attempt's files beside its record. One walk
        of the store per run, not a look on disk per trial."""
        if not self.root.is_dir():
            return
        kept = {trial_dir_name(t) for t in trial_ids}
        for d in self.root.glob("*/*/*"):
            name = d.relative_to(self.root).as_posix()
            if d.is_dir() and name not in kept:
                try:
                    self._remove(d, name)
                except OutsideStore:  # a symlink out of the store: not followed
                    continue

    def file(self, relative: str, *, record: str) -> Path:
        """The artifact a record lists at ``relative`` (to the journal's folder), resolved
        inside the store, or OutsideStore naming the record."""
        try:
            return inside(self.root, self.root.parent / relative, what=record)
        except OutsideStore:
            raise OutsideStore(
                f"trial {record}: artifact path {relative!r} is outside {self.root.name}/; not read"
            ) from None

    def place(self, relative: str, data: bytes) -> None:
        """A file a remote worker wrote at ``relative`` (to the journal's folder), written
        here: only inside the store, whatever the worker's record says."""
        path = inside(self.root, self.root.parent / relative, what=relative)
        with _written(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)

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
            directory = self.store.root / trial_dir_name(self.trial_id)
            self.store._remove(directory, self.trial_id)
            self._directory = directory
        return self._directory

    def _file(self, name: str) -> Path:
        """Where artifact ``name`` goes: one escaped component in the trial's directory,
        checked to be inside the store (no symlink out of it) before anything is written."""
        with _written(self.directory):
            self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / _escape(name)
        inside(self.store.root, path, what=self.trial_id)
        return path

    def _ref(self, name: str, path: Path, size: int, cut: bool) -> Artifact:
        ref = Artifact(name=name, path=str(path.relative_to(self.store.root.parent)), size=size,
                       cut=cut)  # fmt: skip
        self.refs = [r for r in self.refs if r.name != name] + [ref]
        return ref

    def write(self, name: str, text: str, *, size: int | None = None) -> Artifact:
        """Store ``text`` as ``name``: redacted, then cut to the limit (never the other way
        round: a secret across the cut would keep its first half); ``size`` is the full size
        when the caller already kept only part of it."""
        given = len(text.encode("utf-8", "replace"))
        full = max(size or 0, given)
        kept = redact.current().text(text)
        cut = full > given  # the caller kept only part of it
        if len(kept) > self.store.limit:
            kept, cut = kept[: self.store.limit], True
        if cut:
            kept += f"\n[... cut by chaoseval: {full} bytes in full]\n"
        path = self._file(name)
        with _written(path):
            path.write_text(kept, encoding="utf-8", errors="replace")
        return self._ref(name, path, full, cut)

    def write_bytes(self, name: str, data: bytes) -> Artifact | None:
        """Store a binary artifact (a screenshot, a trace) as is; one over the binary limit is
        not kept (None): half an image is no evidence."""
        if len(data) > BINARY_LIMIT:
            return None
        path = self._file(name)
        with _written(path):
            path.write_bytes(data)
        return self._ref(name, path, len(data), False)


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
