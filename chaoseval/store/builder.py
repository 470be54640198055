"""How a journal's columns are built (:class:`chaoseval.store.columns.Trials`, not imported
here: columns imports this): the columns a row has, and :class:`Builder`, which takes one trial
at a time (a line msgspec decoded, or a TrialRecord) and packs its values into growing arrays,
its strings coded once each, the slices no column holds (errors, veto items, browser pages,
per-tool sums) kept beside them; ``build()`` turns them into the Trials' columns. One pass
(store.lines), the forked range readers (store.ranges) and records in memory
(columns.trials_of) all fill one.
"""

from __future__ import annotations

import struct
from array import array
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from chaoseval.errors import JournalError
from chaoseval.model.records import RunManifest, make_trial_id
from chaoseval.store.conform import Allowed
from chaoseval.store.lite import RefCalls, TrialSummary, summarize
from chaoseval.store.manifest import ReferenceIndex, index_references
from chaoseval.store.reruns import merge_reruns

__all__ = ["CODED", "NUMERIC", "Builder", "ToolTally"]

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
