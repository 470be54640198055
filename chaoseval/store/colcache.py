"""A journal's columns kept next to it, so the next command does not read it again.

Reading a big journal is most of what a report costs (a 3 GB journal of 1M trials is 1M
lines to decode and summarise); what comes out of it, :class:`chaoseval.store.columns.Trials`,
is a few arrays and dicts. After a read, those are written in the journal's store, with all
else kept beside a journal, as ``<journal>.d/.columns.npz`` (numpy arrays, and the rest as
JSON documents in arrays of bytes: no pickle, so a file someone left there cannot run code;
the errors, veto items and reference calls a document each, decoded only by a command that
uses them, with each string in it once), and the next read takes them instead of the lines,
when they are still the journal's:

- the journal's size, modification time and inode are those it had when it was read, and its
  first and last 64 KB hash the same (a journal that grew, was cut, rewritten or replaced
  is read again);
- the code that makes the columns is the same (a digest of its source files: a cache written
  by another version of chaoseval is never taken);
- no run held the journal's write lock when the cache was written (store.lock.writing,
  asked without taking it: a reader never waits for a writer nor keeps one out), the file
  changed nowhere while it was read, and it was last modified at least :data:`SETTLED`
  seconds before (else no cache is written: a journal still being appended to
  is read from its lines every time until it stops growing, and a file rewritten in place
  within its timestamp's granularity of the read cannot look unchanged).

Only journals of at least :data:`MIN_BYTES` are cached (a smaller one reads in a moment), and
never when ``CHAOSEVAL_COLUMN_CACHE=0``. The read that writes a cache takes it back
(columns.read_trials) instead of holding all it read: every command on a big journal, its
first too, holds only what it uses. A cache that cannot be written (a read-only
directory) or read (damaged, another format) is ignored: the journal is read as without one.

Why ``.npz`` and not Parquet (issue 47): read back with pyarrow, a Parquet file of the same
columns and documents took twice the CPU and 497 MB against 229 MB at 1M records (the figures
in chaoseval.store's docstring and docs/BENCHMARKS.md).
"""

from __future__ import annotations

import hashlib
import os
import sys
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from chaoseval.model.records import RunManifest
from chaoseval.store.artifacts import COLUMNS, store_root
from chaoseval.store.lite import RefCalls
from chaoseval.store.lock import writing
from chaoseval.store.manifest import ReferenceIndex

__all__ = ["MIN_BYTES", "SETTLED", "Stamp", "cache_file", "enabled", "load", "save", "stamp"]

MIN_BYTES = 32 << 20  # ~10k trials: read in well under a second without a cache
SETTLED = 2.0  # seconds since its last change before a journal's columns are kept
EDGE = 64 << 10  # bytes hashed at each end of the journal
FORMAT = 2
# The modules whose code decides what the columns hold (a change in any of them changes the
# digest, so a cache written before it is not used).
_SOURCES = (
    "chaoseval.store.builder",
    "chaoseval.store.colcache",
    "chaoseval.store.columns",
    "chaoseval.store.conform",
    "chaoseval.store.lite",
    "chaoseval.store.manifest",
    "chaoseval.store.ranges",
    "chaoseval.store.journal",
    "chaoseval.model.records",
    "chaoseval.model.trajectory",
)

Stamp = tuple[int, int, int, str]  # size, mtime_ns, inode, hash of both ends


def enabled() -> bool:
    return os.environ.get("CHAOSEVAL_COLUMN_CACHE", "1") != "0"


def cache_file(path: Path) -> Path:
    return store_root(path) / COLUMNS


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
    """The meta document: what a cache's reader decodes at once (the errors, veto items and
    reference calls are documents of their own, decoded when first used: :class:`_Later`)."""

    stamp: tuple[int, int, int, str]
    code: str
    named: str  # the journal's path as given when it was read: its warnings start with it
    manifest: msgspec.Raw
    vocab: dict[str, list[Any]]
    warnings: list[str]
    cut_off_line: int | None
    odd_ids: dict[int, str]
    browser: dict[int, tuple[float, list[tuple[str, bool]], str | None]]
    by_tool: dict[str, tuple[int, int, int, int, dict[str, int]]]
    sampling: list[tuple[Any, Any, Any, Any, int]]
    lean_at: tuple[int, int] | None
    veto_rules: dict[str, str]
    recorded: bool  # the run recorded its reference runs ("index" is not null)


