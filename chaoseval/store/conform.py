"""A journal's trials against its manifest: each trial line of a cell and a task the manifest
lists, its index below the manifest's trials per cell, and no more trials in a (task, cell)
than that. A line that breaks one was not written by the run its manifest describes, and would
be counted as if it were; every reader refuses it with ``file:line`` (issue 39, item 6).

The column reader checks once its columns are built (store.columns: one pass and the forked
range readers alike), from the columns (a lookup per distinct cell and task, a few numpy passes
over the rows, no line read again but the one an error names); ``read_journal`` checks its
records. ``run --resume -n`` with more trials than the run had appends a manifest line of the
same run with the new count (engine.runner): :meth:`Allowed.grow` takes it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from chaoseval.errors import JournalError
from chaoseval.model.records import RunManifest, TrialRecord

__all__ = ["Allowed", "check_columns", "check_records", "line_at"]

_FIX = (
    "the journal does not match its manifest and cannot be counted. Remove that line, or run "
    "again with --overwrite"
)


def _name(value: str) -> str:
    """A name as an error shows it: quoted, cut when long (a cell name can be 256K chars)."""
    return repr(value) if len(value) <= 80 else repr(value[:80]) + "..."


def _some(names: Iterable[str]) -> str:
    listed = sorted(names)
    shown = ", ".join(_name(n) for n in listed[:5])
    return shown + (f", ... ({len(listed)} in all)" if len(listed) > 5 else "")


@dataclass
class Allowed:
    """What a journal's manifest lets its trial lines hold."""

    scenarios: frozenset[str]
    cells: frozenset[str]
    trials: int  # per (task, cell): indices 0 to trials - 1

    @classmethod
    def of(cls, manifest: RunManifest, scenarios: Iterable[str] | None = None) -> Allowed:
        """``scenarios``: the manifest's scenario ids when it was read without its list."""
        ids = scenarios if scenarios is not None else (s.id for s in manifest.scenarios)
        return cls(frozenset(ids), frozenset(c.name for c in manifest.cells), manifest.trials)

    def grow(self, data: Mapping[str, Any]) -> None:
        """A later manifest line of the same run (``--resume -n`` with more trials)."""
        trials = data.get("trials")
        if isinstance(trials, int) and not isinstance(trials, bool):
            self.trials = max(self.trials, trials)

    def refuse(
        self, path: Path, line: int, trial_id: str, scenario: str, cell: str, index: int
    ) -> JournalError | None:
        """The error of a trial line the manifest does not allow; None when it does."""
        where = f"{path}:{line}: trial {_name(trial_id)}"
        if cell not in self.cells:
            return JournalError(
                f"{where} is of cell {_name(cell)}, which its manifest does not list (cells: "
                f"{_some(self.cells)}): {_FIX}."
            )
        if scenario not in self.scenarios:
            return JournalError(
                f"{where} is of task {_name(scenario)}, which its manifest does not list "
                f"({len(self.scenarios)} task(s): {_some(self.scenarios)}): {_FIX}."
            )
        if not 0 <= index < self.trials:
            return JournalError(
                f"{where} has index {index}, but its manifest says {self.trials} trial(s) per "
                f"cell and task (indices 0 to {self.trials - 1}): {_FIX}. (A journal an earlier "
                "chaoseval extended with 'run --resume -n' has no manifest line with the new "
                "count: set its manifest's \"trials\" to it.)"
            )
        return None

    def crowded(self, path: Path, line: int, scenario: str, cell: str, n: int) -> JournalError:
        """Too many trials in one (task, cell): trials whose ids are not task/cell/index can
        share an index, so the index alone does not bound them."""
        return JournalError(
            f"{path}:{line}: task {_name(scenario)} in cell {_name(cell)} holds {n} trials, more "
            f"than the {self.trials} per cell and task its manifest says (this line is the first "
            f"past them): {_FIX}."
        )


def line_at(path: Path, offset: int) -> int:
    """The line number of the line starting at byte ``offset`` (for an error message only:
    the column reader keeps offsets, not line numbers)."""
    with path.open("rb") as fh:
        return fh.read(offset).count(b"\n") + 1


def _first(t: Any, rows: np.ndarray) -> tuple[int, int]:
    """The row of ``rows`` whose line comes first in the file, and that line's number."""
    row = int(rows[np.argmin(t.offsets[rows])])
    return row, line_at(t.path, int(t.offsets[row]))


def check_columns(t: Any, allowed: Allowed) -> None:
    """A column reader's trials (``t``: a columns.Trials, re-runs merged) against ``allowed``:
    the JournalError of the first line in the file that does not fit."""
    if not len(t):
        return
    known = {
        column: np.array([v in names for v in t.vocab[column]] + [False], bool)
        for column, names in (("cell", allowed.cells), ("scenario", allowed.scenarios))
    }  # (code -1, no value: never known; every trial has both)
    index = t.col["index"]
    bad = ~known["cell"][t.col["cell"]] | ~known["scenario"][t.col["scenario"]]
    bad |= (index < 0) | (index >= allowed.trials)
    if bad.any():
        row, line = _first(t, np.flatnonzero(bad))
        value = t.value
        error = allowed.refuse(
            t.path, line, t.trial_id(row), value("scenario", row), value("cell", row),
            int(index[row]),
        )  # fmt: skip
        assert error is not None  # the mask found it
        raise error
    if t.odd_ids:  # only ids that are not task/cell/index can share one
        width = max(len(t.vocab["cell"]), 1)
        key = t.col["scenario"].astype(np.int64) * width + t.col["cell"]
        counts = np.bincount(key)
        if counts.max() > allowed.trials:
            full = int(np.argmax(counts))
            row, line = _first(t, np.flatnonzero(key == full)[allowed.trials :])
            raise allowed.crowded(
                t.path, line, t.value("scenario", row), t.value("cell", row), int(counts[full])
            )


def check_records(path: Path, records: Mapping[int, TrialRecord], allowed: Allowed) -> None:
    """``read_journal``'s records, by the line each was read from, against ``allowed``."""
    per: Counter[tuple[str, str]] = Counter()
    for line, r in sorted(records.items()):
        error = allowed.refuse(path, line, r.trial_id, r.scenario, r.cell, r.index)
        if error is not None:
            raise error
        per[r.scenario, r.cell] += 1
    seen: Counter[tuple[str, str]] = Counter()
    for line, r in sorted(records.items()):
        key = r.scenario, r.cell
        seen[key] += 1
        if seen[key] > allowed.trials:  # the first line over the count, as the columns say
            raise allowed.crowded(path, line, r.scenario, r.cell, per[key])
