"""A journal's columns kept next to it, so the next command does not read it again.

Reading a big journal is most of what a report costs (a 3 GB journal of 1M trials is 1M
lines to decode and summarise); what comes out of it, :class:`chaoseval.store.columns.Trials`,
is a few arrays and dicts. After a read, those are written beside the journal as
``.<name>.columns.npz`` (numpy arrays, and the rest as one JSON document in an array of bytes:
no pickle, so a file someone left there cannot run code), and the next read takes them
instead of the lines, when they are still the journal's:

- the journal's size, modification time and inode are those it had when it was read, and its
  first and last 64 KB hash the same (a journal that grew, was cut, rewritten or replaced
  is read again);
- the code that makes the columns is the same (a digest of its source files: a cache written
  by another version of chaoseval is never taken);
- the file changed nowhere while it was read, and was last modified at least
  :data:`SETTLED` seconds before (else no cache is written: a journal still being appended to
  is read from its lines every time until it stops growing, and a file rewritten in place
  within its timestamp's granularity of the read cannot look unchanged).

Only journals of at least :data:`MIN_BYTES` are cached (a smaller one reads in a moment), and
never when ``CHAOSEVAL_COLUMN_CACHE=0``. A cache that cannot be written (a read-only
directory) or read (damaged, another format) is ignored: the journal is read as without one.
"""

from __future__ import annotations

import hashlib
import os
import sys
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from chaoseval.model.records import RunManifest
from chaoseval.store.lite import RefCalls
from chaoseval.store.manifest import ReferenceIndex

__all__ = ["MIN_BYTES", "SETTLED", "Stamp", "cache_file", "enabled", "load", "save", "stamp"]

MIN_BYTES = 32 << 20  # ~10k trials: read in well under a second without a cache
SETTLED = 2.0  # seconds since its last change before a journal's columns are kept
EDGE = 64 << 10  # bytes hashed at each end of the journal
FORMAT = 1
# The modules whose code decides what the columns hold (a change in any of them changes the
# digest, so a cache written before it is not used).
_SOURCES = (
    "chaoseval.store.colcache",
    "chaoseval.store.columns",
    "chaoseval.store.lines",
    "chaoseval.store.lite",
    "chaoseval.store.manifest",
    "chaoseval.store.ranges",
    "chaoseval.store.reread",
    "chaoseval.store.reruns",
    "chaoseval.store.journal",
    "chaoseval.model.records",
    "chaoseval.model.trajectory",
)

Stamp = tuple[int, int, int, str]  # size, mtime_ns, inode, hash of both ends
_Calls = dict[str, tuple[list[str], list[str | None]]]  # RefCalls by scenario, as lists


def enabled() -> bool:
    return os.environ.get("CHAOSEVAL_COLUMN_CACHE", "1") != "0"


def cache_file(path: Path) -> Path:
    return path.with_name(f".{path.name}.columns.npz")


_digest: str | None = None


def code_digest() -> str:
    """A digest of the source of the modules that make the columns."""
    global _digest
    if _digest is None:
        h = hashlib.sha256(f"{FORMAT} {np.__version__}".encode())
        for name in _SOURCES:
            file = getattr(sys.modules.get(name), "__file__", None)
            h.update(Path(file).read_bytes() if file else name.encode())
        _digest = h.hexdigest()
    return _digest


