"""Spot checks: the stratified draw ``chaoseval sample`` makes, its CSV label sheet, and the
sheet read back by ``chaoseval review`` (every bad line named, nothing kept of a bad sheet).

The draw is stratified by cell and the judge's verdict: each stratum's trials in trial-id
order, every non-empty stratum given one trial while ``n`` allows, the rest shared in
proportion to the strata's sizes (largest remainders), each stratum's trials drawn without
replacement. A row of the sheet records its stratum's size and how many were drawn from it
(its weight, size / drawn): the audit (chaoseval.analysis.audit) weighs each stratum by its
share of the cell, which undoes the sampling.

The sheet is opened in a spreadsheet, and it holds what an agent wrote (its answer, the
judge's reasons quoting it): a cell a spreadsheet would run as a formula is written with a
single quote before it (OWASP's "CSV injection" guard), and read back without it.
"""

from __future__ import annotations

import csv
import difflib
import io
import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from chaoseval import redact
from chaoseval.errors import ConfigError
from chaoseval.model.records import TrialRecord
from chaoseval.render.printable import writable
from chaoseval.store.columns import Trials
from chaoseval.store.lite import STATUS
from chaoseval.store.reviews import VERDICTS, Label

__all__ = [
    "COLUMNS", "Drawn", "by_trial_id", "draw", "guard_cell", "read_sheet", "sheet_csv",
    "unguard_cell",
]  # fmt: skip

# The sheet's columns: the reviewer fills reviewer_verdict (passed or failed) and may write a
# note; the rest says what was drawn and how, then what the reviewer judges by (the agent's
# answer, cut, and the judge's reasons), last so the columns a reviewer fills keep their place.
COLUMNS = (
    "trial_id", "judge_verdict", "reviewer_verdict", "note", "cell", "stratum_trials",
    "stratum_drawn", "weight", "answer", "judge_reason",
)  # fmt: skip
ANSWER_LIMIT = 2000  # characters of the answer in a cell; the Markdown has it whole
# What makes Excel, LibreOffice or Google Sheets read a cell as a formula (OWASP: = + - @, tab,
# carriage return), and their full-width forms, which some spreadsheets normalise to them.
_FORMULA = frozenset("=+-@\t\r\uff1d\uff0b\uff0d\uff20")
_NAMES = {v: k for k, v in STATUS.items()}
# What a reviewer may write for a verdict (any case): the journal's words and their short forms.
_SAID = {"passed": "passed", "pass": "passed", "failed": "failed", "fail": "failed"}


def _formula(text: str) -> bool:
    """Whether a spreadsheet might read ``text`` as a formula: it starts with a trigger, or
    does after leading blanks (an import that trims spaces would then see it)."""
    return bool(text) and (text[0] in _FORMULA or text.lstrip(" \n\x0b\x0c")[:1] in _FORMULA)


def guard_cell(text: str) -> str:
    """``text`` as a sheet's cell: a single quote before a formula (OWASP's guard; the
    spreadsheet shows the text, never runs it), and before a text that starts with a quote,
    so that :func:`unguard_cell` gives back exactly what was guarded, whatever it was."""
    return "'" + text if _formula(text) or text.startswith("'") else text


def unguard_cell(text: str) -> str:
    """A cell read back: the quote :func:`guard_cell` put before a formula or a quote taken
    off (a reviewer's note typed as ``'-2 refunds`` is the note ``-2 refunds``); any other
    text as it is."""
    rest = text[1:]
    return rest if text.startswith("'") and (_formula(rest) or rest.startswith("'")) else text


@dataclass(frozen=True)
class Drawn:
    row: int  # the trial's row in the journal's columns
    stratum_trials: int
    stratum_drawn: int


def by_trial_id(t: Trials, rows: np.ndarray) -> np.ndarray:
    """``rows`` sorted by trial id, as sorted() orders the strings: ids as UTF-8 bytes (whose
    order is the code points'), a few bytes each, built a chunk at a time."""
    step = 1 << 16
    chunks = [
        np.array([t.trial_id(r).encode() for r in rows[i : i + step].tolist()], dtype=np.bytes_)
        for i in range(0, len(rows), step)
    ]
    ids = np.concatenate(chunks) if chunks else np.zeros(0, np.bytes_)
    out: np.ndarray = rows[np.argsort(ids, kind="stable")]
    return out


def _allocate(sizes: list[int], n: int) -> list[int]:
    """How many to draw from each stratum: one each while n allows (the largest first), the
    rest in proportion to size by largest remainders, never more than a stratum holds."""
    take = [0] * len(sizes)
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    for i in order[:n]:
        take[i] = 1
    left = n - sum(take)
    while left > 0 and any(take[i] < sizes[i] for i in order):
        room = [sizes[i] - take[i] for i in range(len(sizes))]
        total = sum(room)
        quota = [left * r / total for r in room]
        add = [min(int(q), r) for q, r in zip(quota, room, strict=True)]
        if not sum(add):  # fewer left than strata with room: the largest remainders
            best = max((i for i in order if room[i]), key=lambda i: quota[i])
            add[best] = 1
        take = [a + b for a, b in zip(take, add, strict=True)]
        left -= sum(add)
    return take


