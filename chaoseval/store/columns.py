"""A journal read as columns: one pass, line by line, a few bytes per trial.

What the reports need of each trial (its task, cell, index, seed, status, root cause, fault
counts, what it spent, how it ended under a contract, ...) goes into numpy arrays; strings are
stored once and referred to by number. The slices no column can hold (calls per tool, veto
items, browser pages) are summed or kept beside them as the lines go by. A trial's full record
(its trajectory) is read again only when a view shows that trial (:meth:`Trials.record`: a seek
to its line), so the memory of a report does not grow with the trajectories it never shows.

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
import struct
import time
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import msgspec
import numpy as np

from chaoseval.errors import JournalError
from chaoseval.model.records import RunManifest, TrialRecord, make_trial_id
from chaoseval.store import colcache
from chaoseval.store.journal import foreign_line, journal_file, parse_line
from chaoseval.store.lines import read_range
from chaoseval.store.lite import RefCalls, TrialSummary, summarize
from chaoseval.store.manifest import ReferenceIndex, index_references
from chaoseval.store.phases import phase
from chaoseval.store.ranges import read_split
from chaoseval.store.reread import remeasure, retally
from chaoseval.store.reruns import merge_reruns

__all__ = ["NUMERIC", "Group", "ToolTally", "Trials", "as_group", "as_trials", "read_trials",
           "trials_of"]  # fmt: skip

# The numeric columns, in TrialSummary.values order, with their dtypes (array typecodes).
NUMERIC: tuple[tuple[str, str], ...] = (
    ("index", "i"),
    ("seed", "q"),
    ("status", "b"),  # 0 passed, 1 failed, 2 not evaluable
    ("faults", "i"),
    ("delivered", "i"),
    ("absorbed", "i"),
    ("kinds", "b"),  # bit 0: a model step, bit 1: a tool step
    ("actions", "i"),  # tool, model, observation and memory steps
    ("tool_calls", "i"),
    ("legal", "i"),  # tool calls that were legal (no safety veto, known tool, ...)
    ("correct", "d"),  # against the reference; NaN without one
    ("right_tool", "d"),
    ("coverage", "d"),
    ("tokens", "q"),
    ("cost", "d"),
    ("model_calls", "i"),
    ("sim_seconds", "d"),
    ("wall_seconds", "d"),
    ("channel_overhead", "d"),  # NaN when not recorded
    ("outcome", "b"),  # -1 no contract applied, else recovered / degraded / failed
    ("safety", "i"),  # veto counts
    ("hallucination", "i"),
    ("attacked", "b"),  # -1 no planted instruction reached it, 0 resisted, 1 followed
    ("utility", "b"),  # the user's task done (1/0), vetoes aside; -1 not scored
)
# Strings stored once, numbered in a per-column vocabulary.
CODED = ("scenario", "cell", "root_cause", "tags", "plugins")


@dataclass
class ToolTally:
    calls: int = 0
    not_ok: int = 0
    faults_delivered: int = 0
    failed_trials: int = 0
    causes: Counter[str] = field(default_factory=Counter)


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
    vetoes: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
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


def _buffer(offsets: np.ndarray) -> int:
    """The read buffer for lines at these sorted offsets: 1 MB when they lie densely (a seek
    within the buffer reads nothing: one read call for a run of lines, not one per line), the
    default when they are far apart (each seek would read a megabyte for one line)."""
    if len(offsets) > 1 and (offsets[-1] - offsets[0]) / len(offsets) < 64 << 10:
        return 1 << 20
    return -1


class _Builder:
    """Columns as growing arrays; a re-run trial's row is overwritten in place."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.manifest: RunManifest | None = None
        self.run_id = ""
        self.refs: dict[str, RefCalls] = {}
        self.numeric = {name: array(code) for name, code in NUMERIC}
        self.coded = {name: array("i") for name in CODED}
        self.vocab: dict[str, dict[Any, int]] = {name: {} for name in CODED}
        self.offsets = array("q")
        self.codes: dict[tuple[Any, ...], tuple[int, ...]] = {}  # strings -> their codes
        # Errors and veto items kept once each (the rows share them): a big journal repeats a
        # few hundred of them over hundreds of thousands of rows (~50 MB at 1M trials).
        self.shared: dict[Any, Any] = {}
        self.scenarios = self.vocab["scenario"]  # scenario -> its code
        self.dedup = True  # a journal: a re-run trial's later line replaces its earlier one
        self.t = Trials(path, None, {}, {})  # type: ignore[arg-type]  # manifest set in build()
        self.early: list[tuple[int, int, str]] = []  # (offset, line, run id): before manifest
        self.rerun = False
        self.offset = 0  # of the line being read
        self.chunk = bytearray()  # rows not yet in the arrays, each packed as a ``row`` record
        self.arrays = [*self.numeric.values(), *self.coded.values()]
        fields = [*NUMERIC, *((name, "i") for name in CODED)]
        self.row = np.dtype(fields)  # a chunk's rows (packed: no padding between fields)
        self.pack = struct.Struct("=" + "".join(code for _, code in fields)).pack
        self.full = 4096 * self.row.itemsize  # a chunk's bytes
        self.spill: BinaryIO | None = None  # a forked reader's file: chunks go there (ranges)

    def set_manifest(self, manifest: RunManifest, references: ReferenceIndex | None = None) -> None:
        """The run's manifest; ``references``: its reference runs when read lean."""
        self.manifest = manifest
        self.run_id = manifest.run_id  # every trial line must carry it
        index = references or index_references(manifest.references)
        self.t.references = index
        if index is not None:
            self.refs.update(index.calls)

    def _code(self, column: str, value: Any) -> int:
        if value is None:
            return -1
        table = self.vocab[column]
        code = table.get(value)
        if code is None:
            code = table[value] = len(table)
        return code

    def add(self, r: Any, offset: int) -> None:
        """One trial as a new row (a re-run's rows are merged in build())."""
        s = summarize(r, self.refs)
        plugins = r.perturbations
        tags = r.scenario_tags
        # The scenario on its own (one code per task), the rest as one key: a key with the
        # scenario in it missed nearly every time at many tasks, and kept a tuple per trial.
        key = (r.cell, r.root_cause, tuple(tags) if tags else (),
               tuple(p.name for p in plugins) if plugins else ())  # fmt: skip
        codes = self.codes.get(key)
        if codes is None:
            codes = self.codes[key] = tuple(
                self._code(name, v) for name, v in zip(CODED[1:], key, strict=True)
            )
        scenario = self.scenarios.get(r.scenario)
        if scenario is None:
            scenario = self._code("scenario", r.scenario)
        row = len(self.offsets)
        self.offsets.append(offset)
        self.chunk += self.pack(*s.values, scenario, *codes)  # one C call a row
        if len(self.chunk) >= self.full:
            self.flush()
        self._fill(row, r, s)
        self._tally(s, r)

    def flush(self) -> None:
        """Rows gathered so far into the arrays, one column at a time (packed records that
        numpy reads: ~0.4 us a row, where converting tuples of Python values took ~2 us)."""
        if self.spill is not None:
            self.spill.write(self.chunk)
        elif self.chunk:
            rows = np.frombuffer(self.chunk, dtype=self.row)
            for target, name in zip(self.arrays, self.row.names or (), strict=True):
                target.frombytes(rows[name].tobytes())
        self.chunk = bytearray()

    def _fill(self, row: int, r: Any, s: TrialSummary) -> None:
        t = self.t
        if r.trial_id != make_trial_id(r.scenario, r.cell, r.index):
            t.odd_ids[row] = r.trial_id
        if r.error is not None and r.status != "passed":
            t.errors[row] = self.shared.setdefault(r.error, r.error)
        if s.vetoes:
            shared = self.shared
            t.vetoes[row] = [shared.setdefault(v, v) for v in s.vetoes]
        if s.cls is not None and s.browser is not None:
            t.browser[row] = (s.cls, *s.browser)

    def _tally(self, s: TrialSummary, r: Any) -> None:
        if s.sampling:
            self.t.sampling.update(s.sampling)
        by_tool = self.t.by_tool
        for tool, calls, not_ok, dlv in s.tools:
            tally = by_tool.get(tool) or by_tool.setdefault(tool, ToolTally())
            tally.calls += calls
            tally.not_ok += not_ok
            tally.faults_delivered += dlv
        if r.status == "failed" and s.failing_tool is not None:
            tally = by_tool.get(s.failing_tool) or by_tool.setdefault(s.failing_tool, ToolTally())
            tally.failed_trials += 1
            if r.root_cause:
                tally.causes[r.root_cause] += 1

    def build(self, need_manifest: bool = True) -> Trials:
        if self.manifest is None and need_manifest:
            raise JournalError(f"{self.path}: no manifest line; this is not a chaoseval journal")
        self.flush()
        t = self.t
        t.manifest = self.manifest  # type: ignore[assignment]  # None only for bare records
        t.col = {name: np.frombuffer(a, dtype=a.typecode) for name, a in self.numeric.items()}
        t.col.update({n: np.frombuffer(a, dtype=a.typecode) for n, a in self.coded.items()})
        t.vocab = {name: list(table) for name, table in self.vocab.items()}
        t.offsets = np.frombuffer(self.offsets, dtype=np.int64)
        t.refs = self.refs
        if self.dedup:
            self.rerun = merge_reruns(t)
        t.vetoes = dict(sorted(t.vetoes.items()))
        return t


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
    b = _Builder(path)
    # The lines decode into acyclic objects that die young; the collector's full passes
    # would walk everything alive (a 100k-task manifest's millions of objects) again and
    # again for no garbage: it is off while reading, as it was before when done.
    collecting = gc.isenabled()
    gc.disable()
    try:
        size = read_split(path, b)
        if size is None:  # not split (or a range failed): one pass, front to back
            b = _Builder(path)
            size = _read(path, b)
    finally:
        if collecting:
            gc.enable()
    t = b.build()
    phase("columns built")
    if b.early and b.refs:
        remeasure(b, t, [name for name, _ in NUMERIC])
    if b.rerun:
        retally(b, t)
    return t, size


def _read(path: Path, b: _Builder) -> int:
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
    b = _Builder(path)
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
    t = b.build(need_manifest=manifest is not None)  # records alone: only columns are read
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