def stamp(path: Path, st: os.stat_result) -> Stamp:
    """What identifies the journal's content as read (``st``: its stat then)."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        h.update(fh.read(EDGE))
        fh.seek(max(0, st.st_size - EDGE))
        h.update(fh.read(EDGE))
    return (st.st_size, st.st_mtime_ns, st.st_ino, h.hexdigest())


class _Meta(msgspec.Struct):
    """Everything of a Trials table that is not a numeric column."""

    stamp: tuple[int, int, int, str]
    code: str
    named: str  # the journal's path as given when it was read: its warnings start with it
    manifest: msgspec.Raw
    vocab: dict[str, list[Any]]
    warnings: list[str]
    cut_off_line: int | None
    odd_ids: dict[int, str]
    errors: dict[int, str]
    vetoes: dict[int, list[tuple[str, str]]]
    browser: dict[int, tuple[float, list[tuple[str, bool]], str | None]]
    by_tool: dict[str, tuple[int, int, int, int, dict[str, int]]]
    sampling: list[tuple[Any, Any, Any, Any, int]]
    refs: _Calls
    # steps, errors, and the scenarios whose RefCalls (those of ``refs``) are the references'
    references: tuple[dict[str, int], dict[str, str], list[str]] | None
    lean_at: tuple[int, int] | None


def _calls(refs: dict[str, RefCalls]) -> _Calls:
    return {
        sid: (sorted(r.keys), sorted(r.tools, key=lambda t: (t is None, t or "")))
        for sid, r in refs.items()
    }


def _uncalls(data: _Calls) -> dict[str, RefCalls]:
    return {sid: RefCalls(set(keys), set(tools)) for sid, (keys, tools) in data.items()}


def save(path: Path, t: Any, at: Stamp) -> None:
    """``t`` (a columns.Trials, not imported: columns imports this), read from ``path``
    whose content ``at`` identifies, written beside it."""
    refs = t.references
    if refs is not None and any(t.refs.get(sid) is not c for sid, c in refs.calls.items()):
        return  # not as the reader makes them (the references' calls are among its refs)
    meta = _Meta(
        stamp=at,
        code=code_digest(),
        manifest=msgspec.Raw(t.manifest.model_dump_json().encode()),
        vocab={name: list(values) for name, values in t.vocab.items()},
        named=str(path),
        warnings=t.warnings,
        cut_off_line=t.cut_off_line,
        odd_ids=t.odd_ids,
        errors=t.errors,
        vetoes=t.vetoes,
        browser={r: (cls, list(faults), shot) for r, (cls, faults, shot) in t.browser.items()},
        by_tool={
            tool: (x.calls, x.not_ok, x.faults_delivered, x.failed_trials, dict(x.causes))
            for tool, x in t.by_tool.items()
        },
        sampling=[(*key, n) for key, n in t.sampling.items()],
        refs=_calls(t.refs),
        references=None if refs is None else (refs.steps, refs.errors, list(refs.calls)),
        lean_at=t.lean_at,
    )
    arrays = {f"c_{name}": column for name, column in t.col.items()}
    arrays["offsets"] = t.offsets
    arrays["meta"] = np.frombuffer(msgspec.json.encode(meta), np.uint8)
    target = cache_file(path)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, target)  # whole or not at all: a reader never sees half a cache
    except OSError:
        tmp.unlink(missing_ok=True)  # a read-only or full directory: no cache, no error


_META = msgspec.json.Decoder(_Meta)


def _renamed(warning: str, named: str, now: str) -> str:
    """A warning about a line (``path:line: ...``) naming the journal as it is named now."""
    if named != now and warning.startswith(f"{named}:"):
        return now + warning[len(named) :]
    return warning


def load(path: Path, st: os.stat_result) -> dict[str, Any] | None:
    """The fields of the columns.Trials kept beside ``path`` if they are its content's
    (``st``: its stat now); ``by_tool`` as (calls, not ok, faults delivered, failed trials,
    causes) per tool."""
    target = cache_file(path)
    try:
        with np.load(target, allow_pickle=False) as npz:
            meta = _META.decode(npz["meta"].tobytes())
            if meta.code != code_digest() or tuple(meta.stamp) != stamp(path, st):
                return None
            col = {name[2:]: npz[name] for name in npz.files if name.startswith("c_")}
            offsets = npz["offsets"]
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, msgspec.DecodeError):
        return None
    vocab = meta.vocab
    for name in ("tags", "plugins"):  # tuples in the columns' vocabularies
        vocab[name] = [tuple(v) for v in vocab[name]]
    references = None
    refs = _uncalls(meta.refs)
    if meta.references is not None:
        steps, errors, calls = meta.references
        # The same RefCalls objects as the reader's (two copies were 56 MB more at 100k tasks).
        references = ReferenceIndex(steps, errors, {sid: refs[sid] for sid in calls})
    return dict(
        path=path,
        manifest=RunManifest.model_validate_json(bytes(meta.manifest)),
        col=col,
        vocab=vocab,
        warnings=[_renamed(w, meta.named, str(path)) for w in meta.warnings],
        cut_off_line=meta.cut_off_line,
        offsets=offsets,
        odd_ids=meta.odd_ids,
        errors=meta.errors,
        vetoes={r: [tuple(v) for v in vs] for r, vs in meta.vetoes.items()},
        browser={
            r: (cls, tuple(tuple(f) for f in faults), shot)
            for r, (cls, faults, shot) in meta.browser.items()
        },
        by_tool=meta.by_tool,
        sampling=Counter({tuple(s[:4]): s[4] for s in meta.sampling}),
        refs=refs,
        references=references,
        lean_at=meta.lean_at,
    )
