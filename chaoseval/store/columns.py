"""A journal read as columns: one pass, line by line, a few bytes per trial.

What the reports need of each trial (its task, cell, index, seed, status, root cause, fault
counts, what it spent, how it ended under a contract, ...) goes into numpy arrays; strings are
stored once and referred to by number. The slices no column can hold (calls per tool, veto
items, browser pages) are summed or kept beside them as the lines go by (store.builder). A
trial's full record (its trajectory) is read again only when a view shows that trial
(:meth:`Trials.record`: a seek to its line), so the memory of a report does not grow with the
trajectories it never shows.

The reader keeps :func:`chaoseval.store.journal.read_journal`'s rules: a manifest line first (the
first one counts), every trial line carries the manifest's run id (a line of another run is an
error), a trial appears twice only as ``--resume`` writes it (a not-evaluable attempt, then its
re-run, which replaces it in the earlier line's place; any other repeat is an error naming both
lines), a half-written last line is ignored with a warning, and every other error names
``file:line``.
"""

from __future__ import annotations

import gc
import json
import os
import time
from collections import Counter
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import msgspec
import numpy as np

from chaoseval.model.records import RunManifest, TrialRecord, make_trial_id
from chaoseval.store import colcache
from chaoseval.store.builder import CODED, NUMERIC, Builder, ToolTally, remeasure, retally
from chaoseval.store.conform import check_columns
from chaoseval.store.journal import foreign_line, journal_file, parse_line
from chaoseval.store.lite import RefCalls
from chaoseval.store.manifest import ReferenceIndex, manifest_of
from chaoseval.store.phases import phase
from chaoseval.store.ranges import read_range, read_split

__all__ = [
    "CODED",
    "NUMERIC",
    "Group",
    "ToolTally",
    "Trials",
    "as_group",
    "as_trials",
    "read_trials",
    "trials_of",
]


