"""A journal's lines into the column builder: one range of bytes front to back, or, for a big
journal, several ranges read by forked processes at once and joined.

**A range** (:func:`read_range`): its lines numbered with their offsets, each decoded by
msgspec into a :class:`chaoseval.store.lite.LiteRecord`, or, when msgspec refuses it, read as
:func:`chaoseval.store.journal.read_journal` reads it (the same messages), a first manifest
lean (store.manifest). ``b`` is the reader's builder (store.builder; store.columns makes it).

**Ranges at once** (:func:`read_split`). Reading a journal is decoding and summarising each
line (store.lite): ~20 us of CPU a trial, all of it in one process, while the machine has more
cores. Here the lines after the manifest are cut into as many ranges as there are cores (at
line starts); a forked copy of the reader reads each range but the first, the reader itself
reads the first, and the ranges' columns are joined in file order (each forked reader writes
its range's rows into an unnamed temporary file as it reads them, holding none of its columns,
and exits before it is joined: its memory is gone by then; the parent takes them a block at a
time): the same columns, codes, side tables and sums as one pass front to back gives (each
coded column's vocabulary in first-seen order, the side tables in row order, the tallies in
first-seen order).

Line numbers: a range counts its own lines and the joined result numbers them on, so a cut-off
last line is named as one pass names it. Anything a forked reader does not finish (an error
in its range, a crash) hands the whole journal back to the one-pass reader, which then gives
its own message naming the line; only a journal whose first line is its manifest is split.

Only journals of at least :data:`MIN_BYTES` are split, only on a system that forks, and only
from a process with no other thread (a fork copies no thread: a lock another thread held
would stay held in the copy). ``CHAOSEVAL_READ_WORKERS`` sets how many processes read
(1: one pass); by default, one per core this process may use, at most :data:`MAX_WORKERS`.

Why not a columnar library's reader (issue 47, benchmarks/bench_readpaths.py): the columns
are sums and codes of each line's trajectory (store.lite), which no JSON reader gives without
this code; pyarrow's reader, asked for the trial lines' top-level scalars alone, held 320-345
MB at 100k records where this whole read holds ~90 MB (store's package docstring, and
docs/BENCHMARKS.md, give the figures).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import struct
import tempfile
import threading
from contextlib import ExitStack
from itertools import pairwise
from pathlib import Path
from typing import Any, BinaryIO

import msgspec
import numpy as np

from chaoseval.errors import ConfigError, JournalError
from chaoseval.model.records import SCHEMA_VERSION, RunManifest, TrialRecord
from chaoseval.store.journal import bad_line, foreign_line, parse_line
from chaoseval.store.lite import DECODER
from chaoseval.store.manifest import lean_manifest
from chaoseval.store.phases import phase

__all__ = [
    "MAX_WORKERS",
    "MIN_BYTES",
    "bad_json",
    "cut_off",
    "decode_line",
    "read_range",
    "read_split",
    "workers",
]


def bad_json(path: Path, number: int, line: bytes, first: bool) -> JournalError:
    try:
        json.loads(line)
    except json.JSONDecodeError as exc:
        return bad_line(path, number, f"{exc.msg} at column {exc.colno}", first=first)
    return bad_line(path, number, "msgspec refused it", first=first)


def _slow(path: Path, number: int, line: bytes, b: Any) -> TrialRecord | None:
    """A line the fast decoder refused: read as read_journal reads it (same messages); the
    first manifest lean (store.manifest) when it reads so."""
    lean = lean_manifest(line) if b.manifest is None else None
    if lean is not None:
        b.set_manifest(*lean)
        b.t.lean_at = (number, b.offset)
        return None
    data = json.loads(line)
    parsed = parse_line(path, number, data, manifest_wanted=b.manifest is None)
    if isinstance(parsed, RunManifest):
        b.set_manifest(parsed)
        return None
    if parsed is None and b.manifest is not None:  # a later manifest line
        if data.get("run_id") != b.manifest.run_id:
            raise foreign_line(path, number, data.get("run_id"), b.manifest)  # another run's
        b.allowed.grow(data)  # its own: --resume -n with more trials (store.conform)
    return parsed


def decode_line(path: Path, number: int, line: bytes, b: Any) -> Any | None:
    """The line's trial (a LiteRecord, or a TrialRecord when only pydantic reads it); its
    newline may still be there (msgspec skips it: no copy of the line without it)."""
    try:
        r = DECODER.decode(line)
    except msgspec.DecodeError:
        return _slow(path, number, line.removesuffix(b"\n"), b)
    if r.type != "trial" or r.schema_version > SCHEMA_VERSION or r.status not in _STATUS:
        return _slow(path, number, line.removesuffix(b"\n"), b)
    return r


_STATUS = frozenset({"passed", "failed", "not_evaluable"})


def cut_off(path: Path, number: int) -> str:
    """The warning of a last line cut off mid-record."""
    return (
        f"{path}:{number}: last line is cut off mid-record (an interrupted write); it is "
        "ignored. 'chaoseval run --resume' re-runs that trial."
    )


def read_range(
    path: Path,
    b: Any,
    start: int = 0,
    stop: int | None = None,
    line_no: int = 1,
    source: Path | None = None,
) -> tuple[int, int]:
    """The lines from byte ``start`` (line ``line_no``) up to ``stop`` (None: the end) into
    the builder ``b``; the offset reached and the number of the next line. ``source``: the
    file to read when not ``path`` itself (messages name ``path``)."""
    # One pass front to back: a 1 MB buffer reads a line for a third of the CPU of the
    # default 8 KB one (a read call every few 2.5 KB lines).
    offset, following = start, line_no
    with (source or path).open("rb", buffering=1 << 20) as fh:
        fh.seek(start)
        for number, line in enumerate(fh, line_no):
            if stop is not None and offset >= stop:
                break
            at = offset
            offset += len(line)
            following = number + 1
            if line.isspace():  # (strip() would copy every line)
                continue
            if not line.endswith(b"\n"):  # only the last line can lack its newline
                try:
                    json.loads(line)
                except json.JSONDecodeError:
                    b.t.cut_off_line = number
                    b.t.warnings.append(cut_off(path, number))
                    continue
            b.offset = at
            try:
                r = decode_line(path, number, line, b)
            except json.JSONDecodeError:
                first = b.manifest is None and not b.early
                raise bad_json(path, number, line.removesuffix(b"\n"), first) from None
            if r is None:
                continue
            if b.manifest is None:
                b.early.append((at, number, r.run_id))
            elif r.run_id != b.run_id:  # one string compare a line
                raise foreign_line(path, number, r.run_id, b.manifest)
            b.add(r, at)
    return offset, following


MIN_BYTES = 16 << 20  # ~6k trials: a fraction of a second in one pass
MAX_WORKERS = 4
# The builder's side tables keyed by row (shifted when joined).
_BY_ROW = ("odd_ids", "errors", "vetoes", "browser")


def workers() -> int:
    """How many processes read a big journal (``CHAOSEVAL_READ_WORKERS``, else the cores)."""
    told = os.environ.get("CHAOSEVAL_READ_WORKERS", "").strip()
    if told:
        if not told.isdigit() or int(told) < 1:
            raise ConfigError(
                f"CHAOSEVAL_READ_WORKERS={told!r}: give a whole number of processes, 1 or "
                "more (1 reads a journal in one pass)"
            )
        return int(told)
    return max(1, min(len(os.sched_getaffinity(0)), MAX_WORKERS))


def _single_threaded() -> bool:
    """No other thread in this process (a fork copies only this one, and none of the locks
    the others may hold at that moment is ever released in the copy)."""
    return threading.active_count() == 1


def _bounds(path: Path, start: int, size: int, n: int) -> list[int]:
    """``n`` + 1 offsets from ``start`` to ``size``, each inner one a line's start."""
    cuts = [start]
    with path.open("rb") as fh:
        for k in range(1, n):
            fh.seek(max(cuts[-1], start + (size - start) * k // n) - 1)
            fh.readline()  # to the end of the line the cut falls in
            cuts.append(min(fh.tell(), size))
    return [*cuts, size]


def read_split(path: Path, b: Any) -> int | None:
    """The journal's lines into ``b`` (a fresh builder) in ranges read at once; the bytes
    read, or None when it was not split or a range could not be read (then ``b`` may hold
    part of it: read the journal again, in one pass, into a fresh builder)."""
    n = workers()
    if n < 2 or path.stat().st_size < MIN_BYTES or not _single_threaded():
        return None
    try:
        fork = multiprocessing.get_context("fork")
    except ValueError:  # no fork on this system
        return None
    # Every range from the file opened here (its descriptor, which the forked readers
    # inherit): a journal replaced by another file meanwhile is read whole as it was, as
    # one pass reads it, never half of each.
    with path.open("rb") as held:
        own = Path(f"/proc/self/fd/{held.fileno()}")
        return _split(path, own if own.exists() else path, b, n, fork)


def _split(path: Path, source: Path, b: Any, n: int, fork: Any) -> int | None:
    size = os.stat(source).st_size
    with source.open("rb") as fh:
        # Only its length kept: at 100k tasks the manifest is a 50 MB line.
        whole = fh.readline().endswith(b"\n")
        manifest_end = fh.tell()
    if not whole:
        return None
    read_range(path, b, 0, manifest_end, source=source)  # the manifest (store.manifest)
    phase("split read: manifest read")
    if b.manifest is None or len(b.offsets):
        return None  # trials before the manifest: the one pass handles that
    cuts = _bounds(source, manifest_end, size, n)
    readers: list[tuple[Any, BinaryIO]] = []
    with ExitStack() as files:
        try:
            for lo, hi in pairwise(cuts[1:]):
                # The last range reads on to the end of the file as it is then, as one pass
                # does. Each reader leaves its range in a file of its own (unnamed: only this
                # process and its readers see it) and exits; the parent joins it after: a
                # reader's memory and the joined columns are never held at once (through a
                # pipe, at 1M trials the readers' tree held ~150 MB more while it joined).
                out = files.enter_context(tempfile.TemporaryFile())
                stop = None if hi == size else hi
                args = (out, path, source, b, lo, stop)
                p = fork.Process(target=_read_one, args=args, daemon=True)
                p.start()
                readers.append((p, out))
            phase(f"split read: {len(readers)} reader(s) forked, ranges from bytes {cuts}")
            end, number = read_range(path, b, cuts[0], cuts[1], 2, source=source)
            b.flush()
            phase("split read: its own range read")
            for p, written in readers:
                p.join()
                phase("split read: a reader joined (it ended)")
                got = _join(written, b, path, number)
                phase("split read: its range joined to the columns")
                if got is None:
                    return None
                end, number = got
            return end
        finally:
            for p, _ in readers:
                if p.is_alive():
                    p.terminate()
                p.join()


def _read_one(
    out: BinaryIO, path: Path, source: Path, b: Any, start: int, stop: int | None
) -> None:
    """In a forked reader: one range into its copy of the builder, written to ``out`` for the
    parent. Its rows go to ``out`` as they are read (packed as the builder packs a row,
    :attr:`builder.Builder.row`), a chunk at a time: the reader never holds its range's
    columns; then their offsets, its tables and the trailer (:func:`_send`)."""
    try:
        try:
            phase("reader: forked")
            b.spill = out
            end, number = read_range(path, b, start, stop, source=source)
            b.flush()
            phase("reader: its range read")
        except BaseException as exc:  # the parent reads the journal again in one pass
            _tail(out, ("failed", f"{type(exc).__name__}: {exc}"))
            return
        _send(out, b, end, number)
        out.flush()
        phase("reader: its range written for the parent")
    except BaseException:  # nothing printed: the parent reads the journal again
        pass
    finally:
        out.flush()  # (a forked process ends without flushing Python's buffers)


# A reader's file ends with where its tables start and this mark: a reader that died before
# it wrote them all leaves no such end (the parent then reads the journal in one pass).
_TRAILER = struct.Struct("=q8s")
_MARK = b"rangeend"


def _send(out: BinaryIO, b: Any, end: int, number: int) -> None:
    """After the rows: their offsets, then the range's tables, then the trailer."""
    t = b.t
    out.write(b.offsets)
    _tail(out, {
        "end": end, "lines": number - 1, "cut_off": t.cut_off_line, "rows": len(b.offsets),
        "vocab": {name: list(table) for name, table in b.vocab.items()},
        "by_row": {name: getattr(t, name) for name in _BY_ROW},
        "by_tool": t.by_tool, "sampling": t.sampling, "trials": b.allowed.trials,
    })  # fmt: skip


def _tail(out: BinaryIO, head: Any) -> None:
    at = out.tell()
    pickle.dump(head, out, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_TRAILER.pack(at, _MARK))


def _head(out: BinaryIO) -> tuple[Any, int]:
    """The tables a reader wrote after its rows and offsets, and where they start (EOFError:
    the reader did not finish writing)."""
    out.seek(0, os.SEEK_END)
    if out.tell() < _TRAILER.size:
        raise EOFError
    out.seek(-_TRAILER.size, os.SEEK_END)
    at, mark = _TRAILER.unpack(out.read(_TRAILER.size))
    if mark != _MARK:
        raise EOFError
    out.seek(at)
    return pickle.load(out), at


def _exactly(out: BinaryIO, size: int) -> bytes:
    got = out.read(size)
    if len(got) != size:
        raise EOFError
    return got


_JOIN_ROWS = 1 << 16  # rows taken from a reader's file at once (~10 MB)


def _join(out: BinaryIO, b: Any, path: Path, number: int) -> tuple[int, int] | None:
    """One forked reader's range appended to ``b`` (its first line is line ``number``): the
    offset it reached and the next line's number; None when it failed (``b`` may then hold
    part of it)."""
    try:
        head, at = _head(out)
        if isinstance(head, tuple):  # ("failed", why)
            return None
        base, rows, width = len(b.offsets), head["rows"], b.row.itemsize
        if at != rows * (width + 8):
            raise EOFError
        # Each coded column's codes as the joined vocabulary numbers them (-1 stays -1).
        mappings = {
            name: np.array([*(b._code(name, v) for v in head["vocab"][name]), -1], np.int64)
            for name in b.coded
        }
        out.seek(0)
        # A block of rows at a time: never the range's columns at once beside the joined ones.
        for start in range(0, rows, _JOIN_ROWS):
            n = min(_JOIN_ROWS, rows - start)
            block = np.frombuffer(_exactly(out, n * width), dtype=b.row)
            for column, name in zip(b.arrays, b.row.names or (), strict=True):
                values = block[name]
                if name in mappings:
                    values = mappings[name][values].astype(column.typecode)
                column.frombytes(values.tobytes())
        b.offsets.frombytes(_exactly(out, rows * 8))
    except (EOFError, OSError, ValueError, struct.error, pickle.UnpicklingError):  # it died
        return None
    t = b.t
    by_row = head["by_row"]
    shared = b.shared  # the range's strings as the joined table's own (one copy of each)
    t.odd_ids.update({base + row: v for row, v in by_row["odd_ids"].items()})
    t.errors.update({base + row: shared.setdefault(v, v) for row, v in by_row["errors"].items()})
    for row, items in by_row["vetoes"].items():
        t.vetoes[base + row] = [shared.setdefault(v, v) for v in items]
    t.browser.update({base + row: v for row, v in by_row["browser"].items()})
    for tool, tally in head["by_tool"].items():
        mine = t.by_tool.setdefault(tool, type(tally)())
        mine.calls += tally.calls
        mine.not_ok += tally.not_ok
        mine.faults_delivered += tally.faults_delivered
        mine.failed_trials += tally.failed_trials
        mine.causes.update(tally.causes)
    t.sampling.update(head["sampling"])
    b.allowed.trials = max(b.allowed.trials, head["trials"])  # a later manifest line's
    if head["cut_off"] is not None:
        t.cut_off_line = number + head["cut_off"] - 1
        t.warnings.append(cut_off(path, t.cut_off_line))
    return head["end"], number + head["lines"]
