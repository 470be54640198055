"""Why each failed trial failed, in a few lines: what the agent raised, the checks that failed
(their detail holds the expected and actual values the check compared), the vetoes, and the
start of the agent's answer.

Every view lists the first few failed trials of each cell, clean included, with these lines,
and counts the rest ("and N more"). The failed rows are found in the columns; only the listed
ones are read again as full records (:meth:`Trials.record`), so a report of a million trials
reads a few records per cell. The text is the journal's as recorded (an agent's error is
redacted and bounded when it is recorded, chaoseval.agents.crash); each view escapes it for
its format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from chaoseval.analysis.aggregate import Records, groups, in_tasks, name_ranks, not_landed
from chaoseval.model.records import CLEAN, TrialRecord
from chaoseval.model.trajectory import Step
from chaoseval.store.columns import as_group

__all__ = [
    "LISTED",
    "CellReasons",
    "TrialReason",
    "failure_reasons",
    "one_line",
    "reasons_json",
    "transcript",
    "turn_transcript",
]

# Failed trials listed per cell in every view; the others are counted.
LISTED = 5
# What one trial's reason may take: lines of its error, failed checks, vetoes, characters a line.
_ERROR_LINES, _CHECKS, _VETOES, _WIDTH, _ANSWER = 3, 3, 2, 240, 160
_TURNS = 4  # a conversation's last turns shown with the reason


def one_line(text: str, width: int = _WIDTH) -> str:
    """One line of at most ``width`` characters: newlines as spaces, a cut marked, a lone
    surrogate (no UTF-8 file can hold one) written as its escape."""
    line = " ".join(text.encode("utf-8", "backslashreplace").decode("utf-8").split())
    return line if len(line) <= width else line[: width - 1] + "…"


def turn_transcript(s: Step, width: int = 160) -> str:
    """A user turn as a line of transcript: 'agent: "..." user: "..."' (each side on one
    line, cut at ``width``; the journal's text, redacted when it was written, escaped by each
    view)."""
    said = (s.args or {}).get("text")
    agent = one_line(str(said), width) if said is not None else "(no message recorded)"
    reply = f'"{one_line(str(s.result), width)}"' if s.result is not None else "(had left)"
    return f'agent: "{agent}" user: {reply}'


def transcript(r: TrialRecord, last: int) -> tuple[tuple[str, ...], int]:
    """The conversation's last ``last`` turns as transcript lines ('turn 2: agent: "..." user:
    "..." [faults]'), and how many turns came before them."""
    traj = r.trajectory
    turns = [s for s in traj.steps if s.kind == "user"]
    lines = []
    for n, s in enumerate(turns[-last:], start=max(0, len(turns) - last) + 1):
        hit = [f"{f.perturbation}/{f.kind}" for i in s.faults if 0 <= i < len(traj.faults)
               and (f := traj.faults[i]).delivered]  # fmt: skip
        faults = f" [{', '.join(hit)}]" if hit else ""
        lines.append(f"turn {n}: {turn_transcript(s)}{faults}")
    return tuple(lines), max(0, len(turns) - last)