@dataclass
class Trials:
    """The trials of one journal as columns (``col``), in journal order, one row per trial."""

    path: Path
    manifest: RunManifest
    col: dict[str, np.ndarray]
    vocab: dict[str, list[Any]]  # CODED column -> its values (code i is vocab[name][i])
    warnings: list[str] = field(default_factory=list)
    cut_off_line: int | None = None
    offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    odd_ids: dict[int, str] = field(default_factory=dict)  # rows whose id is not s/c/i
    errors: dict[int, str] = field(default_factory=dict)  # error of rows that did not pass
    vetoes: dict[int, list[tuple[str, ...]]] = field(default_factory=dict)
    # The scenarios' veto rules, name -> kind (safety, hallucination): kept apart from the
    # manifest's scenario list, which a lean read leaves out, so a rule that never fired is known.
    veto_rules: dict[str, str] = field(default_factory=dict)
    browser: dict[int, tuple[float, tuple[tuple[str, bool], ...], str | None]] = field(
        default_factory=dict
    )
    by_tool: dict[str, ToolTally] = field(default_factory=dict)
    # Model requests on the wire by (temperature sent, used, seed sent, used): how many.
    sampling: Counter[tuple[Any, Any, Any, Any]] = field(default_factory=Counter)
    records: list[TrialRecord] | None = None  # an in-memory journal (imports): no file to seek
    refs: dict[str, RefCalls] = field(default_factory=dict)  # what "correct" was measured on
    # The manifest's reference runs as reports use them (None: it recorded none).
    references: ReferenceIndex | None = None
    # (line number, offset) of a manifest read lean (store.manifest): no scenario list kept.
    lean_at: tuple[int, int] | None = None
    _codes: dict[str, dict[Any, int]] = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.offsets)

    def names(self, column: str) -> list[Any]:
        """A coded column's value for every row (short vocabularies: the lists share items)."""
        vocab = self.vocab[column]
        return [vocab[i] if i >= 0 else None for i in self.col[column].tolist()]

    def value(self, column: str, row: int) -> Any:
        code = int(self.col[column][row])
        return self.vocab[column][code] if code >= 0 else None

    def trial_id(self, row: int) -> str:
        odd = self.odd_ids.get(row)
        if odd is not None:
            return odd
        index = int(self.col["index"][row])
        return make_trial_id(self.value("scenario", row), self.value("cell", row), index)

    def code(self, column: str, name: Any) -> int:
        """The code of ``name`` in a coded ``column``, -2 when no row has it (a dict built
        once per column: a lookup costs the same at 100 tasks and at 100k)."""
        table = self._codes.get(column)
        if table is None or len(table) != len(self.vocab[column]):
            table = self._codes[column] = {}
            for i, v in enumerate(self.vocab[column]):
                table.setdefault(v, i)
        return table.get(name, -2)

    def rows(self, column: str, name: Any) -> np.ndarray:
        """The rows whose coded ``column`` is ``name``."""
        code = self.code(column, name)
        if code < 0:
            return np.zeros(0, np.int64)
        return np.flatnonzero(self.col[column] == code)

    def full_manifest(self) -> RunManifest:
        """The manifest with every field, its scenarios too (read again from its line when
        the columns hold it lean)."""
        if self.lean_at is None:
            return self.manifest
        number, offset = self.lean_at
        with self.path.open("rb") as fh:
            fh.seek(offset)
            parsed = parse_line(self.path, number, json.loads(fh.readline()))
        assert isinstance(parsed, RunManifest)  # the line read lean before
        return parsed

    def manifest_of(self, ids: Collection[str]) -> RunManifest:
        """The manifest with every field, its scenario list and reference runs only those of
        the tasks ``ids`` (what a view of a few trials needs; at 100k tasks the whole line
        made into objects took 670 MB, issue 47). The same whether the columns hold the
        manifest whole or lean."""
        if self.lean_at is not None:
            offset = self.lean_at[1]
            with self.path.open("rb") as fh:
                fh.seek(offset)
                line = _long_line(fh)
            cut = manifest_of(line, ids)
            if cut is not None:
                return cut
        m = self.full_manifest()  # held whole, or a line only the full reader reads
        wanted = frozenset(ids)
        refs = m.references
        return m.model_copy(
            update={
                "scenarios": [s for s in m.scenarios if s.id in wanted],
                "references": None
                if refs is None
                else {k: v for k, v in refs.items() if k in wanted},
            }
        )

    def record(self, row: int) -> TrialRecord:
        """The full record of one trial, read again from its line."""
        if self.records is not None:
            return self.records[row]
        with self.path.open("rb") as fh:
            fh.seek(int(self.offsets[row]))
            line = fh.readline()
        return TrialRecord.model_validate_json(line)

    def iter_records(self, rows: Iterable[int]) -> Iterator[TrialRecord]:
        """Full records of ``rows``, one at a time (never all of them in memory)."""
        if self.records is not None:
            yield from (self.records[r] for r in rows)
            return
        with self.path.open("rb") as fh:
            for row in rows:
                fh.seek(int(self.offsets[row]))
                yield TrialRecord.model_validate_json(fh.readline())

    def scan(
        self, rows: Iterable[int] | np.ndarray, decoder: msgspec.json.Decoder[Any]
    ) -> Iterator[tuple[int, Any]]:
        """``(row, record)`` for ``rows`` in file order (one forward pass over the lines),
        each line decoded by ``decoder``: a struct of just the fields a view reads. A line it
        refuses (pydantic's lax mode accepts more) and a record in memory come as TrialRecords;
        the two share their field names."""
        wanted = rows if isinstance(rows, np.ndarray) else np.fromiter(rows, np.int64)
        if self.records is not None:
            yield from ((row, self.records[row]) for row in np.sort(wanted).tolist())
            return
        order = wanted[np.argsort(self.offsets[wanted], kind="stable")]
        with self.path.open("rb", buffering=_buffer(self.offsets[order])) as fh:
            for start in range(0, len(order), 4096):  # a chunk at a time: no list of them all
                chunk = order[start : start + 4096]
                for row, offset in zip(chunk.tolist(), self.offsets[chunk].tolist(), strict=True):
                    fh.seek(offset)
                    line = fh.readline()
                    try:
                        record = decoder.decode(line)
                    except msgspec.DecodeError:
                        record = TrialRecord.model_validate_json(line)
                    yield row, record


def _long_line(fh: BinaryIO) -> bytes:
    """The line at ``fh``'s position, its newline included, read as one piece: readline
    gathers a long line's pieces and joins them, holding it twice (a 100k-task manifest is a
    54 MB line). Its length is found first, a megabyte at a time."""
    start, length = fh.tell(), 0
    while chunk := fh.read(1 << 20):
        end = chunk.find(b"\n")
        length += len(chunk) if end < 0 else end + 1
        if end >= 0:
            break
    fh.seek(start)
    return fh.read(length)


def _buffer(offsets: np.ndarray) -> int:
    """The read buffer for lines at these sorted offsets: 1 MB when they lie densely (a seek
    within the buffer reads nothing: one read call for a run of lines, not one per line), the
    default when they are far apart (each seek would read a megabyte for one line)."""
    if len(offsets) > 1 and (offsets[-1] - offsets[0]) / len(offsets) < 64 << 10:
        return 1 << 20
    return -1


def _builder(path: Path) -> Builder:
    """An empty :class:`~chaoseval.store.builder.Builder` of the columns of the journal at
    ``path`` (store.builder: what a row holds and how rows are added)."""
    return Builder(path, Trials(path, None, {}, {}))  # type: ignore[arg-type]  # set in build()


