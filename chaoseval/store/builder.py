"""How a journal's columns are built (:class:`chaoseval.store.columns.Trials`, not imported
here: columns imports this): the columns a row has, and :class:`Builder`, which takes one trial
at a time (a line msgspec decoded, or a TrialRecord) and packs its values into growing arrays,
its strings coded once each, the slices no column holds (errors, veto items, browser pages,
per-tool sums) kept beside them; ``build()`` turns them into the Trials' columns. One pass
and the forked range readers (store.ranges) and records in memory (columns.trials_of) all
fill one.

After the pass, the steps that finish the same columns: a trial re-run by ``--resume`` has two
lines in a journal, and its rows are merged into its first line's place (:func:`merge_reruns`);
then the reader reads again by byte offset what it could not know in its pass
(:func:`retally`: the per-tool sums over each trial's final line; :func:`remeasure`: trials
written before the manifest measured against its reference calls).
"""

from __future__ import annotations

import struct
from array import array
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any, BinaryIO

import msgspec
import numpy as np

from chaoseval.errors import JournalError
from chaoseval.model.records import RunManifest, TrialRecord, make_trial_id
from chaoseval.store.conform import Allowed, line_at
from chaoseval.store.journal import repeated_trial
from chaoseval.store.lite import DECODER, STATUS, RefCalls, TrialSummary, summarize
from chaoseval.store.manifest import ReferenceIndex, index_references

__all__ = ["CODED", "NUMERIC", "Builder", "ToolTally", "merge_reruns", "remeasure", "retally"]

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
    ("user_turns", "i"),  # the agent's messages to a conversational scenario's user
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


class Builder:
    """Columns as growing arrays; a re-run trial's row is overwritten in place. ``t``: the
    empty Trials it fills (columns.Trials(path, None, {}, {}): its manifest set in build())."""

    def __init__(self, path: Path, t: Any) -> None:
        self.path = path
        self.manifest: RunManifest | None = None
        self.run_id = ""
        self.allowed = Allowed(frozenset(), frozenset(), 0)  # what the manifest lets lines hold
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
        self.t = t
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

    def set_manifest(
        self,
        manifest: RunManifest,
        references: ReferenceIndex | None = None,
        scenarios: frozenset[str] | None = None,
        veto_rules: dict[str, str] | None = None,
    ) -> None:
        """The run's manifest; ``references``, ``scenarios`` (ids) and ``veto_rules``: its
        reference runs, scenarios and their veto rules when read lean (its scenario list left
        out)."""
        self.manifest = manifest
        self.t.veto_rules = (
            veto_rules
            if veto_rules is not None
            else {n: k for s in manifest.scenarios for n, k in s.vetoes.items()}
        )
        self.run_id = manifest.run_id  # every trial line must carry it
        self.allowed = Allowed.of(manifest, scenarios)
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
        key = (
            r.cell,
            r.root_cause,
            tuple(tags) if tags else (),
            tuple(p.name for p in plugins) if plugins else (),
        )
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

    def build(self, need_manifest: bool = True) -> Any:
        """The Trials filled (``t``), a re-run's rows merged into its first line's place."""
        if self.manifest is None and need_manifest:
            raise JournalError(f"{self.path}: no manifest line; this is not a chaoseval journal")
        self.flush()
        t = self.t
        t.manifest = self.manifest  # None only for bare records (columns.trials_of)
        t.col = {name: np.frombuffer(a, dtype=a.typecode) for name, a in self.numeric.items()}
        t.col.update({n: np.frombuffer(a, dtype=a.typecode) for n, a in self.coded.items()})
        t.vocab = {name: list(table) for name, table in self.vocab.items()}
        t.offsets = np.frombuffer(self.offsets, dtype=np.int64)
        t.refs = self.refs
        if self.dedup:
            self.rerun = merge_reruns(t)
        t.vetoes = dict(sorted(t.vetoes.items()))
        return t


# --- after the pass: re-runs merged, what the pass could not know read again ------------


