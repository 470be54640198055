"""A journal's lines as the column reader meets them: numbered with their offsets, each
decoded by msgspec into a :class:`chaoseval.store.lite.LiteRecord`, or, when msgspec refuses
it, read as :func:`chaoseval.store.journal.read_journal` reads it (the same messages), a
first manifest lean (store.manifest).

``b`` is the reader's builder (store.columns, which imports this).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import msgspec

from chaoseval.errors import JournalError
from chaoseval.model.records import SCHEMA_VERSION, RunManifest, TrialRecord
from chaoseval.store.journal import bad_line, foreign_line, parse_line
from chaoseval.store.lite import DECODER
from chaoseval.store.manifest import lean_manifest

__all__ = ["bad_json", "decode_line", "numbered_lines"]


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
    if parsed is None and b.manifest is not None and data.get("run_id") != b.manifest.run_id:
        raise foreign_line(path, number, data.get("run_id"), b.manifest)  # another run's
    return parsed


def decode_line(path: Path, number: int, line: bytes, b: Any) -> Any | None:
    """The line's trial (a LiteRecord, or a TrialRecord when only pydantic reads it)."""
    try:
        r = DECODER.decode(line)
    except msgspec.DecodeError:
        return _slow(path, number, line, b)
    if r.type != "trial" or r.schema_version > SCHEMA_VERSION or r.status not in _STATUS:
        return _slow(path, number, line, b)
    return r


_STATUS = frozenset({"passed", "failed", "not_evaluable"})


def numbered_lines(fh: IO[bytes], end: list[int]) -> Iterator[tuple[int, int, bytes]]:
    """(number, offset, line) of every line; ``end`` gets the bytes read."""
    offset = 0
    for number, line in enumerate(fh, start=1):
        yield number, offset, line
        offset += len(line)
    end.append(offset)