# The side documents keep each string once (a big journal repeats a few hundred errors over
# hundreds of thousands of rows) and name it by its number: (strings, what refers to them).
_Errors = tuple[list[str], dict[int, int]]
_Vetoes = tuple[list[tuple[str, ...]], dict[int, list[int]]]
# RefCalls by scenario: its keys' and tools' numbers (-1: a call of no tool), sorted.
_Calls = tuple[list[str], dict[str, tuple[list[int], list[int]]]]
_Index = tuple[dict[str, int], dict[str, str], list[str]] | None  # steps, errors, scenarios


def _number(table: dict[Any, int], value: Any) -> int:
    return -1 if value is None else table.setdefault(value, len(table))


def _calls(refs: dict[str, RefCalls]) -> _Calls:
    strings: dict[str | None, int] = {}
    by_sid = {
        sid: ([_number(strings, k) for k in sorted(r.keys)],
              [_number(strings, t) for t in sorted(r.tools, key=lambda t: (t is None, t or ""))])
        for sid, r in refs.items()
    }  # fmt: skip
    return list(strings), by_sid  # type: ignore[arg-type]  # None is never numbered


def _uncalls(data: _Calls) -> dict[str, RefCalls]:
    strings, by_sid = data
    tools: list[str | None] = [*strings, None]  # -1: None
    return {
        sid: RefCalls({strings[k] for k in keys}, {tools[t] for t in named})
        for sid, (keys, named) in by_sid.items()
    }


def _side_documents(t: Any) -> dict[str, bytes]:
    errors: dict[str, int] = {}
    items: dict[tuple[str, ...], int] = {}
    rows = {r: _number(errors, e) for r, e in t.errors.items()}
    vetoes = {r: [_number(items, tuple(v)) for v in vs] for r, vs in t.vetoes.items()}
    refs = t.references
    docs: dict[str, Any] = {
        "errors": (list(errors), rows),
        "vetoes": (list(items), vetoes),
        "refs": _calls(t.refs),
        "index": None if refs is None else (refs.steps, refs.errors, list(refs.calls)),
    }
    return {name: msgspec.json.encode(doc) for name, doc in docs.items()}