def read_trials(path: str | Path) -> Trials:
    """The journal at ``path`` as columns, read line by line (or, when a read of the same
    journal kept them, from its column cache: store.colcache)."""
    path = journal_file(path)
    before = os.stat(path)
    cache = colcache.enabled() and before.st_size >= colcache.MIN_BYTES
    if cache and (kept := _cached(path, before)) is not None:
        return kept
    phase(f"reading the lines of {path}")
    t, size = _read_lines(path)
    # Kept only when the file did not change while it was read, and was last written long
    # enough ago that a change now would get another modification time (a rewrite within the
    # file system's timestamp granularity would look unchanged: git's "racy" files).
    settled = time.time() - before.st_mtime > colcache.SETTLED
    unchanged = size == before.st_size and _same(before, os.stat(path))
    if cache and settled and unchanged and colcache.save(path, t, colcache.stamp(path, before)):
        phase("column cache written")
        # Then taken back as the next command takes them: each column, the errors, veto items
        # and reference calls read from the cache when first used, not all of them held.
        del t
        kept = _cached(path, before)
        if kept is not None:
            return kept
        t, size = _read_lines(path)  # the cache replaced meanwhile: read as without one
    return t


def _cached(path: Path, before: os.stat_result) -> Trials | None:
    kept = colcache.load(path, before)
    if kept is None:
        return None
    kept["by_tool"] = {
        tool: ToolTally(calls, not_ok, dlv, failed, Counter(causes))
        for tool, (calls, not_ok, dlv, failed, causes) in kept["by_tool"].items()
    }
    return Trials(**kept)


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_size, a.st_mtime_ns, a.st_ino) == (b.st_size, b.st_mtime_ns, b.st_ino)


def _read_lines(path: Path) -> tuple[Trials, int]:
    """The columns, and the bytes read to make them."""
    b = _builder(path)
    # The lines decode into acyclic objects that die young; the collector's full passes
    # would walk everything alive (a 100k-task manifest's millions of objects) again and
    # again for no garbage: it is off while reading, as it was before when done.
    collecting = gc.isenabled()
    gc.disable()
    try:
        size = read_split(path, b)
        if size is None:  # not split (or a range failed): one pass, front to back
            b = _builder(path)
            size = _read(path, b)
    finally:
        if collecting:
            gc.enable()
    t: Trials = b.build()
    phase("columns built")
    check_columns(t, b.allowed)  # every line of a cell, task and index its manifest allows
    t.manifest.trials = b.allowed.trials  # as a later manifest line (--resume -n) grew it
    if b.early and b.refs:
        remeasure(b, t, [name for name, _ in NUMERIC])
    if b.rerun:
        retally(b, t)
    return t, size


def _read(path: Path, b: Builder) -> int:
    """Every line into ``b`` in one pass; the bytes read."""
    end, _ = read_range(path, b)
    if b.manifest is not None:
        for _, number, run_id in b.early:
            if run_id != b.manifest.run_id:
                raise foreign_line(path, number, run_id, b.manifest)
    return end


def trials_of(
    manifest: RunManifest | None,
    records: Iterable[TrialRecord],
    path: Path = Path("."),
    warnings: list[str] | None = None,
    refs: dict[str, RefCalls] | None = None,
) -> Trials:
    """Columns of records already in memory (an imported results file, a test's records)."""
    b = _builder(path)
    if manifest is not None:
        b.set_manifest(manifest)
    b.refs.update(refs or {})
    # A journal's records: a re-run replaces its trial; records alone are taken as they are.
    kept: dict[Any, TrialRecord] = {}
    for i, r in enumerate(records):
        kept[r.trial_id if manifest is not None else i] = r
    b.dedup = False
    for i, r in enumerate(kept.values()):
        b.add(r, i)
    t: Trials = b.build(need_manifest=manifest is not None)  # records alone: only columns read
    t.records = list(kept.values())
    t.warnings = list(warnings or [])
    return t


def as_trials(journal: Any) -> Trials:
    """``journal`` as columns: Trials as they are, a read_journal ``Journal`` converted."""
    if isinstance(journal, Trials):
        return journal
    t = trials_of(journal.manifest, journal.records, Path(journal.path), journal.warnings)
    t.cut_off_line = journal.cut_off_line
    return t


@dataclass(frozen=True)
class Group:
    """Some rows of a Trials table: one cell, one task in one cell, ..."""

    t: Trials
    rows: np.ndarray

    @classmethod
    def all(cls, t: Trials) -> Group:
        return cls(t, np.arange(len(t)))

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, column: str) -> np.ndarray:
        out: np.ndarray = self.t.col[column][self.rows]
        return out

    def where(self, mask: np.ndarray) -> Group:
        return Group(self.t, self.rows[mask])

    def names(self, column: str) -> list[Any]:
        vocab = self.t.vocab[column]
        return [vocab[i] if i >= 0 else None for i in self[column].tolist()]

    def records(self) -> Iterator[TrialRecord]:
        return self.t.iter_records(self.rows.tolist())


def as_group(x: Any) -> Group:
    """A Group as it is; Trials as all their rows; a sequence of TrialRecords as columns."""
    if isinstance(x, Group):
        return x
    if isinstance(x, Trials):
        return Group.all(x)
    return Group.all(trials_of(None, list(x)))