def draw(t: Trials, n: int, seed: int, status: str) -> list[Drawn]:
    """A reproducible stratified draw of ``n`` trials with ``status`` (or any), in trial-id
    order: the same journal and seed give the same trials."""
    if status not in (*STATUS, "any"):
        raise ConfigError(f"--status {status!r}: use passed, failed, not_evaluable or any")
    st = t.col["status"]
    rows = np.flatnonzero(st == STATUS[status]) if status != "any" else np.arange(len(t))
    pool = by_trial_id(t, rows)
    key = t.col["cell"][pool].astype(np.int64) * 4 + st[pool]
    strata = [pool[key == k] for k in np.unique(key).tolist()]
    # Strata in a fixed order (cell name, verdict): the draw never depends on code numbers.
    strata.sort(key=lambda s: (str(t.value("cell", int(s[0]))), int(st[s[0]])))
    rng = random.Random(f"chaoseval-sample:{seed}")
    out = []
    for stratum, k in zip(strata, _allocate([len(s) for s in strata], n), strict=True):
        for i in rng.sample(range(len(stratum)), k):
            out.append(Drawn(int(stratum[i]), len(stratum), k))
    # Each pooled row's place in trial-id order, as an array (a dict of the pool's 250k rows
    # at 100k tasks held ~20 MB for the few drawn).
    place = np.zeros(len(t), np.int64)
    place[pool] = np.arange(len(pool))
    return sorted(out, key=lambda d: int(place[d.row]))


def _reason(r: TrialRecord) -> str:
    """Why the judge gave its verdict: the root cause, the failed checks and the vetoes."""
    parts = [r.root_cause] if r.root_cause else []
    failed = [c for c in r.checks if not c.passed]
    parts += [f"check {c.name} failed: {c.detail[:200]}" for c in failed]
    parts += [f"{v.kind} veto: {v.detail[:200]}" for v in r.vetoes]
    if r.error:
        parts.append(f"error: {r.error[:200]}")
    if not parts and r.checks:
        parts.append(f"all {len(r.checks)} check(s) passed")
    return "; ".join(parts)


def _answer(r: TrialRecord) -> str:
    answer = r.answer or ""
    cut = redact.head(answer, ANSWER_LIMIT)
    return cut + (" [cut]" if len(answer) > ANSWER_LIMIT else "")


def sheet_csv(t: Trials, drawn: list[Drawn]) -> str:
    """The label sheet: one row per drawn trial, the reviewer's verdict and note blank; every
    cell redacted, its control characters visible, guarded against formulas."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for d in drawn:
        judge = _NAMES[int(t.col["status"][d.row])]
        weight = f"{d.stratum_trials / d.stratum_drawn:.6g}"
        r = t.record(d.row)
        row = [t.trial_id(d.row), judge, "", "", t.value("cell", d.row), d.stratum_trials,
               d.stratum_drawn, weight, _answer(r), _reason(r)]  # fmt: skip
        # Redacted before the guard (the marker starts no formula), so no secret's removal
        # can bare a trigger the guard did not see.
        w.writerow([guard_cell(writable(redact.redact(str(c)))) for c in row])
    return buf.getvalue()


def read_sheet(
    path: Path, judged: Mapping[str, str], run_id: str, reviewer: str
) -> tuple[list[Label], int]:
    """The labels of a filled sheet (and how many rows were left blank), or ConfigError naming
    every bad line: an unknown trial id (with the closest ids), an unknown verdict, a judge's
    verdict that is not the journal's (``judged``: trial id -> the journal's status)."""
    text = path.read_text(encoding="utf-8-sig")  # a spreadsheet's BOM is not part of a name
    reader = csv.reader(io.StringIO(text))
    header = [h.strip() for h in next(reader, [])]
    for needed in ("trial_id", "reviewer_verdict"):
        if needed not in header:
            raise ConfigError(
                f"{path}:1: no {needed!r} column (found: {', '.join(header) or 'none'}); "
                "label the sheet 'chaoseval sample' wrote, keeping its header"
            )
    at = datetime.now(UTC).isoformat(timespec="seconds")
    labels, errors, blank = [], [], 0
    start = reader.line_num + 1
    for row in reader:
        cells = [unguard_cell(c) for c in row]
        fields = dict(zip(header, (c.strip() for c in cells), strict=False))
        # The note as the reviewer wrote it (only blank when all blank); the rest stripped.
        raw_note = dict(zip(header, cells, strict=False)).get("note", "")
        line, start = start, reader.line_num + 1
        where = f"{path}:{line}"
        if not any(fields.values()):
            continue
        tid, said = fields.get("trial_id", ""), fields.get("reviewer_verdict", "")
        if tid not in judged:
            close = difflib.get_close_matches(tid, list(judged), n=3)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            errors.append(f"{where}: no trial {tid!r} in the journal{hint}")
            continue
        if not said:
            blank += 1
            continue
        verdict = _SAID.get(said.lower())
        if verdict is None:
            errors.append(f"{where}: verdict {said!r} for {tid}: write {' or '.join(VERDICTS)}")
            continue
        judge = fields.get("judge_verdict") or judged[tid]
        if judge != judged[tid]:
            errors.append(
                f"{where}: {tid}: the sheet says the judge gave {judge!r}, the journal says "
                f"{judged[tid]!r} (a sheet drawn from another run of this journal?)"
            )
            continue
        note = raw_note if raw_note.strip() else ""
        labels.append(Label(tid, verdict, judge, reviewer, at, run_id, note, str(path), line))
    if errors:
        raise ConfigError("the label sheet was not read, nothing recorded:\n" + "\n".join(errors))
    return labels, blank
