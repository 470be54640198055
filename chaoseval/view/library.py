"""The journals a view serves: the ``*.jsonl`` files under its folder whose first line is a run's
manifest, each named by its path relative to the folder (the only name a page or a link uses).

A journal is read as columns (store.columns) when a page asks for it, and read again only when
its size, modification time or inode changed: a run still being written is re-read as its
trials land, its half-written last line left out until it is whole (the column reader's rule).
Nothing here takes the journal's writer lock or writes beside it but the column reader's own
cache (kept only for a settled journal of 32 MB or more, as every report keeps it).

No path from a request is ever opened: a name must be one the scan found, and every journal
found resolves (symlinks and all) strictly inside the folder (store.artifacts.inside).
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from chaoseval.errors import ChaosevalError
from chaoseval.model.records import RunManifest
from chaoseval.store.artifacts import OutsideStore, inside

if TYPE_CHECKING:
    from chaoseval.analysis.build import Analysis
    from chaoseval.analysis.gate import RuleResult
    from chaoseval.analysis.verdict import Verdict
    from chaoseval.store.columns import Trials

__all__ = ["Entry", "Library", "NotServed", "Report", "Stamp"]

# Resamples of the ratio intervals on a run's page, as `gate` takes them: the page is for
# reading, the exact figures are `report`'s.
RESAMPLES = 2_000


class NotServed(ChaosevalError):
    """A journal, trial or artifact this view does not serve (not found, or outside its folder)."""


@dataclass(frozen=True)
class Stamp:
    """What tells a journal changed: its size, modification time and inode."""

    size: int
    mtime_ns: int
    ino: int

    @classmethod
    def of(cls, path: Path) -> Stamp:
        st = os.stat(path)
        return cls(st.st_size, st.st_mtime_ns, st.st_ino)


@dataclass
class Entry:
    """One journal found: its name (relative path), its file and its manifest (None, with
    ``error``, when the first line is not one)."""

    key: str
    path: Path
    manifest: RunManifest | None
    error: str | None = None

    @property
    def suite(self) -> str:
        """The agent and the set of scenarios (ids and file hashes): runs with the same suite
        are the releases a trend lines up."""
        m = self.manifest
        if m is None:
            return ""
        items = sorted(f"{s.id}:{s.sha256 or ''}" for s in m.scenarios)
        digest = hashlib.sha256("\n".join([m.agent, *items]).encode()).hexdigest()
        return digest[:16]


@dataclass
class Report:
    """A run's analysis as its page shows it: the report's analysis and verdict, and the gate
    rules the run recorded judged again."""

    analysis: Analysis
    verdict: Verdict
    gate: list[RuleResult] = field(default_factory=list)
    gate_error: str | None = None


def _first_line(path: Path) -> bytes:
    with path.open("rb") as fh:
        return fh.readline()


def _manifest(path: Path) -> tuple[RunManifest | None, str | None]:
    try:
        line = _first_line(path)
    except OSError as exc:
        return None, f"cannot be read: {exc.strerror or exc}"
    try:
        return RunManifest.model_validate_json(line), None
    except ValidationError:
        return None, "its first line is not a chaoseval run's manifest"


class Library:
    """The journals under ``root``, found again when a name is not known yet."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[Stamp, Entry]] = {}
        self._trials: dict[str, tuple[Stamp, Trials]] = {}
        self._reports: dict[str, tuple[Stamp, Report]] = {}
        self._busy: dict[str, threading.Lock] = {}

    def scan(self) -> list[Entry]:
        """Every journal under the folder, by name (artifact stores ``*.jsonl.d`` skipped)."""
        found: dict[str, tuple[Stamp, Entry]] = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if not d.endswith(".d") and d[:1] != ".")
            for name in sorted(filenames):
                if not name.endswith(".jsonl"):
                    continue
                path = Path(dirpath) / name
                try:
                    real = inside(self.root, path, what="journal")
                    stamp = Stamp.of(real)
                except (OutsideStore, OSError):
                    continue  # a symlink out of the folder, or gone meanwhile: not served
                key = path.relative_to(self.root).as_posix()
                kept = self._entries.get(key)
                if kept is not None and kept[0] == stamp:
                    found[key] = kept
                    continue
                manifest, error = _manifest(real)
                found[key] = (stamp, Entry(key, real, manifest, error))
        with self._lock:
            self._entries = found
        return [e for _, e in found.values()]

    def entry(self, key: str) -> Entry:
        """The journal named ``key``; NotServed unless the scan finds it (a new journal is
        found by scanning again)."""
        kept = self._entries.get(key)
        if kept is None:
            self.scan()
            kept = self._entries.get(key)
        if kept is None or kept[1].manifest is None:
            raise NotServed(f"no run named {key!r} under {self.root}")
        entry = kept[1]
        try:  # still inside: a file replaced by a symlink out of the folder is not read
            inside(self.root, entry.path, what="journal")
        except OutsideStore as exc:
            raise NotServed(str(exc)) from None
        return entry

    def _key_lock(self, key: str) -> threading.Lock:
        with self._lock:
            return self._busy.setdefault(key, threading.Lock())

    def trials(self, key: str) -> tuple[Trials, Stamp]:
        """The journal's columns, read again when the file changed."""
        from chaoseval.store.columns import read_trials

        entry = self.entry(key)
        with self._key_lock(key):
            stamp = Stamp.of(entry.path)
            kept = self._trials.get(key)
            if kept is not None and kept[0] == stamp:
                return kept[1], stamp
            trials = read_trials(entry.path)
            self._trials[key] = (stamp, trials)
            return trials, stamp

    def report(self, key: str) -> Report:
        """The run's analysis, verdict and recorded gate, made again when the file changed."""
        trials, stamp = self.trials(key)
        # Its own lock: a minute's analysis of a million trials must not hold up the trial
        # list of the same run (read under the columns' lock).
        with self._key_lock(key + "\0report"):
            kept = self._reports.get(key)
            if kept is not None and kept[0] == stamp:
                return kept[1]
            made = _report(trials)
            self._reports[key] = (stamp, made)
            return made


def _report(t: Trials) -> Report:
    from chaoseval.analysis.build import analyze
    from chaoseval.analysis.gate import evaluate, parse_rule
    from chaoseval.analysis.verdict import build_verdict
    from chaoseval.cli._reading import trials_per_cell

    rules, error = [], None
    try:
        rules = [parse_rule(r) for r in t.manifest.gate or []]
    except ChaosevalError as exc:
        error = f"the recorded gate cannot be read: {exc}"
    most = trials_per_cell(t)
    wanted = {r.k for r in rules if r.k is not None}
    ks = sorted(k for k in {*t.manifest.ks, *wanted} if not most or k <= most)
    a = analyze(t, ks or None, n_resamples=RESAMPLES, references=True)
    report = Report(a, build_verdict(a, t), gate_error=error)
    if rules and error is None:
        too_big = sorted(wanted - set(a.ks))
        if too_big:
            report.gate_error = f"the gate asks for k = {too_big}; the run has {most} trials"
        else:
            try:
                report.gate = evaluate(a, rules)
            except ChaosevalError as exc:
                report.gate_error = f"the recorded gate cannot be judged: {exc}"
    return report