@dataclass(frozen=True)
class TrialReason:
    """One failed trial and why, as recorded."""

    trial_id: str
    scenario: str
    cell: str
    root_cause: str | None
    error: tuple[str, ...]  # the recorded error's last lines (a crash: the agent's stderr's)
    checks: tuple[tuple[str, str], ...]  # failed checks: name, detail
    more_checks: int
    vetoes: tuple[tuple[str, str], ...]  # kind, detail
    more_vetoes: int
    answer: str | None  # the start of the agent's answer, on one line
    # A conversation's last turns as transcript lines, and how many came before them.
    turns: tuple[str, ...] = ()
    earlier_turns: int = 0

    @classmethod
    def of(cls, r: TrialRecord) -> TrialReason:
        lines = [one_line(x) for x in (r.error or "").splitlines() if x.strip()]
        failed = [(c.name, one_line(c.detail)) for c in r.checks if not c.passed]
        vetoes = [(v.kind, one_line(v.detail)) for v in r.vetoes]
        return cls(
            r.trial_id,
            r.scenario,
            r.cell,
            r.root_cause,
            tuple(lines[-_ERROR_LINES:]),
            tuple(failed[:_CHECKS]),
            max(0, len(failed) - _CHECKS),
            tuple(vetoes[:_VETOES]),
            max(0, len(vetoes) - _VETOES),
            one_line(r.answer, _ANSWER) if r.answer else None,
            *transcript(r, _TURNS),
        )

    def headline(self) -> str:
        """The one line that says most: the error, else the first failed check, else the first
        veto, else the root cause."""
        if self.error:
            return self.error[-1]
        if self.checks:
            name, detail = self.checks[0]
            return f"check {name} failed" + (f": {detail}" if detail else "")
        if self.vetoes:
            return f"{self.vetoes[0][0]} veto: {self.vetoes[0][1]}"
        return self.root_cause or "failed"

    def lines(self) -> list[str]:
        """The reason as plain lines: the error, each failed check, each veto, the answer."""
        out = [f"error: {line}" for line in self.error]
        out += [f"check {n} failed" + (f": {d}" if d else "") for n, d in self.checks]
        if self.more_checks:
            out.append(f"… and {self.more_checks} more failed check(s)")
        out += [f"{k} veto: {d}" for k, d in self.vetoes]
        if self.more_vetoes:
            out.append(f"… and {self.more_vetoes} more veto(es)")
        if self.answer is not None:
            out.append(f"answer: {self.answer}")
        if self.earlier_turns:
            out.append(f"conversation: {self.earlier_turns} earlier turn(s), then")
        out += list(self.turns)
        return out or [f"judged {self.root_cause or 'failed'} (no check or error recorded)"]

    def to_json(self) -> dict[str, Any]:
        return {
            "trial": self.trial_id,
            "root_cause": self.root_cause,
            "error": list(self.error),
            "failed_checks": [{"name": n, "detail": d} for n, d in self.checks],
            "more_failed_checks": self.more_checks,
            "vetoes": [{"kind": k, "detail": d} for k, d in self.vetoes],
            "more_vetoes": self.more_vetoes,
            "answer": self.answer,
            # Only for a conversation: reports of other trials stay as they were.
            **({"conversation": list(self.turns)} if self.turns else {}),
            **({"earlier_turns": self.earlier_turns} if self.earlier_turns else {}),
        }


@dataclass(frozen=True)
class CellReasons:
    """The failed trials of one cell: how many, and the first ones with their reasons."""

    cell: str
    failed: int
    listed: tuple[TrialReason, ...]

    @property
    def more(self) -> int:
        return self.failed - len(self.listed)

    def to_json(self) -> dict[str, Any]:
        return {
            "failed": self.failed,
            "listed": [r.to_json() for r in self.listed],
            "more": self.more,
        }


def failure_reasons(records: Records, listed: int = LISTED) -> dict[str, CellReasons]:
    """Per cell with a failed trial (clean first), the count and the first ``listed`` failures
    by task name and trial index, read in full. A perturbed cell's failures on tasks none of
    its faults reached are left out, as its counts leave them out."""
    g = as_group(records)
    t = g.t
    rank = name_ranks(t.vocab["scenario"]) if len(g) else np.zeros(0, np.int64)
    out: dict[str, CellReasons] = {}
    by = groups(g, "cell")
    for cell in sorted(by, key=lambda c: (c != CLEAN, list(by).index(c))):
        rs = by[cell]
        failed = rs["status"] == 1
        if cell != CLEAN:
            failed &= ~in_tasks(rs, not_landed(rs))
        f = rs.where(failed)
        if not len(f):
            continue
        order = np.lexsort((f["index"], rank[f["scenario"]]))
        rows = f.rows[order][:listed].tolist()
        out[cell] = CellReasons(
            cell, len(f), tuple(TrialReason.of(t.record(int(row))) for row in rows)
        )
    return out


def reasons_json(reasons: dict[str, CellReasons]) -> dict[str, Any]:
    """The JSON report's ``failures``: per cell, the count and the listed trials' reasons."""
    return {cell: c.to_json() for cell, c in reasons.items()}