def _runs(t: Any, odd: set[int]) -> dict[int, list[int]]:
    """Rows with the same scenario, cell and index (and canonical ids), by their first row."""
    canonical = np.array([r for r in range(len(t)) if r not in odd], dtype=np.int64) if odd \
        else np.arange(len(t))  # fmt: skip
    sc, ce, ix = (t.col[c][canonical] for c in ("scenario", "cell", "index"))
    order = np.lexsort((canonical, ix, ce, sc))  # equal keys: rows in journal order
    same = (np.diff(sc[order]) == 0) & (np.diff(ce[order]) == 0) & (np.diff(ix[order]) == 0)
    groups: dict[int, list[int]] = {}
    first, previous = -1, -2
    for i in np.flatnonzero(same).tolist():
        a, b = int(canonical[order[i]]), int(canonical[order[i + 1]])
        if i != previous + 1:
            first = a
            groups[first] = [a]
        groups[first].append(b)
        previous = i
    return groups


def _only_reruns(t: Any, groups: dict[int, list[int]]) -> None:
    """A trial has several rows only as ``--resume`` writes them: every row but the last is
    a not-evaluable attempt it ran again. Anything else (a duplicated line, a flipped
    status) is a JournalError naming both lines: counting either would be a guess."""
    status = t.col["status"]
    for rows in groups.values():
        for earlier, later in pairwise(rows):
            if int(status[earlier]) != STATUS["not_evaluable"]:
                raise repeated_trial(
                    t.path, t.trial_id(earlier), line_at(t.path, int(t.offsets[earlier])),
                    line_at(t.path, int(t.offsets[later])),
                )  # fmt: skip


def merge_reruns(t: Any) -> bool:
    """Rows of the same trial merged: the first row's place, the last row's values (as
    read_journal's dict keeps them). False when every trial has one row."""
    odd = set(t.odd_ids)
    groups = _runs(t, odd)
    by_odd: dict[str, list[int]] = {}
    for row in sorted(odd):
        by_odd.setdefault(t.odd_ids[row], []).append(row)
    groups.update({rows[0]: rows for rows in by_odd.values() if len(rows) > 1})
    if not groups:
        return False
    _only_reruns(t, groups)
    keep = np.ones(len(t), bool)
    sides: list[dict[int, Any]] = [t.odd_ids, t.errors, t.vetoes, t.browser]
    for rows in groups.values():
        first, last = rows[0], rows[-1]
        for column in t.col.values():
            column[first] = column[last]
        t.offsets[first] = t.offsets[last]
        for side in sides:
            if last in side:
                side[first] = side[last]
            else:
                side.pop(first, None)
        keep[rows[1:]] = False
    new = np.cumsum(keep) - 1
    t.col = {name: column[keep] for name, column in t.col.items()}
    t.offsets = t.offsets[keep]
    for name in ("odd_ids", "errors", "vetoes", "browser"):
        side = getattr(t, name)
        setattr(t, name, {int(new[r]): v for r, v in side.items() if keep[r]})
    return True


def retally(b: Any, t: Any) -> None:
    """The sums per tool again over the rows' final lines: a re-run trial counts once, where
    its first line was (as read_journal orders it)."""
    t.by_tool = {}
    t.sampling = Counter()
    with b.path.open("rb") as fh:
        for offset in t.offsets.tolist():
            fh.seek(offset)
            line = fh.readline()
            try:
                r: Any = DECODER.decode(line)
            except msgspec.DecodeError:
                r = TrialRecord.model_validate_json(line)
            b._tally(summarize(r, {}), r)


def remeasure(b: Any, t: Any, names: list[str]) -> None:
    """Trials written before the manifest were read without its reference calls: measure
    their correctness again (``names``: the numeric columns in TrialSummary.values order)."""
    with b.path.open("rb") as fh:
        for offset, _, _ in b.early:
            rows = np.flatnonzero(t.offsets == offset)
            if not len(rows):  # re-run later: its later line was read with the manifest
                continue
            fh.seek(offset)
            values = summarize(TrialRecord.model_validate_json(fh.readline()), b.refs).values
            for name in ("correct", "right_tool", "coverage"):
                t.col[name][rows[0]] = values[names.index(name)]
