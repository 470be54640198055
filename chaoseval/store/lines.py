"""A journal's lines as the column reader meets them: numbered with their offsets, each
decoded by msgspec into a :class:`chaoseval.store.lite.LiteRecord`, or, when msgspec refuses
it, read as :func:`chaoseval.store.journal.read_journal` reads it (the same messages), a
first manifest lean (store.manifest).

``b`` is the reader's builder (store.columns, which imports this).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from chaoseval.errors import JournalError
from chaoseval.model.records import SCHEMA_VERSION, RunManifest, TrialRecord
from chaoseval.store.journal import bad_line, foreign_line, parse_line
from chaoseval.store.lite import DECODER
from chaoseval.store.manifest import lean_manifest

__all__ = ["bad_json", "cut_off", "decode_line", "read_range"]


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