def save(path: Path, t: Any, at: Stamp) -> bool:
    """``t`` (a columns.Trials, not imported: columns imports this), read from ``path``
    whose content ``at`` identifies, written beside it; False when it was not."""
    refs = t.references
    if refs is not None and any(t.refs.get(sid) is not c for sid, c in refs.calls.items()):
        return False  # not as the reader makes them (the references' calls are among its refs)
    if writing(path):
        return False  # a run holds the journal's lock: it is about to change (store.lock)
    meta = _Meta(
        stamp=at,
        code=code_digest(),
        manifest=msgspec.Raw(t.manifest.model_dump_json().encode()),
        vocab={name: list(values) for name, values in t.vocab.items()},
        named=str(path),
        warnings=t.warnings,
        cut_off_line=t.cut_off_line,
        odd_ids=t.odd_ids,
        browser={r: (cls, list(faults), shot) for r, (cls, faults, shot) in t.browser.items()},
        by_tool={
            tool: (x.calls, x.not_ok, x.faults_delivered, x.failed_trials, dict(x.causes))
            for tool, x in t.by_tool.items()
        },
        sampling=[(*key, n) for key, n in t.sampling.items()],
        lean_at=t.lean_at,
        veto_rules=t.veto_rules,
        recorded=refs is not None,
    )
    arrays = {f"c_{name}": column for name, column in t.col.items()}
    arrays["offsets"] = t.offsets
    arrays["meta"] = np.frombuffer(msgspec.json.encode(meta), np.uint8)
    for name, doc in _side_documents(t).items():
        arrays[f"d_{name}"] = np.frombuffer(doc, np.uint8)
    target = cache_file(path)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        tmp.parent.mkdir(exist_ok=True)
        with tmp.open("wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, target)  # whole or not at all: a reader never sees half a cache
    except OSError:
        tmp.unlink(missing_ok=True)  # a read-only or full directory: no cache, no error
        return False
    return True


def _renamed(warning: str, named: str, now: str) -> str:
    """A warning about a line (``path:line: ...``) naming the journal as it is named now."""
    if named != now and warning.startswith(f"{named}:"):
        return now + warning[len(named) :]
    return warning


_META = msgspec.json.Decoder(_Meta)
_REFS = msgspec.json.Decoder(_Calls)
_INDEX = msgspec.json.Decoder(_Index)
_ERRORS = msgspec.json.Decoder(_Errors)
_VETOES = msgspec.json.Decoder(_Vetoes)


class _Later:
    """What a loaded cache decodes only when asked: its columns, one at a time, its reference
    runs' steps and errors, and their calls, from the cache file opened at :func:`load` (kept
    open: a cache written over it since, for another content of the journal, is another file)."""

    def __init__(self, npz: Any) -> None:
        self.npz = npz
        self.refs: dict[str, RefCalls] | None = None

    def column(self, name: str) -> np.ndarray:
        out: np.ndarray = self.npz[f"c_{name}"]
        return out

    def _doc(self, name: str, decoder: msgspec.json.Decoder[Any]) -> Any:
        return decoder.decode(self.npz[f"d_{name}"])  # (msgspec reads the array's buffer)

    def references(self) -> dict[str, RefCalls]:
        if self.refs is None:
            self.refs = _uncalls(self._doc("refs", _REFS))
        return self.refs

    def errors(self) -> dict[int, str]:
        strings, rows = self._doc("errors", _ERRORS)
        return {row: strings[code] for row, code in rows.items()}

    def vetoes(self) -> dict[int, list[tuple[str, ...]]]:
        items, rows = self._doc("vetoes", _VETOES)  # (kind, detail[, rule name]) tuples
        return {row: [items[code] for code in codes] for row, codes in rows.items()}

    def index(self) -> tuple[dict[str, int], dict[str, str], list[str]]:
        """Steps and errors of the reference runs, and the scenarios whose calls they are."""
        index = self._doc("index", _INDEX)
        assert index is not None  # a run that recorded none has no LazyIndex
        return index  # type: ignore[no-any-return]


class LazyValues(dict[Any, Any]):
    """A dict of a loaded cache whose keys are known at once and each value is read by
    ``fetch`` the first time it is asked for."""

    def __init__(self, keys: Iterable[Any], fetch: Callable[[Any], Any]) -> None:
        super().__init__()
        self._keys, self._fetch = dict.fromkeys(keys), fetch

    def __missing__(self, key: Any) -> Any:
        if key not in self._keys:
            raise KeyError(key)
        value = self[key] = self._fetch(key)
        return value

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self._keys else default

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __iter__(self) -> Iterator[Any]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def keys(self) -> Any:
        return self._keys.keys()

    def values(self) -> Any:
        return [self[k] for k in self._keys]

    def items(self) -> Any:
        return [(k, self[k]) for k in self._keys]

    def __eq__(self, other: object) -> bool:
        return dict(self.items()) == other

    __hash__ = None


class LazyColumns(LazyValues):
    """The columns of a loaded cache, each read from it the first time it is asked for: a
    command that reads five columns holds five (``compare`` of two 1M-trial journals held all
    29 of both, ~330 MB)."""

    def __init__(self, later: _Later, names: list[str]) -> None:
        super().__init__(names, later.column)


class LazyDict(dict[Any, Any]):
    """A dict of a loaded cache made by ``make`` on first use: what a command never reads it
    never decodes (a 1M-trial journal's errors and veto items are ~35 MB as objects)."""

    def __init__(self, make: Callable[[], Mapping[Any, Any]]) -> None:
        super().__init__()
        self._make: Callable[[], Mapping[Any, Any]] | None = make

    def _fill(self) -> None:
        if self._make is not None:
            make, self._make = self._make, None
            self.update(make())

    def __getitem__(self, key: Any) -> Any:
        self._fill()
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._fill()
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self._fill()
        return super().__contains__(key)

    def __iter__(self) -> Iterator[Any]:
        self._fill()
        return super().__iter__()

    def __len__(self) -> int:
        self._fill()
        return super().__len__()

    def keys(self) -> Any:
        self._fill()
        return super().keys()

    def values(self) -> Any:
        self._fill()
        return super().values()

    def items(self) -> Any:
        self._fill()
        return super().items()

    def __eq__(self, other: object) -> bool:
        self._fill()
        return dict(self) == other

    __hash__ = None


class LazyRefs(LazyDict):
    """A loaded cache's reference calls by scenario, decoded on first use."""

    def __init__(self, later: _Later) -> None:
        super().__init__(later.references)


class LazyCalls(LazyValues):
    """The reference runs' calls by scenario: which scenarios have them known at once (what
    the process metrics ask), the calls decoded when one is read."""

    def __init__(self, later: _Later, sids: list[str]) -> None:
        super().__init__(sids, lambda sid: later.references()[sid])


class LazyIndex(ReferenceIndex):
    """A loaded cache's ReferenceIndex, decoded the first time a field is read; its calls
    (the same objects as the refs') when one is read."""

    def __init__(self, later: _Later) -> None:  # no dataclass fields yet
        self._later = later

    def __getattr__(self, name: str) -> Any:
        if name not in ("steps", "errors", "calls") or "_later" not in self.__dict__:
            raise AttributeError(name)
        self.steps, self.errors, sids = self._later.index()
        self.calls = LazyCalls(self._later, sids)
        return getattr(self, name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReferenceIndex):
            return NotImplemented
        return (self.steps, self.errors, self.calls) == (other.steps, other.errors, other.calls)


def load(path: Path, st: os.stat_result) -> dict[str, Any] | None:
    """The fields of the columns.Trials kept beside ``path`` if they are its content's
    (``st``: its stat now); ``by_tool`` as (calls, not ok, faults delivered, failed trials,
    causes) per tool. The columns and the reference calls are read from the cache when first
    used (:class:`LazyColumns`, :class:`LazyRefs`)."""
    target = cache_file(path)
    npz = None
    try:
        npz = np.load(target, allow_pickle=False)
        meta = _META.decode(npz["meta"])
        if meta.code != code_digest() or tuple(meta.stamp) != stamp(path, st):
            npz.close()
            return None
        names = [name[2:] for name in npz.files if name.startswith("c_")]
        offsets = npz["offsets"]
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, msgspec.DecodeError):
        if npz is not None:
            npz.close()
        return None
    later = _Later(npz)
    vocab = meta.vocab
    for name in ("tags", "plugins"):  # tuples in the columns' vocabularies
        vocab[name] = [tuple(v) for v in vocab[name]]
    refs = LazyRefs(later)
    recorded = meta.recorded
    return dict(
        path=path,
        manifest=RunManifest.model_validate_json(bytes(meta.manifest)),
        col=LazyColumns(later, names),
        vocab=vocab,
        warnings=[_renamed(w, meta.named, str(path)) for w in meta.warnings],
        cut_off_line=meta.cut_off_line,
        offsets=offsets,
        odd_ids=meta.odd_ids,
        errors=LazyDict(later.errors),
        vetoes=LazyDict(later.vetoes),
        browser={
            r: (cls, tuple(tuple(f) for f in faults), shot)
            for r, (cls, faults, shot) in meta.browser.items()
        },
        by_tool=meta.by_tool,
        sampling=Counter({tuple(s[:4]): s[4] for s in meta.sampling}),
        refs=refs,
        references=LazyIndex(later) if recorded else None,
        lean_at=meta.lean_at,
        veto_rules=meta.veto_rules,
    )
