"""The journal: JSONL, append-only, a manifest line then one line per finished trial.

Each record is flushed as soon as its trial ends, so an interrupted run keeps every trial it
finished and ``chaoseval run --resume`` carries on from there.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from chaoseval import redact
from chaoseval.errors import HarnessError, JournalError, disk_full, stop_for
from chaoseval.model import untrusted
from chaoseval.model.records import SCHEMA_VERSION, RunManifest, TrialRecord
from chaoseval.store.artifacts import NEW_JOURNAL, PARTIAL, store_root
from chaoseval.store.conform import Allowed, check_records


@dataclass
class Journal:
    path: Path
    manifest: RunManifest
    records: list[TrialRecord]
    warnings: list[str] = field(default_factory=list)
    cut_off_line: int | None = None  # a last line left half-written by an interrupted run

    def by_trial_id(self) -> dict[str, TrialRecord]:
        return {r.trial_id: r for r in self.records}


def journal_file(path: str | Path) -> Path:
    """``path`` as a journal to read, or a JournalError that says what to give instead."""
    path = Path(path)
    if not path.exists():
        raise JournalError(
            f"{path}: no such journal; write one with 'chaoseval run --journal {path}'"
        )
    if path.is_dir():
        raise JournalError(
            f"{path} is a directory, not a journal; give the .jsonl file that "
            "'chaoseval run --journal' wrote"
        )
    return path


def bad_line(path: Path, number: int, detail: str, *, first: bool) -> JournalError:
    """A line that is not JSON: a corrupt line in a journal, or (before any manifest) a file
    that is no journal at all, such as the settings file given by mistake."""
    if first:
        return JournalError(
            f"{path} is not a chaoseval journal: line {number} is not JSON ({detail}). Pass the "
            "JSONL file 'chaoseval run' wrote (its --journal, or the settings' journal when "
            "no path is given)"
        )
    return JournalError(
        f"{path}:{number}: not valid JSON ({detail}). "
        "The journal is corrupt there; remove that line to keep the rest."
    )


def parse_line(
    path: Path, number: int, data: Any, *, manifest_wanted: bool = True
) -> RunManifest | TrialRecord | None:
    """One decoded journal line as its record, or a JournalError naming ``path:number`` and
    what is wrong there (both readers give the same messages). A manifest after the first is
    not read (None)."""
    kind = data.get("type") if isinstance(data, dict) else None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version is not None and version > SCHEMA_VERSION:
        raise JournalError(
            f"{path}:{number}: schema_version {version} is newer than this chaoseval "
            f"understands ({SCHEMA_VERSION}); upgrade chaoseval"
        )
    try:
        if kind == "manifest":
            return RunManifest.model_validate(data) if manifest_wanted else None
        if kind == "trial":
            return TrialRecord.model_validate(data)
        raise JournalError(f"{path}:{number}: unknown record type {kind!r}")
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise JournalError(
            f"{path}:{number}: invalid {kind} record at {where}: {first['msg']}"
        ) from None


def foreign_line(path: Path, number: int, run_id: object, manifest: RunManifest) -> JournalError:
    """A line another run wrote (its run id is not the manifest's; ``--resume`` keeps the
    manifest and its run id, so a resumed run's lines all carry it)."""
    return JournalError(
        f"{path}:{number}: this line belongs to another run (run_id {run_id!r}; the journal's "
        f"manifest says {manifest.run_id!r}): two runs were written into one journal and "
        "would be counted as one. Keep one run per journal: remove the other run's lines "
        "(from its manifest on), or run again with --overwrite."
    )


def repeated_trial(path: Path, trial_id: str, first: int, again: int) -> JournalError:
    """A trial recorded twice where ``--resume`` would not have re-run it (only a trial that
    was not evaluable is run again, its new line after the old one)."""
    return JournalError(
        f"{path}:{again}: trial {trial_id!r} is recorded again (first at line {first}, which "
        "is not a not-evaluable trial that --resume re-runs): the journal holds the same "
        "trial twice and cannot be counted. Remove one of the two lines."
    )


def read_journal(path: str | Path) -> Journal:
    path = journal_file(path)
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    ends_clean = raw.endswith(b"\n")
    manifest: RunManifest | None = None
    records: dict[str, TrialRecord] = {}
    lines_of: dict[str, int] = {}  # trial id -> the line its kept record came from
    early: list[tuple[int, str]] = []  # (line, run id) of trials before the manifest
    grown: list[dict[str, Any]] = []  # later manifest lines of the run (--resume -n)
    warnings: list[str] = []
    cut_off: int | None = None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        is_last = number == len(lines) and not ends_clean
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            if is_last:
                cut_off = number
                warnings.append(
                    f"{path}:{number}: last line is cut off mid-record (an interrupted write); "
                    "it is ignored. 'chaoseval run --resume' re-runs that trial."
                )
                continue
            raise bad_line(
                path, number, f"{exc.msg} at column {exc.colno}", first=manifest is None
            ) from None
        parsed = parse_line(path, number, data, manifest_wanted=manifest is None)
        if isinstance(parsed, RunManifest):
            manifest = parsed
        elif parsed is None:  # a later manifest: only the journal's own run may write one
            if manifest is not None and data.get("run_id") != manifest.run_id:
                raise foreign_line(path, number, data.get("run_id"), manifest)
            grown.append(data)
        else:
            if manifest is None:
                early.append((number, parsed.run_id))
            elif parsed.run_id != manifest.run_id:
                raise foreign_line(path, number, parsed.run_id, manifest)
            old = records.get(parsed.trial_id)
            if old is not None and old.status != "not_evaluable":
                raise repeated_trial(path, parsed.trial_id, lines_of[parsed.trial_id], number)
            records[parsed.trial_id] = parsed  # a re-run trial replaces its older line
            lines_of[parsed.trial_id] = number
    if manifest is None:
        raise JournalError(f"{path}: no manifest line; this is not a chaoseval journal")
    for number, run_id in early:  # trials written before the manifest
        if run_id != manifest.run_id:
            raise foreign_line(path, number, run_id, manifest)
    allowed = Allowed.of(manifest)
    for data in grown:
        allowed.grow(data)
    check_records(path, {lines_of[tid]: r for tid, r in records.items()}, allowed)
    manifest.trials = allowed.trials
    return Journal(path, manifest, list(records.values()), warnings, cut_off)


def encode_record(record: TrialRecord) -> str:
    """A trial's journal line: secrets out and huge strings cut before it reaches the disk.

    pydantic-core's serializer writes the JSON (in Rust, as fast as orjson from the model
    itself); the Python data is built only when a line needs redacting or cutting. A record
    the serializer refuses (what an agent sent: a lone surrogate, nesting past its 255
    levels) is made fit in place, a note step saying what was done (chaoseval.model.untrusted),
    and written: one trial's output never stops the run."""
    try:
        line = record.model_dump_json()
    except PydanticSerializationError:
        found = untrusted.scrub(record)
        text = found.sentence("the trial's data")
        untrusted.note(record.trajectory, record.sim_seconds, text, found.args())
        line = record.model_dump_json()
    return redact.clean_json(line, lambda: record.model_dump(mode="json"))


def encode_manifest(manifest: RunManifest) -> str:
    """The manifest's journal line, redacted and capped as every line is (a secret in the
    agent's command line or the model name is never written)."""
    return redact.clean_json(manifest.model_dump_json(), lambda: manifest.model_dump(mode="json"))


def _write_all(fd: int, data: bytes) -> None:
    written = os.write(fd, data)
    if written < len(data):  # a partial write (a signal): write the rest
        rest = memoryview(data)[written:]
        while rest:
            rest = rest[os.write(fd, rest) :]


def _failed(exc: OSError, where: Path) -> HarnessError:
    """A write that failed: a full disk stops the run (HarnessStop), anything else is said
    with the file it happened to."""
    if disk_full(exc):
        return stop_for(exc, where)
    return JournalError(f"{where}: cannot write: {exc.strerror or exc}")


def _replace_with(path: Path, line: str) -> None:
    """``path`` replaced by a journal of one line, all at once: written whole in the store
    (``<journal>.d``), then renamed onto the path. A failure leaves the path as it was (a
    journal it held, or nothing), never an empty or half-written journal."""
    new = store_root(path) / NEW_JOURNAL
    try:
        new.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            _write_all(fd, (line + "\n").encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(new, path)
    except OSError as exc:
        new.unlink(missing_ok=True)
        raise _failed(exc, path) from exc


class JournalWriter:
    """Appends records, one flushed line each.

    Given a manifest, the journal is made new (its one line written atomically: no empty file
    is left by a failure); without one, an existing journal is continued (``--resume``), its
    manifest appended ``again`` when the resume grew its trials per cell. A
    write the disk refuses is taken back whole (the file cut to where the line began) and
    raised as HarnessStop when the disk is full: the journal never ends in half a line."""

    def __init__(
        self,
        path: Path,
        manifest: RunManifest | None,
        *,
        truncate_cut_off: bool,
        again: RunManifest | None = None,
    ):
        self.path = path
        if manifest is not None:
            _replace_with(path, encode_manifest(manifest))
        if truncate_cut_off:
            self._drop_partial_tail()
        # A plain descriptor, no buffer: each line reaches the file in one write (what the
        # text file's write and flush did, in two calls and a copy).
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise _failed(exc, path) from exc
        self._size = os.fstat(self._fd).st_size  # where the next line begins (one writer)
        if again is not None:  # a continued journal's manifest again, its count grown
            self._write(encode_manifest(again))

    def _drop_partial_tail(self) -> None:
        """Move a half-written last line aside (never delete it) so appends start clean."""
        raw = self.path.read_bytes()
        if not raw or raw.endswith(b"\n"):
            return
        cut = raw.rfind(b"\n") + 1
        aside = store_root(self.path) / PARTIAL
        try:
            aside.parent.mkdir(parents=True, exist_ok=True)
            aside.write_bytes(raw[cut:])
            with self.path.open("r+b") as fh:
                fh.truncate(cut)
        except OSError as exc:
            raise _failed(exc, aside) from exc

    def _write(self, line: str) -> None:
        data = (line + "\n").encode("utf-8")
        try:
            _write_all(self._fd, data)
        except OSError as exc:
            # Part of the line may be in the file: cut it off (which a full disk allows), so
            # the journal ends with the last whole line and --resume runs this trial again.
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)
            raise _failed(exc, self.path) from exc
        self._size += len(data)

    def append(self, record: TrialRecord) -> None:
        self._write(encode_record(record))

    def write_line(self, line: str) -> None:
        """A record already encoded by :func:`encode_record` (where its trial ran)."""
        self._write(line)

    def close(self) -> None:
        try:
            os.fsync(self._fd)
        except OSError as exc:
            raise _failed(exc, self.path) from exc
        finally:
            os.close(self._fd)
